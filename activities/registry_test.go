package activities_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/activities"
	"github.com/pacer-dev/pacer/internal/metrics"
	"github.com/pacer-dev/pacer/internal/registry"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
)

// A registry that answers an empty list deregisters nobody and says why:
// the run fails as permanent with the reason (the status's last error),
// pacer_registry_held_agents says how many it would drop, a log line names
// the digest to confirm; the operator's confirmation applies it at the
// next read (issue 41.6).
func TestRegistryReadListingNobodyIsHeld(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	listed := []string{
		registry.MainnetSP([]byte("registry-agent-00001")),
		registry.MainnetSP([]byte("registry-agent-00002")),
		registry.MainnetSP([]byte("registry-agent-00003")),
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		recs := []map[string]any{}
		for _, a := range listed {
			recs = append(recs, map[string]any{"stxAddress": a, "erc8004AgentId": nil})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"agents": recs, "next": nil})
	}))
	t.Cleanup(hs.Close)
	st := testenv.Store(t)
	m := metrics.New()
	core, logs := observer.New(zap.InfoLevel)
	acts := activities.New(activities.Options{Store: st, Logger: zap.New(core), Metrics: m, RegistryURL: hs.URL,
		TeneroBaseURL: hs.URL, HiroBaseURL: hs.URL, Sleep: noSleep})
	run := func() (pacer.RegistryResult, error) {
		var suite testsuite.WorkflowTestSuite
		env := suite.NewTestActivityEnvironment()
		env.RegisterActivity(acts)
		v, err := env.ExecuteActivity(acts.Registry, pacer.RegistryInput{})
		var res pacer.RegistryResult
		if err == nil {
			require.NoError(t, v.Get(&res))
		}
		return res, err
	}
	registered := func() (n int) {
		require.NoError(t, st.Pool().QueryRow(t.Context(), `select count(*) from agents where deregistered_at is null`).Scan(&n))
		return n
	}

	res, err := run()
	require.NoError(t, err)
	require.Equal(t, 3, res.Added)
	require.Equal(t, 3, registered())

	mu.Lock()
	listed = nil
	mu.Unlock()
	_, err = run()
	require.Error(t, err)
	require.Equal(t, string(pacer.ClassPermanent), errType(err))
	require.Contains(t, err.Error(), "lists nobody and would deregister all 3 registered agents")
	require.Equal(t, 3, registered(), "nobody deregistered")
	hold, err := st.RegistryHold(t.Context())
	require.NoError(t, err)
	require.NotNil(t, hold)
	require.Equal(t, 1, logs.FilterMessage("registry.read_held").Len())
	require.True(t, strings.Contains(metricText(t, m), "pacer_registry_held_agents 3"))

	// Asked again, it is held again; once confirmed, it is applied.
	_, err = run()
	require.Error(t, err)
	_, err = st.ConfirmRegistryDrop(t.Context(), hold.Digest, store.Change{Actor: "cli", Action: store.ActionRegistryConfirm})
	require.NoError(t, err)
	res, err = run()
	require.NoError(t, err)
	require.Equal(t, 3, res.Deregistered)
	require.Zero(t, registered())
	require.True(t, strings.Contains(metricText(t, m), "pacer_registry_held_agents 0"))
}

func metricText(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}
