// Package ingest decides when each agent's transactions are read again
// (SPEC §5.1–5.3). It is pure: time is an argument, nothing is read or
// written, so the sweep activity and the discovery benchmark run the same
// code.
//
// Two policies share one agent state (Agent) and one order for the due set
// (Less):
//
//   - tiers, the wallet-ingestion scheduler this design comes from: hot (a
//     swap in the last 24 h) every HotEvery, warm (7 days) every WarmEvery,
//     cold otherwise every ColdEvery; when the budget is short hot comes
//     before warm before cold.
//   - optimal: each agent's visit rate set from its own smoothed swap rate
//     so that the mean time from a swap being mined to its row existing is
//     as small as the budget allows.
//
// With push on (SPEC §11), a reconciling floor (Config.ReconcileEvery)
// bounds every interval from below: pushes bring the swaps and their hints
// make an agent due now, so polling only has to reconcile what a push
// dropped, for every agent alike, however busy.
//
// Under both, an agent that failed backs off (its interval × 2^errors, at
// most an hour or its interval if longer), and no agent waits longer than
// MaxStaleness: intervals are capped below it and an agent about to pass it
// comes first in the due order whatever its tier or rate.
//
// # Why the square root
//
// Let agent i swap as a Poisson process of rate λ_i and be visited every
// T_i = 1/f_i. A swap is discovered at the first visit after it is mined;
// it lands uniformly inside a visit interval, so it waits T_i/2 on average.
// Swaps arrive at Σλ_i, so the delay accrued per unit time is
//
//	D(f) = Σ_i λ_i / (2 f_i).
//
// A visit costs c_i requests (one listing page; the swaps' details ride in
// their Visit step's one batch and a busy agent's further pages are rare,
// so they are paid from what the lane leaves, see Allocations). With B
// requests per unit time for visits:
//
//	minimise D(f)  subject to  Σ_i c_i f_i = B,  f_min ≤ f_i ≤ f_max.
//
// D is convex in f (each λ/f is, for f > 0) and the constraint is linear,
// so the KKT conditions give the optimum. Without the bounds the
// Lagrangian Σ λ_i/(2f_i) + μ(Σ c_i f_i − B) is stationary where
// −λ_i/(2f_i²) + μc_i = 0, that is
//
//	f_i = √(λ_i / (2μ c_i)) ∝ √(λ_i / c_i),
//
// and the budget fixes the constant: f_i = S·√(λ_i/c_i) with
// S = B / Σ_j √(λ_j c_j), giving D* = (Σ_i √(λ_i c_i))² / (2B). With the
// bounds (f_max = 1/HotEvery: the sweep wakes at most that often, or
// 1/ReconcileEvery while push is on;
// f_min = 1/MaxStaleness) each f_i is S·√(λ_i/c_i) clamped to
// [f_min, f_max], with S raised until the clamped rates spend B exactly
// ("water-filling"; Allocate finds S by bisection). A smaller budget
// lowers S and so every rate together.
//
// Compared with equal visits for all (round robin, f_i = B/N), the mean
// delay ratio is (Σ√λ_i)² / (N Σλ_i) ≤ 1 by Cauchy–Schwarz, far below 1
// when a few agents do most of the swapping. Tiers sits in between: it
// visits by recency, which spends hot-tier rates on agents that swapped once
// yesterday and starves nothing but cannot trade a little of the busiest
// agents' freshness for a lot of everyone else's.
//
// The swap rate is estimated from the swaps themselves (the burn times of
// the allowlisted calls a visit finds), each counting exp(−age/RateWindow)
// / RateWindow: a rate that decays when an agent goes quiet and, for a
// steady agent, converges on its true rate whatever the visit pattern.
package ingest

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
)

// Tier is an agent's activity class (SPEC §5.3).
type Tier string

// Tiers, in the order the tiers policy serves them.
const (
	Hot  Tier = "hot"
	Warm Tier = "warm"
	Cold Tier = "cold"
)

// Tiers lists every tier, hot first.
var Tiers = []Tier{Hot, Warm, Cold}

// Rank is the tier's place in the tiers policy's order: 0 for hot (an
// unknown tier ranks as cold).
func (t Tier) Rank() int {
	if i := slices.Index(Tiers, t); i >= 0 {
		return i
	}
	return 2
}

// ParseTier reads a tier name.
func ParseTier(s string) (Tier, error) {
	switch t := Tier(strings.ToLower(strings.TrimSpace(s))); t {
	case Hot, Warm, Cold:
		return t, nil
	}
	return "", fmt.Errorf("%w: tier %q (want hot, warm or cold)", ErrInvalidConfig, s)
}

// Tier thresholds (the seed design): a swap within HotWithin makes an agent
// hot, within WarmWithin warm.
const (
	HotWithin  = 24 * time.Hour
	WarmWithin = 7 * 24 * time.Hour
)

// TierOf is the tier of an agent whose newest swap was at lastSwap (nil:
// none seen).
func TierOf(lastSwap *time.Time, now time.Time) Tier {
	switch {
	case lastSwap == nil:
		return Cold
	case now.Sub(*lastSwap) < HotWithin:
		return Hot
	case now.Sub(*lastSwap) < WarmWithin:
		return Warm
	}
	return Cold
}

// Policy names the visit policy (PACER_SWEEP_POLICY).
type Policy string

// Policies.
const (
	PolicyOptimal Policy = "optimal"
	PolicyTiers   Policy = "tiers"
)

// ErrInvalidConfig is returned for a configuration the policies cannot
// run with.
var ErrInvalidConfig = errors.New("invalid ingestion config")

// ParsePolicy reads a policy name.
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(strings.ToLower(strings.TrimSpace(s))); p {
	case PolicyOptimal, PolicyTiers:
		return p, nil
	}
	return "", fmt.Errorf("%w: policy %q (want optimal or tiers)", ErrInvalidConfig, s)
}

// Defaults (SPEC §2).
const (
	DefaultHotEvery     = time.Minute
	DefaultWarmEvery    = 15 * time.Minute
	DefaultColdEvery    = time.Hour
	DefaultMaxStaleness = 6 * time.Hour
	// MaxBackoff caps the back-off of a failing agent (unless its own
	// interval is longer).
	MaxBackoff = time.Hour
	// MinRate is the least swap rate (a day) the optimal policy plans an
	// agent's visits by: an agent never seen to swap still may, and with
	// budget to spare its visits grow with everyone's instead of waiting
	// at the staleness cap while the budget goes unused (SPEC §5.3).
	MinRate = 1e-3
	// Dormant is the interval of an agent under EventsOnly: visited again
	// only when an event makes it due.
	Dormant = 100 * 365 * 24 * time.Hour
	// RateWindow is the time constant of the smoothed swap rate.
	RateWindow = 3 * 24 * time.Hour
	// Headroom is the least share of the lane's rate the optimal policy
	// plans its visits for; Allocations raises the share, up to MaxShare,
	// while the lane spends less than Spend of its rate (the rest is for
	// bursts). A Visit step verifies its agents' swaps in one tx/multiple
	// request (one in 11 to 470 visits in the chain benchmark), so the
	// swaps' details are not paid apart.
	Headroom = 0.95
	Spend    = 0.93
	MaxShare = 2.0
)

// Config configures both policies.
type Config struct {
	Policy    Policy
	HotEvery  time.Duration
	WarmEvery time.Duration
	ColdEvery time.Duration
	// MaxStaleness is the longest any agent waits between visits.
	MaxStaleness time.Duration
	// ReconcileEvery is the reconciling floor while push is on: no agent
	// is visited more often on the policy's account (a hint still makes it
	// due now), and the floor itself never exceeds the staleness cap.
	// 0 is off: push is off, or polling is the only way swaps arrive.
	ReconcileEvery time.Duration
	// EventsOnly is discovery reading the chain (PACER_DISCOVERY=tail,
	// SPEC §5.0): an agent is visited for its history once, then only when
	// an event (a hint, a changed registration or claim) makes it due. A
	// failed visit still backs off and tries again.
	EventsOnly bool
}

// DefaultConfig is SPEC §2's defaults.
func DefaultConfig() Config {
	return Config{Policy: PolicyOptimal, HotEvery: DefaultHotEvery, WarmEvery: DefaultWarmEvery,
		ColdEvery: DefaultColdEvery, MaxStaleness: DefaultMaxStaleness}
}

// WithDefaults fills the zero fields from DefaultConfig.
func (c Config) WithDefaults() Config {
	d := DefaultConfig()
	c.Policy = cmp.Or(c.Policy, d.Policy)
	c.HotEvery = cmp.Or(c.HotEvery, d.HotEvery)
	c.WarmEvery = cmp.Or(c.WarmEvery, d.WarmEvery)
	c.ColdEvery = cmp.Or(c.ColdEvery, d.ColdEvery)
	c.MaxStaleness = cmp.Or(c.MaxStaleness, d.MaxStaleness)
	return c
}

// Validate checks a configuration after WithDefaults.
func (c Config) Validate() error {
	if _, err := ParsePolicy(string(c.Policy)); err != nil {
		return err
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"hot-every", c.HotEvery}, {"warm-every", c.WarmEvery}, {"cold-every", c.ColdEvery}, {"max-staleness", c.MaxStaleness}} {
		if d.v < time.Second {
			return fmt.Errorf("%w: %s %s is below 1s", ErrInvalidConfig, d.name, d.v)
		}
	}
	if c.HotEvery > c.WarmEvery || c.WarmEvery > c.ColdEvery {
		return fmt.Errorf("%w: hot-every %s ≤ warm-every %s ≤ cold-every %s does not hold", ErrInvalidConfig, c.HotEvery, c.WarmEvery, c.ColdEvery)
	}
	if c.MaxStaleness < 2*c.HotEvery {
		return fmt.Errorf("%w: max-staleness %s must be at least twice hot-every %s", ErrInvalidConfig, c.MaxStaleness, c.HotEvery)
	}
	if c.ReconcileEvery != 0 && (c.ReconcileEvery < time.Second || c.ReconcileEvery > c.MaxStaleness) {
		return fmt.Errorf("%w: reconcile-every %s must be between 1s and max-staleness %s", ErrInvalidConfig, c.ReconcileEvery, c.MaxStaleness)
	}
	return nil
}

// Fastest is the shortest interval the policy gives any agent: HotEvery,
// or the reconciling floor while push is on (never past the staleness
// cap). Hints are not bound by it.
func (c Config) Fastest() time.Duration {
	return max(c.HotEvery, min(c.ReconcileEvery, c.StalenessCap()))
}

// StalenessCap is the longest interval either policy gives an agent: a
// little under MaxStaleness, so that an agent due at its cap is visited
// before MaxStaleness has passed even when the sweep wakes only every
// HotEvery and others are due at the same moment.
func (c Config) StalenessCap() time.Duration {
	return c.MaxStaleness - max(c.HotEvery, c.MaxStaleness/12)
}

// Agent is an agent's ingestion state as the policies see it: the columns
// of agent_ingest that decide when it is visited.
type Agent struct {
	Address string `json:"address"`
	Tier    Tier   `json:"tier"`
	// LastVisitAt is nil before the first visit.
	LastVisitAt *time.Time `json:"lastVisitAt"`
	// LastSwapAt is the burn time of the newest allowlisted call seen.
	LastSwapAt *time.Time `json:"lastSwapAt"`
	// SwapRate is the smoothed swap rate, swaps a day, as of LastVisitAt.
	SwapRate   float64   `json:"swapRate"`
	ErrorCount int       `json:"errorCount"`
	NextRunAt  time.Time `json:"nextRunAt"`
}

// RateAt is the agent's smoothed swap rate at now: SwapRate decayed over
// the time since the last visit.
func (a Agent) RateAt(now time.Time) float64 {
	if a.LastVisitAt == nil {
		return a.SwapRate
	}
	return decay(a.SwapRate, now.Sub(*a.LastVisitAt))
}

func decay(rate float64, elapsed time.Duration) float64 {
	if elapsed <= 0 || rate <= 0 {
		return max(rate, 0)
	}
	return rate * math.Exp(-float64(elapsed)/float64(RateWindow))
}

// perDay is a rate in events a day of one event every d.
func perDay(d time.Duration) float64 { return float64(24*time.Hour) / float64(d) }

// WaitingSince is when the agent began waiting for its next visit: its
// last visit, or, never visited, when it became due.
func (a Agent) WaitingSince() time.Time {
	if a.LastVisitAt != nil {
		return *a.LastVisitAt
	}
	return a.NextRunAt
}

// Critical reports whether a must be visited now, ahead of the policy's
// own order: it has waited so long that MaxStaleness is near, or it was
// never visited at all (its staleness is unbounded: a new agent, or every
// agent right after the migration, whose first visits would otherwise wait
// behind the busiest agents' revisits).
func (c Config) Critical(a Agent, now time.Time) bool {
	return a.LastVisitAt == nil || now.Sub(*a.LastVisitAt) >= c.StalenessCap()
}

// Less orders due agents: critical agents first, the longest-waiting
// first; then, under tiers, hot before warm before cold; then the earliest
// due; ties by address. The store's due-set query sorts the same way
// (store.DueAgents; a test holds the two together).
func (c Config) Less(a, b Agent, now time.Time) bool {
	ca, cb := c.Critical(a, now), c.Critical(b, now)
	if ca != cb {
		return ca
	}
	if ca {
		if o := a.WaitingSince().Compare(b.WaitingSince()); o != 0 {
			return o < 0
		}
	}
	if c.Policy == PolicyTiers && a.Tier != b.Tier {
		return a.Tier.Rank() < b.Tier.Rank()
	}
	if o := a.NextRunAt.Compare(b.NextRunAt); o != 0 {
		return o < 0
	}
	return a.Address < b.Address
}

// Allocation is the optimal policy's solution for one budget: visits a day
// of an agent with swap rate λ (a day) are clamp(Scale·√λ', the staleness
// floor, 1/HotEvery), λ' being λ smoothed by Prior.
type Allocation struct {
	// Prior is the population's rate distribution the rates are smoothed
	// toward.
	Prior Prior
	// Scale is S of the package doc; +Inf when the budget covers every
	// agent at HotEvery.
	Scale float64
	// Short is true when the budget cannot even visit every agent within
	// MaxStaleness: every agent then gets the staleness floor and the due
	// order decides who waits.
	Short bool
}

// Prior is a gamma distribution over the agents' swap rates, fitted to the
// population (empirical Bayes). An agent's own smoothed rate is a noisy
// measure of its true rate over about 2·RateWindow of exposure; smoothing
// it toward the population gives the posterior mean
//
//	λ' = (Shape + λ·E) / (Scale + E),  E = 2·RateWindow in days,
//
// so that an agent seen to swap rarely or never keeps the rate agents like
// it have on average instead of none: the square-root allocation is only as
// good as the rates it is given, and a rate of zero would leave every quiet
// agent at the staleness cap however often quiet agents do swap. The zero
// Prior smooths nothing.
type Prior struct {
	Shape, Scale float64
}

// exposureDays is E: the variance of the exponentially weighted rate is
// λ/(2·RateWindow), that of a count over 2·RateWindow.
func exposureDays() float64 { return 2 * RateWindow.Hours() / 24 }

// FitPrior fits the prior by the method of moments: the rates' mean m is
// the prior's mean Shape/Scale, and their variance, less the sampling noise
// m/E, its variance Shape/Scale².
func FitPrior(rates []float64) Prior {
	if len(rates) < 2 {
		return Prior{}
	}
	mean, sq := 0.0, 0.0
	for _, r := range rates {
		mean += max(r, 0)
	}
	mean /= float64(len(rates))
	for _, r := range rates {
		sq += (max(r, 0) - mean) * (max(r, 0) - mean)
	}
	spread := sq/float64(len(rates)-1) - mean/exposureDays()
	if mean <= 0 || spread <= 0 {
		// No rate seen, or no more spread than noise: nothing to learn
		// from the population.
		return Prior{}
	}
	scale := mean / spread
	return Prior{Shape: mean * scale, Scale: scale}
}

// Smooth is the posterior mean of a rate measured as rate.
func (p Prior) Smooth(rate float64) float64 {
	e := exposureDays()
	return (p.Shape + max(rate, 0)*e) / (p.Scale + e)
}

// AllocationTTL is how long an allocation stands before it is solved
// again: swap rates and budgets move slowly, and solving sorts every
// agent's rate.
const AllocationTTL = 10 * time.Minute

// Lane is what an allocation is solved for: the agents' swap rates (a day),
// the lane's rate (requests a day) and its requests so far (a counter).
type Lane struct {
	Rates []float64
	Rate  float64
	Taken int64
}

// Allocations keeps the last allocation solved for AllocationTTL and the
// share of the lane's rate it plans: Headroom at first, then, while the
// last plan bound (a finite Scale), moved by the square root (damped) of
// Spend of the lane's rate over what it spent since. A run visits what is
// due when it starts, so intervals round up to the next run and a lane
// spends less than planned (the keyed 1,000-agent chain benchmark: 75% on
// a plan for 95%). It is safe for concurrent use.
type Allocations struct {
	mu    sync.Mutex
	at    time.Time
	cfg   Config
	alloc Allocation
	share float64
	taken int64
}

// Get is cfg's allocation at now: the one solved for cfg less than
// AllocationTTL before, else one for the lane read (none kept on an error).
func (c *Allocations) Get(cfg Config, now time.Time, read func() (Lane, error)) (Allocation, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && c.cfg == cfg && now.Sub(c.at) < AllocationTTL {
		return c.alloc, nil
	}
	l, err := read()
	if err != nil {
		return Allocation{}, err
	}
	elapsed := now.Sub(c.at)
	switch spent := float64(l.Taken-c.taken) / elapsed.Hours() * 24; {
	case c.share == 0:
		c.share = Headroom
	case elapsed >= AllocationTTL/2 && l.Rate > 0 && spent > 0 && !c.alloc.Short && !math.IsInf(c.alloc.Scale, 1):
		c.share = min(max(c.share*math.Sqrt(Spend*l.Rate/spent), Headroom), MaxShare)
	}
	c.at, c.cfg, c.alloc, c.taken = now, cfg, cfg.Allocate(l.Rates, max(0, l.Rate*c.share)), l.Taken
	return c.alloc, nil
}

// Allocate solves the optimal policy's water-filling for agents with the
// given swap rates (a day) and a budget of visitsPerDay (one request a
// visit).
func (c Config) Allocate(rates []float64, visitsPerDay float64) Allocation {
	lo, hi := perDay(c.StalenessCap()), perDay(c.Fastest())
	n := float64(len(rates))
	prior := FitPrior(rates)
	switch {
	case n == 0 || n*hi <= visitsPerDay:
		return Allocation{Scale: math.Inf(1), Prior: prior}
	case n*lo >= visitsPerDay:
		return Allocation{Short: true, Prior: prior}
	}
	// With q = √λ' sorted, spend(S) = lo·#{q ≤ lo/S} + hi·#{q ≥ hi/S}
	// + S·Σ(the q in between): continuous and nondecreasing in S, so a
	// bisection on S finds the budget, each step a pair of binary searches.
	q := make([]float64, len(rates))
	for i, r := range rates {
		q[i] = math.Sqrt(max(prior.Smooth(r), MinRate))
	}
	slices.Sort(q)
	prefix := make([]float64, len(q)+1)
	for i, v := range q {
		prefix[i+1] = prefix[i] + v
	}
	spend := func(scale float64) float64 {
		low, _ := slices.BinarySearch(q, lo/scale)  // q < lo/S: at the floor
		high, _ := slices.BinarySearch(q, hi/scale) // q ≥ hi/S: at the ceiling
		high = max(high, low)
		return lo*float64(low) + hi*float64(len(q)-high) + scale*(prefix[high]-prefix[low])
	}
	// Every q is at least √MinRate: at S = hi/q[0] every agent is at the
	// ceiling.
	lower, upper := 0.0, hi/q[0]
	if spend(upper) <= visitsPerDay {
		return Allocation{Scale: math.Inf(1), Prior: prior}
	}
	for range 100 {
		mid := (lower + upper) / 2
		if spend(mid) <= visitsPerDay {
			lower = mid
		} else {
			upper = mid
		}
	}
	return Allocation{Scale: lower, Prior: prior}
}

// Interval is how long after a successful visit the agent is due again.
func (c Config) Interval(a Agent, now time.Time, alloc Allocation) time.Duration {
	if c.EventsOnly {
		return Dormant
	}
	var d time.Duration
	switch c.Policy {
	case PolicyTiers:
		switch TierOf(a.LastSwapAt, now) {
		case Hot:
			d = c.HotEvery
		case Warm:
			d = c.WarmEvery
		default:
			d = c.ColdEvery
		}
	default:
		d = c.optimalInterval(alloc.Prior.Smooth(a.RateAt(now)), alloc)
	}
	return min(max(d, c.Fastest()), c.StalenessCap())
}

func (c Config) optimalInterval(rate float64, alloc Allocation) time.Duration {
	switch {
	case alloc.Short:
		return c.StalenessCap()
	case math.IsInf(alloc.Scale, 1):
		return c.Fastest()
	}
	f := alloc.Scale * math.Sqrt(max(rate, MinRate))
	if f <= 0 {
		return c.StalenessCap()
	}
	d := min(max(time.Duration(float64(24*time.Hour)/f), c.HotEvery), c.StalenessCap()) // every 1/f day
	// The sweep runs at most every HotEvery: an interval is kept on that
	// grid, rounded to the nearest step, or an agent due 1.2 steps after a
	// visit would wait for the second run after it, and the plan's spend
	// and delays would both be off.
	if d < 20*c.HotEvery {
		d = (d + c.HotEvery/2).Truncate(c.HotEvery)
	}
	return max(d, c.HotEvery)
}

// Backoff is the wait after the errors-th failure in a row: the agent's
// interval × 2^errors, at most MaxBackoff (or the interval itself when
// longer), and never past the staleness cap.
func (c Config) Backoff(interval time.Duration, errors int) time.Duration {
	if c.EventsOnly {
		interval = c.Fastest()
	}
	ceiling := max(interval, MaxBackoff)
	d := interval
	for range min(errors, 32) {
		if d >= ceiling {
			break
		}
		d *= 2
	}
	return min(d, ceiling, c.StalenessCap())
}

// Visit is what one visit of an agent did.
type Visit struct {
	At time.Time
	// Complete is true when the visit reached the agent's cursor (or the
	// competition start): every transaction newer is processed.
	Complete bool
	// Failed is true when upstream trouble stopped the visit. A visit that
	// stopped because the run's budget share was spent is neither Failed
	// nor Complete: the agent stays due and goes on at the next run.
	Failed bool
	// Swaps are the burn times of the allowlisted calls the visit saw for
	// the first time.
	Swaps []time.Time
}

// AfterVisit is the agent's state after a visit: its swap rate, newest
// swap, tier, error count and next due time.
func (c Config) AfterVisit(a Agent, v Visit, alloc Allocation) Agent {
	rate := a.RateAt(v.At)
	for _, s := range v.Swaps {
		rate += decay(1, v.At.Sub(s)) * perDay(RateWindow)
		if a.LastSwapAt == nil || s.After(*a.LastSwapAt) {
			a.LastSwapAt = &s
		}
	}
	switch {
	case v.Complete || v.Failed:
		a.SwapRate = rate
		at := v.At
		a.LastVisitAt = &at
	case a.LastVisitAt == nil:
		a.SwapRate = rate
	default:
		// A visit cut short by the budget has not read the agent up to
		// date: its staleness clock (LastVisitAt, or NextRunAt when never
		// visited) keeps running, so an agent that was critical stays
		// first in line. The rate is kept as of the last visit, so that
		// RateAt still gives this visit's estimate.
		a.SwapRate = rate * math.Exp(min(float64(v.At.Sub(*a.LastVisitAt))/float64(RateWindow), 50))
	}
	a.Tier = TierOf(a.LastSwapAt, v.At)
	interval := c.Interval(a, v.At, alloc)
	switch {
	case v.Failed:
		a.ErrorCount++
		a.NextRunAt = v.At.Add(c.Backoff(interval, a.ErrorCount))
	case !v.Complete:
		// Still due, since when it was due.
		a.ErrorCount = 0
		if v.At.Before(a.NextRunAt) {
			a.NextRunAt = v.At
		}
	default:
		a.ErrorCount = 0
		a.NextRunAt = v.At.Add(interval)
	}
	return a
}
