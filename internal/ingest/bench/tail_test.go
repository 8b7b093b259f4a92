package bench

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/hiro"
	"github.com/pacer-dev/pacer/internal/ingest"
)

// TestChainFeedShifts: the benchmark's feed is newest first, grows at the
// head as blocks arrive, and holds the agents' transactions where the
// world put them.
func TestChainFeedShifts(t *testing.T) {
	t.Parallel()
	w := NewWorld("small", 300, 3, start, start.Add(24*time.Hour))
	c := NewChain(w, BenchAllowlist, 200_000, 3)
	at := start.Add(6 * time.Hour)
	page, total := c.Feed(at, 0, hiro.MaxLimit)
	require.Len(t, page, hiro.MaxLimit)
	for i := 1; i < len(page); i++ {
		require.Negative(t, page[i].Position().Compare(page[i-1].Position()))
	}
	require.LessOrEqual(t, page[0].BurnBlockTime, at.Unix())
	later, laterTotal := c.Feed(at.Add(30*time.Second), 0, hiro.MaxLimit)
	require.Greater(t, laterTotal, total)
	// The same entry sits lower by what arrived.
	shifted, _ := c.Feed(at.Add(30*time.Second), laterTotal-total, hiro.MaxLimit)
	require.Equal(t, page[0].TxID, shifted[0].TxID)
	require.NotEqual(t, page[0].TxID, later[0].TxID)
	// The chain's volume within 3% of 200,000 a day, the agents' calls
	// among them; a chain quieter than the agents alone is none.
	require.InEpsilon(t, 200_000, float64(c.Visible(w.End)), 0.03)
	require.InEpsilon(t, 200_000-len(c.agentOrd), float64(c.Visible(w.End)-len(c.agentOrd)), 0.03)
	require.Nil(t, NewChain(w, BenchAllowlist, len(c.agentOrd)/2, 3))
	// Every agent transaction renders as its agent's.
	for k := 0; k < len(c.agentOrd); k += 97 {
		e := c.Entry(int(c.agentOrd[k]))
		require.Equal(t, AgentAddress(int(c.agentRef[k].agent)), e.SenderAddress)
	}
}

// TestTailFindsEverySwap drives the discovery engine through the
// benchmark on the service's own allowlist (the catalog's 139 pairs on 40
// contracts), keyless: every measured swap found by the tail itself,
// within 30 s at p99, at a cost that does not grow with the agents.
func TestTailFindsEverySwap(t *testing.T) {
	t.Parallel()
	tailCost := map[int]float64{}
	for _, n := range []int{1_000, 10_000} {
		w := NewWorld("w", n, 5, start, start.Add(24*time.Hour))
		r := Simulate(w, NewChain(w, ServiceAllowlist, 40_000, 5), Budgets[0], ServiceTail, start.Add(time.Hour), w.End.Add(-time.Hour))
		require.Positive(t, r.All.N)
		require.Zero(t, r.NeverFound, "%d agents", n)
		require.Zero(t, r.Missed, "%d agents: the reconciler found nothing the tail had not", n)
		require.Less(t, r.All.P99, 30*time.Second, "%d agents", n)
		require.Positive(t, r.Requests[ReaderReconciler])
		tailCost[n] = r.PerDay(ReaderTail) + r.PerDay(ReaderReconciler)
	}
	require.InEpsilon(t, tailCost[1_000], tailCost[10_000], 0.10, "the chain's cost, whatever the agents")
}

// TestTailReadsTheListsWhenTheMonthBinds: a day of 1,000 agents on a
// chain of 200,000 calls a day, on the month-capped plan. The feed alone
// costs more than the month's pace: read there, the walks give up and
// swaps are found late or never; the engine reads the allowlisted
// contracts' lists instead and finds every swap within minutes.
func TestTailReadsTheListsWhenTheMonthBinds(t *testing.T) {
	t.Parallel()
	w := NewWorld("w", 1_000, 5, start, start.Add(24*time.Hour))
	c := NewChain(w, BenchAllowlist, 200_000, 5)
	from, to := start.Add(3*time.Hour), w.End.Add(-time.Hour)
	r := Simulate(w, c, Budgets[2], Tail, from, to)
	require.Greater(t, r.OnLists, 0.9, "%+v", r)
	require.Positive(t, r.All.N)
	require.Zero(t, r.NeverFound, "%+v", r)
	require.LessOrEqual(t, r.All.P99, 5*time.Minute, "%+v", r)
	require.Nil(t, r.DryAfter)

	feed := Tail
	feed.FeedOnly = true
	f := Simulate(w, c, Budgets[2], feed, from, to)
	require.Zero(t, f.OnLists)
	require.True(t, f.NeverFound > 0 || f.All.P99 > 5*time.Minute, "the feed fits after all: %+v", f)
}

// TestChainReportShape runs a tiny matrix through RunChain and WriteChain.
func TestChainReportShape(t *testing.T) {
	t.Parallel()
	rep := RunChain(ChainOptions{Sizes: []int{200}, Volumes: []int{10_000}, Budgets: Budgets,
		Horizon: 12 * time.Hour, ShortMonth: true, PerAgentUpTo: 200, PerAgent: []ingest.Policy{ingest.PolicyOptimal}, Tails: []Strategy{Tail}})
	require.Len(t, rep.Results, 2*len(Budgets))
	if testing.Verbose() {
		rep.WriteChain(os.Stdout)
	}
}

// TestServiceAllowlistIsTheCatalog: the chain on the service's allowlist
// lays the agents' swaps on the catalog's pairs and its contracts' readers
// are the catalog's contracts.
func TestServiceAllowlistIsTheCatalog(t *testing.T) {
	t.Parallel()
	cat := catalog.Default()
	contracts := map[string]bool{}
	for _, p := range cat.Pairs() {
		contracts[p.ContractID] = true
	}
	require.Equal(t, len(contracts), ServiceAllowlist.Contracts())
	w := NewWorld("small", 300, 3, start, start.Add(24*time.Hour))
	c := NewChain(w, ServiceAllowlist, 40_000, 3)
	swaps := 0
	for k, ref := range c.agentRef {
		e := c.Entry(int(c.agentOrd[k]))
		swap := w.Agents[ref.agent].Txs[ref.tx].Swap
		require.Equal(t, swap, cat.Allowed(e.ContractCall.ContractID, e.ContractCall.FunctionName))
		if swap {
			swaps++
		}
	}
	require.Positive(t, swaps)
}

// TestChainFiguresAreTheGoals: the figures cmd/bench prints for the
// service's allowlist fail exactly when its goals are missed: chain.* on
// the push rows (the service's default), chain.poll.* on the polling rows
// at their regression gates; the benchmark's allowlist has none.
func TestChainFiguresAreTheGoals(t *testing.T) {
	t.Parallel()
	keyless := Result{World: "10000 agents", Budget: Budgets[0].Name, Strategy: ServicePush.Name, Volume: 40_000, Days: 1,
		Requests: map[string]int{ReaderTail: 10_000}, All: Delays{N: 10, Mean: 5 * time.Second, P99: 20 * time.Second}}
	month := Result{World: "1000 agents", Budget: Budgets[2].Name, Strategy: ServicePush.Name, Volume: 200_000, Days: 30,
		Requests: map[string]int{}, All: Delays{N: 10, P99: 4 * time.Minute}}
	month.HasMonth, month.MonthLeft = true, 750
	pollKeyless, pollMonth := keyless, month
	pollKeyless.Strategy, pollMonth.Strategy = ServiceTail.Name, ServiceTail.Name
	pollKeyless.Requests = map[string]int{ReaderTail: 17_000} // 26%: within the gate
	pollMonth.All.P99 = 24 * time.Minute
	other := month
	other.Strategy, other.All.P99 = Tail.Name, time.Hour // not the service's allowlist: no figure
	rows := func() []Result { return []Result{keyless, month, pollKeyless, pollMonth, other} }
	figures := func(rs ...Result) map[string]bool {
		pass := map[string]bool{}
		for _, f := range (Report{Results: rs}).Figures() {
			pass[f.Name] = f.Pass()
		}
		return pass
	}
	got := figures(rows()...)
	require.Len(t, got, 15)
	for name, ok := range got {
		require.True(t, ok, name)
	}
	for _, g := range (Report{Results: rows()[:4]}).Goals() {
		require.True(t, g.Met, g.Goal)
	}
	keyless.Requests = map[string]int{ReaderTail: 10_000, ReaderDetails: 7_000} // 17,000 of 64,800: 26%
	month.All.P99 = 6 * time.Minute
	pollMonth.All.P99 = 31 * time.Minute
	got = figures(rows()...)
	require.False(t, got["chain.keyless.budget_share"])
	require.False(t, got["chain.month.p99_worst"])
	require.False(t, got["chain.poll.month.p99_worst"])
	require.True(t, got["chain.keyless.p99"])
	require.True(t, got["chain.poll.keyless.budget_share"])
	for _, g := range (Report{Results: []Result{keyless, month, pollMonth}}).Goals()[1:4] {
		require.False(t, g.Met, g.Goal)
	}
	pollKeyless.Requests[ReaderDetails] = 3_000 // 20,000 of 64,800: 31%
	require.False(t, figures(pollKeyless)["chain.poll.keyless.budget_share"])
	require.False(t, (Report{Results: []Result{pollKeyless}}).Goals()[1].Met)
}

// TestLossRowsHoldNoLoss: polling alone, the month plan's rows at
// LossVolumes hold no p99 (a slow row passes p99_worst and its goal) but
// fail on one swap never found; with push they hold the p99 too. The
// default run has them.
func TestLossRowsHoldNoLoss(t *testing.T) {
	t.Parallel()
	row := Result{World: "1000 agents", Budget: Budgets[2].Name, Strategy: ServiceTail.Name, Volume: LossVolumes[1], Days: 30,
		Requests: map[string]int{}, All: Delays{N: 10, P99: time.Hour}}
	row.HasMonth, row.MonthLeft = true, 750
	pass := func(r Result) (map[string]bool, bool) {
		rep := Report{Results: []Result{r}}
		got := map[string]bool{}
		for _, f := range rep.Figures() {
			got[f.Name] = f.Pass()
		}
		met := true
		for _, g := range rep.Goals() {
			met = met && g.Met
		}
		return got, met
	}
	got, met := pass(row)
	require.Equal(t, map[string]bool{"chain.poll.never_found": true, "chain.poll.month.left_min": true}, got)
	require.True(t, met)
	row.NeverFound = 1
	got, met = pass(row)
	require.False(t, got["chain.poll.never_found"])
	require.False(t, met)

	row.Strategy, row.NeverFound = ServicePush.Name, 0
	got, met = pass(row)
	require.False(t, got["chain.month.p99_worst"], "push holds the p99 at every volume")
	require.False(t, met)
	for _, v := range LossVolumes {
		require.True(t, lossOnly(v), v)
	}
}
