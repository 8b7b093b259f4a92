package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/api"
	"github.com/pacer-dev/pacer/internal/rollup"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/internal/webhook"
)

func TestParseRollupQuery(t *testing.T) {
	t.Parallel()
	agent := "SP" + strings.Repeat("0", 38)
	got, err := api.ParseRollupQuery("period=day&from=2026-11-01T00:00:00%2B01:00&to=2026-11-08T00:00:00Z&agent=" + agent)
	require.NoError(t, err)
	require.Equal(t, rollup.Day, got.Period)
	require.Equal(t, time.Date(2026, 10, 31, 23, 0, 0, 0, time.UTC), got.From)
	require.Equal(t, rollup.KindAgent, got.SubjectKind)
	require.Equal(t, agent, got.Subject)

	got, err = api.ParseRollupQuery("period=hour&from=2026-11-01T00:00:00Z&to=2026-11-01T06:00:00Z&token=" + url.QueryEscape(sbtc))
	require.NoError(t, err)
	require.Equal(t, rollup.KindToken, got.SubjectKind)
	require.Equal(t, sbtc, got.Subject)

	ok := "from=2026-11-01T00:00:00Z&to=2026-11-02T00:00:00Z"
	for _, tc := range []struct{ give, want string }{
		{ok, "period is required"},
		{"period=week&" + ok, "period must be hour or day"},
		{"period=hour", "from is required"},
		{"period=hour&from=2026-11-01T00:00:00Z", "to is required"},
		{"period=hour&from=yesterday&to=2026-11-02T00:00:00Z", "not an RFC3339 time"},
		{"period=hour&from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z", "from must be before to"},
		{"period=hour&from=2026-11-01T00:00:00Z&to=2026-11-01T00:00:00Z", "from must be before to"},
		{"period=hour&from=2026-11-01T00:00:00Z&to=2026-11-09T00:00:00Z", "range longer than"},
		{"period=day&from=2025-01-01T00:00:00Z&to=2026-11-09T00:00:00Z", "range longer than"},
		{"period=hour&" + ok + "&token=stx&agent=" + agent, "not both"},
		{"period=hour&" + ok + "&token=x'--", "malformed token id"},
		{"period=hour&" + ok + "&agent=nobody", "malformed agent"},
		{"period=hour&period=day&" + ok, "more than once"},
		{"period=hour&" + ok + "&limit=5", "unknown parameter"},
		{"period=hour&%zz", "malformed query"},
	} {
		_, err := api.ParseRollupQuery(tc.give)
		require.ErrorContains(t, err, tc.want, tc.give)
	}
}

type rollupsFixture struct {
	st  *store.Store
	srv *httptest.Server
}

func newRollupsFixture(t *testing.T) *rollupsFixture {
	t.Helper()
	st := testenv.Store(t)
	srv := httptest.NewServer(api.New(api.Options{Store: st}))
	t.Cleanup(srv.Close)
	return &rollupsFixture{st: st, srv: srv}
}

func (f *rollupsFixture) get(t *testing.T, path string, header http.Header) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, f.srv.URL+path, nil)
	require.NoError(t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var raw json.RawMessage
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&raw), "every answer is JSON")
	return resp.StatusCode, raw
}

func TestRollupsEndpoint(t *testing.T) {
	t.Parallel()
	f := newRollupsFixture(t)
	h0 := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	// Three hours of a token and an agent, written as the rollup task does.
	for i := range 3 {
		start := h0.Add(time.Duration(i) * time.Hour)
		_, err := f.st.Pool().Exec(t.Context(), `
insert into rollups (period, period_start, period_end, subject_kind, subject, data, complete, computed_at) values
 ('hour', $1, $2, 'token', 'stx', jsonb_build_object('open', 1.5, 'close', 1.25::numeric + $3), true, $2),
 ('hour', $1, $2, 'agent', $4, '{"swaps":2,"volumeUsd":12.345678901234567890}', true, $2),
 ('hour', $1, $2, 'competition', 'all', '{"swaps":2}', true, $2)`, start, start.Add(time.Hour), i, "SP"+strings.Repeat("1", 38))
		require.NoError(t, err)
	}

	code, raw := f.get(t, "/api/rollups?period=hour&from=2026-11-02T09:00:00Z&to=2026-11-02T11:00:00Z", nil)
	require.Equal(t, http.StatusOK, code, string(raw))
	var resp api.RollupsResponse
	require.NoError(t, json.Unmarshal(raw, &resp))
	require.Len(t, resp.Rollups, 6, "two hours, every subject")
	require.Equal(t, h0, resp.Rollups[0].PeriodStart)
	require.Contains(t, string(raw), "12.345678901234567890", "numbers keep every digit")

	code, raw = f.get(t, "/api/rollups?period=hour&from=2026-11-02T00:00:00Z&to=2026-11-03T00:00:00Z&token=stx", nil)
	require.Equal(t, http.StatusOK, code)
	require.NoError(t, json.Unmarshal(raw, &resp))
	require.Len(t, resp.Rollups, 3)
	for i, r := range resp.Rollups {
		require.Equal(t, rollup.KindToken, r.SubjectKind)
		require.JSONEq(t, `{"open":1.5,"close":`+[]string{"1.25", "2.25", "3.25"}[i]+`}`, string(r.Data))
	}

	code, raw = f.get(t, "/api/rollups?period=day&from=2026-11-02T00:00:00Z&to=2026-11-03T00:00:00Z", nil)
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, `{"period":"day","from":"2026-11-02T00:00:00Z","to":"2026-11-03T00:00:00Z","rollups":[],"completeThrough":null}`, string(raw))

	code, raw = f.get(t, "/api/rollups?period=hour&from=2026-11-02T00:00:00Z&to=2026-11-13T00:00:00Z", nil)
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, string(raw), "range longer than")

	// More rows than one answer may carry: narrow it.
	_, err := f.st.Pool().Exec(t.Context(), `
insert into rollups (period, period_start, period_end, subject_kind, subject, data, complete, computed_at)
select 'hour', $1, $2, 'agent', 'SP' || lpad(g::text, 38, '0'), '{}', true, $2 from generate_series(1, $3) g`,
		h0.Add(5*time.Hour), h0.Add(6*time.Hour), api.MaxRollupRows)
	require.NoError(t, err)
	code, raw = f.get(t, "/api/rollups?period=hour&from=2026-11-02T00:00:00Z&to=2026-11-03T00:00:00Z", nil)
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, string(raw), "narrow the range")
}

// A subscriber pulls any of its deliveries with its pull token; nobody else
// can, and a refusal says nothing about whether the id exists.
func TestPullDelivery(t *testing.T) {
	t.Parallel()
	f := newRollupsFixture(t)
	sub := store.Subscriber{ID: webhook.NewSubscriberID(), URL: "https://hooks.example/x", Secret: webhook.NewSecret(),
		PullToken: webhook.NewPullToken(), Events: []string{rollup.EventHourly}, CreatedAt: time.Now()}
	require.NoError(t, f.st.AddSubscriber(t.Context(), sub))
	other := store.Subscriber{ID: webhook.NewSubscriberID(), URL: "https://hooks.example/y", Secret: webhook.NewSecret(),
		PullToken: webhook.NewPullToken(), Events: []string{rollup.EventHourly}, CreatedAt: time.Now()}
	require.NoError(t, f.st.AddSubscriber(t.Context(), other))
	// A subscriber from before pull tokens: it has none, and no token
	// (not even an empty one) pulls its deliveries.
	old := store.Subscriber{ID: webhook.NewSubscriberID(), URL: "https://hooks.example/z", Secret: webhook.NewSecret(),
		Events: []string{rollup.EventHourly}, CreatedAt: time.Now()}
	require.NoError(t, f.st.AddSubscriber(t.Context(), old))
	start := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	id := webhook.DeliveryID(sub.ID, rollup.EventHourly, start)
	oldID := webhook.DeliveryID(old.ID, rollup.EventHourly, start)
	for _, d := range []struct{ id, sub string }{{id, sub.ID}, {oldID, old.ID}} {
		_, err := f.st.Pool().Exec(t.Context(), `
insert into deliveries (id, subscriber_id, event, period_start, period_end, payload, status, attempts, created_at,
    last_status, last_error)
values ($1, $2, 'hourly', $3, $4, '{"type":"rollup.hourly","data":{"x":1.10}}', 'exhausted', 6, now(),
    null, 'connection refused or unreachable')`,
			d.id, d.sub, start, start.Add(time.Hour))
		require.NoError(t, err)
	}

	bearer := func(s string) http.Header { return http.Header{"Authorization": {"Bearer " + s}} }
	code, raw := f.get(t, "/api/deliveries/"+id, bearer(sub.PullToken))
	require.Equal(t, http.StatusOK, code, string(raw))
	var d store.Delivery
	require.NoError(t, json.Unmarshal(raw, &d))
	require.Equal(t, id, d.ID)
	require.Equal(t, store.DeliveryExhausted, d.Status)
	require.JSONEq(t, `{"type":"rollup.hourly","data":{"x":1.10}}`, string(d.Payload))
	require.NotContains(t, string(raw), sub.Secret)
	require.NotContains(t, string(raw), sub.PullToken)
	require.Equal(t, "no HTTP answer", d.LastError, "a refused connection reads like any other failure: no port scanner")

	// Unknown id, wrong token, the signing secret, a token of another
	// subscriber: one status, one body.
	var refusal []byte
	for _, tc := range []struct {
		name   string
		path   string
		header http.Header
	}{
		{"the signing secret is no credential", "/api/deliveries/" + id, bearer(sub.Secret)},
		{"another subscriber's token", "/api/deliveries/" + id, bearer(other.PullToken)},
		{"the token with a suffix", "/api/deliveries/" + id, bearer(sub.PullToken + "x")},
		{"unknown id", "/api/deliveries/" + webhook.DeliveryID(sub.ID, rollup.EventHourly, start.Add(time.Hour)), bearer(sub.PullToken)},
		{"malformed id", "/api/deliveries/..%2f..%2fetc", bearer(sub.PullToken)},
		{"a subscriber without a token", "/api/deliveries/" + oldID, bearer(webhook.NewPullToken())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, raw := f.get(t, tc.path, tc.header)
			require.Equal(t, http.StatusNotFound, code, string(raw))
			require.NotContains(t, string(raw), "x\":1.1", "no payload without the token")
			if refusal == nil {
				refusal = raw
			}
			require.Equal(t, string(refusal), string(raw), "every refusal reads alike")
		})
	}
	for _, tc := range []struct {
		name   string
		header http.Header
	}{
		{"no credentials", nil},
		{"basic auth", http.Header{"Authorization": {"Basic eDp5"}}},
		{"empty bearer", http.Header{"Authorization": {"Bearer "}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, raw := f.get(t, "/api/deliveries/"+id, tc.header)
			require.Equal(t, http.StatusUnauthorized, code, string(raw))
		})
	}
}

// Requests that differ by seconds select the same periods, and are one
// query and one cache entry (issue 41, item 10): from and to round up to
// the quarter hour every period starts on.
func TestRollupQueriesRoundToThePeriodGrid(t *testing.T) {
	t.Parallel()
	a, err := api.ParseRollupQuery("period=hour&from=2026-11-01T10:17:03Z&to=2026-11-01T12:44:59Z")
	require.NoError(t, err)
	b, err := api.ParseRollupQuery("period=hour&from=2026-11-01T10:29:00Z&to=2026-11-01T12:30:01Z")
	require.NoError(t, err)
	require.Equal(t, a, b)
	require.Equal(t, time.Date(2026, 11, 1, 10, 30, 0, 0, time.UTC), a.From)
	require.Equal(t, time.Date(2026, 11, 1, 12, 45, 0, 0, time.UTC), a.To)
	// Nepal's midnight (+05:45) is a day's start in that zone: kept as is.
	c, err := api.ParseRollupQuery("period=day&from=2026-11-01T00:00:00%2B05:45&to=2026-11-03T00:00:00%2B05:45")
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 10, 31, 18, 15, 0, 0, time.UTC), c.From)
}
