package activities

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/pacing"
)

// The controller runs in the activity (SPEC §3.8): a run restores it from
// its input, applies a tune, decides its batch, and returns its new state
// and the interval to the next run, which the next run restores.
func TestPaceCarriesTheControllerAcrossRuns(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	in := &pacer.PaceInput{Cadence: pacer.Duration(5 * time.Minute)}
	c, batch := startPace(pacer.TaskTenero, in, t0)
	require.Equal(t, maxTeneroBatch, batch, "a new controller starts at the whole set")

	// One run of upstream failures (1 of 10 answered) is one step back.
	bad := pacer.Run{Requests: 10, UpstreamFailed: 9, DurationMs: 3000}
	p := endPace(c, in, bad, nil, 1, t0.Add(3*time.Second))
	require.NotNil(t, p)
	require.Equal(t, pacing.ZoneBackoff, p.Status.Zone)
	require.Equal(t, maxTeneroBatch/2, p.Status.Batch)
	require.Equal(t, pacer.Duration(7*time.Minute+30*time.Second), p.Every)
	require.Equal(t, in.Cadence, p.Cadence)

	// The next run starts from it; a second bad run cools it down.
	next := &pacer.PaceInput{State: p.State, Cadence: in.Cadence, LastCadence: p.Cadence}
	c, batch = startPace(pacer.TaskTenero, next, t0.Add(8*time.Minute))
	require.Equal(t, maxTeneroBatch/2, batch)
	p = endPace(c, next, bad, nil, 1, t0.Add(8*time.Minute+3*time.Second))
	require.Equal(t, pacing.ZoneCooldown, p.Status.Zone)
	require.Equal(t, 5, p.Status.Batch)

	// A tune sets the batch; a reset goes back to the start.
	tuned := &pacer.PaceInput{State: p.State, Cadence: in.Cadence, LastCadence: p.Cadence, Tune: &pacer.PaceTune{Batch: 20}}
	_, batch = startPace(pacer.TaskTenero, tuned, t0.Add(20*time.Minute))
	require.Equal(t, 20, batch)
	reset := &pacer.PaceInput{State: p.State, Cadence: in.Cadence, LastCadence: p.Cadence, Tune: &pacer.PaceTune{Reset: true}}
	_, batch = startPace(pacer.TaskTenero, reset, t0.Add(20*time.Minute))
	require.Equal(t, maxTeneroBatch, batch)

	// A run that failed as a whole is recorded as a failure of its class.
	failed := endPace(c, next, pacer.Run{}, temporal.NewApplicationError("quota", string(pacer.ClassRateLimit)), 0, t0.Add(30*time.Minute))
	require.NotNil(t, failed)

	// No input, no pacing.
	c, batch = startPace(pacer.TaskSweep, nil, t0)
	require.Nil(t, c)
	require.Zero(t, batch)
	require.Nil(t, endPace(nil, nil, bad, nil, 1, t0))
}

// A reconfigured cadence bounds the controller from the next run on. The
// sweep has no batch (its plan sizes each step): a state saved with one,
// before it went, loses it, and the status shows none.
func TestPaceFollowsTheConfig(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	saved := `{"config":{"minBatch":5,"maxBatch":100,"minInterval":60000000000,"maxInterval":7200000000000,"judge":"runs"},"batch":100,"interval":60000000000}`
	in := &pacer.PaceInput{Cadence: pacer.Duration(time.Minute), LastCadence: pacer.Duration(time.Minute), State: []byte(saved)}
	c, batch := startPace(pacer.TaskSweep, in, t0)
	require.Zero(t, batch)
	p := endPace(c, in, pacer.Run{Requests: 40}, nil, 40, t0.Add(time.Second))
	require.Equal(t, pacer.Duration(time.Minute), p.Every)
	require.Zero(t, p.Status.Batch)
	raw, err := json.Marshal(p.Status)
	require.NoError(t, err)
	require.NotContains(t, string(raw), `"batch"`)

	slower := &pacer.PaceInput{State: p.State, Cadence: pacer.Duration(10 * time.Minute), LastCadence: p.Cadence}
	c, _ = startPace(pacer.TaskSweep, slower, t0.Add(time.Minute))
	p = endPace(c, slower, pacer.Run{Requests: 40}, nil, 40, t0.Add(time.Minute+time.Second))
	require.GreaterOrEqual(t, p.Every, pacer.Duration(10*time.Minute))
}

// A failed run's error carries its result, so the workflow keeps its pace.
func TestWithResultKeepsTheError(t *testing.T) {
	t.Parallel()
	err := withResult(temporal.NewNonRetryableApplicationError("502", string(pacer.ClassServerError), nil),
		pacer.TeneroResult{Succeeded: 2})
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr))
	require.Equal(t, string(pacer.ClassServerError), appErr.Type())
	require.True(t, appErr.NonRetryable())
	var res pacer.TeneroResult
	require.NoError(t, appErr.Details(&res))
	require.Equal(t, 2, res.Succeeded)
	require.NoError(t, withResult(nil, pacer.TeneroResult{}))
}
