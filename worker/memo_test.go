package worker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/cron"
	"github.com/pacer-dev/pacer/internal/schedule"
	"github.com/pacer-dev/pacer/workflows"
)

// A restart lays the memo's pause and breakers over an older state, adding
// the tasks that state does not hold.
func TestApplyMemo(t *testing.T) {
	t.Parallel()
	until := time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC)
	st := workflows.State{Tasks: []*schedule.Task{{Name: pacer.TaskTenero}}}
	applyMemo(workflows.Memo{PausedUntil: &until, Pauses: []schedule.Pause{{Until: until}}, Tasks: map[string]workflows.MemoTask{
		pacer.TaskTenero: {ConsecutiveFailures: 13, BreakerUntil: &until, BreakerTrips: 1},
		pacer.TaskSweep:  {ConsecutiveFailures: 2},
	}}, &st)
	require.Equal(t, until, *st.PausedUntil)
	require.Len(t, st.Pauses, 1)
	require.Equal(t, 13, st.Tasks[0].ConsecutiveFailures)
	require.True(t, st.Tasks[0].BreakerOpen())
	require.Equal(t, pacer.TaskSweep, st.Tasks[1].Name)
	require.Equal(t, 2, st.Tasks[1].ConsecutiveFailures)
}

func TestCostNote(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		give workflows.Config
		want string
	}{
		{workflows.Config{}, ""},
		{workflows.Config{TeneroEvery: pacer.Duration(5 * time.Second)}, "tenero every 5s: up to 17280 runs and 34560 Temporal actions a day"},
		{workflows.Config{Schedules: cron.Schedules{pacer.TaskRollup: {Every: 30 * time.Second}, pacer.TaskSweep: {Every: time.Minute}}},
			"rollup every 30s: up to 2880 runs and 5760 Temporal actions a day"},
	} {
		require.Equal(t, tc.want, CostNote(tc.give), "%+v", tc.give)
	}
}
