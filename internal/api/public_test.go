package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/api"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/pacing"
	"github.com/pacer-dev/pacer/internal/schedule"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/workflows"
)

// Raw error text as the activities record it: pgx names the database's
// host, user and name; the upstream clients quote a body snippet.
const (
	rawDB       = "store price stx: failed to connect to `user=pacer_rw database=pacer_prod`: 10.3.7.12:5432 (db-primary.internal): dial error: timeout"
	rawUpstream = `tenero GET /v1/stacks/tokens/stx: server_error: status 502: <html>upstream-snippet: gateway secret-route</html>`
)

// rawPieces must not reach the public.
var rawPieces = []string{"pacer_rw", "pacer_prod", "10.3.7.12", "db-primary.internal", "upstream-snippet", "secret-route", "<html>"}

func rawStatus() workflows.Status {
	at := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	left := 17
	return workflows.Status{
		WorkflowID: "v1", RunID: "r1",
		Stopping:         &workflows.StopInput{Reason: "alice's incident on db-primary.internal"},
		LastTeneroResult: &pacer.TeneroResult{Run: pacer.Run{ErrorClass: pacer.ClassTransport, Error: rawDB, MinuteRemaining: &left}},
		LastSweepResult: &pacer.SweepResult{Run: pacer.Run{ErrorClass: pacer.ClassServerError, Error: rawUpstream, MonthRemaining: &left},
			RejectionReasons: map[string]int{"tx_failed": 1}},
		LastRollupResult:  &pacer.RollupResult{Run: pacer.Run{ErrorClass: pacer.ClassTransport, Error: rawDB}},
		LastDeliverResult: &pacer.DeliverResult{Run: pacer.Run{ErrorClass: pacer.ClassTransport, Error: rawDB}, Retrying: 2},
		Tasks: map[string]workflows.TaskStatus{
			pacer.TaskTenero: {LastError: &schedule.RunError{Class: string(pacer.ClassTransport), Message: rawDB, At: at}},
			pacer.TaskSweep: {LastError: &schedule.RunError{Class: string(pacer.ClassServerError), Message: rawUpstream, At: at},
				Pacing: &pacing.TaskStatus{Batch: 3}},
			"other": {LastError: &schedule.RunError{Class: "made-up " + rawDB, Message: rawDB, At: at}},
		},
	}
}

func TestPublicStatusCarriesClassesNotRawText(t *testing.T) {
	t.Parallel()
	raw := rawStatus()
	got := api.PublicStatus(raw)
	b, err := json.Marshal(got)
	require.NoError(t, err)
	for _, p := range rawPieces {
		require.NotContains(t, string(b), p)
	}
	require.Equal(t, "transport", got.Tasks[pacer.TaskTenero].LastError.Class)
	require.Contains(t, got.Tasks[pacer.TaskTenero].LastError.Message, "database")
	require.Equal(t, raw.Tasks[pacer.TaskTenero].LastError.At, got.Tasks[pacer.TaskTenero].LastError.At)
	require.Equal(t, "other", got.Tasks["other"].LastError.Class, "an unknown class is not shown either")
	require.Equal(t, pacer.ClassServerError, got.LastSweepResult.ErrorClass)
	require.Equal(t, 1, got.LastSweepResult.RejectionReasons["tx_failed"])
	require.Equal(t, pacer.ClassTransport, got.LastRollupResult.ErrorClass)
	require.Equal(t, 2, got.LastDeliverResult.Retrying)
	// Operators' matters: the stop reason and the upstream budgets.
	require.NotNil(t, got.Stopping)
	require.Empty(t, got.Stopping.Reason)
	require.NotContains(t, string(b), "alice's incident")
	require.Nil(t, got.LastTeneroResult.MinuteRemaining)
	require.Nil(t, got.LastSweepResult.MonthRemaining)
	require.Equal(t, 3, got.Tasks[pacer.TaskSweep].Pacing.Batch)
	// The document the cache holds is not changed.
	require.Equal(t, rawDB, raw.Tasks[pacer.TaskTenero].LastError.Message)
	require.Equal(t, rawDB, raw.LastTeneroResult.Error)
	require.Equal(t, rawStatus(), raw)
}

// Through HTTP: the status document and a database failure carry classes;
// the raw text is in the log.
func TestHTTPShowsClassesAndLogsRawText(t *testing.T) {
	t.Parallel()
	// A database that does not exist, under a user that does not either:
	// pgx's error names both, and the host.
	st, err := store.Open(context.Background(), "postgres://pacer_rw@127.0.0.1:5432/pacer_prod?sslmode=disable&connect_timeout=5")
	require.NoError(t, err)
	t.Cleanup(st.Close)
	core, logs := observer.New(zapcore.DebugLevel)
	srv := httptest.NewServer(api.New(api.Options{Store: st, Catalog: catalog.Default(), Logger: zap.New(core),
		Status: func(context.Context) (workflows.Status, error) { return rawStatus(), nil }}))
	t.Cleanup(srv.Close)

	for _, path := range []string{"/api/scheduler/status", "/api/prices?tokens=stx", "/api/prices", "/api/competition/tracked-tokens", "/readyz"} {
		a := storm(srv.URL, path, 1)[0]
		require.NoError(t, a.err)
		for _, p := range rawPieces {
			require.NotContains(t, string(a.body), p, path)
		}
		if path == "/api/scheduler/status" {
			require.Equal(t, http.StatusOK, a.code)
			continue
		}
		require.Equal(t, http.StatusServiceUnavailable, a.code, "%s: %s", path, a.body)
		if path != "/readyz" {
			var body api.ErrorBody
			require.NoError(t, json.Unmarshal(a.body, &body))
			require.Equal(t, pacer.ClassTransport, body.Class, path)
		}
	}
	require.Positive(t, logs.FilterMessage("api.database_error").Len())
	logged := logs.FilterMessage("api.database_error").All()[0].ContextMap()["error"]
	require.Contains(t, logged, "pacer_prod", "the raw error stays in the log")
}
