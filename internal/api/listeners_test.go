package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/actor"
	"github.com/pacer-dev/pacer/internal/api"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/metrics"
	"github.com/pacer-dev/pacer/internal/pacing"
	"github.com/pacer-dev/pacer/internal/rollup"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/internal/webhook"
	"github.com/pacer-dev/pacer/workflows"
)

// Operators' data that must never reach the public listener.
const (
	secretHost  = "hooks.operator-only-host.example"
	stopReason  = "migrating db-primary for alice"
	budgetLeft  = 31337
	disabledWhy = "endpoint-said-410-gone-operator-note"
	// temporalNamespace labels the Temporal SDK's series.
	temporalNamespace = "ns-operator-only"
)

// fakeAdmin stands for the admin API (built elsewhere): it lists its
// routes, so the operator walk covers them, and echoes who acted.
type fakeAdmin struct{ mux *http.ServeMux }

var fakeAdminRoutes = []string{"GET /api/admin/subscribers", "POST /api/admin/subscribers/{id}/disable", "GET /api/admin/audit"}

func newFakeAdmin() *fakeAdmin {
	a := &fakeAdmin{mux: http.NewServeMux()}
	for _, p := range fakeAdminRoutes {
		a.mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "actor="+actor.From(r.Context()))
		})
	}
	return a
}

func (a *fakeAdmin) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }
func (a *fakeAdmin) Routes() []string                                 { return fakeAdminRoutes }

type listeners struct {
	h      *api.Server
	st     *store.Store
	public *httptest.Server
	op     *httptest.Server
	sub    store.Subscriber
	dID    string
}

// newListeners is the API on real Postgres holding what operators see: a
// subscriber (id, host, a disabled reason), its delivery, a stopping
// scheduler with a reason, and upstream budgets in the status and the
// metrics.
func newListeners(t *testing.T, tokens []api.OperatorToken) *listeners {
	t.Helper()
	return newListenersWith(t, tokens, func(*store.Store) http.Handler { return newFakeAdmin() })
}

// newListenersWith is newListeners with the admin API that admin builds.
func newListenersWith(t *testing.T, tokens []api.OperatorToken, admin func(*store.Store) http.Handler, opts ...func(*api.Options)) *listeners {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, testenv.PostgresURL(t))
	require.NoError(t, err)
	t.Cleanup(st.Close)
	require.NoError(t, st.Migrate(ctx))
	sub := store.Subscriber{ID: webhook.NewSubscriberID(), URL: "https://" + secretHost + "/hook", Secret: webhook.NewSecret(),
		PullToken: webhook.NewPullToken(), Events: []string{rollup.EventHourly}, CreatedAt: time.Now()}
	require.NoError(t, st.AddSubscriber(ctx, sub))
	_, err = st.Pool().Exec(ctx, `update subscribers set status = 'disabled', disabled_reason = $2, disabled_at = now() where id = $1`, sub.ID, disabledWhy)
	require.NoError(t, err)
	start := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	dID := webhook.DeliveryID(sub.ID, rollup.EventHourly, start)
	_, err = st.Pool().Exec(ctx, `
insert into deliveries (id, subscriber_id, event, period_start, period_end, payload, status, attempts, created_at, last_error)
values ($1, $2, 'hourly', $3, $4, '{"type":"rollup.hourly"}', 'exhausted', 6, now(), 'connection refused or unreachable')`,
		dID, sub.ID, start, start.Add(time.Hour))
	require.NoError(t, err)

	left := budgetLeft
	m := metrics.New()
	m.ObserveTenero(time.Second, pacer.TeneroResult{Run: pacer.Run{MinuteRemaining: &left, MonthRemaining: &left}}, nil)
	// The operators' families: subscribers and deliveries (read from the
	// store at each scrape), and the Temporal SDK's series.
	require.NoError(t, m.WatchStore(st, catalog.Default(), nil))
	m.ObserveDeliveryAttempt("delivered", false)
	th, err := m.TemporalHandler()
	require.NoError(t, err)
	th.WithTags(map[string]string{"namespace": temporalNamespace, "task_queue": "pacer-queue", "workflow_type": "SchedulerWorkflow"}).Counter("temporal_request").Inc(1)
	status := workflows.Status{WorkflowID: "v1", Stopping: &workflows.StopInput{Reason: stopReason},
		LastTeneroResult:  &pacer.TeneroResult{Run: pacer.Run{MinuteRemaining: &left, MonthRemaining: &left}},
		Tasks:             map[string]workflows.TaskStatus{pacer.TaskSweep: {Pacing: &pacing.TaskStatus{ProjectedPerDay: 4242.5}}},
		Deliveries:        &workflows.DeliveryCounts{Retrying: 7},
		LastDeliverResult: &pacer.DeliverResult{Emitted: 9, Delivered: 9}}
	o := api.Options{Store: st, Catalog: catalog.Default(), Metrics: m.Handler(), Registerer: m.Registry(),
		Status:          func(context.Context) (workflows.Status, error) { return status, nil },
		TemporalHealth:  func(context.Context) error { return nil },
		ChainhookSecret: strings.Repeat("c", 32), Admin: admin(st), OperatorTokens: tokens}
	for _, opt := range opts {
		opt(&o)
	}
	h := api.New(o)
	l := &listeners{h: h, st: st, sub: sub, dID: dID}
	l.public = httptest.NewServer(h)
	t.Cleanup(l.public.Close)
	l.op = httptest.NewServer(h.Operator())
	t.Cleanup(l.op.Close)
	return l
}

var wildcard = regexp.MustCompile(`\{[^}]*\}`)

// requestFor turns a route pattern into a request that reaches it.
func requestFor(t *testing.T, base, pattern string, fill map[string]string) *http.Request {
	t.Helper()
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		method, path = http.MethodGet, pattern
	}
	path = strings.ReplaceAll(path, "{$}", "")
	path = wildcard.ReplaceAllStringFunc(path, func(w string) string {
		if v, ok := fill[strings.Trim(w, "{}")]; ok {
			return v
		}
		return "x1"
	})
	if strings.HasSuffix(path, "/") && path != "/" {
		path += "probe"
	}
	if path == "/" && pattern == "/" {
		path = "/no-such-page"
	}
	if q, ok := fill["?"+pattern]; ok {
		path += "?" + q
	}
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(fill["body:"+pattern])
	}
	req, err := http.NewRequest(method, base+path, body)
	require.NoError(t, err)
	return req
}

func fetch(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var hdr strings.Builder
	require.NoError(t, resp.Header.Write(&hdr))
	return resp.StatusCode, hdr.String() + "\n" + string(b)
}

// TestPublicListenerServesNoOperatorData walks every public route, the
// delivery pull with and without the right token included, and greps each
// answer for subscriber ids, hosts, disabled and stop reasons, and budgets.
func TestPublicListenerServesNoOperatorData(t *testing.T) {
	t.Parallel()
	l := newListeners(t, nil)
	now := time.Now().UTC().Truncate(time.Hour)
	fill := map[string]string{
		"id":                                l.dID,
		"?GET /api/rollups":                 "period=hour&from=" + now.Add(-24*time.Hour).Format(time.RFC3339) + "&to=" + now.Format(time.RFC3339),
		"?GET /api/prices":                  "tokens=stx",
		"body:POST /api/competition/trades": `{"txid":"0x` + strings.Repeat("ab", 32) + `"}`,
		"body:POST /api/chainhook":          `{}`,
	}
	// The status document keeps its budget fields, always null in public.
	// Nor the subscribers, deliveries, Temporal families and labels, the
	// delivery counts, the pacing (issue 28, finding 6).
	forbidden := []string{l.sub.ID, secretHost, stopReason, disabledWhy, "31337", "budget_remaining",
		`"budget"`, "sub_", "pacer_subscribers", "pacer_deliveries", "pacer_delivery_", "temporal_", temporalNamespace,
		"task_queue", "workflow_type", `"retrying"`, `"emitted"`, `"projectedPerDay"`, "4242.5"}
	routes := l.h.PublicRoutes()
	require.GreaterOrEqual(t, len(routes), 10)
	for _, p := range routes {
		for _, auth := range []string{"", "Bearer " + l.sub.PullToken, "Bearer " + l.sub.Secret} {
			req := requestFor(t, l.public.URL, p, fill)
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			code, got := fetch(t, req)
			for _, f := range forbidden {
				if p == api.PullPattern && auth == "Bearer "+l.sub.PullToken && (f == l.sub.ID || f == "sub_") {
					// The subscriber's own delivery names it; only its
					// token holder reads it.
					continue
				}
				require.NotContains(t, got, f, "%s (auth %t) answered %d with operators' data", p, auth != "", code)
			}
		}
	}
	// The operator's page is not on the public listener.
	code, got := fetch(t, requestFor(t, l.public.URL, "GET /{$}", nil))
	require.Equal(t, http.StatusOK, code)
	require.NotContains(t, got, "<html")
	// It is on the operator listener, and shows what operators need.
	code, got = fetch(t, requestFor(t, l.op.URL, "GET /{$}", nil))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, got, "<section id=\"scheduler\">")
	code, got = fetch(t, requestFor(t, l.op.URL, "GET /metrics", nil))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, got, "pacer_upstream_budget_remaining", "the full metrics are the operators'")
	for _, family := range []string{"pacer_subscribers{", "pacer_deliveries{", "pacer_delivery_attempts_total{", "temporal_request_total{", `namespace="` + temporalNamespace + `"`} {
		require.Contains(t, got, family, "the operator listener's metrics carry the operators' families")
	}
}

// TestOperatorListenerRefusesMissingOrWrongTokens walks every operator
// route, the admin API's included, with no token, wrong tokens and each
// right one: only a right one passes, and its name reaches the handler.
func TestOperatorListenerRefusesMissingOrWrongTokens(t *testing.T) {
	t.Parallel()
	tokens, err := api.ParseOperatorTokens("alice:" + strings.Repeat("a", 24) + ",bob:" + strings.Repeat("b", 24))
	require.NoError(t, err)
	l := newListeners(t, tokens)
	routes := l.h.OperatorRoutes()
	for _, r := range fakeAdminRoutes {
		require.Contains(t, routes, r, "the admin API's routes join the walk")
	}
	for _, p := range routes {
		for _, auth := range []string{"", "Bearer", "Bearer ", "Bearer " + strings.Repeat("a", 23), "Bearer " + strings.Repeat("a", 25),
			"Basic " + strings.Repeat("a", 24), strings.Repeat("a", 24), "Bearer alice:" + strings.Repeat("a", 24)} {
			req := requestFor(t, l.op.URL, p, nil)
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			code, got := fetch(t, req)
			require.Equal(t, http.StatusUnauthorized, code, "%s with %q", p, auth)
			require.NotContains(t, got, strings.Repeat("a", 20), "never echoes a token")
		}
		for _, tok := range tokens {
			req := requestFor(t, l.op.URL, p, nil)
			req.Header.Set("Authorization", "bearer "+tok.Token)
			code, got := fetch(t, req)
			require.NotEqual(t, http.StatusUnauthorized, code, "%s with %s's token: %s", p, tok.Name, got)
			if strings.Contains(p, api.AdminPrefix) && p != api.AdminPrefix {
				require.Contains(t, got, "actor="+tok.Name, "%s: the token's name is who acted", p)
			}
		}
	}
	// Probes need no token and learn nothing.
	code, _ := fetch(t, requestFor(t, l.op.URL, "GET /healthz", nil))
	require.Equal(t, http.StatusOK, code)
}

func TestParseOperatorTokens(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("t", 20)
	got, err := api.ParseOperatorTokens(long)
	require.NoError(t, err)
	require.Equal(t, []api.OperatorToken{{Name: "operator", Token: long}}, got)
	got, err = api.ParseOperatorTokens("ann:" + long + ", ben:" + long + "x")
	require.NoError(t, err)
	require.Len(t, got, 2)
	for _, bad := range []string{"short", "ann:" + long + ",ann:" + long + "y", "ann:" + long + ",ben:" + long, "bad name:" + long, ":" + long} {
		_, err := api.ParseOperatorTokens(bad)
		require.Error(t, err, bad)
		require.NotContains(t, err.Error(), long, "never quotes a token")
	}
}

// TestReadLimitPerClientBehindAProxy: through the real server, clients
// behind a trusted proxy get a bucket each; a client spoofing
// X-Forwarded-For from an untrusted address gets only its own.
func TestReadLimitPerClientBehindAProxy(t *testing.T) {
	t.Parallel()
	proxies, err := api.ParseTrustedProxies("127.0.0.1/32")
	require.NoError(t, err)
	srv := httptest.NewServer(api.New(api.Options{ReadsPerMinute: 2, TrustedProxies: proxies}))
	t.Cleanup(srv.Close)
	get := func(xff string) int {
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/", nil)
		require.NoError(t, err)
		if xff != "" {
			req.Header.Set("X-Forwarded-For", xff)
		}
		code, _ := fetch(t, req)
		return code
	}
	for _, client := range []string{"198.51.100.1", "198.51.100.2", "2001:db8:1:1::1"} {
		require.Equal(t, http.StatusOK, get(client))
		require.Equal(t, http.StatusOK, get(client))
		require.Equal(t, http.StatusTooManyRequests, get(client), client)
	}
	require.Equal(t, http.StatusTooManyRequests, get("2001:db8:1:1::ffff"), "the same /64 is the same client")
	require.Equal(t, http.StatusOK, get("2001:db8:1:2::1"), "another /64 is another")
	// Spoofing the left part changes nothing: the proxy's right-most hop
	// is the client.
	require.Equal(t, http.StatusTooManyRequests, get("203.0.113.50, 198.51.100.1"))

	untrusted := httptest.NewServer(api.New(api.Options{ReadsPerMinute: 2}))
	t.Cleanup(untrusted.Close)
	for i := range 3 {
		req, err := http.NewRequest(http.MethodGet, untrusted.URL+"/", nil)
		require.NoError(t, err)
		req.Header.Set("X-Forwarded-For", fmt.Sprintf("198.51.100.%d", i))
		code, _ := fetch(t, req)
		if i < 2 {
			require.Equal(t, http.StatusOK, code)
		} else {
			require.Equal(t, http.StatusTooManyRequests, code, "an untrusted connection's header is ignored")
		}
	}
}

// Issue 41.12: every public route answers through a read pool whose user
// may only read what migration 025 grants pacer_public (and whose
// transactions are read-only): none answers 5xx, the delivery pull
// included (with its token: the delivery and the subscriber's token
// hash). Before, the public pool wrote completeThrough's ratchet, which
// such a user cannot.
func TestEveryPublicRouteReadsWithThePublicRole(t *testing.T) {
	t.Parallel()
	l := newListenersWith(t, nil, func(*store.Store) http.Handler { return newFakeAdmin() }, func(o *api.Options) {
		reads, err := store.OpenPublicReads(context.Background(), testenv.AsRole(t, o.Store.Pool().Config().ConnString(), "pacer_public"))
		require.NoError(t, err)
		t.Cleanup(reads.Close)
		o.ReadStore = reads
	})
	now := time.Now().UTC().Truncate(time.Hour)
	fill := map[string]string{
		"id":                "x1",
		"?GET /api/rollups": "period=hour&from=" + now.Add(-24*time.Hour).Format(time.RFC3339) + "&to=" + now.Format(time.RFC3339),
		"?GET /api/prices":  "tokens=stx",
	}
	// A reader has read on past what was published: the public pool
	// answers what the worker published, and does not move it (it used to
	// write the next value, which this role may not).
	const published = 1778700600
	_, err := l.st.Pool().Exec(context.Background(), `insert into competition_state (key, value, updated_at) values ('complete_through', $1, now())`,
		strconv.Itoa(published))
	require.NoError(t, err)
	_, err = l.st.Pool().Exec(context.Background(), `insert into discovery_cursors (reader, updated_at, block_time) values ('tail', now(), $1)`, published+3600)
	require.NoError(t, err)
	gets := 0
	for _, p := range l.h.PublicRoutes() {
		if method, _, _ := strings.Cut(p, " "); method != http.MethodGet || !strings.Contains(p, " ") {
			continue
		}
		gets++
		code, got := fetch(t, requestFor(t, l.public.URL, p, fill))
		require.Less(t, code, 500, "%s: %s", p, got)
	}
	require.GreaterOrEqual(t, gets, 10)
	var board struct {
		CompleteThrough *time.Time `json:"completeThrough"`
	}
	code, got := fetch(t, requestFor(t, l.public.URL, "GET /api/competition/leaderboard", nil))
	require.Equal(t, http.StatusOK, code, got)
	require.NoError(t, json.Unmarshal([]byte(got[strings.Index(got, "\n\n")+2:]), &board))
	require.NotNil(t, board.CompleteThrough, "the published completeThrough")
	require.Equal(t, int64(published), board.CompleteThrough.Unix())
	fill["id"] = l.dID
	req := requestFor(t, l.public.URL, api.PullPattern, fill)
	req.Header.Set("Authorization", "Bearer "+l.sub.PullToken)
	code, got = fetch(t, req)
	require.Equal(t, http.StatusOK, code, got)
	t.Logf("figures: %d public GET routes and the pull, each under 500, as a pacer_public member", gets)
}
