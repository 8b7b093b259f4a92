package bench

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
)

func ip(v int) *int { return &v }

// june is a 30-day month: t0 is its first instant.
var t0 = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)

var juneEnd = time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)

// firstRun is a Tenero Starter plan's first run: ten tokens in three
// seconds, then the minute is spent.
func firstRun() Report {
	return Report{Start: t0, End: t0.Add(3 * time.Second), Requests: 10,
		MinuteRemaining: ip(0), MonthRemaining: ip(9990)}
}

func TestBudgetMonthPacing(t *testing.T) {
	t.Parallel()
	b := NewBudget(BudgetConfig{})
	n, bounded := b.Allowance(t0)
	require.False(t, bounded, "a new budget knows nothing and starts at once")
	require.Greater(t, n, 1000)

	b.Record(firstRun())
	end := t0.Add(3 * time.Second)
	require.Equal(t, 10, b.MinuteCapacity)
	require.Equal(t, 0, b.Cap(end, 53), "the minute is spent")

	// 9,990 requests over what is left of 30 days: ten accrue in 43m12s
	// (less the 3 s already gone).
	ready := b.ReadyAt(end, 53)
	require.Equal(t, end.Add(43*time.Minute+11997*time.Millisecond), ready)
	require.Equal(t, 10, b.Cap(ready, 53))
	require.Equal(t, 9, b.Cap(ready.Add(-time.Nanosecond), 53))
	require.Equal(t, 8, b.Cap(ready.Add(-5*time.Minute), 53))
}

func TestBudgetMonthLastsToTheEnd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// giveNeighbourPerHour is what someone else on the same key spends;
		// the month headers show it.
		giveNeighbourPerHour int
		giveReserve          int
		wantLeftAtMost       int
	}{
		{name: "alone", wantLeftAtMost: 10},
		{name: "a neighbour drains the month too", giveNeighbourPerHour: 3, wantLeftAtMost: 10},
		{name: "a reserve is kept", giveReserve: 200, wantLeftAtMost: 210},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := NewBudget(BudgetConfig{Reserve: tt.giveReserve})
			neighbour := func(at time.Time) int { return int(at.Sub(t0) / time.Hour * time.Duration(tt.giveNeighbourPerHour)) }
			left, now, runs := 10_000, t0, 0
			for now.Before(juneEnd) {
				spend := min(b.Cap(now, 10), 10, left)
				left -= spend
				end := now.Add(3 * time.Second)
				left = max(left-neighbour(end)+neighbour(now), 0)
				b.Record(Report{Start: now, End: end, Requests: spend, MinuteRemaining: ip(10 - spend), MonthRemaining: ip(left)})
				if end.Before(juneEnd.Add(-time.Hour)) {
					require.Greater(t, left, tt.giveReserve, "quota exhausted early at %s", end)
				}
				now = b.ReadyAt(end, 10)
				runs++
				require.Less(t, runs, 5000, "pacing must not spin")
			}
			require.LessOrEqual(t, left, tt.wantLeftAtMost)
			require.GreaterOrEqual(t, left, tt.giveReserve)
		})
	}
}

func TestBudgetMonthSpent(t *testing.T) {
	t.Parallel()
	b := NewBudget(BudgetConfig{})
	b.Record(Report{Start: t0, End: t0.Add(time.Second), Requests: 1, MonthRemaining: ip(0)})
	now := t0.Add(time.Hour)
	require.Equal(t, 0, b.Cap(now, 10))
	require.Equal(t, juneEnd, b.ReadyAt(now, 10), "a spent month waits for the next")

	// A new month is a new quota: unknown until its first header, so the
	// first run goes at once.
	july := juneEnd.Add(time.Second)
	require.Equal(t, july, b.ReadyAt(july, 10))
	n, bounded := b.Allowance(july)
	require.False(t, bounded)
	require.Greater(t, n, 10)
}

func TestBudgetDocumentedMonth(t *testing.T) {
	t.Parallel()
	b := NewBudget(BudgetConfig{MonthLimit: 10_000})
	b.Record(firstRun())
	// Roll into July without a header: the plan says 10,000, and the credit
	// accrues from the month's first instant.
	at := juneEnd.Add(time.Hour)
	st := b.Status(at)
	require.Equal(t, 10_000, *st.MonthRemaining)
	require.Equal(t, 13, b.Cap(at, 100), "an hour of 10,000 over 31 days")
}

func TestBudgetDebt(t *testing.T) {
	t.Parallel()
	b := NewBudget(BudgetConfig{})
	b.Record(firstRun())
	// An explicit refresh spends 100 at once, an hour's worth ahead of pace
	// after the 43 minutes of credit: the paced runs wait it out.
	at := t0.Add(time.Hour)
	b.Record(Report{Start: at, End: at.Add(20 * time.Second), Requests: 100, MonthRemaining: ip(9890)})
	require.Equal(t, 0, b.Cap(at.Add(time.Minute), 10))
	ready := b.ReadyAt(at.Add(time.Minute), 10)
	require.Greater(t, ready.Sub(at), 6*time.Hour)
	require.Less(t, ready.Sub(at), 8*time.Hour)
}

func TestBudgetCreditHorizon(t *testing.T) {
	t.Parallel()
	b := NewBudget(BudgetConfig{CreditHorizon: pacer.Duration(time.Hour)})
	b.Record(firstRun())
	// Ten days idle accrue no more than an hour's pace: 9,990 over the 20
	// days left is 20.8 an hour.
	require.Equal(t, 20, b.Cap(t0.Add(10*24*time.Hour), 1000))
}

func TestBudgetCreditNeverExceedsWhatIsLeft(t *testing.T) {
	t.Parallel()
	b := NewBudget(BudgetConfig{Reserve: 1})
	b.Record(firstRun())
	last := juneEnd.Add(-time.Minute)
	b.Record(Report{Start: last.Add(-time.Hour), End: last.Add(-time.Hour), Requests: 1, MonthRemaining: ip(8)})
	// An hour's wait a minute before the end is worth sixty minutes of pace,
	// but only 7 are left above the reserve.
	require.Equal(t, 7, b.Cap(last, 100))
}

func TestBudgetMinuteReserve(t *testing.T) {
	t.Parallel()
	b := NewBudget(BudgetConfig{MinuteReserve: 1})
	require.Equal(t, 1, b.StopAt())
	b.Record(Report{Start: t0, End: t0.Add(10 * time.Second), Requests: 6, MinuteRemaining: ip(4)})
	now := t0.Add(20 * time.Second)
	require.Equal(t, 3, b.Cap(now, 10), "one of the four left stays in the window")
	require.Equal(t, now, b.ReadyAt(now, 3))
	require.Equal(t, t0.Add(time.Minute), b.ReadyAt(now, 4))
	st := b.Status(now)
	require.Equal(t, 4, *st.MinuteRemaining, "status shows the header as it was")
	require.Equal(t, 10, st.MinuteCapacity)

	// A run spends up to capacity less the reserve: month pacing waits for 9,
	// not for 10.
	b = NewBudget(BudgetConfig{MinuteReserve: 1})
	b.Record(Report{Start: t0, End: t0.Add(3 * time.Second), Requests: 9, MinuteRemaining: ip(1), MonthRemaining: ip(9991)})
	ready := b.ReadyAt(t0.Add(3*time.Second), 53)
	require.Equal(t, 9, b.Cap(ready, 53))
	require.Equal(t, 8, b.Cap(ready.Add(-time.Nanosecond), 53))
}

func TestBudgetMinuteWindow(t *testing.T) {
	t.Parallel()
	b := NewBudget(BudgetConfig{})
	b.Record(Report{Start: t0, End: t0.Add(10 * time.Second), Requests: 7, MinuteRemaining: ip(3)})
	require.Equal(t, 10, b.MinuteCapacity)

	n, bounded := b.Allowance(t0.Add(20 * time.Second))
	require.True(t, bounded)
	require.Equal(t, 3, n)
	require.Equal(t, t0.Add(20*time.Second), b.ReadyAt(t0.Add(20*time.Second), 2), "room for 2")
	require.Equal(t, t0.Add(time.Minute), b.ReadyAt(t0.Add(20*time.Second), 5), "a full run waits for the window")

	_, bounded = b.Allowance(t0.Add(time.Minute))
	require.False(t, bounded, "a new window is unknown until its first header")
}

func TestBudgetRejectedWithoutHeaders(t *testing.T) {
	t.Parallel()
	b := NewBudget(BudgetConfig{})
	reset := t0.Add(40 * time.Second)
	b.Record(Report{Start: t0, End: t0.Add(time.Second), Requests: 4, Rejected: 1, ResetAt: &reset})
	require.Equal(t, 0, b.Cap(t0.Add(2*time.Second), 10))
	require.Equal(t, reset, b.ReadyAt(t0.Add(2*time.Second), 10))
	require.Equal(t, 10, b.Cap(reset, 10))
}

func TestBudgetLearnsCapacity(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		give []Report
		want int
	}{
		{name: "spent to the last request: exact",
			give: []Report{{Start: t0, End: t0.Add(5 * time.Second), Requests: 30, MinuteRemaining: ip(0)}}, want: 30},
		{name: "room left: a lower bound",
			give: []Report{{Start: t0, End: t0.Add(5 * time.Second), Requests: 30, MinuteRemaining: ip(20)}}, want: 50},
		{name: "a lower bound never lowers it",
			give: []Report{
				{Start: t0, End: t0.Add(5 * time.Second), Requests: 30, MinuteRemaining: ip(20)},
				{Start: t0.Add(time.Minute), End: t0.Add(61 * time.Second), Requests: 5, MinuteRemaining: ip(20)},
			}, want: 50},
		{name: "an exact reading follows a step down",
			give: []Report{
				{Start: t0, End: t0.Add(5 * time.Second), Requests: 30, MinuteRemaining: ip(20)},
				{Start: t0.Add(time.Minute), End: t0.Add(65 * time.Second), Requests: 25, MinuteRemaining: ip(0)},
			}, want: 25},
		{name: "rejections do not count as capacity",
			give: []Report{{Start: t0, End: t0.Add(5 * time.Second), Requests: 30, Rejected: 5, MinuteRemaining: ip(0)}}, want: 25},
		{name: "a run across windows tells nothing",
			give: []Report{{Start: t0.Add(50 * time.Second), End: t0.Add(70 * time.Second), Requests: 60, MinuteRemaining: ip(40)}}, want: 0},
		{name: "a limit header is a first guess",
			give: []Report{{Start: t0.Add(50 * time.Second), End: t0.Add(70 * time.Second), Requests: 60, MinuteRemaining: ip(40), MinuteLimit: 50}}, want: 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := NewBudget(BudgetConfig{})
			for _, r := range tt.give {
				b.Record(r)
			}
			require.Equal(t, tt.want, b.MinuteCapacity)
		})
	}
}

func TestBudgetRequestsPerDay(t *testing.T) {
	t.Parallel()
	b := NewBudget(BudgetConfig{})
	for h := range 30 {
		at := t0.Add(time.Duration(h)*time.Hour + time.Minute)
		b.Record(Report{Start: at, End: at, Requests: h + 1})
	}
	require.Len(t, b.Hours, 24)
	// Hours 6..29 are the last day at 29:30.
	require.Equal(t, (7+30)*24/2, b.RequestsPerDay(t0.Add(29*time.Hour+30*time.Minute)))
}

func TestBudgetStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		giveLater     int // month remaining an hour after 10,000
		wantRunsOut   bool
		wantRunOutAt  time.Time
		wantPaceDay   float64
		wantRemaining int
	}{
		// Others spent 999 in the hour: at that rate nothing is ours to pace.
		{name: "draining fast runs out early", giveLater: 9000, wantRunsOut: true,
			wantRunOutAt: t0.Add(10 * time.Hour), wantPaceDay: 0, wantRemaining: 9000},
		// Others spend 9 an hour: their 6,471 to the month's end are set aside.
		{name: "a slow drain lasts the month", giveLater: 9990,
			wantPaceDay: (9990.0 - 9*(30*24-1)) / (30*24 - 1) * 24, wantRemaining: 9990},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := NewBudget(BudgetConfig{})
			b.Record(Report{Start: t0, End: t0, Requests: 1, MonthRemaining: ip(10_000)})
			later := t0.Add(time.Hour)
			b.Record(Report{Start: later, End: later, Requests: 1, MonthRemaining: ip(tt.giveLater)})
			st := b.Status(later)
			require.Equal(t, tt.wantRemaining, *st.MonthRemaining)
			require.Equal(t, juneEnd, st.MonthEndsAt)
			require.InDelta(t, tt.wantPaceDay, *st.PacePerDay, 0.01)
			require.Equal(t, 2, st.RequestsPerDay)
			require.Equal(t, tt.wantRunsOut, st.RunsOutEarly)
			if tt.wantRunsOut {
				require.WithinDuration(t, tt.wantRunOutAt, *st.RunOutAt, time.Second)
			} else {
				require.Nil(t, st.RunOutAt)
			}
			_, err := json.Marshal(st)
			require.NoError(t, err)
		})
	}
}

func TestBudgetSurvivesJSON(t *testing.T) {
	t.Parallel()
	b := NewBudget(BudgetConfig{MinuteLimit: 10, Reserve: 5})
	b.Record(firstRun())
	raw, err := json.Marshal(b)
	require.NoError(t, err)
	var back Budget
	require.NoError(t, json.Unmarshal(raw, &back))
	require.Equal(t, *b, back)
	now := t0.Add(2 * time.Hour)
	require.Equal(t, b.ReadyAt(now, 10), back.ReadyAt(now, 10))
	require.Equal(t, b.Status(now), back.Status(now))
}

func TestMulDiv(t *testing.T) {
	t.Parallel()
	month := int64(31 * 24 * time.Hour)
	require.Equal(t, int64(1_000_000), mulDiv(1_000_000, month, month), "no overflow in between")
	require.Equal(t, int64(3), mulDiv(10, 1, 3))
	require.Equal(t, int64(4), mulDivCeil(10, 1, 3))
	require.Equal(t, int64(0), mulDiv(-1, 5, 3))
}
