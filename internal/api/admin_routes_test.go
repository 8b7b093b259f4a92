package api_test

import (
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
