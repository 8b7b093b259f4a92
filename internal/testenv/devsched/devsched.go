// Package devsched runs pacer's scheduler for a test: a Temporal dev
// server, a worker with the real workflow and activities (upstreams
// unreachable), and the scheduler started. Apart from testenv, which
// the activities' and the worker's own tests import, so that this one may
// import them.
package devsched

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/pacer-dev/pacer/activities"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/worker"
)

// Start starts the scheduler workflowID on queue, its activities on st,
// and returns a client of its server. Everything stops with the test.
func Start(t *testing.T, st *store.Store, workflowID, queue string) (client.Client, worker.Scheduler) {
	t.Helper()
	srv, err := testenv.StartTemporal(context.Background())
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	tc, err := client.Dial(client.Options{HostPort: srv.HostPort})
	require.NoError(t, err)
	t.Cleanup(tc.Close)
	sched := worker.Scheduler{WorkflowID: workflowID, TaskQueue: queue}
	w := worker.New(tc, sched.TaskQueue, activities.New(activities.Options{Discovery: discovery.Config{Mode: "agents"}, Store: st,
		Logger: zaptest.NewLogger(t, zaptest.Level(zap.ErrorLevel)), TeneroBaseURL: "http://127.0.0.1:1", HiroBaseURL: "http://127.0.0.1:1"}))
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	_, err = worker.EnsureRunning(t.Context(), tc, sched)
	require.NoError(t, err)
	return tc, sched
}
