package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/admin"
	"github.com/pacer-dev/pacer/internal/api"
	"github.com/pacer-dev/pacer/internal/operate"
	"github.com/pacer-dev/pacer/internal/store"
)

// TestOperatorListenerGuardsEveryAdminRoute mounts the real admin API, as
// pacer worker and serve do, and walks every one of its routes: no token,
// wrong tokens and a token in the wrong scheme are refused before the
// handler runs; a right token reaches it.
func TestOperatorListenerGuardsEveryAdminRoute(t *testing.T) {
	t.Parallel()
	tokens, err := api.ParseOperatorTokens("alice:" + strings.Repeat("a", 24))
	require.NoError(t, err)
	l := newListenersWith(t, tokens, func(st *store.Store) http.Handler {
		return admin.New(admin.Options{Operate: &operate.Service{Store: st, WorkflowID: "v1"}})
	})
	routes := l.h.OperatorRoutes()
	adminRoutes := admin.Routes()
	require.NotEmpty(t, adminRoutes)
	for _, r := range adminRoutes {
		pattern := r.Method + " " + r.Path
		require.Contains(t, routes, pattern, "every admin route joins the operator walk")
		for _, auth := range []string{"", "Bearer ", "Bearer " + strings.Repeat("a", 23), "Basic " + strings.Repeat("a", 24), "Bearer " + strings.Repeat("b", 24)} {
			req := requestFor(t, l.op.URL, pattern, map[string]string{"id": l.sub.ID})
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			req.Header.Set("Content-Type", "application/json")
			code, got := fetch(t, req)
			require.Equal(t, http.StatusUnauthorized, code, "%s with %q: %s", pattern, auth, got)
		}
		req := requestFor(t, l.op.URL, pattern, map[string]string{"id": l.sub.ID})
		req.Header.Set("Authorization", "Bearer "+tokens[0].Token)
		req.Header.Set("Content-Type", "application/json")
		code, got := fetch(t, req)
		require.NotEqual(t, http.StatusUnauthorized, code, "%s with alice's token: %s", pattern, got)
	}
}

// Issue 28 finding 2: a DNS-rebinding page drives the operator listener
// with an attacker's name in Host, or with Origin and Sec-Fetch-Site of
// its own site. Each of these requests, with and without an operator
// token, to every admin route (a subscriber pointed at the attacker, the
// pause switch, the audit log) answers 403, and no subscriber and no audit
// row is added. Loopback names and addresses, and a configured name, pass.
func TestOperatorListenerRefusesForeignHostsAndOrigins(t *testing.T) {
	t.Parallel()
	token := strings.Repeat("a", 24)
	tokens, err := api.ParseOperatorTokens("alice:" + token)
	require.NoError(t, err)
	for _, withToken := range []bool{false, true} {
		var toks []api.OperatorToken
		if withToken {
			toks = tokens
		}
		l := newListenersWith(t, toks, func(st *store.Store) http.Handler {
			return admin.New(admin.Options{Operate: &operate.Service{Store: st, WorkflowID: "v1"}})
		}, func(o *api.Options) { o.AdminHosts = []string{"pacer-admin.internal"} })
		counts := func() (subs, audits int) {
			ctx := context.Background()
			require.NoError(t, l.st.Pool().QueryRow(ctx, `select count(*) from subscribers`).Scan(&subs))
			require.NoError(t, l.st.Pool().QueryRow(ctx, `select count(*) from audit_log`).Scan(&audits))
			return subs, audits
		}
		subsBefore, auditsBefore := counts()
		foreign := []map[string]string{
			{"Host": "attacker.example"},
			{"Host": "attacker.example:8081", "Origin": "http://attacker.example:8081"},
			{"Origin": "http://attacker.example"},
			{"Origin": "null"},
			{"Sec-Fetch-Site": "cross-site"},
			{"Sec-Fetch-Site": "same-site"},
			{"Host": "127.0.0.1.attacker.example"},
			{"Host": "localhost.attacker.example"},
		}
		refused := 0
		for _, r := range admin.Routes() {
			pattern := r.Method + " " + r.Path
			for _, hdr := range foreign {
				req := requestFor(t, l.op.URL, pattern, map[string]string{"id": l.sub.ID,
					"body:" + pattern: `{"url":"https://attacker.example/hook","events":["hourly"],"task":"sweep"}`})
				for k, v := range hdr {
					if k == "Host" {
						req.Host = v
					} else {
						req.Header.Set(k, v)
					}
				}
				req.Header.Set("Content-Type", "application/json")
				if withToken {
					req.Header.Set("Authorization", "Bearer "+token)
				}
				code, got := fetch(t, req)
				require.Equal(t, http.StatusForbidden, code, "%s with %v (token %v): %s", pattern, hdr, withToken, got)
				require.NotContains(t, got, "whsec_")
				refused++
			}
		}
		subsAfter, auditsAfter := counts()
		require.Equal(t, subsBefore, subsAfter, "no subscriber added")
		require.Equal(t, auditsBefore, auditsAfter, "nothing audited: nothing done")
		t.Logf("figures: token %v: %d foreign requests to %d admin routes, all 403, 0 changes", withToken, refused, len(admin.Routes()))

		// What the listener serves: loopback names and addresses, a
		// configured name, a same-origin browser request.
		for _, hdr := range []map[string]string{
			{"Host": "localhost:8081"}, {"Host": "[::1]:8081"}, {"Host": "127.0.0.2"}, {"Host": "pacer-admin.internal:8081"},
			{"Origin": l.op.URL, "Sec-Fetch-Site": "same-origin"}, {"Host": "app.localhost"},
		} {
			req := requestFor(t, l.op.URL, "GET "+api.AdminPrefix+"audit", nil)
			for k, v := range hdr {
				if k == "Host" {
					req.Host = v
				} else {
					req.Header.Set(k, v)
				}
			}
			if withToken {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			code, got := fetch(t, req)
			require.Equal(t, http.StatusOK, code, "%v: %s", hdr, got)
		}
	}
}
