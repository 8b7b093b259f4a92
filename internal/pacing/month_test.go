package pacing

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/evidence"
)

// TestMonthHoldPacesWhatIsLeftToTheMonthsEnd runs a task whose every run
// makes cost requests, each run as soon as MonthHold allows, from a given
// instant to the month's end, and checks it against the even pace computed
// here from the remaining count and the time left (issue 41.0): over any
// 11 minutes at most that pace plus one run's requests; no request past
// the quota; and the month ends with at most one run's requests unspent
// (prices refreshed as often as the rest allows: the first run went
// before any pace had accrued, so the last one's requests are what is
// left at the end).
func TestMonthHoldPacesWhatIsLeftToTheMonthsEnd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		giveStart time.Time
		giveLeft  int64
		giveCost  int
	}{
		// The case reported: 400 left two days before the month ends.
		{"400 left two days before the end", time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), 400, 4},
		{"400 left, whole token set a run", time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), 400, 20},
		{"mid-month, a Starter plan half spent", time.Date(2026, 11, 16, 0, 0, 0, 0, time.UTC), 5_000, 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			end := time.Date(tt.giveStart.Year(), tt.giveStart.Month()+1, 1, 0, 0, 0, 0, time.UTC)
			evenPerMinute := float64(tt.giveLeft) / end.Sub(tt.giveStart).Minutes()
			type spend struct {
				at time.Time
				n  int
			}
			var runs []spend
			left := tt.giveLeft
			for at := tt.giveStart; at.Before(end); {
				require.GreaterOrEqual(t, left, int64(tt.giveCost), "a run at %s spends past the quota", at)
				left -= int64(tt.giveCost)
				runs = append(runs, spend{at, tt.giveCost})
				hold := MonthHold(at, left, tt.giveCost)
				require.Positive(t, hold)
				at = at.Add(hold)
			}
			window := 11 * time.Minute
			bound := evenPerMinute*window.Minutes() + float64(tt.giveCost)
			worst := 0
			for i, r := range runs {
				n := 0
				for _, s := range runs[i:] {
					if s.at.Sub(r.at) < window {
						n += s.n
					}
				}
				worst = max(worst, n)
			}
			require.LessOrEqual(t, float64(worst), bound, "11 minutes from any run")
			if tt.giveLeft == 400 && tt.giveCost == 4 {
				evidence.Check(t, "tenero.month_end.requests_11min", float64(worst), evidence.AtMost, bound, "count")
			}
			require.GreaterOrEqual(t, left, int64(0))
			require.LessOrEqual(t, left, int64(tt.giveCost), "the month ends with at most one run's requests unspent")
			t.Logf("figures: %s: %d runs of %d to the month's end, most in 11 minutes %d (even pace %.2f + one run), %d left unspent",
				tt.name, len(runs), tt.giveCost, worst, evenPerMinute*window.Minutes(), left)
		})
	}
}

func TestMonthHoldBounds(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 2, 27, 12, 0, 0, 0, time.UTC)
	untilEnd := 36 * time.Hour
	tests := []struct {
		giveLeft int64
		giveCost int
		want     time.Duration
	}{
		{giveLeft: 100, giveCost: 0, want: 0},          // a run of pegs costs nothing
		{giveLeft: 0, giveCost: 1, want: untilEnd},     // spent: the new month
		{giveLeft: 3, giveCost: 4, want: untilEnd},     // less than a run
		{giveLeft: 360, giveCost: 10, want: time.Hour}, // 36 h / 360 × 10
		{giveLeft: 1 << 53, giveCost: 64, want: 0},     // plenty: rounds to nothing
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d left, %d a run", tt.giveLeft, tt.giveCost), func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, MonthHold(now, tt.giveLeft, tt.giveCost))
		})
	}
}
