package page

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/cron"
	"github.com/pacer-dev/pacer/workflows"
)

// A task's schedule reads as its cadence, its cron spec, or when it runs.
func TestTaskSchedule(t *testing.T) {
	t.Parallel()
	rollup, err := cron.ParseSpec([]byte(`{"cron":"5 * * * *","tz":"Europe/London","catchup":"backfill"}`))
	require.NoError(t, err)
	for _, tc := range []struct {
		give workflows.TaskStatus
		want string
	}{
		{workflows.TaskStatus{Every: "5m0s", Schedule: &cron.Spec{Every: 5 * time.Minute}}, "every 5m"},
		{workflows.TaskStatus{Every: "0s", Schedule: &rollup, Missed: 3}, "cron 5 * * * * (Europe/London, backfill); 3 missed"},
		{workflows.TaskStatus{Every: "0s"}, "while deliveries are due"},
	} {
		require.Equal(t, tc.want, taskSchedule(tc.give))
	}
}
