package sim

import (
	"cmp"
	"crypto/sha256"
	"fmt"
	"hash/fnv"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/registry"
)

// World generation.

const (
	// DefaultAgents is how many agents a world has unless configured.
	DefaultAgents = 30
	// minAgents leaves room for one agent of each special role and enough
	// genesis agents to carry every special case.
	minAgents = 10
	// maxListed bounds every address's list to one sweep page (limit=25).
	maxListed = 25
	// busyTrades makes one agent's list longer than Hiro's default page.
	busyTrades = hiroDefaultLimit + 2
	// futureShare is the share of ordinary transactions that arrive after
	// the origin rather than being history already.
	futureShare = 0.35
)

// DefaultCompetitionStart is COMPETITION_START's default (SPEC §2).
var DefaultCompetitionStart = time.Unix(1778700600, 0).UTC()

const (
	defaultHistory  = 24 * time.Hour
	defaultArrivals = 2 * time.Hour
)

// Contracts the world trades through. The allowlisted ones are checked
// against the catalog by the tests.
const (
	bitflowDeployer   = "SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M"
	bitflowCore       = "SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR"
	stableswapSTX     = bitflowDeployer + ".stableswap-stx-ststx-v-1-2"
	stableswapCore    = bitflowCore + ".stableswap-core-v-1-4"
	xykCore           = bitflowCore + ".xyk-core-v-1-2"
	xykHelper         = bitflowCore + ".xyk-swap-helper-v-1-3"
	multihopRouter    = bitflowCore + ".router-stableswap-xyk-multihop-v-1-2"
	velarMultihop     = bitflowDeployer + ".wrapper-velar-multihop-v-1-1"
	velarCore         = "SP1Y5YSTAHZ88XYK1VPDH24GY0HPX5J4JECTMY4A1.univ2-core"
	dlmmCore          = "SP1PFR4V08H1RAZXREBGFFQ59WB739XM8VVGTFSEA.dlmm-core-v-1-1"
	arkadikoSwap      = "SP2C2YFP12AJZB4MABJBAJ55XECVS7E4PMMZ89YZR.arkadiko-swap-v2-1"
	unknownStatus     = "abort_by_reorg" // a status Hiro might add one day
	bech32Alphabet    = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
	maxUint128Decimal = "340282366920938463463374607431768211455"
)

// role is what an agent is there to exercise.
type role int

const (
	roleGenesis role = iota
	roleBusy
	roleNoERC8004
	rolePendingClaim
	roleFailedClaim
	roleNoClaim
)

// specialRoles are handed out first, one agent each.
var specialRoles = []role{roleNoERC8004, rolePendingClaim, roleFailedClaim, roleNoClaim, roleBusy}

// specialCases are spread over the ordinary genesis agents, so every
// outcome exists in every world.
var specialCases = []TxCase{
	CaseHuge, CaseHuge, CaseAtStart,
	CaseConfirmsLater, CaseConfirmsLater, CaseConfirmsLater,
	CasePending, CasePending,
	CaseFailed, CaseFailed, CaseDropped,
	CaseBeforeStart, CaseBeforeStart, CaseBeforeStart,
	CaseOutsider, CaseOutsider,
	CaseOneWay, CaseNoTransfers, CaseBadAmount, CaseBadAmount,
	CaseNotFound, CaseFetchFails, CaseUnknownStatus, CaseFork,
	CaseThroughAgent, CaseManyEvents,
	CaseOffList, CaseTransfer, CaseDeploy,
}

// badAmounts are amounts the chain never emits.
var badAmounts = []string{"12.5", "-1000", "1e6", "0x3e8", " 100"}

// worldTokens groups the Tenero world's tokens the way routes use them.
type worldTokens struct {
	stx, sbtc, ststx Token
	// stables are the pegged stablecoins, in Tenero's order.
	stables []Token
	// traded is a handful of generated tokens: volume concentrates on a
	// few, as on a real exchange, so the ranking of traded tokens means
	// something.
	traded []Token
}

const tradedTokens = 12

func groupTokens(tokens []Token) worldTokens {
	var wt worldTokens
	for _, t := range tokens {
		switch {
		case t.ID == competition.TokenSTX:
			wt.stx = t
		case strings.HasSuffix(t.Address, ".sbtc-token"):
			wt.sbtc = t
		case strings.HasSuffix(t.Address, ".ststx-token"):
			wt.ststx = t
		case t.Peg:
			wt.stables = append(wt.stables, t)
		case len(wt.traded) < tradedTokens:
			wt.traded = append(wt.traded, t)
		}
	}
	return wt
}

// generator builds a World. Its random source is the only source of
// variety, and it is drawn in a fixed order, so a seed fixes the world.
type generator struct {
	*making
	rng *rand.Rand
	// listed counts the transactions of each address's list; taken holds
	// every id handed out, so no two agents, claims or transactions share
	// one however the dice fall.
	listed map[string]int
	taken  map[string]bool
}

// making is the world in the making, shared by its generators.
type making struct {
	w      *World
	tokens worldTokens
	// price is a token's USD price at a moment, for plausible amounts.
	price    func(Token, time.Time) float64
	provider string
	// tenureBefore is set once a CaseBeforeStart swap was placed in the
	// start's tenure.
	tenureBefore bool

	// The timeline: ordinary history in [histFrom, present), arrivals in
	// [present, futureTo).
	histFrom, present, futureTo time.Time

	agents    []*Agent // generation order
	roles     map[string]role
	outsiders []string
	txs       []*worldTx
}

// fork returns a generator for one more part of the world (an Activity day)
// that shares g's making but draws from its own source, so that the part
// is the same whenever, and in whatever order, it is made.
func (g *generator) fork(key ...uint64) *generator {
	h := fnv.New64a()
	for _, k := range key {
		_, _ = fmt.Fprintf(h, "%d/", k)
	}
	return newGenerator(g.making, h.Sum64(), 0x5eed)
}

// newGenerator is a generator of m drawing from the source (seed, stream).
func newGenerator(m *making, seed, stream uint64) *generator {
	return &generator{making: m, rng: rand.New(rand.NewPCG(seed, stream)), listed: map[string]int{}, taken: map[string]bool{}}
}

// newWorld generates the world of seed.
func newWorld(seed int64, cfg HiroConfig, tokens []Token, price func(Token, time.Time) float64) *World {
	w := &World{
		start:   cfg.CompetitionStart,
		origin:  cfg.Origin,
		allow:   worldAllowlist{},
		byAgent: map[string]Agent{},
		byID:    map[string]*worldTx{},
		lists:   map[string][]*worldTx{},
	}
	g := newGenerator(&making{w: w, tokens: groupTokens(tokens), price: price, provider: worldProvider,
		present: later(cfg.CompetitionStart, cfg.Origin), roles: map[string]role{}}, uint64(seed), 0x4170)
	g.histFrom = later(cfg.CompetitionStart, cfg.Origin.Add(-cfg.History))
	g.futureTo = g.present.Add(cfg.Arrivals)

	g.makeAgents(cfg.Agents)
	for range 3 {
		g.outsiders = append(g.outsiders, g.principal())
	}
	g.makeOrdinaryTxs()
	g.makeSpecialTxs()
	g.makeFeatures(cfg.Features)
	// Each sender's nonces count its transactions in the order it sent
	// them; the indexes number each second's (each block's) in the order
	// of their txids, from 0: the fixed world's positions. Activity swaps
	// number theirs from streamIndexBase, so the two never meet.
	numberRuns(g.txs, func(a, b *worldTx) int { return strings.Compare(a.Sender, b.Sender) },
		func(a, b *worldTx) int { return a.AppearsAt.Compare(b.AppearsAt) }, func(tx *worldTx, n int) { tx.nonce = n })
	numberRuns(g.txs, func(a, b *worldTx) int { return a.minedAt().Compare(b.minedAt()) },
		func(a, b *worldTx) int { return strings.Compare(a.TxID, b.TxID) }, func(tx *worldTx, n int) { tx.index = int64(n) })
	if cfg.Activity {
		g.makeStreams(uint64(seed))
	}

	for _, a := range g.agents {
		w.agents = append(w.agents, *a)
		w.byAgent[a.STXAddress] = *a
	}
	slices.SortFunc(w.agents, func(a, b Agent) int { return strings.Compare(a.STXAddress, b.STXAddress) })
	slices.SortFunc(w.claims, func(a, b Claim) int { return strings.Compare(a.BTCAddress, b.BTCAddress) })
	slices.SortFunc(g.txs, func(a, b *worldTx) int { return strings.Compare(a.TxID, b.TxID) })
	for _, tx := range g.txs {
		w.add(tx)
	}
	w.makeReorgs(cfg.Reorgs, g.txs, g.present)
	w.chain = newChain(seed, cfg.Chain, g.histFrom, g.tokens)
	return w
}

// numberRuns numbers, from 0, the transactions that group ranks equal, in
// the order order gives them (ties keep the order of txs).
func numberRuns(txs []*worldTx, group, order func(a, b *worldTx) int, set func(*worldTx, int)) {
	sorted := slices.Clone(txs)
	slices.SortStableFunc(sorted, func(a, b *worldTx) int { return cmp.Or(group(a, b), order(a, b)) })
	n := 0
	for i, tx := range sorted {
		if i > 0 && group(sorted[i-1], tx) == 0 {
			n++
		} else {
			n = 0
		}
		set(tx, n)
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (g *generator) makeAgents(n int) {
	n = max(n, minAgents)
	roles := make([]role, n)
	for i, j := range g.rng.Perm(n) {
		if i < len(specialRoles) {
			roles[j] = specialRoles[i]
		}
	}
	var nextID int64
	for _, r := range roles {
		a := &Agent{STXAddress: g.principal(), BTCAddress: g.btcAddress(), DisplayName: g.displayName()}
		nextID += 1 + g.rng.Int64N(3)
		switch r {
		case roleGenesis, roleBusy:
			a.ERC8004AgentID = new(nextID)
			a.ClaimStatus = competition.ClaimVerified
			if g.rng.IntN(4) == 0 {
				a.ClaimStatus = competition.ClaimRewarded
			}
		case roleNoERC8004:
			a.ClaimStatus = competition.ClaimVerified
		default:
			// Whether they hold an id must not matter: the claim gate
			// comes first.
			if g.rng.IntN(2) == 0 {
				a.ERC8004AgentID = new(nextID)
			}
			a.ClaimStatus = map[role]string{rolePendingClaim: "pending", roleFailedClaim: "failed"}[r]
		}
		if a.ClaimStatus != "" {
			g.w.claims = append(g.w.claims, Claim{BTCAddress: a.BTCAddress, Status: a.ClaimStatus})
		}
		g.agents = append(g.agents, a)
		g.roles[a.STXAddress] = r
	}
	// Claims filed by people who never registered an agent.
	g.w.claims = append(g.w.claims,
		Claim{BTCAddress: g.btcAddress(), Status: competition.ClaimVerified},
		Claim{BTCAddress: g.btcAddress(), Status: "pending"})
}

// makeOrdinaryTxs gives every agent its everyday traffic.
func (g *generator) makeOrdinaryTxs() {
	for _, a := range g.agents {
		trades := 2 + g.rng.IntN(4)
		tradeCase := CaseSwap // the kind is refined per trade below
		switch g.roles[a.STXAddress] {
		case roleBusy:
			trades = busyTrades
		case roleNoERC8004:
			trades, tradeCase = 1+g.rng.IntN(3), CaseNoERC8004
		case rolePendingClaim, roleFailedClaim, roleNoClaim:
			trades, tradeCase = 1+g.rng.IntN(3), CaseNotGenesis
		}
		for range trades {
			c := tradeCase
			if c == CaseSwap {
				c = []TxCase{CaseSwap, CaseSwap, CaseSwap, CaseMultiHop, CaseMultiHop, CaseProvider}[g.rng.IntN(6)]
			}
			g.add(g.caseTx(c, a.STXAddress, g.when()))
		}
		if g.rng.IntN(2) == 0 {
			g.add(g.caseTx(CaseTransfer, a.STXAddress, g.when()))
		}
		if g.rng.IntN(4) == 0 {
			g.add(g.caseTx(CaseOffList, a.STXAddress, g.when()))
		}
	}
}

// makeSpecialTxs spreads the special cases over the ordinary genesis agents,
// round robin, skipping agents whose list is full.
func (g *generator) makeSpecialTxs() {
	carriers := g.withRole(roleGenesis)
	g.rng.Shuffle(len(carriers), func(i, j int) { carriers[i], carriers[j] = carriers[j], carriers[i] })
	next := 0
	for _, c := range specialCases {
		for tries := 0; ; tries++ {
			if tries == len(carriers) {
				panic("sim: no agent has room for " + string(c)) // minAgents makes this unreachable
			}
			agent := carriers[next%len(carriers)]
			next++
			if g.add(g.caseTx(c, agent, g.when())) {
				break
			}
		}
	}
}

// withRole is the addresses of the agents of role r, in generation order.
func (g *generator) withRole(r role) []string {
	var out []string
	for _, a := range g.agents {
		if g.roles[a.STXAddress] == r {
			out = append(out, a.STXAddress)
		}
	}
	return out
}

// add keeps tx unless a list it would join is full.
func (g *generator) add(tx *worldTx) bool {
	for _, a := range tx.ListedUnder {
		if g.listed[a] >= maxListed {
			return false
		}
	}
	for _, a := range tx.ListedUnder {
		g.listed[a]++
	}
	g.txs = append(g.txs, tx)
	return true
}

// caseTx builds one transaction of case c for agent at at (cases with a
// time of their own keep it). The agent is the sender, except for
// CaseOutsider, where it is the one being paid.
func (g *generator) caseTx(c TxCase, agent string, at time.Time) *worldTx {
	switch c {
	case CaseTransfer:
		return g.transferTx(agent, at)
	case CaseDeploy:
		return g.deployTx(agent, at)
	case CaseOffList:
		return g.offListTx(agent, at)
	case CaseBeforeStart:
		at = g.between(g.w.start.Add(-7*24*time.Hour), g.w.start)
		if !g.tenureBefore {
			// The first one in the last block before the start, in the
			// tenure that holds the start (unless the start begins one):
			// its burn block time is that of CaseAtStart's, and only the
			// block times tell them apart.
			g.tenureBefore, at = true, BlockOf(g.w.start).Add(-stacksBlockPeriod*time.Second)
		}
	case CaseAtStart:
		at = g.w.start
	}

	var r route
	switch c {
	case CaseThroughAgent:
		r = g.throughAgentRoute()
	case CaseManyEvents:
		r = g.manyEventsRoute(21 + g.rng.IntN(80))
	case CaseMultiHop:
		r = g.multiHopRoute()
	case CaseProvider:
		r = g.providerRoute()
	case CaseHuge:
		r = g.hugeRoute()
	default:
		r = g.singleRoute()
	}
	sender := agent
	if c == CaseOutsider {
		sender = g.outsiders[g.rng.IntN(len(g.outsiders))]
	}
	tx := g.swapTx(c, sender, r, at)

	switch c {
	case CaseOutsider:
		// A tip to the agent is what puts the stranger's swap on the
		// agent's list. The stranger's legs change, but no row comes of it.
		tx.events = append(tx.events, transferEvent(competition.TokenSTX, sender, agent, strconv.Itoa(1+g.rng.IntN(50)*1_000_000)))
		tx.ListedUnder = []string{agent}
		tx.expect = nil
	case CaseConfirmsLater:
		// Seen in the mempool a little before the present, or later; mined
		// a few minutes after, never before the start so that it counts.
		tx.AppearsAt = g.between(g.present.Add(-10*time.Minute), g.futureTo)
		tx.SettlesAt = BlockOf(later(tx.AppearsAt.Add(time.Duration(2+g.rng.IntN(7))*time.Minute), g.w.start))
	case CasePending:
		tx.status = statusPending
	case CaseFailed:
		tx.status = []string{"abort_by_response", "abort_by_post_condition"}[g.rng.IntN(2)]
		tx.result = clarityErrUint(uint64(1 + g.rng.IntN(10)))
	case CaseDropped:
		tx.status = "dropped_replace_by_fee"
	case CaseUnknownStatus:
		tx.status = unknownStatus
		tx.result = clarityValue{Hex: "0x0809", Repr: "(err none)"}
	case CaseOneWay, CaseNoTransfers:
		// Nothing came back to the agent, or nothing moved at all.
		tx.events = slices.DeleteFunc(tx.events, func(e eventJSON) bool {
			return e.Asset != nil && (c == CaseNoTransfers || e.Asset.Recipient == sender)
		})
		tx.expect, tx.parseFail = nil, competition.ReasonIncompleteEvents
	case CaseBadAmount:
		for i := range tx.events {
			if e := tx.events[i].Asset; e != nil && e.Recipient == sender {
				e.Amount = badAmounts[g.rng.IntN(len(badAmounts))]
				break
			}
		}
		tx.expect, tx.parseFail = nil, competition.ReasonInvalidAmount
	case CaseNotFound:
		tx.detail = detailNotFound
	case CaseFetchFails:
		tx.detail = detailFails
	case CaseFork:
		tx.fork = true
	}
	tx.Events = len(tx.events)
	return tx
}

// when picks an ordinary transaction's time: mostly history, some arriving
// later. With the origin before the start there is no history to pick from.
func (g *generator) when() time.Time {
	if g.rng.Float64() < futureShare || !g.histFrom.Before(g.present) {
		return g.between(g.present, g.futureTo)
	}
	return g.between(g.histFrom, g.present)
}

// between returns a block's time in [from, to), or the first block at or
// after from when there is none.
func (g *generator) between(from, to time.Time) time.Time {
	from = BlockOf(from)
	span := int64((to.Sub(from) + BlockPeriod - 1) / BlockPeriod)
	if span <= 0 {
		return from
	}
	return from.Add(time.Duration(g.rng.Int64N(span)) * BlockPeriod)
}

// route is a swap's path: the tokens from paid to received and the pool
// (the counterparty) of each hop.
type route struct {
	contract, function string
	path               []Token
	pools              []string
	// fee adds a protocol fee leg out of the agent, smaller than the input.
	fee bool
	// dust makes each intermediate token pass through the agent as 1-unit
	// legs both ways, as some routers do.
	dust bool
	// through makes each intermediate token pass through the agent in
	// full: it receives the token from one pool and pays it to the next.
	through bool
	// events pads the swap with other parties' transfers and logs up to
	// that many events, the agent's last leg coming last.
	events int
	// provider adds the provider argument of attribution contracts.
	provider string
	// bigIn and bigOut replace the computed amounts.
	bigIn, bigOut string
}

func (g *generator) pick(ts []Token) Token { return ts[g.rng.IntN(len(ts))] }

// singleRoute is a one-hop swap through one of the common pools.
func (g *generator) singleRoute() route {
	t := g.tokens
	flip := g.rng.IntN(2) == 0
	direct := func(r route) route {
		if flip {
			slices.Reverse(r.path)
			r.function = "swap-y-for-x"
		}
		return r
	}
	switch g.rng.IntN(5) {
	case 0, 1:
		base := []Token{t.stx, t.sbtc}[g.rng.IntN(2)]
		y := g.pick(t.traded)
		return direct(route{contract: xykCore, function: "swap-x-for-y", path: []Token{base, y},
			pools: []string{xykPool(base, y)}, fee: true})
	case 2: // Tenero's world always has its five stablecoins (pegTokens)
		x, y := t.stables[0], t.stables[1+g.rng.IntN(len(t.stables)-1)]
		return direct(route{contract: stableswapCore, function: "swap-x-for-y", path: []Token{x, y},
			pools: []string{bitflowCore + ".stableswap-pool-" + symbolSlug(x) + "-" + symbolSlug(y) + "-v-1-4"}})
	case 3:
		y := t.stables[len(t.stables)-1]
		return direct(route{contract: dlmmCore, function: "swap-x-for-y", path: []Token{t.sbtc, y},
			pools: []string{"SP1PFR4V08H1RAZXREBGFFQ59WB739XM8VVGTFSEA.dlmm-pool-sbtc-" + symbolSlug(y) + "-v-1-bps-10"}})
	}
	return direct(route{contract: stableswapSTX, function: "swap-x-for-y", path: []Token{t.stx, t.ststx},
		pools: []string{stableswapSTX}})
}

// multiHopRoute goes through two or three pools.
func (g *generator) multiHopRoute() route {
	t := g.tokens
	if g.rng.IntN(2) == 0 {
		y := g.pick(t.traded)
		return route{contract: multihopRouter, function: "swap-helper-b", path: []Token{t.ststx, t.stx, y},
			pools: []string{stableswapSTX, xykPool(t.stx, y)}, dust: g.rng.IntN(2) == 0}
	}
	hops := 2 + g.rng.IntN(2)
	candidates := append([]Token{t.stx, t.ststx, t.sbtc}, t.traded...)
	var path []Token
	for _, i := range g.rng.Perm(len(candidates))[:hops+1] {
		path = append(path, candidates[i])
	}
	return route{contract: velarMultihop, function: "swap-" + strconv.Itoa(hops+1), path: path,
		pools: slices.Repeat([]string{velarCore}, hops), dust: g.rng.IntN(2) == 0}
}

// providerRoute goes through the attribution helper; most swaps name the
// competition's provider, some another one.
func (g *generator) providerRoute() route {
	t := g.tokens
	provider := g.provider
	if g.rng.IntN(4) == 0 {
		provider = g.principal()
	}
	y := g.pick(t.traded)
	if g.rng.IntN(2) == 0 {
		return route{contract: xykHelper, function: "swap-helper-a", path: []Token{t.stx, y},
			pools: []string{xykPool(t.stx, y)}, fee: true, provider: provider}
	}
	return route{contract: xykHelper, function: "swap-helper-c", path: []Token{t.stx, t.ststx, y},
		pools: []string{stableswapSTX, xykPool(t.ststx, y)}, dust: true, provider: provider}
}

// hugeRoute trades a token of enormous supply, where amounts pass 2^64.
func (g *generator) hugeRoute() route {
	t := g.tokens
	meme := g.pick(t.traded)
	r := route{contract: xykCore, function: "swap-x-for-y", path: []Token{t.stx, meme}, pools: []string{xykPool(t.stx, meme)}}
	if g.rng.IntN(2) == 0 {
		r.bigOut = maxUint128Decimal
		return r
	}
	r.function = "swap-y-for-x"
	slices.Reverse(r.path)
	r.bigIn = g.digits(21 + g.rng.IntN(10))
	return r
}

// throughAgentRoute is STX → token → sBTC through two pools, the middle
// token (WELSH's role) passing through the agent's own address.
func (g *generator) throughAgentRoute() route {
	t := g.tokens
	mid := g.pick(t.traded)
	return route{contract: velarMultihop, function: "swap-3", path: []Token{t.stx, mid, t.sbtc},
		pools: []string{xykPool(t.stx, mid), xykPool(mid, t.sbtc)}, through: true}
}

// manyEventsRoute is a multi-hop swap padded to n events.
func (g *generator) manyEventsRoute(n int) route {
	r := g.multiHopRoute()
	r.events = n
	return r
}

func xykPool(x, y Token) string {
	return bitflowCore + ".xyk-pool-" + symbolSlug(x) + "-" + symbolSlug(y) + "-v-1-1"
}

// symbolSlug is a token's symbol as it appears in pool contract names.
func symbolSlug(t Token) string {
	if t.Symbol == "" {
		return "tok"
	}
	return strings.ToLower(t.Symbol)
}

// swapTx renders a route as a successful contract call by sender at at,
// and records what it made: the route's ends and amounts, and each leg the
// agent pays or receives, as the row's raw_event_json keeps them.
func (g *generator) swapTx(c TxCase, sender string, r route, at time.Time) *worldTx {
	in, out := r.bigIn, r.bigOut
	if in == "" || out == "" {
		usd := 5 + g.rng.Float64()*1995
		if in == "" {
			in = units(usd/g.price(r.path[0], at), r.path[0].Decimals)
		}
		if out == "" {
			last := r.path[len(r.path)-1]
			out = units(usd*0.997/g.price(last, at), last.Decimals)
		}
	}

	b := &swapBuilder{agent: sender, net: map[string]*big.Int{}}
	first, last := r.path[0], r.path[len(r.path)-1]
	paid, _ := new(big.Int).SetString(in, 10)
	b.pay(first.ID, r.pools[0], in)
	if r.fee {
		fee := new(big.Int).Quo(paid, big.NewInt(1000))
		if fee.Sign() == 0 {
			fee.SetInt64(1)
		}
		b.pay(first.ID, bitflowCore, fee.String())
		paid.Add(paid, fee)
	}
	for i := 1; i < len(r.path)-1; i++ {
		mid := r.path[i]
		switch {
		case r.through:
			amount := units(50*g.rng.Float64()+1, mid.Decimals)
			b.receive(mid.ID, r.pools[i-1], amount)
			b.pay(mid.ID, r.pools[i], amount)
		case r.dust:
			b.receive(mid.ID, r.pools[i-1], "1")
			b.pay(mid.ID, r.pools[i], "1")
		}
		if !r.through && r.pools[i-1] != r.pools[i] {
			b.between(mid.ID, r.pools[i-1], r.pools[i], units(100*g.rng.Float64()+1, mid.Decimals))
		}
	}
	for len(b.events)+2 < r.events {
		// Other parties' business: pool rebalancing and logs.
		if g.rng.IntN(3) == 0 {
			b.events = append(b.events, printEvent(r.contract, "rebalance"))
			continue
		}
		b.between(g.pick(g.tokens.traded).ID, r.pools[g.rng.IntN(len(r.pools))], bitflowCore, units(g.rng.Float64()+0.01, 6))
	}
	b.events = append(b.events, printEvent(r.contract, r.function))
	b.receive(last.ID, r.pools[len(r.pools)-1], out)

	args := []functionArgJSON{{Name: "amount-in", Type: "uint", Repr: "u" + in}, {Name: "min-amount-out", Type: "uint", Repr: "u1"}}
	if r.contract == xykCore {
		args = append([]functionArgJSON{{Name: "pool-trait", Type: "trait_reference", Repr: "'" + r.pools[0]}}, args...)
	}
	if r.provider != "" {
		args = append(args, functionArgJSON{Name: "provider", Type: "principal", Repr: "'" + r.provider})
	}
	tx := g.newTx(c, sender, at)
	tx.txType = txTypeContractCall
	tx.call = newContractCall(r.contract, r.function, args)
	tx.ContractID, tx.FunctionName = r.contract, r.function
	tx.events = b.events
	tx.Events = len(tx.events)
	tx.expect = &swapExpect{
		tokenIn: first.ID, amountIn: paid.String(),
		tokenOut: last.ID, amountOut: out,
		legs: b.legs(),
	}
	if g.w.allow.ProviderAttribution(r.contract) {
		tx.expect.legs.Provider = r.provider
	}
	return tx
}

// swapBuilder makes a swap's events and keeps the books of the agent's
// legs as it makes them: it knows which transfers are the agent's because
// it is the one making them, not by reading addresses back.
type swapBuilder struct {
	agent  string
	events []eventJSON
	out    []competition.Leg
	in     []competition.Leg
	// moved is each asset in the order it first moved, with what it did
	// to the agent's balance.
	moved []string
	net   map[string]*big.Int
}

// pay is the agent paying amount of token to counterparty.
func (b *swapBuilder) pay(token, counterparty, amount string) {
	b.events = append(b.events, transferEvent(token, b.agent, counterparty, amount))
	b.out = append(b.out, b.book(token, counterparty, amount, -1))
}

// receive is the agent receiving amount of token from counterparty.
func (b *swapBuilder) receive(token, counterparty, amount string) {
	b.events = append(b.events, transferEvent(token, counterparty, b.agent, amount))
	b.in = append(b.in, b.book(token, counterparty, amount, 1))
}

// between is a transfer the agent has no part in.
func (b *swapBuilder) between(token, from, to, amount string) {
	b.events = append(b.events, transferEvent(token, from, to, amount))
}

// book enters a leg of the agent's (sign -1 out, 1 in) in its net flows,
// and returns it.
func (b *swapBuilder) book(token, counterparty, amount string, sign int64) competition.Leg {
	n, ok := new(big.Int).SetString(amount, 10)
	if !ok {
		panic("sim: the world made an amount that is not one: " + amount) // units and digits always make one
	}
	if b.net[token] == nil {
		b.net[token] = new(big.Int)
		b.moved = append(b.moved, token)
	}
	b.net[token].Add(b.net[token], n.Mul(n, big.NewInt(sign)))
	return competition.Leg{AssetID: token, Amount: amount, Counterparty: counterparty}
}

// legs is the raw_event_json of the swap (without its provider).
func (b *swapBuilder) legs() competition.Legs {
	flows := make([]competition.NetFlow, len(b.moved))
	for i, token := range b.moved {
		flows[i] = competition.NetFlow{AssetID: token, Net: b.net[token].String()}
	}
	return competition.Legs{LegsOut: b.out, LegsIn: b.in, NetFlows: flows}
}

// transferTx is an STX transfer to another agent or a stranger.
func (g *generator) transferTx(sender string, at time.Time) *worldTx {
	to := g.outsiders[g.rng.IntN(len(g.outsiders))]
	listed := []string{sender}
	if other := g.agents[g.rng.IntN(len(g.agents))].STXAddress; other != sender && g.rng.IntN(2) == 0 {
		to, listed = other, append(listed, other)
	}
	amount := strconv.Itoa((1 + g.rng.IntN(500)) * 1_000_000)
	tx := g.newTx(CaseTransfer, sender, at)
	tx.ListedUnder = listed
	tx.txType = "token_transfer"
	tx.transfer = &tokenTransferJSON{RecipientAddress: to, Amount: amount, Memo: "0x"}
	tx.events = []eventJSON{transferEvent(competition.TokenSTX, sender, to, amount)}
	return tx
}

// deployTx is a contract deployment.
func (g *generator) deployTx(sender string, at time.Time) *worldTx {
	name := "agent-vault-" + strconv.Itoa(g.rng.IntN(1000))
	tx := g.newTx(CaseDeploy, sender, at)
	tx.txType = "smart_contract"
	tx.deploy = &smartContractJSON{
		ClarityVersion: 3,
		ContractID:     sender + "." + name,
		SourceCode:     "(define-data-var owner principal tx-sender)\n",
	}
	return tx
}

// offListTx is a contract call that is not an allowlisted swap: a DEX the
// competition does not count, or a pool function that is not a swap.
func (g *generator) offListTx(sender string, at time.Time) *worldTx {
	t := g.tokens
	if g.rng.IntN(2) == 0 {
		return g.swapTx(CaseOffList, sender, route{contract: arkadikoSwap, function: "swap-x-for-y",
			path: []Token{t.stx, t.stables[0]}, pools: []string{arkadikoSwap}}, at)
	}
	y := g.pick(t.traded)
	pool := xykPool(t.stx, y)
	stx, other := units(10+g.rng.Float64()*500, t.stx.Decimals), units(10+g.rng.Float64()*500, y.Decimals)
	tx := g.newTx(CaseOffList, sender, at)
	tx.txType = txTypeContractCall
	tx.call = newContractCall(xykCore, "add-liquidity", []functionArgJSON{
		{Name: "pool-trait", Type: "trait_reference", Repr: "'" + pool},
		{Name: "x-amount", Type: "uint", Repr: "u" + stx},
	})
	tx.ContractID, tx.FunctionName = xykCore, "add-liquidity"
	tx.events = []eventJSON{
		transferEvent(t.stx.ID, sender, pool, stx),
		transferEvent(y.ID, sender, pool, other),
	}
	return tx
}

// newTx starts a mined, successful transaction listed under its sender, in
// the first block at or after at.
func (g *generator) newTx(c TxCase, sender string, at time.Time) *worldTx {
	return &worldTx{
		WorldTx: WorldTx{
			TxID:        g.txid(),
			Case:        c,
			Sender:      sender,
			ListedUnder: []string{sender},
			AppearsAt:   BlockOf(at),
		},
		status:  statusSuccess,
		result:  clarityValue{Hex: "0x0703", Repr: "(ok true)"},
		feeRate: 1000 + g.rng.Int64N(20_000),
	}
}

// unique draws ids from next until one is new.
func (g *generator) unique(next func() string) string {
	for {
		if id := next(); !g.taken[id] {
			g.taken[id] = true
			return id
		}
	}
}

func (g *generator) txid() string {
	return g.unique(func() string {
		return fmt.Sprintf("0x%016x%016x%016x%016x", g.rng.Uint64(), g.rng.Uint64(), g.rng.Uint64(), g.rng.Uint64())
	})
}

// principal is a mainnet standard principal, SP or SM, with a real
// c32check checksum, as the registry's validation asks (SPEC §12). Its
// hash is derived from the same draws as ever, so a seed's world keeps
// its shape.
func (g *generator) principal() string {
	return g.unique(func() string {
		var b strings.Builder
		version := []byte{22, 22, 22, 20}[g.rng.IntN(4)] // SP, SP, SP, SM
		for range 38 + g.rng.IntN(2) {
			b.WriteByte(c32[g.rng.IntN(len(c32))])
		}
		return registry.EncodeSTX(version, hash20(b.String()))
	})
}

// hash20 is a 20-byte hash of s whose first byte is not zero: a leading
// zero byte shortens a c32 address below the catalog's 38 characters.
func hash20(s string) []byte {
	for {
		h := sha256.Sum256([]byte(s))
		if h[0] != 0 {
			return h[:20]
		}
		s += "."
	}
}

// btcAddress is a native segwit (P2WPKH) address with a real checksum.
func (g *generator) btcAddress() string {
	return g.unique(func() string {
		var b strings.Builder
		for range 38 {
			b.WriteByte(bech32Alphabet[g.rng.IntN(len(bech32Alphabet))])
		}
		return registry.SegwitP2WPKH(hash20(b.String()))
	})
}

func (g *generator) displayName() string {
	first := capitalized(word(g.rng, 2))
	return first + " " + capitalized(word(g.rng, 2))
}

// digits is a random decimal integer of n digits.
func (g *generator) digits(n int) string {
	b := []byte{byte('1' + g.rng.IntN(9))}
	for range n - 1 {
		b = append(b, byte('0'+g.rng.IntN(10)))
	}
	return string(b)
}

// units converts a quantity of whole tokens into base units, at least 2 so
// that a real leg always outweighs a 1-unit dust leg.
func units(whole float64, decimals int) string {
	v := whole * math.Pow10(decimals)
	if math.IsNaN(v) || v < 2 {
		v = 2
	}
	f := new(big.Float).SetFloat64(math.Min(v, 1e30))
	n, _ := f.Int(nil)
	return n.String()
}

// fallbackPrice prices a token Tenero cannot: it still trades, at a fixed
// price derived from its address.
func fallbackPrice(t Token) float64 {
	if t.Peg {
		return 1
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(t.Address))
	u := float64(h.Sum64()>>11) / (1 << 53)
	return math.Exp(math.Log(1e-4) + u*(math.Log(10)-math.Log(1e-4)))
}
