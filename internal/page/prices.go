package page

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/workflows"
)

// defaultTeneroEvery is the tenero cadence assumed when the status does not
// say (PACER_TENERO_EVERY's default).
const defaultTeneroEvery = 5 * time.Minute

// PricesSection shows each tracked token's age against its target.
type PricesSection struct {
	Section
	Tracked, Fresh, Stale, Missing string
	// Target is the freshness a price should keep: an unchanged price is
	// rewritten hourly, and refreshed every tenero cadence.
	Target string
	Oldest string
	// SetNote says where the tracked set comes from.
	SetNote string
	Level   Level
	Chart   PriceChart
}

// PriceChart is one horizontal bar per token.
type PriceChart struct {
	W, H    float64
	Rows    []PriceBar
	TargetX float64
	AxisX   float64
	Scale   string
	LabelW  float64
}

// PriceBar is one token's age.
type PriceBar struct {
	Y float64
	// Label is the token's short name; ID its full id.
	Label, ID string
	W         float64
	Age       string
	Level     Level
	Missing   bool
	Clipped   bool
}

type pricesData struct {
	ids []string
	// recorded is when the last tenero run recorded the set; zero when
	// the page ranked the swaps itself.
	recorded time.Time
	prices   map[string]store.Price
}

// loadPrices reads the tracked set the last tenero run recorded (the
// static base, the pegs, the most traded tokens) and their stored prices.
// Before any run recorded one, it ranks the swaps as the run does, once.
func loadPrices(ctx context.Context, st *store.Store, cat *catalog.Catalog) (pricesData, error) {
	var d pricesData
	ids, at, ok, err := st.TrackedTokens(ctx)
	if err != nil {
		return d, err
	}
	if !ok {
		traded, err := st.TradedTokens(ctx, catalog.MaxTraded)
		if err != nil {
			return d, err
		}
		ids = cat.TokenSet(traded)
	}
	d.ids, d.recorded = ids, at
	d.prices, err = st.Prices(ctx, ids)
	return d, err
}

const (
	priceW, priceRowH, priceLabelW, priceAgeW = 960.0, 16.0, 230.0, 90.0
)

func buildPrices(d pricesData, st *workflows.Status, now time.Time) PricesSection {
	every := defaultTeneroEvery
	if st != nil {
		if ts, ok := st.Tasks[pacer.TaskTenero]; ok {
			if e, err := time.ParseDuration(ts.Every); err == nil && e > 0 {
				every = e
			}
		}
	}
	target := store.RewriteAfter + every
	s := PricesSection{Target: span(target), Level: LevelOK,
		SetNote: "the tracked set as the tenero task builds it (no run has recorded one yet)"}
	if !d.recorded.IsZero() {
		s.SetNote = "the tracked set the last tenero run worked from, " + relative(d.recorded, now)
	}

	type token struct {
		id      string
		age     time.Duration
		missing bool
	}
	tokens := make([]token, 0, len(d.ids))
	var fresh, stale, missing int
	var oldest time.Duration
	for _, id := range d.ids {
		p, ok := d.prices[id]
		if !ok {
			missing++
			tokens = append(tokens, token{id: id, missing: true})
			continue
		}
		age := max(0, now.Sub(p.FetchedAt))
		oldest = max(oldest, age)
		if age <= target {
			fresh++
		} else {
			stale++
		}
		tokens = append(tokens, token{id: id, age: age})
	}
	// The stalest first: what needs a look is at the top.
	slices.SortStableFunc(tokens, func(a, b token) int {
		if a.missing != b.missing {
			if a.missing {
				return -1
			}
			return 1
		}
		return cmp.Compare(b.age, a.age)
	})
	s.Tracked, s.Fresh, s.Stale, s.Missing = count(len(d.ids)), count(fresh), count(stale), count(missing)
	s.Oldest = "—"
	if len(d.prices) > 0 {
		s.Oldest = span(oldest)
	}
	if stale > 0 || missing > 0 {
		s.Level = LevelBad
	}

	// The axis shows up to three targets, so one very old price does not
	// flatten the others; longer bars are clipped and say so.
	axis := max(target*3/2, min(oldest, 3*target))
	plotW := priceW - priceLabelW - priceAgeW
	c := PriceChart{W: priceW, H: float64(len(tokens))*priceRowH + 20, LabelW: priceLabelW, Scale: span(axis)}
	c.TargetX = priceLabelW + plotW*float64(target)/float64(axis)
	c.AxisX = priceLabelW + plotW
	for i, t := range tokens {
		bar := PriceBar{Y: float64(i) * priceRowH, Label: shortToken(t.id), ID: t.id}
		switch {
		case t.missing:
			bar.Missing, bar.Age, bar.Level = true, "no price yet", LevelBad
		default:
			bar.Age, bar.Level = span(t.age), LevelOK
			if t.age > target {
				bar.Level = LevelBad
			}
			f := float64(t.age) / float64(axis)
			if f > 1 {
				f, bar.Clipped = 1, true
			}
			bar.W = max(2, plotW*f) // a price just fetched still shows its bar
		}
		c.Rows = append(c.Rows, bar)
	}
	s.Chart = c
	return s
}

// shortToken is a token id people can read in a narrow column: the
// contract's name and asset, without the deployer's address.
func shortToken(id string) string {
	_, name, ok := strings.Cut(id, ".")
	if !ok {
		return id
	}
	contract, asset, ok := strings.Cut(name, "::")
	if ok && asset != contract {
		return contract + "::" + asset
	}
	return contract
}
