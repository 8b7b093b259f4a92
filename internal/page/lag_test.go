package page_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
)

func TestSchedulerShowsTheTailsLag(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	st := seededStatus()
	st.LastSweepResult = &pacer.SweepResult{OpenGaps: 1, Readers: map[string]pacer.ReaderReport{"tail": {LagSeconds: 42}}}
	v := newPage(d, staticStatus(st)).View(t.Context())
	var reason string
	for _, row := range v.Scheduler.Tasks {
		if row.Name == pacer.TaskSweep {
			reason = row.Reason
		}
	}
	require.Contains(t, reason, "tail 42s behind the chain's head, 1 gaps open")

	st.LastSweepResult = &pacer.SweepResult{Readers: map[string]pacer.ReaderReport{"tail": {LagSeconds: 0.2}}}
	for _, row := range newPage(d, staticStatus(st)).View(t.Context()).Scheduler.Tasks {
		if row.Name == pacer.TaskSweep {
			require.Contains(t, row.Reason, "tail at the chain's head")
			require.NotContains(t, row.Reason, "contracts' lists")
		}
	}

	st.LastSweepResult = &pacer.SweepResult{Readers: map[string]pacer.ReaderReport{"tail": {LagSeconds: 3, Source: "contracts"}}}
	for _, row := range newPage(d, staticStatus(st)).View(t.Context()).Scheduler.Tasks {
		if row.Name == pacer.TaskSweep {
			require.Contains(t, row.Reason, "tail 3s behind the chain's head, reading the allowlisted contracts' lists")
		}
	}
}
