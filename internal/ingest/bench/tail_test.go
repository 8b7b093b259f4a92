package bench

import (
	"cmp"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/hiro"
)

// refScan is a walk of the feed written here, independently of the
// discovery engine, to check the benchmark's chain and driver: pages of 50
// from offset 0 down to the position, repeats dropped by keeping the
// oldest entry handed out.
type refScan struct {
	from     *Mark
	offset   int
	top, low *Mark
	done     bool
	pending  *refScan
}

func markOf(e hiro.Entry) Mark { return Mark{Height: e.BlockHeight, Index: e.TxIndex, TxID: e.TxID} }

func cmpMark(a, b Mark) int {
	return cmp.Or(cmp.Compare(a.Height, b.Height), cmp.Compare(a.Index, b.Index))
}

func (s *refScan) NextOffset() int { return s.offset }

func (s *refScan) AddFeed(entries []hiro.Entry, _ int) ([]hiro.Entry, bool) {
	next := *s
	next.pending = nil
	var fresh []hiro.Entry
	reached := len(entries) < hiro.MaxLimit
	for _, e := range entries {
		m := markOf(e)
		if next.top == nil {
			next.top = &m
		}
		if s.from == nil || cmpMark(m, *s.from) <= 0 {
			reached = true
			break
		}
		if next.low != nil && cmpMark(m, *next.low) >= 0 {
			continue // a repeat: pages shifted
		}
		next.low = &m
		fresh = append(fresh, e)
	}
	next.offset += len(entries)
	next.done = reached
	s.pending = &next
	return fresh, reached
}

func (s *refScan) Commit() {
	if s.pending != nil {
		*s = *s.pending
	}
}

func (s *refScan) Done() bool { return s.done && s.pending == nil }

func (s *refScan) Position() *Mark {
	if s.top != nil && (s.from == nil || cmpMark(*s.top, *s.from) > 0) {
		return s.top
	}
	return s.from
}

func (s *refScan) Gap() bool { return false }

var refEngine = Engine{
	Name:    "reference walk",
	NewScan: func(from *Mark) Scanner { return &refScan{from: from} },
	Candidate: func(e hiro.Entry, agent func(string) bool) bool {
		return e.Canonical && e.ContractCall != nil && agent(e.SenderAddress) &&
			BenchAllowed(e.ContractCall.ContractID, e.ContractCall.FunctionName)
	},
}

// TestChainFeedShifts: the benchmark's feed is newest first, grows at the
// head as blocks arrive, and holds the agents' transactions where the
// world put them.
func TestChainFeedShifts(t *testing.T) {
	t.Parallel()
	w := NewWorld("small", 300, 3, start, start.Add(24*time.Hour))
	c := NewChain(w, 200_000, 3)
	at := start.Add(6 * time.Hour)
	page, total := c.Feed(at, 0, hiro.MaxLimit)
	require.Len(t, page, hiro.MaxLimit)
	for i := 1; i < len(page); i++ {
		require.Negative(t, cmpMark(markOf(page[i]), markOf(page[i-1])))
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
	require.Nil(t, NewChain(w, len(c.agentOrd)/2, 3))
	// Every agent transaction renders as its agent's.
	for k := 0; k < len(c.agentOrd); k += 97 {
		e := c.Entry(int(c.agentOrd[k]))
		require.Equal(t, AgentAddress(int(c.agentRef[k].agent)), e.SenderAddress)
	}
}

// TestTailDriverFindsEverySwap drives the reference walk through the
// benchmark: every measured swap found by the tail itself, within
// seconds, at a cost that does not grow with the agents.
func TestTailDriverFindsEverySwap(t *testing.T) {
	t.Parallel()
	tailCost := map[int]float64{}
	for _, n := range []int{1_000, 10_000} {
		w := NewWorld("w", n, 5, start, start.Add(24*time.Hour))
		c := NewChain(w, 40_000, 5)
		r := SimulateTail(c, Budgets[0], refEngine, start.Add(time.Hour), w.End.Add(-time.Hour))
		require.Positive(t, r.All.N)
		require.Zero(t, r.NeverFound, "%d agents", n)
		require.Zero(t, r.Missed, "%d agents: the reconciler found nothing the tail had not", n)
		require.Less(t, r.All.P99, 30*time.Second, "%d agents", n)
		require.Positive(t, r.Requests[ReaderReconciler])
		tailCost[n] = r.PerDay(ReaderTail) + r.PerDay(ReaderReconciler)
		t.Logf("%d agents: %+v", n, r)
	}
	require.InEpsilon(t, tailCost[1_000], tailCost[10_000], 0.10, "the chain's cost, whatever the agents")
}

// TestChainReportShape runs a tiny matrix through RunChain and Write.
func TestChainReportShape(t *testing.T) {
	t.Parallel()
	rep := RunChain(refEngine, ChainOptions{Sizes: []int{200}, Volumes: []int{10_000}, Budgets: Budgets,
		Horizon: 12 * time.Hour, ShortMonth: true, PerAgent: true})
	require.Len(t, rep.Results, 2*len(Budgets))
	if testing.Verbose() {
		rep.Write(os.Stdout, Budgets)
	}
}
