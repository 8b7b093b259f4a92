package api_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/api"
	"github.com/pacer-dev/pacer/internal/metrics"
)

func TestMetricsServesTheProcessRegistry(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	h := api.New(api.Options{Metrics: m.Handler(), Registerer: m.Registry()})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	op := httptest.NewServer(h.Operator())
	t.Cleanup(op.Close)

	for _, base := range []string{srv.URL, op.URL} {
		resp, err := http.Get(base + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Contains(t, string(b), `pacer_task_runs_total{task="tenero"} 0`, "pacer's registry, not the default one")
	}
}
