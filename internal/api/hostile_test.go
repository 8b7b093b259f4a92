package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/pacer-dev/pacer/internal/api"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/workflows"
)

// maxErrorBody bounds what an error answer may cost: whatever a request
// holds, the answer quotes at most a clipped piece of it.
const maxErrorBody = 1 << 10

// hostileQueries are query strings for GET /api/prices, as sent on the wire.
var hostileQueries = []struct {
	name  string
	query string
	want  int
}{
	{"nul byte", "token=stx%00", http.StatusBadRequest},
	{"crlf header injection", "token=stx%0d%0aX-Injected:%201", http.StatusBadRequest},
	{"invalid utf-8", "token=%ff%fe%fd", http.StatusBadRequest},
	{"path traversal", "token=..%2f..%2fetc%2fpasswd", http.StatusBadRequest},
	{"right-to-left override", "token=%E2%80%AEstx", http.StatusBadRequest},
	{"emoji", "token=%F0%9F%92%A9", http.StatusBadRequest},
	{"fullwidth stx", "token=%EF%BD%93%EF%BD%94%EF%BD%98", http.StatusBadRequest},
	{"cyrillic look-alike", "tokens=stx,%D1%95tx", http.StatusBadRequest},
	{"sql injection", "token=stx'%20OR%20'1'%3D'1", http.StatusBadRequest},
	{"sql in list", "tokens=stx,x');%20drop%20table%20token_prices;--", http.StatusBadRequest},
	{"like wildcard", "token=%25", http.StatusBadRequest},
	{"regexp bomb", "token=" + strings.Repeat("a", 50) + "!", http.StatusBadRequest},
	{"bad escape", "token=stx%", http.StatusBadRequest},
	{"bad escape in key", "%zz=1", http.StatusBadRequest},
	{"semicolon separator", "token=stx;tokens=stx", http.StatusBadRequest},
	{"case-changed key", "TOKEN=stx", http.StatusBadRequest},
	{"array key", "token[]=stx", http.StatusBadRequest},
	{"repeated key", "token=stx&token=stx", http.StatusBadRequest},
	{"both keys", "token=stx&tokens=stx", http.StatusBadRequest},
	{"empty token", "token=", http.StatusBadRequest},
	{"commas only", "tokens=,,,,", http.StatusBadRequest},
	{"101 distinct ids", "tokens=" + distinctIDs(101), http.StatusBadRequest},
	{"300 kB id", "token=" + strings.Repeat("S", 300<<10), http.StatusBadRequest},
	{"300 kB list", "tokens=" + strings.Repeat("x,", 150<<10), http.StatusBadRequest},
	{"huge unicode id", "token=" + strings.Repeat("%C3%A9", 20000), http.StatusBadRequest},
	// Accepted: spaces around an id, duplicates collapse, exactly 100 ids.
	{"padded id", "token=%20stx%20", http.StatusOK},
	{"10000 duplicates", "tokens=" + strings.Repeat("stx,", 10000), http.StatusOK},
	{"100 distinct ids", "tokens=" + distinctIDs(100), http.StatusOK},
}

// distinctIDs makes n valid, distinct token ids.
func distinctIDs(n int) string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "SP1AY6K3PQV5MRT6R4S671NWW2FRVPKM0BR162CT6.t" + strings.Repeat("x", i+1)
	}
	return strings.Join(ids, ",")
}

// getRaw sends path with its query exactly as written.
func getRaw(t *testing.T, base, pathAndQuery string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base, nil)
	require.NoError(t, err)
	path, query, _ := strings.Cut(pathAndQuery, "?")
	req.URL.Path, req.URL.RawQuery = path, query
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, body
}

func requireJSONError(t *testing.T, resp *http.Response, body []byte, what string) {
	t.Helper()
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"), what)
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m), "%s: %s", what, body)
	require.NotEmpty(t, m["error"], what)
	require.LessOrEqual(t, len(body), maxErrorBody, "%s: the error echoes too much of the request", what)
}

func TestPricesSurviveHostileQueries(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, tt := range hostileQueries {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, body := getRaw(t, f.srv.URL, "/api/prices?"+tt.query)
			require.Equal(t, tt.want, resp.StatusCode, "%.200s", body)
			require.Empty(t, resp.Header.Get("X-Injected"))
			if tt.want != http.StatusOK {
				requireJSONError(t, resp, body, tt.name)
				return
			}
			var ok api.PricesResponse
			if strings.HasPrefix(tt.query, "token=") {
				var one api.TokenPrice
				require.NoError(t, json.Unmarshal(body, &one))
				require.Equal(t, stx, one.TokenID)
				return
			}
			require.NoError(t, json.Unmarshal(body, &ok))
			require.LessOrEqual(t, len(ok.Prices)+len(ok.Missing), api.MaxTokensPerRequest)
		})
	}
	t.Logf("figures: %d hostile query strings against GET /api/prices", len(hostileQueries))
}

// Every way of asking for something that is not there is a JSON error.
func TestUnknownRoutesAndMethodsAnswerJSON(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, tt := range []struct{ method, path string }{
		{http.MethodPost, "/api/prices"},
		{http.MethodDelete, "/api/prices"},
		{http.MethodPut, "/api/competition/trades"},
		{http.MethodGet, "/api/competition/trades?limit=0"},
		{http.MethodGet, "/api/competition/status"},
		{http.MethodPost, "/api/competition/leaderboard"},
		{http.MethodPost, "/api/scheduler/status"},
		{http.MethodGet, "/api/prices/stx"},
		{http.MethodGet, "/api/" + strings.Repeat("a", 10000)},
		{http.MethodGet, "/%00"},
		{"PATCH", "/metrics"},
	} {
		req, err := http.NewRequest(tt.method, f.srv.URL+tt.path, strings.NewReader(`{"txid":"x"}`))
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.GreaterOrEqual(t, resp.StatusCode, 400, "%s %.40s", tt.method, tt.path)
		require.Less(t, resp.StatusCode, 500, "%s %.40s", tt.method, tt.path)
		require.Equal(t, "application/json", resp.Header.Get("Content-Type"), "%s %.40s: %s", tt.method, tt.path, body)
		var m map[string]any
		require.NoError(t, json.Unmarshal(body, &m), "%s %.40s: %s", tt.method, tt.path, body)
	}
}

// hostileTradeBodies are bodies for POST /api/competition/trades that must
// all be refused before anything is looked up or written.
var hostileTradeBodies = []string{
	`{"txid":"0X` + strings.Repeat("a", 64) + `"}`,
	`{"txid":"０x` + strings.Repeat("a", 64) + `"}`,
	`{"txid":"0x` + strings.Repeat("a", 63) + `"}`,
	`{"txid":"0x` + strings.Repeat("a", 65) + `"}`,
	`{"txid":"0x` + strings.Repeat("a", 63) + `\u0000"}`,
	`{"txid":" 0x` + strings.Repeat("a", 64) + `"}`,
	`{"txid":"0x` + strings.Repeat("a", 64) + `\n"}`,
	`{"txid":"0x` + strings.Repeat("ａ", 64) + `"}`,
	`{"txid":null}`,
	`{"txid":true}`,
	`{"txid":["0x` + strings.Repeat("a", 64) + `"]}`,
	`{"txid":{"$gt":""}}`,
	`{"txid":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`,
	`{"txid":"0x` + strings.Repeat("a", 64) + `","sender":"SP000000000000000000002Q6VF78"}`,
	`{"txid":"0x` + strings.Repeat("a", 64) + `"`,
	`{"txid":"0x` + strings.Repeat("a", 64) + `"}]`,
	`{"txid":"0x` + strings.Repeat("a", 64) + `"}` + "\x00",
	"\xef\xbb\xbf" + `{"txid":"0x` + strings.Repeat("a", 64) + `"}`,
	`txid=0x` + strings.Repeat("a", 64),
	`<?xml version="1.0"?><txid>0x` + strings.Repeat("a", 64) + `</txid>`,
	"\xff\xfe\xfd",
	`null`,
	`0`,
	`"` + strings.Repeat("a", 60<<10) + `"`,
}

func TestTradesRefuseHostileBodies(t *testing.T) {
	t.Parallel()
	f := newTradeFixture(t)
	for i, body := range hostileTradeBodies {
		code, _, m := f.post(t, body)
		require.Equal(t, http.StatusBadRequest, code, "body %d: %.80q", i, body)
		require.NotEmpty(t, m["error"])
	}
	// Bodies past the limit are cut off however they arrive: announced,
	// chunked, or never ending.
	code, _, _ := f.post(t, `{"txid":"0x`+strings.Repeat("a", 64)+`"}`+strings.Repeat(" ", api.MaxBodyBytes))
	require.Equal(t, http.StatusRequestEntityTooLarge, code, "a valid object padded past the limit")
	streams := []io.Reader{
		strings.NewReader(`{"txid":"` + strings.Repeat("a", api.MaxBodyBytes) + `"}`),
		io.MultiReader(strings.NewReader(`{"txid":"`), endless('a')),
		endless('['),
		io.MultiReader(strings.NewReader(`{"txid":`), endless(' ')),
	}
	for _, r := range streams {
		resp, err := http.Post(f.srv.URL+"/api/competition/trades", "application/json", r)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		// A stream of '[' hits the decoder's depth limit before the size limit.
		require.Contains(t, []int{http.StatusRequestEntityTooLarge, http.StatusBadRequest}, resp.StatusCode, "%s", body)
	}
	all, err := f.st.Swaps(context.Background())
	require.NoError(t, err)
	require.Empty(t, all, "a hostile body wrote a swap")
	require.Zero(t, f.sim.Stats().Total, "a hostile body reached Hiro")
	t.Logf("figures: %d hostile bodies and %d oversized or endless ones against POST /api/competition/trades, 0 rows written, 0 upstream calls",
		len(hostileTradeBodies), len(streams)+1)
}

// endless is a body that never ends.
type endless byte

func (e endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(e)
	}
	return len(p), nil
}

// serve runs the API through api.Serve, with its production timeouts and
// limits, on a free port.
func serve(t *testing.T) string {
	t.Helper()
	st, err := store.Open(context.Background(), testenv.PostgresURL(t))
	require.NoError(t, err)
	t.Cleanup(st.Close)
	h := api.New(api.Options{Store: st, Catalog: catalog.Default(), Logger: zap.NewNop(),
		Status: func(context.Context) (workflows.Status, error) { return workflows.Status{}, errors.New("none") }})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- api.Serve(ctx, addr, h, zap.NewNop()) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	}, 10*time.Second, 20*time.Millisecond)
	return addr
}

// The server hangs up on a client that never finishes its headers, and
// refuses headers past its limit, so slow or bloated requests cannot pile up.
func TestServerTimeoutsAndHeaderLimit(t *testing.T) {
	t.Parallel()
	addr := serve(t)

	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: pacer\r\nX-Slow: ")
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(15*time.Second)))
	start := time.Now()
	_, err = bufio.NewReader(conn).ReadString('\n')
	require.Error(t, err, "the server answered a request whose headers never ended")
	var netErr net.Error
	require.False(t, errors.As(err, &netErr) && netErr.Timeout(), "the server kept a half-sent request open for 15 s")
	require.Less(t, time.Since(start), 15*time.Second)

	resp, body := getRaw(t, "http://"+addr, "/api/prices?tokens="+strings.Repeat("stx,", 16<<10))
	require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode, "%.200s", body)
}
