package discovery

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/hiro"
)

// monthRate is 150,000 requests a month as requests a minute (30 days).
const monthRate = 150_000.0 / (30 * 24 * 60)

func TestReadIntervalFitsTheBudget(t *testing.T) {
	// A minute plan pays a page every 10 s of anything.
	require.Equal(t, 10*time.Second, ReadInterval(150, 1, 0.4, 10*time.Second, 450))
	require.Equal(t, 10*time.Second, ReadInterval(150, 1, 0.4, 10*time.Second, 0), "unknown rate")

	// The month: 0.8 × 3.47 = 2.78 requests a minute. A feed of 217,000
	// calls a day (150.7 a minute) needs 150.7/49 = 3.08 pages a minute
	// at any interval: it never fits.
	require.Equal(t, NeverFits, ReadInterval(217_000.0/1440, 1, 0.39, 10*time.Second, monthRate))

	// Five contracts' lists holding 77,200 a day (53.6 a minute), and
	// 0.39 detail requests a minute: a page of each per read while a
	// read holds under 49 entries per list, so 5/T + 0.39 = 2.78,
	// T = 5/2.39 min ≈ 2.09 min (10.7 entries a list a minute: 22 a read).
	got := ReadInterval(77_200.0/1440, 5, 0.39, 10*time.Second, monthRate)
	want := 5 / (monthRate*TailShare - 0.39) * 60 // seconds
	require.InDelta(t, want, got.Seconds(), 1.5)

	// A quieter feed fits in a page per read: 1/T + 0.39 = 2.78.
	got = ReadInterval(57_000.0/1440, 1, 0.39, 10*time.Second, monthRate)
	want = 1 / (monthRate*TailShare - 0.39) * 60
	require.InDelta(t, want, got.Seconds(), 1.5)

	// Details alone beyond the share: nothing fits.
	require.Equal(t, NeverFits, ReadInterval(1, 5, 3, 10*time.Second, monthRate))
}

// traffic observes a feed of perDay calls a day, share of them on
// allowlisted contracts, and details detail requests a minute, for two
// hours of reads every step.
func traffic(perDay int, share float64, details float64, step time.Duration) Traffic {
	var tr Traffic
	at := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	page := make([]hiro.Entry, PageSize)
	for i := range page {
		id := "SP9.other"
		if float64(i) < share*PageSize {
			id = "SM1.xyk-core"
		}
		page[i] = hiro.Entry{TxID: "0x1", BlockHeight: 1, Canonical: true, TxType: hiro.TxTypeContractCall,
			ContractCall: &hiro.ContractCall{ContractID: id}}
	}
	onContract := func(id string) bool { return id == "SM1.xyk-core" }
	owed := 0.0
	for t := time.Duration(0); t <= 2*time.Hour; t += step {
		total := 1000 + int(float64(perDay)*t.Hours()/24)
		tr.ObserveFeed(total, page, onContract, at.Add(t))
		owed += details * step.Minutes()
		n := int(owed)
		owed -= float64(n)
		tr.ObserveDetails(n, at.Add(t))
	}
	return tr
}

func TestTrafficAveragesWhatItObserved(t *testing.T) {
	require.False(t, (&Traffic{}).Known())
	tr := traffic(217_000, 0.36, 0.39, 10*time.Second)
	require.True(t, tr.Known())
	require.InDelta(t, 217_000.0/1440, tr.FeedPerMinute(), 1)
	require.InDelta(t, 0.36*217_000/1440, tr.ContractsPerMinute(), 1.5)
	require.InDelta(t, 0.39, tr.DetailsPerMinute(), 0.02)

	// Observed once every 15 minutes (the probe), the same volume.
	tr = traffic(217_000, 0.36, 0.39, 15*time.Minute)
	require.InDelta(t, 217_000.0/1440, tr.FeedPerMinute(), 1)
}

func TestPlanSourceReadsTheContractsWhenTheFeedDoesNotFit(t *testing.T) {
	every := 10 * time.Second
	busy := traffic(217_000, 0.36, 0.39, 10*time.Second)
	quiet := traffic(57_000, 0.43, 0.39, 10*time.Second)

	require.Equal(t, SourceFeed, PlanSource("", Traffic{}, 5, every, monthRate), "nothing observed: the feed")
	require.Equal(t, SourceContracts, PlanSource(SourceContracts, Traffic{}, 5, every, monthRate), "nothing observed: as it was")
	require.Equal(t, SourceFeed, PlanSource(SourceFeed, busy, 5, every, 450), "a minute plan pays the feed")
	require.Equal(t, SourceFeed, PlanSource(SourceContracts, busy, 5, every, 450), "and goes back to it")
	require.Equal(t, SourceContracts, PlanSource(SourceFeed, busy, 5, every, monthRate), "the month cannot pay the busy feed")
	require.Equal(t, SourceContracts, PlanSource(SourceContracts, busy, 5, every, monthRate))
	require.Equal(t, SourceFeed, PlanSource(SourceFeed, quiet, 5, every, monthRate), "a quiet feed is one page a read")
	require.Equal(t, SourceFeed, PlanSource(SourceContracts, quiet, 5, every, monthRate), "and is read again")
	require.Equal(t, SourceFeed, PlanSource(SourceFeed, busy, 0, every, monthRate), "no contracts to read")

	// Neither fits (the details alone exceed the share): stay.
	flood := traffic(217_000, 0.36, 3, 10*time.Second)
	require.Equal(t, SourceFeed, PlanSource(SourceFeed, flood, 5, every, monthRate))
	require.Equal(t, SourceContracts, PlanSource(SourceContracts, flood, 5, every, monthRate))

	// Hysteresis: one contract's list that reads only a little sooner
	// than the feed does not move the tail; much sooner does.
	// Find a volume at which one contract's list (a fifth of the feed: a
	// share its reconciler can read beside the feed) reads sooner than
	// the feed, but not by the margin.
	var mid Traffic
	found := false
	for v := 188_000; v < 198_000 && !found; v += 100 {
		mid = traffic(v, 0.2, 0, 10*time.Second)
		feed := ReadInterval(mid.FeedPerMinute(), 1, 0, every, monthRate)
		lists := ReadInterval(mid.ContractsPerMinute(), 1, 0, every, monthRate)
		found = lists < feed && float64(lists) > switchMargin*float64(feed)
	}
	require.True(t, found)
	require.Equal(t, SourceFeed, PlanSource(SourceFeed, mid, 1, every, monthRate))
	require.Equal(t, SourceContracts, PlanSource(SourceContracts, mid, 1, every, monthRate))
}

// Beside the feed, the reconciler reads the contracts' lists' new
// entries: on the month plan at 150,000 calls a day, a third of them on
// the allowlist's 40 contracts, that is more pages a minute than the 20%
// the tail leaves it, while the feed alone would fit. The feed is then
// no cheaper than the lists alone (the month plan's bench at 150,000 a
// day: 1,631 swaps never found on the feed, and at 120,000, 122 ranges
// given up); at 80,000 a day the reconciler fits and the feed stays.
func TestPlanSourceLeavesTheReconcilerItsShare(t *testing.T) {
	every := 10 * time.Second
	busy := traffic(150_000, 0.36, 0.3, 10*time.Second)
	require.NotEqual(t, NeverFits, ReadInterval(busy.FeedPerMinute(), 1, busy.DetailsPerMinute(), every, monthRate), "the feed alone fits")
	require.Equal(t, SourceContracts, PlanSource(SourceFeed, busy, 40, every, monthRate))
	require.Equal(t, SourceContracts, PlanSource(SourceContracts, busy, 40, every, monthRate))
	require.Equal(t, SourceFeed, PlanSource(SourceFeed, busy, 40, every, 450), "a minute plan pays both")

	fits := traffic(80_000, 0.36, 0.3, 10*time.Second)
	require.Equal(t, SourceFeed, PlanSource(SourceFeed, fits, 40, every, monthRate))
	require.Equal(t, SourceFeed, PlanSource(SourceContracts, fits, 40, every, monthRate))

	// Between the margins the source stays as it was, so the choice does
	// not flap on noise.
	edge := traffic(100_000, 0.36, 0.3, 10*time.Second)
	pages, share := edge.ContractsPerMinute()/(PageSize-1), monthRate*(1-TailShare)
	require.Greater(t, pages, switchMargin*switchMargin*share)
	require.Less(t, pages, switchMargin*share)
	require.Equal(t, SourceFeed, PlanSource(SourceFeed, edge, 40, every, monthRate))
	require.Equal(t, SourceContracts, PlanSource(SourceContracts, edge, 40, every, monthRate))
}

func TestObserverChoosesWhereTheTailReads(t *testing.T) {
	every := 10 * time.Second
	var o Observer
	before, now, _ := o.Choose(false, 5, every, monthRate)
	require.Equal(t, SourceFeed, before, "the first choice starts from the feed")
	require.Equal(t, SourceFeed, now, "nothing observed: the feed")

	// The busy chain of traffic(), observed through the Observer.
	busy := traffic(217_000, 0.36, 0.39, every)
	o.t = busy
	before, now, seen := o.Choose(false, 5, every, monthRate)
	require.Equal(t, SourceFeed, before)
	require.Equal(t, SourceContracts, now, "the month cannot pay the busy feed")
	require.InDelta(t, busy.FeedPerMinute(), seen.FeedPerMinute(), 1e-9, "the traffic it chose by")
	before, now, _ = o.Choose(false, 5, every, 450)
	require.Equal(t, SourceContracts, before)
	require.Equal(t, SourceFeed, now, "a minute plan pays the feed again")

	before, now, _ = o.Choose(true, 5, every, 450)
	require.Equal(t, SourceFeed, before)
	require.Equal(t, SourceContracts, now, "the feed switched off: the contracts' lists, whatever fits")
}

func TestObserverKeepsWhatTheRunsObserved(t *testing.T) {
	var o Observer
	at := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	require.Zero(t, o.ReadCost())
	require.True(t, o.ProbedAt().IsZero())
	o.ReadTail(0)
	require.InDelta(t, 1.0, o.ReadCost(), 0, "a whole read costs at least one request")
	o.ReadTail(7)
	require.InDelta(t, 2.5, o.ReadCost(), 1e-9, "the recent reads' average")
	o.Probed(at)
	require.Equal(t, at, o.ProbedAt())
	o.SetOpenGaps(1, true)
	o.SetOpenGaps(1, true)
	require.Equal(t, 2, o.OpenGaps(), "gaps found in runs")
	o.SetOpenGaps(0, false)
	require.Zero(t, o.OpenGaps(), "a run's report: every gap filled")

	o.ObserveFeed(1000, nil, nil, at)
	o.ObserveFeed(1600, nil, nil, at.Add(10*time.Minute))
	o.ObserveDetails(0, at)
	o.ObserveDetails(20, at.Add(10*time.Minute))
	_, _, tr := o.Choose(false, 1, time.Minute, 0)
	require.InDelta(t, 60.0, tr.FeedPerMinute(), 1e-9)
	require.InDelta(t, 2.0, tr.DetailsPerMinute(), 1e-9)
}

// TestTailReserveHoldsTheReadsToCome: the tail's reads cost a page, and a
// detail request when they find candidates (keyless, 10,000 agents: one
// or two). The room kept for the reads due before the window ends is
// what reads cost on average, not what the last one did: kept at one a
// read after a read without candidates, the reconciler's lists took the
// rest of the window, the next read cost two, and the tail waited for
// the window's end (the chain bench: p99 20 s, worst 1.4 min).
func TestTailReserveHoldsTheReadsToCome(t *testing.T) {
	var o Observer
	for _, n := range []int{2, 1, 2, 2, 1, 2, 1} {
		o.ReadTail(n)
	}
	now := time.Date(2026, 6, 1, 0, 0, 10, 0, time.UTC)
	tail := Reader{Name: ReaderTail, LastRead: now.Add(-5 * time.Second)}
	s := Run{Now: now, Tail: &tail, Contracts: []Reader{{Name: ContractReader("SP1.a"), LastRead: now.Add(-time.Hour)}},
		TailEvery: 10 * time.Second, ReconcileEvery: 15 * time.Minute, LastVisit: now, Linger: now.Add(time.Minute), Cap: now.Add(4 * time.Minute),
		Budget: Budget{Known: true, Room: 11, WindowEnd: now.Add(50 * time.Second), Rate: 42, ReadCost: o.ReadCost()}}
	// Reads due at +5, +15, +25, +35 and +45 s: ten requests kept of eleven.
	step := Plan(s)
	require.Equal(t, Wait, step.Kind, "%+v (read cost %.2f)", step, o.ReadCost())
	s.Budget.Room = 13
	require.Equal(t, ReadContract, Plan(s).Kind, "room beyond the tail's reads: the reconciler reads")
}
