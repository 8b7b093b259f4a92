package sim

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sleepLog records the delays the simulator asked for instead of waiting.
type sleepLog struct {
	mu     sync.Mutex
	delays []time.Duration
	err    error // returned by every sleep, e.g. a client that gave up
}

func (l *sleepLog) sleep(_ context.Context, d time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.delays = append(l.delays, d)
	return l.err
}

func TestFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		give   Faults
		path   string
		check  func(t *testing.T, rec *http.Response, body []byte)
		delays []time.Duration
	}{
		{
			name: "429 storm",
			give: Faults{TooManyRequests: 1},
			check: func(t *testing.T, res *http.Response, body []byte) {
				require.Equal(t, http.StatusTooManyRequests, res.StatusCode)
				ra, err := strconv.Atoi(res.Header.Get("Retry-After"))
				require.NoError(t, err)
				require.True(t, ra >= 1 && ra <= 5, "Retry-After %d", ra)
				// The storm is not announced by the quota headers.
				require.Equal(t, "99", res.Header.Get(headerMinuteRemaining))
				require.Equal(t, json.Number("429"), decode(t, body)["statusCode"])
			},
		},
		{
			name: "server error",
			give: Faults{ServerError: 1},
			check: func(t *testing.T, res *http.Response, body []byte) {
				require.Contains(t, []int{500, 502, 503}, res.StatusCode)
				require.Equal(t, "99", res.Header.Get(headerMinuteRemaining))
			},
		},
		{
			name:   "slow, default delay",
			give:   Faults{Slow: 1},
			delays: []time.Duration{10 * time.Second},
			check: func(t *testing.T, res *http.Response, body []byte) {
				require.Equal(t, http.StatusOK, res.StatusCode)
			},
		},
		{
			name:   "slow and failing",
			give:   Faults{Slow: 1, SlowDelay: Duration(1500 * time.Millisecond), ServerError: 1},
			delays: []time.Duration{1500 * time.Millisecond},
			check: func(t *testing.T, res *http.Response, body []byte) {
				require.GreaterOrEqual(t, res.StatusCode, 500)
			},
		},
		{
			name: "truncated",
			give: Faults{Truncated: 1},
			check: func(t *testing.T, res *http.Response, body []byte) {
				require.Equal(t, http.StatusOK, res.StatusCode)
				require.False(t, json.Valid(body), "body: %s", body)
				require.Contains(t, string(body), `{"statusCode":200`)
			},
		},
		{
			name: "wrong type",
			give: Faults{WrongType: 1},
			check: func(t *testing.T, res *http.Response, body []byte) {
				require.Equal(t, http.StatusOK, res.StatusCode)
				doc := decode(t, body)
				require.Equal(t, json.Number("200"), doc["statusCode"], "the envelope is intact")
				data := doc["data"].(map[string]any)
				require.IsType(t, map[string]any{}, data["price_usd"])
				require.IsType(t, map[string]any{}, data["decimals"])
			},
		},
		{
			name: "huge",
			give: Faults{Huge: 1},
			check: func(t *testing.T, res *http.Response, body []byte) {
				require.Equal(t, http.StatusOK, res.StatusCode)
				require.Greater(t, len(body), defaultHugeBytes)
				require.True(t, json.Valid(body))
				require.Empty(t, res.Header.Get("Content-Length"), "no stale length from the handler")
			},
		},
		{
			name: "huge, sized",
			give: Faults{Huge: 1, HugeBytes: 1000},
			check: func(t *testing.T, res *http.Response, body []byte) {
				require.Greater(t, len(body), 1000)
				require.Less(t, len(body), 2000)
				require.True(t, json.Valid(body))
			},
		},
		{
			name: "aimed elsewhere",
			give: Faults{PathPrefix: "/extended/", ServerError: 1, Truncated: 1},
			check: func(t *testing.T, res *http.Response, body []byte) {
				require.Equal(t, http.StatusOK, res.StatusCode)
				require.True(t, json.Valid(body))
			},
		},
		{
			name: "aimed here",
			give: Faults{PathPrefix: "/v1/stacks/", ServerError: 1},
			check: func(t *testing.T, res *http.Response, body []byte) {
				require.GreaterOrEqual(t, res.StatusCode, 500)
			},
		},
		{
			name: "aimed at another exact path",
			give: Faults{Path: "/v1/stacks/tokens", ServerError: 1},
			check: func(t *testing.T, res *http.Response, body []byte) {
				require.Equal(t, http.StatusOK, res.StatusCode, "a path below it is not it")
			},
		},
		{
			name: "aimed at this exact path",
			give: Faults{Path: tokenPath("stx"), ServerError: 1},
			check: func(t *testing.T, res *http.Response, body []byte) {
				require.GreaterOrEqual(t, res.StatusCode, 500)
			},
		},
		{
			name: "unknown token, wrong type keeps the 404",
			give: Faults{WrongType: 1},
			path: tokenPath("SP000000000000000000002Q6VF78.nothing"),
			check: func(t *testing.T, res *http.Response, body []byte) {
				require.Equal(t, http.StatusNotFound, res.StatusCode)
				require.JSONEq(t, `{"statusCode":404,"message":"Token not found","data":null}`, string(body))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sl := &sleepLog{}
			s, _ := newSim(t, Config{Sleep: sl.sleep})
			require.NoError(t, s.SetFaults(tt.give))
			path := tt.path
			if path == "" {
				path = tokenPath("stx")
			}

			rec := get(t, s, path)
			res := rec.Result()
			tt.check(t, res, rec.Body.Bytes())
			require.Equal(t, tt.delays, sl.delays)
		})
	}
}

func TestFaultsClientGivesUp(t *testing.T) {
	t.Parallel()
	sl := &sleepLog{err: context.Canceled}
	s, _ := newSim(t, Config{Sleep: sl.sleep})
	require.NoError(t, s.SetFaults(Faults{Slow: 1}))

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, tokenPath("stx"), nil)
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)

	require.Empty(t, rec.Body.String())
	require.Equal(t, 1, s.Stats().Count(TeneroTokenRoute, StatusClientClosed))
}

// TestFaultsAreRepeatable shows that the dice come from the seed: two
// simulators with one seed fail the same requests.
func TestFaultsAreRepeatable(t *testing.T) {
	t.Parallel()
	statuses := func(seed int64) []int {
		s, _ := newSim(t, Config{Seed: seed})
		require.NoError(t, s.SetFaults(Faults{ServerError: 0.3, TooManyRequests: 0.2}))
		var out []int
		for range 50 {
			out = append(out, get(t, s, tokenPath("stx")).Code)
		}
		return out
	}
	a := statuses(9)
	require.Equal(t, a, statuses(9))
	require.Contains(t, a, http.StatusOK)
	require.Contains(t, a, http.StatusTooManyRequests)
	require.NotEqual(t, a, statuses(10))
}

func TestFaultsOverHTTP(t *testing.T) {
	t.Parallel()
	s, _ := newSim(t, Config{})

	rec := get(t, s, "/_sim/faults")
	require.Equal(t, http.StatusOK, rec.Code)
	require.JSONEq(t, `{}`, rec.Body.String())

	rec = do(t, s, http.MethodPut, "/_sim/faults", `{"pathPrefix":"/v1/","serverError":0.25,"slow":0.5,"slowDelay":"2.5s"}`)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	want := Faults{PathPrefix: "/v1/", ServerError: 0.25, Slow: 0.5, SlowDelay: Duration(2500 * time.Millisecond)}
	require.Equal(t, want, s.Faults())
	require.JSONEq(t, `{"pathPrefix":"/v1/","serverError":0.25,"slow":0.5,"slowDelay":"2.5s"}`, get(t, s, "/_sim/faults").Body.String())

	for _, bad := range []string{
		`{"serverError":1.5}`,
		`{"slow":-0.1}`,
		`{"slowDelay":"soon"}`,
		`{"slowDelay":"1h"}`,
		`{"hugeBytes":-1}`,
		`{"serverErrors":1}`,
		`not json`,
	} {
		rec := do(t, s, http.MethodPut, "/_sim/faults", bad)
		require.Equal(t, http.StatusBadRequest, rec.Code, bad)
		require.NotEmpty(t, decode(t, rec.Body.Bytes())["error"], bad)
		require.Equal(t, want, s.Faults(), "a bad request changes nothing")
	}

	rec = do(t, s, http.MethodPut, "/_sim/faults", `{}`)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, Faults{}, s.Faults())
}

func TestSetFaultsValidates(t *testing.T) {
	t.Parallel()
	s, _ := newSim(t, Config{})

	require.ErrorContains(t, s.SetFaults(Faults{Huge: 2}), "huge")
	require.ErrorContains(t, s.SetFaults(Faults{SlowDelay: Duration(-time.Second)}), "slowDelay")
	require.Equal(t, Faults{}, s.Faults())
}
