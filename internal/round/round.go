// Package round holds the rules of the competition's rounds (SPEC §13):
// what a valid round is, and how a round's results, ranks and rewards
// follow from its swaps and its price snapshot. It does no I/O: the store
// reads the inputs and writes the outcome in one transaction, and the
// arithmetic is exact (big.Rat), so ties are ties.
package round

import (
	"cmp"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"time"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/store"
)

// EventFinalized is the subscribers' event of a finalized round (SPEC
// §10.2); a subscriber gets it only when it asked for it.
const EventFinalized = store.EventRoundFinalized

// Defaults of SPEC §13.
const (
	DefaultGrace            = time.Hour
	DefaultMinVolumeUSD     = 50
	DefaultMinPricedTrades  = 3
	maxIDLength             = 64
	maxFloorMinVolumeUSD    = 1e15
	maxFloorMinPricedTrades = 1 << 30
)

var idPattern = regexp.MustCompile(`^[a-z0-9-]{1,64}$`)

// ValidID says whether id is a round id: 1-64 of a-z, 0-9 and -.
func ValidID(id string) bool { return len(id) <= maxIDLength && idPattern.MatchString(id) }

// ErrInvalid is wrapped by every *InvalidError.
var ErrInvalid = errors.New("invalid round")

// InvalidError names the field of a round that is wrong, and why.
type InvalidError struct {
	Field, Msg string
}

func (e *InvalidError) Error() string { return e.Field + ": " + e.Msg }

// Unwrap makes an InvalidError an ErrInvalid.
func (e *InvalidError) Unwrap() error { return ErrInvalid }

// Check validates a round's spec: its id, a window whose end is after its
// start, a grace end at or after the end, floors ≥ 0.
func Check(s store.RoundSpec) error {
	bad := func(field, format string, args ...any) error {
		return &InvalidError{Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case !ValidID(s.ID):
		return bad("id", "%q is not 1-64 characters of a-z, 0-9 and -", s.ID)
	case s.StartsAt.IsZero():
		return bad("startsAt", "missing")
	case s.EndsAt.IsZero():
		return bad("endsAt", "missing")
	case !s.EndsAt.After(s.StartsAt):
		return bad("endsAt", "%s is not after the start %s", stamp(s.EndsAt), stamp(s.StartsAt))
	case s.GraceEndsAt.Before(s.EndsAt):
		return bad("grace", "the grace ends (%s) before the round does (%s)", stamp(s.GraceEndsAt), stamp(s.EndsAt))
	case !(s.MinVolumeUSD >= 0 && s.MinVolumeUSD <= maxFloorMinVolumeUSD):
		return bad("minVolumeUsd", "%v is not a number from 0 to %g", s.MinVolumeUSD, float64(maxFloorMinVolumeUSD))
	case s.MinPricedTradeCount < 0 || s.MinPricedTradeCount > maxFloorMinPricedTrades:
		return bad("minPricedTradeCount", "%d is not from 0 to %d", s.MinPricedTradeCount, maxFloorMinPricedTrades)
	}
	return nil
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// Price is one token's price as of a round's end: USD for one whole
// token, and its decimals.
type Price struct {
	USD      *big.Rat
	Decimals int
}

// Snapshot prices the tokens of a round's swaps as of its end (SPEC
// §13): a peg is 1 USD; any other token its last observed price at or
// before the end (observed, by the token's id as the swaps spell it),
// with the decimals the observation's token row or the catalog knows. A
// token with neither a price nor decimals is unpriced (absent). It
// returns the prices by token and the snapshot rows to keep.
func Snapshot(tokens []string, observed map[string]store.ObservedPrice, cat *catalog.Catalog) (map[string]Price, []store.RoundPrice) {
	prices := map[string]Price{}
	var rows []store.RoundPrice
	for _, tok := range slices.Sorted(slices.Values(tokens)) {
		if _, done := prices[tok]; done {
			continue
		}
		if peg, ok := cat.Peg(tok); ok {
			prices[tok] = Price{USD: big.NewRat(1, 1), Decimals: peg.Decimals}
			rows = append(rows, store.RoundPrice{TokenID: tok, PriceUSD: "1", Decimals: peg.Decimals, Source: store.PriceFromPeg})
			continue
		}
		o, ok := observed[tok]
		if !ok || o.PriceUSD == nil {
			continue
		}
		usd, ok := new(big.Rat).SetString(*o.PriceUSD)
		if !ok || usd.Sign() <= 0 {
			continue
		}
		dec, known := 0, false
		if o.Decimals != nil {
			dec, known = *o.Decimals, true
		} else {
			dec, known = cat.Decimals(tok)
		}
		if !known {
			continue
		}
		prices[tok] = Price{USD: usd, Decimals: dec}
		rows = append(rows, store.RoundPrice{TokenID: tok, PriceUSD: *o.PriceUSD, Decimals: dec,
			Source: store.PriceFromObservation, ObservedAt: o.ObservedAt})
	}
	return prices, rows
}

// value is what amount base units of a token are worth at p.
func (p Price) value(amount string) (*big.Rat, bool) {
	a, ok := new(big.Rat).SetString(amount)
	if !ok || a.Sign() < 0 || !a.IsInt() {
		return nil, false
	}
	scale := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p.Decimals)), nil))
	return a.Mul(a, p.USD).Quo(a, scale), true
}

// Inputs is what a round's finalization reads.
type Inputs struct {
	Round store.Round
	// Swaps are the swaps that count: in the window, of an agent
	// eligible at finalization (the store's query decides both).
	Swaps  []store.RoundSwap
	Agents map[string]store.RoundAgent
	Prices map[string]Price
	At     time.Time
}

type tally struct {
	res              store.RoundResult
	volume, received *big.Rat
	pnl              *big.Rat
	pct              *big.Rat // nil at zero volume
	unpriced         map[string]bool
}

// Compute is a round's outcome (SPEC §13): one result per address with a
// counted swap, ranked in a total order (P&L desc, volume desc, address
// asc), and the rewards: overall_pnl to rank 1, volume to the highest
// volume (ties by rank; none when no volume was priced), return to the
// highest P&L fraction among the results at or above both floors (ties by
// rank; none when nobody qualifies).
func Compute(in Inputs) ([]store.RoundResult, []store.RoundReward) {
	by := map[string]*tally{}
	for _, sw := range in.Swaps {
		t := by[sw.Sender]
		if t == nil {
			ag := in.Agents[sw.Sender]
			t = &tally{volume: new(big.Rat), received: new(big.Rat), unpriced: map[string]bool{},
				res: store.RoundResult{RoundID: in.Round.ID, STXAddress: sw.Sender, BTCAddress: ag.BTCAddress,
					ERC8004AgentID: ag.ERC8004AgentID, CalculatedAt: in.At}}
			by[sw.Sender] = t
		}
		r := &t.res
		r.TradeCount++
		if r.LatestTradeAt == nil || sw.Time > *r.LatestTradeAt {
			at := sw.Time
			r.LatestTradeAt = &at
		}
		switch sw.Source {
		case "agent":
			r.SourceCounts.Agent++
		case "chainhook":
			r.SourceCounts.Chainhook++
		default:
			r.SourceCounts.Sweep++
		}
		gave, okIn := priced(in.Prices, sw.TokenIn, sw.AmountIn)
		got, okOut := priced(in.Prices, sw.TokenOut, sw.AmountOut)
		if !okIn || !okOut {
			r.UnpricedTradeCount++
			if !okIn {
				t.unpriced[sw.TokenIn] = true
			}
			if !okOut {
				t.unpriced[sw.TokenOut] = true
			}
			continue
		}
		r.PricedTradeCount++
		t.volume.Add(t.volume, gave)
		t.received.Add(t.received, got)
	}
	all := make([]*tally, 0, len(by))
	for _, t := range by {
		t.pnl = new(big.Rat).Sub(t.received, t.volume)
		if t.volume.Sign() > 0 {
			t.pct = new(big.Rat).Quo(t.pnl, t.volume)
		}
		all = append(all, t)
	}
	slices.SortFunc(all, func(a, b *tally) int {
		return cmp.Or(b.pnl.Cmp(a.pnl), b.volume.Cmp(a.volume), cmp.Compare(a.res.STXAddress, b.res.STXAddress))
	})
	results := make([]store.RoundResult, len(all))
	for i, t := range all {
		r := &t.res
		r.Rank = i + 1
		r.VolumeUSD, _ = t.volume.Float64()
		r.ReceivedUSD, _ = t.received.Float64()
		r.PnLUSD, _ = t.pnl.Float64()
		if t.pct != nil {
			f, _ := t.pct.Float64()
			r.PnLPercent = &f
		}
		r.UnpricedTokens = slices.Sorted(func(yield func(string) bool) {
			for tok := range t.unpriced {
				if !yield(tok) {
					return
				}
			}
		})
		if r.UnpricedTokens == nil {
			r.UnpricedTokens = []string{}
		}
		results[i] = *r
	}
	return results, rewards(in, all)
}

func priced(prices map[string]Price, token, amount string) (*big.Rat, bool) {
	p, ok := prices[token]
	if !ok {
		return nil, false
	}
	return p.value(amount)
}

// rewards picks each category's winner from the ranked tallies.
func rewards(in Inputs, ranked []*tally) []store.RoundReward {
	var out []store.RoundReward
	award := func(category string, t *tally) {
		out = append(out, store.RoundReward{RoundID: in.Round.ID, Category: category, Rank: t.res.Rank,
			STXAddress: t.res.STXAddress, ERC8004AgentID: t.res.ERC8004AgentID, Status: store.RewardPending, CreatedAt: in.At})
	}
	if len(ranked) == 0 {
		return out
	}
	award(store.RewardOverallPnL, ranked[0])
	// best keeps the first of the ranked order among equals: ties go by rank.
	best := func(ok func(*tally) bool, key func(*tally) *big.Rat) *tally {
		var win *tally
		for _, t := range ranked {
			if ok(t) && (win == nil || key(t).Cmp(key(win)) > 0) {
				win = t
			}
		}
		return win
	}
	if w := best(func(t *tally) bool { return t.volume.Sign() > 0 }, func(t *tally) *big.Rat { return t.volume }); w != nil {
		award(store.RewardVolume, w)
	}
	floor := new(big.Rat)
	floor.SetFloat64(in.Round.MinVolumeUSD)
	qualifies := func(t *tally) bool {
		return t.pct != nil && t.volume.Cmp(floor) >= 0 && t.res.PricedTradeCount >= in.Round.MinPricedTradeCount
	}
	if w := best(qualifies, func(t *tally) *big.Rat { return t.pct }); w != nil {
		award(store.RewardReturn, w)
	}
	return out
}

// WaitPoll is how often finalize looks again while a round past its
// grace waits for completeThrough (SPEC §13).
const WaitPoll = time.Minute

// Plan is what the finalize task does at an instant: the rounds to
// finalize now, the round it waits for and why, and when it is next due.
type Plan struct {
	Finalize []string
	Waiting  *pacer.RoundWait
	// NextDueAt is the earliest grace end of a round left open, or
	// WaitPoll on while one waits for completeThrough; nil when none is
	// left.
	NextDueAt *time.Time
}

// Decide is the finalize task's one decision (SPEC §13): a round is
// finalized once its grace has passed and completeThrough (unix seconds,
// nil while unknown) has reached its end. open are the rounds not yet
// final. Waiting names the earliest-grace round that waits: for
// completeThrough (BehindSeconds how far it is behind the round's end, 0
// while it is unknown) before one that waits for its grace (how long the
// grace has left).
func Decide(open []store.Round, completeThrough *int64, now time.Time) Plan {
	var p Plan
	var graceWait *pacer.RoundWait
	var next *time.Time
	earliest := func(t time.Time) {
		if next == nil || t.Before(*next) {
			next = &t
		}
	}
	open = slices.Clone(open)
	slices.SortFunc(open, func(a, b store.Round) int {
		return cmp.Or(a.GraceEndsAt.Compare(b.GraceEndsAt), cmp.Compare(a.ID, b.ID))
	})
	for _, r := range open {
		switch {
		case now.Before(r.GraceEndsAt):
			earliest(r.GraceEndsAt)
			if graceWait == nil {
				graceWait = &pacer.RoundWait{Round: r.ID, Reason: pacer.WaitGrace,
					BehindSeconds: int64(r.GraceEndsAt.Sub(now).Round(time.Second) / time.Second)}
			}
		case completeThrough != nil && *completeThrough >= r.EndsAt.Unix():
			p.Finalize = append(p.Finalize, r.ID)
		default:
			earliest(now.Add(WaitPoll))
			if p.Waiting == nil {
				behind := int64(0)
				if completeThrough != nil {
					behind = r.EndsAt.Unix() - *completeThrough
				}
				p.Waiting = &pacer.RoundWait{Round: r.ID, Reason: pacer.WaitCompleteThrough, BehindSeconds: behind}
			}
		}
	}
	if p.Waiting == nil {
		p.Waiting = graceWait
	}
	if next != nil {
		t := next.UTC()
		p.NextDueAt = &t
	}
	return p
}
