package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/api/aibtc"
	"github.com/pacer-dev/pacer/internal/api/openapi"
	"github.com/pacer-dev/pacer/internal/catalog"
)

// documentedRoutes are the operations of the OpenAPI document as router
// patterns ("GET /api/prices").
func documentedRoutes(t *testing.T) []string {
	t.Helper()
	var doc struct {
		OpenAPI string                               `json:"openapi"`
		Paths   map[string]map[string]map[string]any `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(openapi.Document, &doc))
	require.True(t, strings.HasPrefix(doc.OpenAPI, "3.1."), "an OpenAPI 3.1 document: %q", doc.OpenAPI)
	var out []string
	for path, ops := range doc.Paths {
		for method, op := range ops {
			require.NotEmpty(t, op["responses"], "%s %s has no responses", method, path)
			out = append(out, strings.ToUpper(method)+" "+path)
		}
	}
	return slices.Sorted(slices.Values(out))
}

// The OpenAPI document and the public router name the same routes: a route
// added without its operation, or an operation documented without its
// route, fails here. The landing page's routes describe themselves
// (?docs=1) instead: each of their GETs must have its description.
func TestOpenAPIMatchesTheRouter(t *testing.T) {
	s := New(Options{Catalog: catalog.Default()})
	var routed []string
	for _, p := range s.routes {
		method, path, _ := strings.Cut(p, " ")
		path = strings.TrimSuffix(path, "{$}") // "/{$}" is "/" exactly
		if strings.HasPrefix(path, aibtc.Prefix+"/") {
			if method == "GET" {
				_, ok := aibtc.Docs(strings.TrimPrefix(path, aibtc.Prefix))
				require.True(t, ok, "%s has no ?docs=1 description", p)
			}
			continue
		}
		routed = append(routed, method+" "+path)
	}
	slices.Sort(routed)
	require.Equal(t, routed, documentedRoutes(t),
		"the public router's routes (left) and GET /api/openapi.json's operations (right) differ: document the route in internal/api/openapi/openapi.json, or route the operation")

	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, openapi.Path, nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	require.NotEmpty(t, rec.Header().Get("ETag"))
	require.JSONEq(t, string(openapi.Document), rec.Body.String())
}
