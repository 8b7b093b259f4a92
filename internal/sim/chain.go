package sim

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The simulated chain carries everyone's traffic (SPEC §8): besides the
// agents' transactions, strangers call the allowlisted contracts and
// others, at ChainConfig.Volume calls a day, in the same blocks. They are
// what makes reading the chain's feed cost what the chain's volume costs.
//
// At 200,000 calls a day over a world of several days there are millions
// of them, so they are kept compactly: a day is generated whole the first
// time anything asks about it, from its own seed (so the answer never
// depends on the order of questions), as 16 bytes a call. A call becomes a
// full transaction (events included) only when it is rendered, and its
// txid encodes where it lives, so a lookup by id needs no index.

// ChainConfig shapes the strangers' traffic. The zero value is
// DefaultChainVolume calls a day with a few on losing forks.
type ChainConfig struct {
	// Volume is how many contract calls strangers make a day. 0 takes
	// DefaultChainVolume; negative makes none.
	Volume int
	// ForkShare is the share of seconds (blocks) whose strangers' calls
	// were mined on a fork that lost: they show canonical false. 0 takes
	// defaultForkShare; negative makes none.
	ForkShare float64
}

const (
	// DefaultChainVolume is strangers' contract calls a day (SPEC §8).
	DefaultChainVolume = 40_000
	defaultForkShare   = 0.001
	// strangers is how many distinct senders make the calls.
	strangers = 5_000
	// strangerIndexBase numbers strangers' calls in their blocks above the
	// fixed world's transactions and below the Activity streams', so that
	// no two transactions share a position; maxStrangersPerBlock keeps
	// them there.
	strangerIndexBase    = 500
	maxStrangersPerBlock = streamIndexBase - strangerIndexBase
	// strangerFailedShare of the calls abort on chain.
	strangerFailedShare = 0.03
	day                 = 24 * time.Hour
)

func (c ChainConfig) withDefaults() ChainConfig {
	c.Volume = cmp.Or(c.Volume, DefaultChainVolume)
	c.ForkShare = min(max(cmp.Or(c.ForkShare, defaultForkShare), 0), 1)
	return c
}

// callKind is a (contract, function) strangers call, with how often.
type callKind struct {
	contract int // index into chain.contracts
	function string
	swap     bool
	weight   float64
}

// chain is the strangers' traffic of a world. It is safe for concurrent use.
type chain struct {
	seed   uint64
	cfg    ChainConfig
	from   time.Time // day 0 starts here
	tokens worldTokens

	contracts  []string
	contractOf map[string]int
	kinds      []callKind
	cumWeight  []float64

	// mask and check make and recognise strangers' txids.
	mask, check uint64

	mu   sync.Mutex
	days []*chainDay // generated days, contiguous from day 0
}

// chainDay is one day of strangers' calls.
type chainDay struct {
	// calls are the day's calls in the feed, by position (oldest first).
	calls []strangerCall
	// byContract lists, per contract, the indexes of its calls in calls.
	byContract [][]int32
}

// strangerCall is one call, compactly: the rest derives from its txid.
type strangerCall struct {
	sec    uint32 // seconds into the day: its block
	idx    uint16 // its place among the block's strangers
	kind   uint16
	sender uint32
	flags  uint8
}

const (
	flagFork uint8 = 1 << iota
	flagFailed
)

func newChain(seed int64, cfg ChainConfig, from time.Time, tokens worldTokens) *chain {
	c := &chain{
		seed:       uint64(seed),
		cfg:        cfg.withDefaults(),
		from:       from,
		tokens:     tokens,
		contractOf: map[string]int{},
		mask:       Mix(uint64(seed) ^ 0xc4a1),
		check:      Mix(uint64(seed) ^ 0xc4a2),
	}
	kind := func(id, function string, swap bool, weight float64) {
		if _, ok := c.contractOf[id]; !ok {
			c.contractOf[id] = len(c.contracts)
			c.contracts = append(c.contracts, id)
		}
		c.kinds = append(c.kinds, callKind{contract: c.contractOf[id], function: function, swap: swap, weight: weight})
	}
	// A third of the traffic swaps through the allowlisted pairs, a tenth
	// does other business with the same contracts, and the rest goes
	// elsewhere: other DEXes, stacking, tokens, names.
	pairs := allowPairs()
	for _, p := range pairs {
		kind(p.contract, p.function, true, 0.33/float64(len(pairs)))
	}
	allowContracts := c.contracts // so far, the pairs' contracts, each once
	for _, id := range allowContracts {
		for _, fn := range []string{"add-liquidity", "withdraw-liquidity"} {
			kind(id, fn, false, 0.10/float64(2*len(allowContracts)))
		}
	}
	kind(arkadikoSwap, "swap-x-for-y", true, 0.08)
	kind(arkadikoSwap, "swap-y-for-x", true, 0.06)
	kind("SP000000000000000000002Q6VF78.pox-4", "delegate-stx", false, 0.05)
	kind("SP000000000000000000002Q6VF78.bns", "name-renewal", false, 0.02)
	kind("SP3K8BC0PPEVCV7NZ6QSRWPQ2JE9E5B6N3PA0KBR9.token-alex", "transfer", false, 0.16)
	kind("SP102V8P0F7JX67ARQ77WEA3D3CFB5XW39REDT0AM.amm-pool-v2-01", "swap-helper", true, 0.12)
	kind("SP2C2YFP12AJZB4MABJBAJ55XECVS7E4PMMZ89YZR.arkadiko-vaults-operations-v1-1", "open-vault", false, 0.04)
	kind("SP4SZE494VC2YC5JYG7AYFQ44F5Q4PYV7DVMDPBG.ststx-token", "transfer", false, 0.04)
	sum := 0.0
	for _, k := range c.kinds {
		sum += k.weight
		c.cumWeight = append(c.cumWeight, sum)
	}
	return c
}

func (c *chain) on() bool { return c.cfg.Volume > 0 }

func (c *chain) dayStart(d int) time.Time { return c.from.Add(time.Duration(d) * day) }

// upTo generates every day begun by at and returns the days.
func (c *chain) upTo(at time.Time) []*chainDay {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.on() || at.Before(c.from) {
		return nil
	}
	for d := len(c.days); !c.dayStart(d).After(at); d++ {
		c.days = append(c.days, c.makeDay(d))
	}
	n := int(at.Sub(c.from)/day) + 1
	return c.days[:n]
}

// makeDay draws day d: calls arrive as a Poisson process at the day's
// volume, each to a weighted (contract, function), from a sender skewed
// towards the busiest (a few bots make much of a chain's traffic).
func (c *chain) makeDay(d int) *chainDay {
	rng := rand.New(rand.NewPCG(Mix(c.seed^uint64(d)<<20), 0xc4a1))
	out := &chainDay{byContract: make([][]int32, len(c.contracts))}
	rate := float64(c.cfg.Volume)
	var lastSec uint32
	var inBlock int
	// A call is mined in the block of its moment: the day's first block
	// (the one before it is the day before's), then one every
	// stacksBlockPeriod seconds.
	first := uint32(BlockOf(c.dayStart(d)).Sub(c.dayStart(d)) / time.Second)
	for t := rng.ExpFloat64() / rate; t < 1; t += rng.ExpFloat64() / rate { // in days
		sec := max(uint32(t*86400), first)
		sec -= (sec - first) % stacksBlockPeriod
		if sec == lastSec && len(out.calls) > 0 {
			inBlock++
		} else {
			lastSec, inBlock = sec, 0
		}
		if inBlock >= maxStrangersPerBlock {
			continue // a full block; unreachable at any sane volume
		}
		call := strangerCall{
			sec:    sec,
			idx:    uint16(inBlock),
			kind:   uint16(c.pickKind(rng.Float64())),
			sender: uint32(min(rng.IntN(strangers), rng.IntN(strangers))),
		}
		if rng.Float64() < strangerFailedShare {
			call.flags |= flagFailed
		}
		if c.forkBlock(d, sec) {
			call.flags |= flagFork
		}
		k := c.kinds[call.kind].contract
		out.byContract[k] = append(out.byContract[k], int32(len(out.calls)))
		out.calls = append(out.calls, call)
	}
	return out
}

func (c *chain) pickKind(u float64) int {
	i, _ := slices.BinarySearch(c.cumWeight, u*c.cumWeight[len(c.cumWeight)-1])
	return min(i, len(c.kinds)-1)
}

// forkBlock decides, from the seed alone, whether the strangers' calls of
// a block were mined on a losing fork.
func (c *chain) forkBlock(d int, sec uint32) bool {
	if c.cfg.ForkShare <= 0 {
		return false
	}
	u := float64(Mix(c.seed^0xf0c^uint64(d)<<24^uint64(sec))>>11) / (1 << 53)
	return u < c.cfg.ForkShare
}

// at is when a call of day d was mined.
func (c *chain) at(d int, call strangerCall) time.Time {
	return c.dayStart(d).Add(time.Duration(call.sec) * time.Second)
}

func (c *chain) position(d int, call strangerCall) position {
	return position{height: heightAt(c.at(d, call)), index: strangerIndexBase + int64(call.idx)}
}

// A stranger's txid carries its day and number, masked, and a check word,
// so that an id finds its call without an index and an agent's random id
// is never taken for one.
func (c *chain) txid(d, i int) string {
	w0 := (uint64(d)<<32 | uint64(i)) ^ c.mask
	w1 := Mix(c.check ^ w0)
	return fmt.Sprintf("0x%016x%016x%016x%016x", w0, w1, Mix(w1), Mix(w1^1))
}

// lookup finds the call of txid (0x + lower-case hex) among the days
// generated up to at.
func (c *chain) lookup(txid string, at time.Time) (*worldTx, bool) {
	if !c.on() || len(txid) != 66 {
		return nil, false
	}
	w0, err := strconv.ParseUint(txid[2:18], 16, 64)
	if err != nil {
		return nil, false
	}
	raw := w0 ^ c.mask
	d, i := int(raw>>32), int(raw&(1<<32-1))
	days := c.upTo(at)
	// The whole id, its check word included, must be the one the call
	// makes: an agent's random id decodes to some call too.
	if d >= len(days) || i >= len(days[d].calls) || c.at(d, days[d].calls[i]).After(at) || c.txid(d, i) != txid {
		return nil, false
	}
	return c.materialize(d, i, days[d].calls[i]), true
}

// CaseStranger is a stranger's contract call, on an allowlisted contract or
// another: sender_not_registered, and never fetched by a sweep that filters
// the feed by sender. Strangers' calls are not in Transactions or
// ExpectedOutcomes (there are far too many); StrangerCalls counts them.
const CaseStranger TxCase = "stranger"

// materialize renders a call as a full transaction: everything not kept
// compactly is drawn from its own seed, so it is the same every time.
func (c *chain) materialize(d, i int, call strangerCall) *worldTx {
	rng := rand.New(rand.NewPCG(Mix(c.seed^(uint64(d)<<32|uint64(i))), c.mask))
	k := c.kinds[call.kind]
	contract := c.contracts[k.contract]
	sender := c.stranger(call.sender)
	at := c.at(d, call)
	tx := &worldTx{
		WorldTx: WorldTx{TxID: c.txid(d, i), Case: CaseStranger, Sender: sender, ContractID: contract,
			FunctionName: k.function, ListedUnder: []string{}, AppearsAt: at},
		status:  statusSuccess,
		txType:  txTypeContractCall,
		result:  clarityValue{Hex: "0x0703", Repr: "(ok true)"},
		feeRate: 1000 + rng.Int64N(20_000),
		nonce:   d*1000 + rng.IntN(1000),
		index:   strangerIndexBase + int64(call.idx),
		fork:    call.flags&flagFork != 0,
	}
	t := c.tokens
	x, y := t.stx, t.traded[rng.IntN(len(t.traded))]
	if rng.IntN(2) == 0 {
		x, y = y, x
	}
	in, out := units(5+rng.Float64()*995, x.Decimals), units(5+rng.Float64()*995, y.Decimals)
	args := []functionArgJSON{{Name: "amount", Type: "uint", Repr: "u" + in}}
	tx.events = []eventJSON{transferEvent(x.ID, sender, contract, in)}
	if k.swap {
		args = append(args, functionArgJSON{Name: "min-dy", Type: "uint", Repr: "u1"})
		tx.events = append(tx.events, transferEvent(y.ID, contract, sender, out))
		for range rng.IntN(4) {
			tx.events = append(tx.events, transferEvent(t.traded[rng.IntN(len(t.traded))].ID, contract, bitflowCore, units(rng.Float64()+0.01, 6)))
		}
	}
	tx.events = append(tx.events, printEvent(contract, k.function))
	tx.call = newContractCall(contract, k.function, args)
	if call.flags&flagFailed != 0 {
		tx.status = "abort_by_response"
		tx.result = clarityErrUint(uint64(1 + rng.IntN(10)))
	}
	return tx
}

// stranger is sender n's address: a mainnet principal drawn from the seed.
func (c *chain) stranger(n uint32) string {
	var b strings.Builder
	b.Grow(41)
	h := Mix(c.seed ^ 0x57a ^ uint64(n)<<16)
	b.WriteString([]string{"SP", "SP", "SP", "SM"}[h%4])
	for j := range 38 {
		if j%12 == 0 {
			h = Mix(h ^ uint64(j))
		}
		b.WriteByte(c32[h%32])
		h /= 32
	}
	return b.String()
}

// strangerSeq is the strangers' calls visible at a moment, in one list (the
// feed, or one contract's), newest first: rank 0 is the newest.
type strangerSeq struct {
	c    *chain
	days []*chainDay
	// counts[d] is how many of day d's calls the list has by the moment;
	// contract is -1 for the feed.
	counts   []int
	total    int
	contract int
}

// seq returns the strangers' calls mined by at, in the feed (contract "")
// or one contract's list.
func (c *chain) seq(contract string, at time.Time) strangerSeq {
	s := strangerSeq{c: c, contract: -1}
	if contract != "" {
		k, ok := c.contractOf[contract]
		if !ok {
			return s
		}
		s.contract = k
	}
	s.days = c.upTo(at)
	s.counts = make([]int, len(s.days))
	for d, dd := range s.days {
		n := len(dd.calls)
		if s.contract >= 0 {
			n = len(dd.byContract[s.contract])
		}
		if d == len(s.days)-1 {
			// The day holding at: only what was mined by then.
			cut := uint32(at.Sub(c.dayStart(d)) / time.Second)
			n = sort.Search(n, func(j int) bool { return dd.calls[s.index(d, j)].sec > cut })
		}
		s.counts[d] = n
		s.total += n
	}
	return s
}

// index is the number, in day d's calls, of the list's j-th call of the
// day (oldest first).
func (s strangerSeq) index(d, j int) int {
	if s.contract >= 0 {
		return int(s.days[d].byContract[s.contract][j])
	}
	return j
}

// rank finds rank r (0 newest): its day, its number in the day's calls,
// and the call.
func (s strangerSeq) rank(r int) (int, int, strangerCall) {
	for d := len(s.counts) - 1; d >= 0; d-- {
		if r < s.counts[d] {
			i := s.index(d, s.counts[d]-1-r)
			return d, i, s.days[d].calls[i]
		}
		r -= s.counts[d]
	}
	panic("sim: rank past the strangers' list") // callers stay below total
}

func (s strangerSeq) position(r int) position {
	d, _, call := s.rank(r)
	return s.c.position(d, call)
}

func (s strangerSeq) tx(r int) *worldTx {
	return s.c.materialize(s.rank(r))
}

// StrangerBlocks is the strangers' traffic without a world, for the
// discovery benchmark's chain (internal/ingest/bench), which renders its
// entries compactly itself: how many calls strangers have mined in each
// block from the one at from (BlockOf(from)) to the one at to (those mined before to), at volume
// calls a day from seed (no losing forks), as a world's chain draws them.
func StrangerBlocks(seed int64, volume int, from, to time.Time) []uint32 {
	out := make([]uint32, int(BlockOf(to).Sub(BlockOf(from))/BlockPeriod)+1)
	if volume <= 0 {
		return out
	}
	c := newChain(seed, ChainConfig{Volume: volume, ForkShare: -1}, from, worldTokens{})
	for d, day := range c.upTo(to) {
		for _, call := range day.calls {
			if at := c.at(d, call); !at.Before(from) && at.Before(to) {
				out[BlockOf(at).Sub(BlockOf(from))/BlockPeriod]++
			}
		}
	}
	return out
}

// StrangerCalls is how many contract calls strangers have had mined by at
// (losing forks included), so a test can hold the chain to its volume.
func (w *World) StrangerCalls(at time.Time) int { return w.chain.seq("", at).total }
