package discovery

import (
	"cmp"
	"math"
	"sync"
	"time"

	"github.com/pacer-dev/pacer/internal/hiro"
)

// # Where the tail reads
//
// The feed carries every contract call on the chain; the allowlisted
// contracts' own lists carry only the calls that can be candidates. On a
// minute plan the feed is the cheaper read (one list, a page every
// PACER_TAIL_EVERY). When the month binds, what a reader costs is its
// volume: pages of 50 of everything it lists. A busy chain's feed can cost
// more than the month's pace pays while the allowlisted contracts' lists,
// a share of it, still fit. PlanSource decides from the traffic the tail
// observed; the sweep then reads the contracts' lists at the tail's
// cadence, and reads one page of the feed each PACER_RECONCILE_EVERY to
// keep observing it, so that it reads the feed again when that fits.

// Source is where the tail reads the chain's new calls.
type Source string

// Sources.
const (
	// SourceFeed is the chain's confirmed contract calls, one list for
	// every contract (/extended/v1/tx?type=contract_call).
	SourceFeed Source = "feed"
	// SourceContracts is each allowlisted contract's own list, read at
	// the tail's cadence by the contracts' readers (the reconciler's).
	SourceContracts Source = "contracts"
)

// NeverFits is ReadInterval's answer when no interval fits the budget.
const NeverFits = time.Duration(math.MaxInt64)

// trafficHorizon is how far back Traffic's averages look (their decay's
// time constant).
const trafficHorizon = time.Hour

// Traffic is the chain's traffic as the readers observed it: averages
// over about the last trafficHorizon, each kept as a decayed count over
// decayed minutes, so a first hour is not underestimated.
type Traffic struct {
	feed    rate
	details rate
	// feedTotal is the feed's total at the last observation.
	feedTotal int
	// listed and onContracts count (decayed per page) the mined contract
	// calls of the feed pages observed and those on allowlisted contracts.
	listed, onContracts float64
}

// rate is a decayed count over decayed minutes since its first
// observation.
type rate struct {
	at      time.Time
	n, mins float64
}

func (r *rate) add(n float64, at time.Time) {
	if r.at.IsZero() {
		r.at = at // the first observation only starts the clock
		return
	}
	span := max(at.Sub(r.at), 0)
	d := math.Exp(-float64(span) / float64(trafficHorizon))
	r.n, r.mins, r.at = r.n*d+n, r.mins*d+span.Minutes(), at
}

func (r rate) perMinute() float64 {
	if r.mins <= 0 {
		return 0
	}
	return r.n / r.mins
}

// shareDecay is how much a feed page's predecessors weigh in the share:
// about the last 50 pages count.
const shareDecay = 0.98

// ObserveFeed records a feed page read at at: the feed's total then (its
// growth since the last page is the volume) and the page's entries (what
// share of them the allowlisted contracts' lists carry: onContract says
// whether a contract is allowlisted).
func (t *Traffic) ObserveFeed(total int, page []hiro.Entry, onContract func(contractID string) bool, at time.Time) {
	grew := 0
	if total > t.feedTotal {
		grew = total - t.feedTotal // a fork can shrink it: then nothing grew
	}
	t.feed.add(float64(grew), at)
	t.feedTotal = total
	listed, on := 0, 0
	for _, e := range page {
		if !e.Mined() || e.ContractCall == nil {
			continue
		}
		listed++
		if onContract != nil && onContract(e.ContractCall.ContractID) {
			on++
		}
	}
	if listed > 0 {
		t.listed = t.listed*shareDecay + float64(listed)
		t.onContracts = t.onContracts*shareDecay + float64(on)
	}
}

// ObserveDetails records detail requests (verifying candidates, in
// batches) a reader sent by at.
func (t *Traffic) ObserveDetails(requests int, at time.Time) { t.details.add(float64(requests), at) }

// Known reports whether the feed's volume has been observed over a span.
func (t Traffic) Known() bool { return t.feed.mins > 0 }

// FeedPerMinute is the feed's entries a minute.
func (t Traffic) FeedPerMinute() float64 { return t.feed.perMinute() }

// ContractsPerMinute is the allowlisted contracts' lists' entries a
// minute, together.
func (t Traffic) ContractsPerMinute() float64 {
	if t.listed <= 0 {
		return t.FeedPerMinute()
	}
	return t.FeedPerMinute() * t.onContracts / t.listed
}

// DetailsPerMinute is the detail requests a minute.
func (t Traffic) DetailsPerMinute() float64 { return t.details.perMinute() }

// ReadInterval is the shortest interval, at least every, at which reading
// lists lists that carry perMinute new entries a minute together (evenly;
// each read at least a page of each, pages of PageSize overlapping by one
// entry) and details detail requests a minute fits TailShare of
// ratePerMinute. NeverFits when none does: pages of the volume alone cost
// more than that. An unknown or unbounded rate is every.
func ReadInterval(perMinute float64, lists int, details float64, every time.Duration, ratePerMinute float64) time.Duration {
	if ratePerMinute <= 0 || math.IsInf(ratePerMinute, 1) || math.IsNaN(ratePerMinute) {
		return every
	}
	lists = max(lists, 1)
	share := ratePerMinute * TailShare
	cost := func(d time.Duration) float64 {
		m := d.Minutes()
		pages := math.Max(1, (perMinute/float64(lists)*m+1)/(PageSize-1))
		return float64(lists)*pages/m + details
	}
	if cost(every) <= share {
		return every
	}
	hi := 24 * time.Hour
	if cost(hi) > share {
		return NeverFits
	}
	lo := every
	for hi-lo > time.Second {
		mid := lo + (hi-lo)/2
		if cost(mid) <= share {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// switchMargin is how much sooner the other source must read before the
// tail moves to the contracts' lists (the feed is the simpler read, and a
// margin keeps the choice from flapping on noise).
const switchMargin = 0.8

// PlanSource is where the tail reads next, from cur (its source now, ""
// the feed), the traffic observed, the number of allowlisted contracts,
// the tail's interval and the sweep's rate (requests a minute): the
// source that can read sooner within TailShare of the rate. The feed
// stays until the contracts' lists read in at most switchMargin of its
// interval (or the feed does not fit at all and the lists do); the
// contracts' lists stay until the feed reads as soon as they do. Traffic
// not yet observed keeps cur.
func PlanSource(cur Source, t Traffic, contracts int, every time.Duration, ratePerMinute float64) Source {
	if cur == "" {
		cur = SourceFeed
	}
	if !t.Known() || contracts <= 0 {
		return cur
	}
	details := t.DetailsPerMinute()
	feed := ReadInterval(t.FeedPerMinute(), 1, details, every, ratePerMinute)
	lists := ReadInterval(t.ContractsPerMinute(), contracts, details, every, ratePerMinute)
	if !reconcilerFits(t, ratePerMinute, cur == SourceContracts) {
		feed = NeverFits
	}
	switch cur {
	case SourceContracts:
		if feed != NeverFits && feed <= lists {
			return SourceFeed
		}
	default:
		if lists != NeverFits && (feed == NeverFits || float64(lists) <= switchMargin*float64(feed)) {
			return SourceContracts
		}
	}
	return cur
}

// reconcilerFits reports whether, beside the tail reading the feed, the
// reconciler can read the contracts' lists' new entries (pages of
// PageSize overlapping by one) within switchMargin of what the tail
// leaves of ratePerMinute (1 - TailShare); back, the lists being the
// tail, within switchMargin of that again, so the choice does not flap on
// noise. When it cannot, the feed is no cheaper than the lists alone:
// both the feed and the lists' volume are paid, and the walks, which
// their repeats and last pages make dearer than the volume, fall behind
// and give ranges up faster than the reconciler reads them. The chain
// bench's month plan, 1,000 agents, the catalog's allowlist (go run
// ./internal/pacing/cmd/bench -section chain -agents 1000 -volumes
// 120000,150000 -plans month): on the feed, 122 ranges given up and p99
// 12.5 h at 120,000 a day, 1,631 swaps never found at 150,000; on the
// lists, none given up, p99 24 min. An unknown or unbounded rate fits.
func reconcilerFits(t Traffic, ratePerMinute float64, back bool) bool {
	if ratePerMinute <= 0 || math.IsInf(ratePerMinute, 1) || math.IsNaN(ratePerMinute) {
		return true
	}
	share := ratePerMinute * (1 - TailShare) * switchMargin
	if back {
		share *= switchMargin
	}
	return t.ContractsPerMinute()/(PageSize-1) <= share
}

// Observer is what the sweep's runs observed of the chain, shared by
// them in memory (a restart observes again): the traffic that says where
// the tail reads (PlanSource), where it read last, when the feed's probe
// read while the contracts' lists are the tail, and what the tail's whole
// reads cost (Budget.ReadCost). It is safe for concurrent use.
type Observer struct {
	mu       sync.Mutex
	t        Traffic
	source   Source
	probeAt  time.Time
	readCost float64
	openGaps int
}

// SetOpenGaps records how many gaps are open (a run's report), or, with
// found, n more found since.
func (o *Observer) SetOpenGaps(n int, found bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if found {
		n += o.openGaps
	}
	o.openGaps = n
}

// OpenGaps is how many gaps were open when last recorded.
func (o *Observer) OpenGaps() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.openGaps
}

// Choose chooses where the tail reads now and returns it with where it
// read before ("" is the feed) and the traffic it chose by: the
// contracts' lists once Hiro has switched the feed off, else PlanSource's
// answer for contracts lists, the tail's interval and the lane's rate.
func (o *Observer) Choose(feedOff bool, contracts int, every time.Duration, rate float64) (before, now Source, t Traffic) {
	o.mu.Lock()
	defer o.mu.Unlock()
	before = cmp.Or(o.source, SourceFeed)
	o.source = SourceContracts
	if !feedOff {
		o.source = PlanSource(before, o.t, contracts, every, rate)
	}
	return before, o.source, o.t
}

// ObserveFeed records a feed page as Traffic.ObserveFeed does.
func (o *Observer) ObserveFeed(total int, page []hiro.Entry, onContract func(contractID string) bool, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.t.ObserveFeed(total, page, onContract, at)
}

// ObserveDetails records detail requests as Traffic.ObserveDetails does.
func (o *Observer) ObserveDetails(requests int, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.t.ObserveDetails(requests, at)
}

// Probed records that the feed's probe read at at.
func (o *Observer) Probed(at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.probeAt = at
}

// FeedPerMinute is the feed's entries a minute, as observed.
func (o *Observer) FeedPerMinute() float64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.t.FeedPerMinute()
}

// ProbedAt is when the feed's probe read last (zero: never).
func (o *Observer) ProbedAt() time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.probeAt
}

// readCostWeight is how much a read's cost weighs in ReadCost against
// the reads before it: about the last four reads count.
const readCostWeight = 0.25

// ReadTail records what a whole read of the tail cost, in requests (at
// least one).
func (o *Observer) ReadTail(requests int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := float64(max(requests, 1))
	if o.readCost == 0 {
		o.readCost = n
		return
	}
	o.readCost += readCostWeight * (n - o.readCost)
}

// ReadCost is what a whole read of the tail costs, in any run (0: none
// yet): the recent reads' average, each a page or more and a detail
// request when it found candidates, so that the room the plan keeps for
// the tail's reads holds the next one whichever it is (the last read's
// cost alone kept one request for a read that then cost two, and the
// reconciler's lists took the rest of the window: the tail waited for
// the next, keyless 10,000 agents p99 20 s, worst 1.4 min).
func (o *Observer) ReadCost() float64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.readCost
}
