package sim

import (
	"math"
	"slices"
	"time"
)

// Features adds named transactions to a world, for tests that need them.
// The zero value adds nothing. They come on top of the ordinary world and
// are not bound by its one-page lists.
type Features struct {
	// BusySwaps is how many swaps the world's busy agent makes in the
	// busyWindow (10 minutes) after the present (Origin, or
	// CompetitionStart if later): a burst between a visit at the present
	// and the next one.
	BusySwaps int
	// ManyEvents adds one swap per entry with that many events (at least
	// 4), the agent's last leg coming last: past the first 20 Hiro serves
	// unless asked for more.
	ManyEvents []int
	// ThroughAgent adds that many STX → token → sBTC routes whose middle
	// token (WELSH's role) passes through the agent's own address.
	ThroughAgent int
	// Forks adds that many swaps mined on a fork that lost (canonical
	// false): never a row.
	Forks int
}

// SweepFeatures is the world of the sweep's real-stack test (issue 9): a
// busy agent makes 200 swaps in the 10 minutes after the present, so
// between a visit at Origin and one at Origin+10m; and in the hour before
// the present there are a 30-event swap, an STX → token → sBTC route
// through its agent, and a fork transaction. Find them by case:
// CaseBusy, CaseManyEvents, CaseThroughAgent, CaseFork.
//
//	sim.New(sim.Config{Seed: 11, Now: clock, Hiro: sim.HiroConfig{
//		Origin: t0, Features: sim.SweepFeatures()}})
func SweepFeatures() Features {
	return Features{BusySwaps: 200, ManyEvents: []int{30}, ThroughAgent: 1, Forks: 1}
}

const busyWindow = 10 * time.Minute

// makeFeatures adds what f asks for; a busy swap is an ordinary route.
func (g *generator) makeFeatures(f Features) {
	carriers, busy := g.withRole(roleGenesis), g.withRole(roleBusy)[0]
	// The single transactions go to the ordinary genesis agents in turn, in
	// the hour before the present.
	next := 0
	single := func(c TxCase, events int) {
		agent := carriers[next%len(carriers)]
		next++
		at := g.between(later(g.w.start, g.present.Add(-time.Hour)), g.present)
		if events > 0 {
			g.txs = append(g.txs, g.swapTx(c, agent, g.manyEventsRoute(events), at))
			return
		}
		g.txs = append(g.txs, g.caseTx(c, agent, at))
	}
	for _, n := range f.ManyEvents {
		single(CaseManyEvents, max(n, 4))
	}
	for range f.ThroughAgent {
		single(CaseThroughAgent, 0)
	}
	for range f.Forks {
		single(CaseFork, 0)
	}
	for range f.BusySwaps {
		at := g.between(g.present.Add(time.Second), g.present.Add(busyWindow+time.Second))
		r := g.singleRoute()
		if g.rng.IntN(3) == 0 {
			r = g.multiHopRoute()
		}
		g.txs = append(g.txs, g.swapTx(CaseBusy, busy, r, at))
	}
}

// Activity tiers (SPEC §5.3, §8): the share of genesis agents in each, and
// the range of swaps a day their rates are spread over (log-uniformly), so
// that hot agents swap within any day, warm ones within any week, and cold
// ones rarely.
var activityTiers = []struct {
	name             string
	share            float64
	minRate, maxRate float64
}{
	{"hot", 0.05, 12, 480},
	{"warm", 0.15, 0.3, 3},
	{"cold", 0.80, 0.005, 0.1},
}

// Busy agents' bursts: once a day, this many swaps within burstWindow.
const (
	burstMin, burstMax = 150, 300
	burstWindow        = 10 * time.Minute
	// streamIndexBase numbers Activity swaps in their blocks above the
	// fixed world's; each agent has streamIndexSpan numbers of its own.
	streamIndexBase = 1000
	streamIndexSpan = 100
)

// stream makes one genesis agent's Activity swaps, a day at a time.
type stream struct {
	g     *generator // the world's, forked per day
	seed  uint64
	agent string
	num   int // the agent's number, for its seeds and indexes
	rate  float64
	busy  bool
	days  int // days made so far; day 0 starts at histFrom
}

// makeStreams gives every genesis agent an activity tier and a swap rate;
// the busy agent is hot and swaps in bursts too.
func (g *generator) makeStreams(seed uint64) {
	var genesis []*Agent
	for _, a := range g.agents {
		if r := g.roles[a.STXAddress]; r == roleGenesis || r == roleBusy {
			genesis = append(genesis, a)
		}
	}
	order := g.rng.Perm(len(genesis))
	// The busy agent is hot whatever the dice say.
	if k := slices.IndexFunc(order, func(i int) bool { return g.roles[genesis[i].STXAddress] == roleBusy }); k > 0 {
		busy := order[k]
		order = slices.Insert(slices.Delete(order, k, k+1), 0, busy)
	}
	g.w.streams = map[string]*stream{}
	hot := max(1, int(math.Round(activityTiers[0].share*float64(len(genesis)))))
	warm := int(math.Round(activityTiers[1].share * float64(len(genesis))))
	for rank, i := range order {
		tier := activityTiers[2]
		switch {
		case rank < hot:
			tier = activityTiers[0]
		case rank < hot+warm:
			tier = activityTiers[1]
		}
		a := genesis[i]
		a.Tier = tier.name
		a.SwapsPerDay = math.Exp(math.Log(tier.minRate) + g.rng.Float64()*(math.Log(tier.maxRate)-math.Log(tier.minRate)))
		g.w.streams[a.STXAddress] = &stream{
			g: g, seed: seed, agent: a.STXAddress, num: i, rate: a.SwapsPerDay,
			busy: g.roles[a.STXAddress] == roleBusy,
		}
	}
}

// generate makes agent's Activity swaps of every day begun by at. w.mu is
// held.
func (w *World) generate(agent string, at time.Time) {
	if s := w.streams[agent]; s != nil {
		for ; s.dayStart(s.days).Compare(at) <= 0; s.days++ {
			s.day(s.days, w.add)
		}
	}
}

// generateAll is generate for every agent. w.mu is held.
func (w *World) generateAll(at time.Time) {
	for _, a := range w.agents {
		w.generate(a.STXAddress, at)
	}
}

func (s *stream) dayStart(d int) time.Time {
	return s.g.histFrom.Add(time.Duration(d) * 24 * time.Hour)
}

// day makes the swaps of day d, in order, for add: a Poisson process at
// the agent's rate, and a busy agent's burst, from the day's own seed.
func (s *stream) day(d int, add func(*worldTx)) {
	g := s.g.fork(s.seed, uint64(s.num), uint64(d))
	from := s.dayStart(d)
	// A swap is in the block of its moment, never in one before the day
	// (the day before numbers its own block's swaps).
	block := func(t time.Time) time.Time { return later(blockFloor(t), BlockOf(from)) }
	var times []time.Time
	for t := g.rng.ExpFloat64() / s.rate; t < 1; t += g.rng.ExpFloat64() / s.rate { // in days
		times = append(times, block(from.Add(time.Duration(t*float64(24*time.Hour)))))
	}
	if s.busy {
		start := from.Add(time.Duration(g.rng.Int64N(int64(24*time.Hour - burstWindow))))
		for range burstMin + g.rng.IntN(burstMax-burstMin+1) {
			times = append(times, block(start.Add(time.Duration(g.rng.Int64N(int64(burstWindow))))))
		}
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })

	k := 0
	for i, at := range times {
		if i > 0 && !at.After(times[i-1]) {
			at = times[i-1] // same block as the one before
			if k++; k == streamIndexSpan {
				at, k = at.Add(stacksBlockPeriod*time.Second), 0
			}
			times[i] = at
		} else {
			k = 0
		}
		c := CaseThroughAgent
		if p := g.rng.Float64(); p >= 0.07 {
			c = []TxCase{CaseSwap, CaseSwap, CaseMultiHop, CaseProvider}[g.rng.IntN(4)]
		} else if p >= 0.02 {
			c = CaseManyEvents
		}
		tx := g.caseTx(c, s.agent, at)
		tx.index = int64(streamIndexBase + s.num*streamIndexSpan + k)
		tx.nonce = d*100_000 + i
		add(tx)
	}
}
