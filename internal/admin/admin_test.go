package admin_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/admin"
	"github.com/pacer-dev/pacer/internal/operate"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
)

// Bad input gets a JSON 400 (or 404, 409, 413, 415, 503) naming the
// problem, never an internal error, and changes nothing: the audit log
// holds only the refusals of changes (issue 41.13), one for each.
func TestBadInputIsAClearJSONError(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	a := newAPI(t, &operate.Service{Store: st})
	var created struct {
		Subscriber struct{ ID string } `json:"subscriber"`
	}
	const sub = "sub_aaaaaaaaaaaaaaaa"
	tests := []struct {
		method, path, body string
		wantStatus         int
		wantErr            string
	}{
		{"POST", "subscribers", `{"url":"ftp://x.example/"}`, 400, "url: "},
		{"POST", "subscribers", `{}`, 400, "url: required"},
		{"POST", "subscribers", ``, 400, "body is required"},
		{"POST", "subscribers", `{"url":"https://x.example/","events":["weekly"]}`, 400, "events: "},
		{"POST", "subscribers", `{"url":"https://x.example/","events":[]}`, 400, "events: give hourly"},
		{"POST", "subscribers", `{"url":"https://x.example/","tokens":["x'; drop"]}`, 400, "tokens: "},
		{"POST", "subscribers", `{"url":"https://x.example/","agents":["SPnope"]}`, 400, "agents: "},
		{"POST", "subscribers", `{"url":"https://x.example/","secret":"mine"}`, 400, `unknown field "secret"`},
		{"POST", "subscribers", `{"url":"https://x.example/"} {}`, 400, "trailing data"},
		{"POST", "subscribers", `{"url":`, 400, "invalid JSON"},
		{"POST", "subscribers", `{"url":5}`, 400, `field "url": want string`},
		{"POST", "subscribers", `{"url":"https://x.example/` + strings.Repeat("a", admin.MaxBody) + `"}`, 413, "larger than"},
		{"GET", "subscribers/x", ``, 400, "not a subscriber id"},
		{"GET", "subscribers/" + sub, ``, 404, "not found"},
		{"PATCH", "subscribers/" + sub, `{}`, 400, "nothing to change"},
		{"PATCH", "subscribers/" + sub, `{"colour":"red"}`, 400, `unknown field "colour"`},
		{"PATCH", "subscribers/" + sub, `{"tokens":"stx"}`, 400, "tokens: want a list"},
		{"PATCH", "subscribers/" + sub, `{"tokens":["stx"]}`, 404, "not found"},
		{"POST", "subscribers/" + sub + "/disable", `{"reason":"` + strings.Repeat("r", 600) + `"}`, 400, "reason: "},
		{"POST", "subscribers/" + sub + "/enable", `{"x":1}`, 400, "unknown field"},
		{"GET", "subscribers/" + sub + "/deliveries?status=lost", ``, 400, "status: "},
		{"GET", "subscribers/" + sub + "/deliveries?limit=-1", ``, 400, "limit: "},
		{"GET", "subscribers/" + sub + "/deliveries?limit=0", ``, 400, "limit: "},
		{"POST", "deliveries/recover", `{"subscriber":"` + sub + `"}`, 400, "from: required"},
		{"POST", "deliveries/recover", `{"subscriber":"` + sub + `","from":"yesterday"}`, 400, "from: want an RFC3339"},
		{"POST", "deliveries/recover", `{"subscriber":"` + sub + `","from":"2026-11-02T00:00:00Z","to":"2026-11-01T00:00:00Z"}`, 400, "before to"},
		{"POST", "deliveries/recover", `{"subscriber":"` + sub + `","from":"2026-01-02T00:00:00Z","to":"2026-11-01T00:00:00Z"}`, 400, "longer than"},
		{"POST", "deliveries/recover", `{"subscriber":"nope","from":"2026-11-01T00:00:00Z"}`, 400, "subscriber: "},
		{"POST", "deliveries/recover", `{"subscriber":"` + sub + `","statuses":["gone"],"from":"2026-11-01T00:00:00Z"}`, 400, "statuses: "},
		{"POST", "deliveries/recover", `{"subscriber":"` + sub + `","from":"2026-11-01T00:00:00Z","to":"2026-11-02T00:00:00Z"}`, 404, "not found"},
		{"POST", "deliveries/x/redeliver", ``, 400, "not a delivery id"},
		{"POST", "deliveries/" + sub + "-hourly-20261101T0000Z/redeliver", ``, 404, "not found"},
		{"GET", "audit?limit=0", ``, 400, "limit: "},
		{"GET", "audit?limit=5000", ``, 400, "limit: "},
		{"GET", "audit?before=x", ``, 400, "before: "},
		{"GET", "audit?since=today", ``, 400, "since: "},
		{"POST", "scheduler/pause", `{"task":"nap","for":"1h"}`, 400, "task: "},
		{"POST", "scheduler/pause", `{"for":"-1h"}`, 400, "positive"},
		{"POST", "scheduler/pause", `{"for":"1h"}`, 503, "no Temporal client"},
		{"POST", "scheduler/backfill", `{"task":"rollup","from":"2026-11-01T00:00:00Z"}`, 400, "required"},
		{"POST", "scheduler/backfill", `{"task":"rollup","from":"2026-11-01T00:00:00Z","to":"2999-11-01T00:00:00Z"}`, 400, "future"},
		{"POST", "scheduler/backfill", `{"task":"all","from":"2026-11-01T00:00:00Z","to":"2026-11-02T00:00:00Z"}`, 400, "task: "},
		{"POST", "scheduler/resume", `{"task":"x"}`, 400, "task: "},
		{"POST", "scheduler/skip", `{"task":"rollup"}`, 400, "nominalAt: "},
		{"POST", "scheduler/skip", `{"task":"rollup","nominalAt":"noon"}`, 400, "nominalAt: want an RFC3339"},
		{"POST", "scheduler/skip", `{"task":"nap","nominalAt":"2026-11-01T00:05:00Z"}`, 400, "task: "},
		{"POST", "scheduler/skip", `{"task":"rollup","nominalAt":"2026-11-01T00:05:00Z","x":1}`, 400, "unknown field"},
		{"POST", "scheduler/skip", `{"task":"rollup","nominalAt":"2026-11-01T00:05:00Z"}`, 503, "no Temporal client"},
		{"GET", "nothing", ``, 404, "no such admin route"},
		{"PUT", "subscribers", `{}`, 404, "no such admin route"},
	}
	refusals := 0
	for _, tt := range tests {
		if tt.method != "GET" && tt.wantStatus < 500 {
			refusals++
		}
		req, err := http.NewRequestWithContext(t.Context(), tt.method, a.base+tt.path, strings.NewReader(tt.body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, tt.wantStatus, resp.StatusCode, "%s %s %.80s: %s", tt.method, tt.path, tt.body, raw)
		if tt.wantErr != "" {
			var e struct{ Error string }
			require.NoError(t, json.Unmarshal(raw, &e), string(raw))
			require.Contains(t, e.Error, tt.wantErr, "%s %s", tt.method, tt.path)
		}
	}
	// A change sent as anything but JSON is refused, with a body or
	// without: what a web page could make a browser send to a loopback
	// listener unasked (a form, text/plain).
	for _, tt := range []struct{ path, ct, body string }{
		{"subscribers", "text/plain", `{"url":"https://x.example/"}`},
		{"subscribers", "application/x-www-form-urlencoded", `url=https://x.example/`},
		{"subscribers/" + sub + "/enable", "text/plain", ``},
		{"subscribers/" + sub + "/enable", "", ``},
	} {
		require.Equal(t, http.StatusUnsupportedMediaType, a.send("POST", tt.path, tt.ct, tt.body), "%s %q", tt.path, tt.ct)
	}

	var n, refused int
	count := func() {
		t.Helper()
		require.NoError(t, st.Pool().QueryRow(t.Context(), `select count(*) filter (where action <> 'refused'), count(*) filter (where action = 'refused') from audit_log`).Scan(&n, &refused))
	}
	count()
	require.Zero(t, n, "nothing was changed")
	require.Equal(t, refusals+4, refused, "every refused change is on record")
	a.do("POST", "subscribers", map[string]any{"url": "https://x.example/"}, 201, &created)
	count()
	require.Equal(t, 1, n)
}

// Routes lists what New serves, for the operator listener's test that
// every route refuses a missing or wrong token.
func TestRoutesListsEveryRoute(t *testing.T) {
	t.Parallel()
	routes := admin.Routes()
	require.Len(t, routes, 22)
	for _, r := range routes {
		require.True(t, strings.HasPrefix(r.Path, admin.Prefix), r.Path)
		require.Contains(t, []string{"GET", "POST", "PATCH", "PUT", "DELETE"}, r.Method)
	}
}

// A refused change keeps an audit entry (issue 41.13): who tried what,
// through which route, and why it was refused; never the body. Before,
// only what was done was audited, so an operator token probing the admin
// API left no trace. Reads refused for their query are not changes.
func TestRefusedChangesAreAudited(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	a := newAPI(t, &operate.Service{Store: st})
	const sub = "sub_aaaaaaaaaaaaaaaa"
	for _, tt := range []struct {
		method, path, ct, body string
		wantStatus             int
	}{
		{"POST", "subscribers", "application/json", `{"url":"http://169.254.169.254/latest","secret":"hunter2"}`, 400},
		{"POST", "subscribers/" + sub + "/disable", "application/json", `{}`, 404},
		{"POST", "scheduler/pause", "text/plain", `{"for":"1h"}`, 415},
		{"DELETE", "nothing/here", "application/json", ``, 404},
		{"GET", "audit?limit=0", "", ``, 400},
	} {
		require.Equal(t, tt.wantStatus, a.send(tt.method, tt.path, tt.ct, tt.body), "%s %s", tt.method, tt.path)
	}
	entries, err := st.AuditLog(t.Context(), store.AuditQuery{Limit: 10})
	require.NoError(t, err)
	var got []string
	for _, e := range entries {
		require.Equal(t, operate.ActionRefused, e.Action)
		require.Equal(t, "alice", e.Actor)
		require.NotContains(t, string(e.After), "hunter2", "never the body")
		var r operate.Refusal
		require.NoError(t, json.Unmarshal(e.After, &r))
		require.Equal(t, e.Target, r.Via)
		require.NotEmpty(t, r.Error)
		got = append(got, fmt.Sprintf("%s %d", r.Via, r.Status))
	}
	require.Equal(t, []string{
		"DELETE /api/admin/… 404",
		"POST /api/admin/scheduler/pause 415",
		"POST /api/admin/subscribers/{id}/disable 404",
		"POST /api/admin/subscribers 400",
	}, got, "the four refused changes, newest first; not the refused read")
	t.Logf("figures: 4 refused changes, 4 audit entries: %v", got)
}

// send sends body as content type ct ("": no Content-Type) and returns
// the answer's status.
func (a api) send(method, path, ct, body string) int {
	a.t.Helper()
	req, err := http.NewRequestWithContext(a.t.Context(), method, a.base+path, strings.NewReader(body))
	require.NoError(a.t, err)
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(a.t, err)
	resp.Body.Close()
	return resp.StatusCode
}
