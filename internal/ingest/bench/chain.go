package bench

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/hiro"
	simulator "github.com/pacer-dev/pacer/internal/sim"
)

// Chain is the whole chain around a World's agents, for the discovery
// benchmark's readers (SPEC §5.0): Volume contract calls a day, every
// transaction of the agents and strangers' calls for the rest (the
// simulator's own traffic, sim.StrangerBlocks), in the
// simulator's blocks (sim.BlockOf: 4 s apart, a transaction in the first
// block at or after it), as the feed (/extended/v1/tx?type=contract_call) lists them
// newest first at any moment. Agents' transactions come first in their
// block, strangers' after.
//
// At 200,000 calls a day over a month there are millions of entries, so
// the chain keeps only a running count per block and where the agents'
// entries are: an entry is rendered when a page is read.
type Chain struct {
	W *World
	A *Allowlist
	// Volume is the chain's contract calls a day, the agents' included.
	Volume int
	// cum[k] is how many entries are in the blocks before block k of the
	// horizon (block 0 is at its start, block k BlockPeriod×k later).
	cum []uint32
	// agentOrd are the ordinals (place from the oldest, 0-based) of the
	// agents' entries, ascending; agentRef says whose they are.
	agentOrd []uint32
	agentRef []agentTxRef
	// swapsBefore[i] is how many of the first i agents' entries are swaps.
	swapsBefore []uint32
}

// agentTxRef is an agent's transaction: World.Agents[agent].Txs[tx].
type agentTxRef struct{ agent, tx int32 }

// Shares of strangers' calls on the allowlisted pairs; the rest go
// elsewhere (SPEC §8's world: a third swap through the DEXes that count).
const strangerAllowedShare = 0.33

// chainHeight0 is the block height of the horizon's first block.
const chainHeight0 = 1_000_000

// Allowlist is a chain's allowlisted pairs: agents' swaps go through
// them; strangers call them (strangerAllowedShare of their calls) and
// other contracts. The tail's filter, the feed's share on the lists and
// the contracts' readers (one list each) are the allowlist's.
type Allowlist struct {
	pairs     []catalog.Pair
	contracts map[string]bool
}

// NewAllowlist is the allowlist of pairs.
func NewAllowlist(pairs []catalog.Pair) *Allowlist {
	a := &Allowlist{pairs: pairs, contracts: map[string]bool{}}
	for _, p := range pairs {
		a.contracts[p.ContractID] = true
	}
	return a
}

// Allowlists: the benchmark's own 6 pairs on 5 contracts, and the
// service's (internal/catalog: 139 pairs on 40 contracts).
var (
	BenchAllowlist = NewAllowlist([]catalog.Pair{
		{ContractID: "SM1.xyk-core", Function: "swap-x-for-y"},
		{ContractID: "SM1.xyk-core", Function: "swap-y-for-x"},
		{ContractID: "SM1.stableswap-core", Function: "swap-x-for-y"},
		{ContractID: "SP2.univ2-router", Function: "swap-exact-tokens-for-tokens"},
		{ContractID: "SM1.router-multihop", Function: "swap-helper-b"},
		{ContractID: "SP3.dlmm-core", Function: "swap-x-for-y"},
	})
	ServiceAllowlist = NewAllowlist(catalog.Default().Pairs())
	otherCall        = catalog.Pair{ContractID: "SP9.token-transfer", Function: "transfer"}
)

// Allowed reports whether a (contract, function) pair counts.
func (a *Allowlist) Allowed(contractID, function string) bool {
	return slices.Contains(a.pairs, catalog.Pair{ContractID: contractID, Function: function})
}

// Contracts is how many allowlisted contracts have their own list.
func (a *Allowlist) Contracts() int { return len(a.contracts) }

// OnContract reports whether a contract is allowlisted (has a pair).
func (a *Allowlist) OnContract(id string) bool { return a.contracts[id] }

// AgentAddress is the address of agent i, as the per-agent simulation
// names it.
func AgentAddress(i int) string { return fmt.Sprintf("SP%06d", i) }

// NewChain lays the agents' transactions of w and strangers' calls (a
// Poisson process, from seed) into blocks, volume calls a day in all; nil
// when the agents alone make more than volume.
func NewChain(w *World, a *Allowlist, volume int, seed uint64) *Chain {
	type placed struct {
		sec int // the block
		ref agentTxRef
	}
	var agents []placed
	for i, ag := range w.Agents {
		for j, tx := range ag.Txs {
			agents = append(agents, placed{int(simulator.BlockOf(tx.At).Sub(w.Start) / simulator.BlockPeriod), agentTxRef{int32(i), int32(j)}})
		}
	}
	strangers := volume - int(math.Round(float64(len(agents))/(w.End.Sub(w.Start).Hours()/24)))
	if strangers < 0 {
		return nil
	}
	// The strangers' calls are the simulator's own traffic (sim's chain).
	counts := simulator.StrangerBlocks(int64(seed), strangers, w.Start, w.End)
	blocks := len(counts)
	// Agents' transactions, by block, take the first indexes of their block.
	slices.SortStableFunc(agents, func(a, b placed) int { return a.sec - b.sec })
	agentsIn := make([]uint32, blocks)
	for _, p := range agents {
		agentsIn[p.sec]++
	}
	c := &Chain{W: w, A: a, Volume: volume, cum: make([]uint32, blocks+1)}
	for s := range blocks {
		c.cum[s+1] = c.cum[s] + counts[s] + agentsIn[s]
	}
	c.swapsBefore = make([]uint32, len(agents)+1)
	k := 0
	for i, p := range agents {
		if i > 0 && agents[i-1].sec == p.sec {
			k++
		} else {
			k = 0
		}
		c.agentOrd = append(c.agentOrd, c.cum[p.sec]+uint32(k))
		c.agentRef = append(c.agentRef, p.ref)
		c.swapsBefore[i+1] = c.swapsBefore[i]
		if w.Agents[p.ref.agent].Txs[p.ref.tx].Swap {
			c.swapsBefore[i+1]++
		}
	}
	return c
}

// Visible is how many entries the feed holds at now: every block mined by
// then.
func (c *Chain) Visible(now time.Time) int {
	s := int(now.Sub(c.W.Start)/simulator.BlockPeriod) + 1
	if now.Before(c.W.Start) {
		s = 0
	}
	return int(c.cum[min(s, len(c.cum)-1)])
}

// Feed is the feed's page at offset (limit entries) as Hiro answers it at
// now, and the feed's total then.
func (c *Chain) Feed(now time.Time, offset, limit int) ([]hiro.Entry, int) {
	total := c.Visible(now)
	var out []hiro.Entry
	for r := offset; r < min(offset+limit, total); r++ {
		out = append(out, c.Entry(total-1-r))
	}
	return out, total
}

// Entry renders the entry of ordinal g.
func (c *Chain) Entry(g int) hiro.Entry {
	sec := sort.Search(len(c.cum), func(s int) bool { return int(c.cum[s]) > g }) - 1 // its block
	at := c.W.Start.Add(time.Duration(sec) * simulator.BlockPeriod)
	e := hiro.Entry{
		TxID:          fmt.Sprintf("0x%064x", g),
		TxType:        "contract_call",
		TxStatus:      "success",
		BlockHeight:   chainHeight0 + int64(sec),
		TxIndex:       int64(g) - int64(c.cum[sec]),
		BlockTime:     at.Unix(),
		BurnBlockTime: simulator.BurnBlockOf(at).Unix(),
		Canonical:     true,
	}
	p := otherCall
	if i, ok := slices.BinarySearch(c.agentOrd, uint32(g)); ok {
		ref := c.agentRef[i]
		e.SenderAddress = AgentAddress(int(ref.agent))
		if c.W.Agents[ref.agent].Txs[ref.tx].Swap {
			p = c.A.pairs[int(ref.tx)%len(c.A.pairs)]
		}
	} else {
		// A stranger: its sender and call drawn from its ordinal.
		h := simulator.Mix(uint64(g))
		e.SenderAddress = fmt.Sprintf("ST%06d", h%50_000)
		if float64(h>>32)/(1<<32) < strangerAllowedShare {
			p = c.A.pairs[(h>>8)%uint64(len(c.A.pairs))]
		}
	}
	e.ContractCall = &hiro.ContractCall{ContractID: p.ContractID, FunctionName: p.Function}
	return e
}

// Ordinal is the ordinal of the entry at p (its place from the oldest).
func (c *Chain) Ordinal(p hiro.Position) int {
	return int(c.cum[p.BlockHeight-chainHeight0]) + int(p.TxIndex)
}

// AgentTx returns the agent's transaction a rendered entry is, if it is
// one (its txid is its ordinal).
func (c *Chain) AgentTx(e hiro.Entry) (agentTxRef, bool) {
	g, err := strconv.ParseUint(strings.TrimPrefix(e.TxID, "0x"), 16, 32)
	if err != nil {
		return agentTxRef{}, false
	}
	i, ok := slices.BinarySearch(c.agentOrd, uint32(g))
	if !ok {
		return agentTxRef{}, false
	}
	return c.agentRef[i], true
}

// AllowedIn counts the entries of ordinals [lo, hi) on the allowlisted
// pairs: the agents' swaps there and, by their share, the strangers'.
func (c *Chain) AllowedIn(lo, hi int) int {
	a, b := c.agentSpan(lo, hi)
	swaps := int(c.swapsBefore[b] - c.swapsBefore[a])
	return swaps + int(float64(hi-lo-(b-a))*strangerAllowedShare+0.5)
}

// AgentsIn returns the agents' entries of ordinals [lo, hi).
func (c *Chain) AgentsIn(lo, hi int) []agentTxRef {
	a, b := c.agentSpan(lo, hi)
	return c.agentRef[a:b]
}

// agentSpan is the agents' entries of ordinals [lo, hi), as indexes.
func (c *Chain) agentSpan(lo, hi int) (a, b int) {
	a = sort.Search(len(c.agentOrd), func(i int) bool { return int(c.agentOrd[i]) >= lo })
	b = sort.Search(len(c.agentOrd), func(i int) bool { return int(c.agentOrd[i]) >= hi })
	return a, max(a, b)
}
