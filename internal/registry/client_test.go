package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/fault"
	"github.com/pacer-dev/pacer/internal/testenv/loopback"
	"github.com/pacer-dev/pacer/internal/upstream"
)

// pagedRegistry serves agents two to a page, each page with an ETag of its
// own content and 304 on If-None-Match, as a registry behind a CDN does.
type pagedRegistry struct {
	mu     sync.Mutex
	agents []string
	asked  []string // "page:status" of each request
}

func (g *pagedRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	lo, hi := min(page*2, len(g.agents)), min(page*2+2, len(g.agents))
	recs := make([]map[string]any, 0, 2)
	for _, a := range g.agents[lo:hi] {
		recs = append(recs, map[string]any{"stxAddress": a, "erc8004AgentId": nil})
	}
	body := map[string]any{"agents": recs, "next": nil}
	if hi < len(g.agents) {
		body["next"] = "http://" + r.Host + "/agents?page=" + strconv.Itoa(page+1)
	}
	raw, _ := json.Marshal(body)
	etag := `"` + strconv.Itoa(page) + "-" + strings.Join(g.agents[lo:hi], ",") + `"`
	if r.Header.Get("If-None-Match") == etag {
		g.asked = append(g.asked, strconv.Itoa(page)+":304")
		w.WriteHeader(http.StatusNotModified)
		return
	}
	g.asked = append(g.asked, strconv.Itoa(page)+":200")
	w.Header().Set("ETag", etag)
	_, _ = w.Write(raw)
}

func (g *pagedRegistry) take() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := g.asked
	g.asked = nil
	return out
}

func newTestClient(url string) *Client {
	return &Client{Conn: upstream.Conn{BaseURL: url, HTTP: loopback.Client(),
		Sleep: func(context.Context, time.Duration) error { return nil }}}
}

func addresses(agents []Agent) []string {
	out := make([]string, len(agents))
	for i, a := range agents {
		out[i] = a.STXAddress
	}
	return out
}

func testAddresses(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = MainnetSP([]byte(fmt.Sprintf("agent-%014d", i)))
	}
	return out
}

// A change on a later page is read at the next read although the first
// page answers 304 (issue 41.7: a 304 on the first page was read as
// "nothing changed anywhere", and the change waited for page 1 to change).
func TestReadRevalidatesEveryPage(t *testing.T) {
	t.Parallel()
	all := testAddresses(7)
	g := &pagedRegistry{agents: all[:6]}
	hs := httptest.NewServer(g)
	t.Cleanup(hs.Close)
	c := newTestClient(hs.URL + "/agents")

	var pages []int
	first, err := c.Read(t.Context(), nil, func(n int) { pages = append(pages, n) })
	require.NoError(t, err)
	require.False(t, first.NotModified)
	require.Equal(t, all[:6], addresses(first.Agents))
	require.Equal(t, []int{1, 2, 3}, pages, "progress after every page")
	require.Equal(t, []string{"0:200", "1:200", "2:200"}, g.take())

	// Nothing changed: every page answers 304, and the read says so.
	again, err := c.Read(t.Context(), first.Pages, nil)
	require.NoError(t, err)
	require.True(t, again.NotModified)
	require.Equal(t, all[:6], addresses(again.Agents))
	require.Equal(t, []string{"0:304", "1:304", "2:304"}, g.take())

	// The last page changes (one agent replaced, one added): pages 1
	// and 2 still answer 304 and stand for what they listed.
	g.mu.Lock()
	g.agents = append(append(g.agents[:4:4], all[6]), all[5])
	g.mu.Unlock()
	changed, err := c.Read(t.Context(), again.Pages, nil)
	require.NoError(t, err)
	require.False(t, changed.NotModified)
	require.Equal(t, []string{all[0], all[1], all[2], all[3], all[6], all[5]}, addresses(changed.Agents))
	require.Equal(t, []string{"0:304", "1:304", "2:200"}, g.take())
	require.Equal(t, 3, changed.Requests)
}

// The registry's next link names a page on the configured URL's scheme,
// host and port, or the read fails and nothing elsewhere is asked (issue
// 41.8: loopback, the operator's listener, metadata addresses, https down
// to http).
func TestReadRefusesANextLinkOffTheConfiguredOrigin(t *testing.T) {
	t.Parallel()
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		elsewhere.Add(1)
		_, _ = w.Write([]byte(`{"agents":[],"next":null}`))
	}))
	t.Cleanup(other.Close)
	agent := testAddresses(1)[0]
	t.Run("refused", func(t *testing.T) { // the subtests end before the count below
		refusedNext(t, agent, other.URL)
	})
	require.Zero(t, elsewhere.Load(), "no request left the configured origin")

	// The same origin spelt with its default port is the same origin.
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next := any(nil)
		if r.URL.Query().Get("page") == "" {
			next = "HTTP://" + strings.ToUpper(r.Host) + "/agents?page=1"
		}
		raw, _ := json.Marshal(map[string]any{"agents": []map[string]any{}, "next": next})
		_, _ = w.Write(raw)
	}))
	t.Cleanup(hs.Close)
	read, err := newTestClient(hs.URL+"/agents").Read(t.Context(), nil, nil)
	require.NoError(t, err)
	require.Len(t, read.Pages, 2)
}

func refusedNext(t *testing.T, agent, other string) {
	for _, next := range []string{
		other + "/agents?page=1",                   // another port of the same host
		"http://169.254.169.254/latest/meta-data/", // a metadata address
		"http://user:pw@" + "HOST" + "/agents?page=1",
		"https://" + "HOST" + "/agents?page=1", // another scheme
		"/agents?page=1",                       // not absolute
		"http:agents",                          // opaque
	} {
		t.Run(next, func(t *testing.T) {
			t.Parallel()
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := strings.ReplaceAll(next, "HOST", r.Host)
				raw, _ := json.Marshal(map[string]any{"agents": []map[string]any{{"stxAddress": agent}}, "next": n})
				_, _ = w.Write(raw)
			}))
			t.Cleanup(hs.Close)
			_, err := newTestClient(hs.URL+"/agents").Read(t.Context(), nil, nil)
			require.Error(t, err)
			require.Equal(t, pacer.ClassParseError, fault.ClassOf(err))
			require.Contains(t, err.Error(), "registry page 1: next")
		})
	}
}

// A page that lists more records than a read may hold fails at the first
// record past the bound, before the rest of it is read: an endless page
// stops after MaxRecords records (issue 41.8), not after 32 MiB of body.
func TestReadBoundsAPageBeforeDecodingIt(t *testing.T) {
	t.Parallel()
	agent := testAddresses(1)[0]
	rec := []byte(`{"stxAddress":"` + agent + `","erc8004AgentId":null},`)
	var written atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"next":null,"agents":[`))
		for r.Context().Err() == nil {
			n, err := w.Write(rec)
			if err != nil {
				return
			}
			written.Add(int64(n))
		}
	}))
	t.Cleanup(hs.Close)
	c := newTestClient(hs.URL + "/agents")
	// What ends the read is the record bound, not the attempt's 8 s, which
	// a loaded machine's race-instrumented decoding of 100,000 records
	// can outlast.
	c.Conn.AttemptTimeout = 2 * time.Minute
	_, err := c.Read(t.Context(), nil, nil)
	require.Error(t, err)
	require.Equal(t, pacer.ClassParseError, fault.ClassOf(err))
	require.Contains(t, err.Error(), fmt.Sprintf("more than %d agents", MaxRecords))
	t.Logf("figures: an endless page failed after %d records, with %.1f MiB written by the server (the body bound is %d MiB)",
		MaxRecords, float64(written.Load())/(1<<20), maxPageBytes>>20)
}
