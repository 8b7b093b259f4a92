// Package bench is the discovery benchmark (`make bench`, section
// "chain"): how soon each swap's row exists after the
// swap is mined, what it costs in Hiro requests and Temporal actions, and
// whether any swap is lost. Every sweep run is discovery.Plan's steps, as
// the service runs them: the agents mode's visits under the tiers and
// optimal policies (ingest: the policies, the due order, the allocation),
// or the tail reading the chain (Chain) for every agent through the
// discovery engine's scan, filter and choice of source, with the
// reconciler reading the allowlisted contracts' lists. Hiro is the
// benchmarks' one upstream model (pacing/bench.Upstream) behind pacer's
// budget (budget.State). It runs in virtual time, with no clock and no
// randomness but a seeded generator.
package bench

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Tx is one transaction of an agent: a swap (an allowlisted call) or any
// other transaction, which only takes room in the agent's listing.
type Tx struct {
	At   time.Time
	Swap bool
}

// AgentSpec is one simulated agent: its transactions over the horizon,
// oldest first.
type AgentSpec struct {
	Txs []Tx
}

// World is a population of agents over a horizon, every transaction in
// it.
type World struct {
	Name       string
	Start, End time.Time
	Agents     []AgentSpec
}

// Class mix and swap rates (a day, log-uniform within each class): hot
// agents (5%) trade every day, warm ones (15%) most weeks, cold ones now
// and then.
// Other transactions (transfers, deploys, calls off the allowlist) come at
// half an agent's swap rate plus one every 50 days.
var classes = []struct{ share, lo, hi float64 }{{0.05, 2, 60}, {0.15, 0.2, 2}, {0.80, 0.005, 0.1}}

const otherBase = 0.02 // other transactions a day, on top of half the swap rate

// NewWorld generates n agents from seed over [start, end).
func NewWorld(name string, n int, seed uint64, start, end time.Time) *World {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	w := &World{Name: name, Start: start, End: end}
	for i := range n {
		c := classes[len(classes)-1]
		acc := 0.0
		for _, k := range classes {
			acc += k.share
			if float64(i) < acc*float64(n) {
				c = k
				break
			}
		}
		rate := math.Exp(math.Log(c.lo) + rng.Float64()*(math.Log(c.hi)-math.Log(c.lo)))
		a := AgentSpec{Txs: append(poisson(rng, rate, start, end, true), poisson(rng, rate/2+otherBase, start, end, false)...)}
		slices.SortFunc(a.Txs, func(x, y Tx) int { return x.At.Compare(y.At) })
		w.Agents = append(w.Agents, a)
	}
	// Shuffle so that the classes are not in address order.
	rng.Shuffle(len(w.Agents), func(i, j int) { w.Agents[i], w.Agents[j] = w.Agents[j], w.Agents[i] })
	return w
}

// poisson returns the arrivals of a Poisson process of rate (a day).
func poisson(rng *rand.Rand, rate float64, start, end time.Time, swap bool) []Tx {
	var out []Tx
	day := float64(24 * time.Hour)
	for at := start; ; {
		at = at.Add(time.Duration(rng.ExpFloat64() / rate * day))
		if !at.Before(end) {
			return out
		}
		out = append(out, Tx{At: at, Swap: swap})
	}
}
