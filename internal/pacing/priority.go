package pacing

import (
	"math"
	"slices"
	"time"
)

// Item is one thing a run may refresh (a token), in priority order: static
// items first, then the traded ones, most traded first.
type Item struct {
	ID string `json:"id"`
	// Weight is how much this item's staleness matters, in thousandths: an
	// item of weight 3000 is refreshed about three times as often as one of
	// weight 1000 when the allowance cannot cover everything. 0 counts as 1000.
	Weight int `json:"weight"`
	// RefreshedAt is when the item was last refreshed; nil for never.
	RefreshedAt *time.Time `json:"refreshedAt,omitempty"`
}

// Weights for RankWeights, in thousandths.
const (
	StaticWeight  = 3000
	TopWeight     = 2000 // the most traded token
	BottomWeight  = 1000 // the least traded token
	defaultWeight = 1000
)

// RankWeights gives static items StaticWeight and the traded ones a weight
// falling evenly from TopWeight (most traded) to BottomWeight (least).
// Static tokens are what every page shows; a token traded often matters more
// than one traded once, but none is left to go stale for good.
func RankWeights(static, traded int) []int {
	w := make([]int, 0, max(static, 0)+max(traded, 0))
	for range static {
		w = append(w, StaticWeight)
	}
	for r := range traded {
		if traded == 1 {
			w = append(w, TopWeight)
			continue
		}
		w = append(w, TopWeight-(TopWeight-BottomWeight)*r/(traded-1))
	}
	return w
}

// Pick chooses which of items a run with an allowance of n refreshes at now:
// the n whose weighted age (age × weight) is largest, items never refreshed
// first, ties to the earlier item. It returns their indexes in list order,
// so that the run spends on static items first and a rate-limit cut takes
// the tail. The choice rotates: what was refreshed drops to the back.
func Pick(now time.Time, items []Item, n int) []int {
	if n <= 0 {
		return nil
	}
	if n >= len(items) {
		all := make([]int, len(items))
		for i := range all {
			all[i] = i
		}
		return all
	}
	type scored struct {
		index int
		score int64
	}
	ranked := make([]scored, len(items))
	for i, it := range items {
		ranked[i] = scored{index: i, score: weightedAge(now, it)}
	}
	// A stable sort on the score alone keeps ties in list order.
	slices.SortStableFunc(ranked, func(a, b scored) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return 0
	})
	picked := make([]int, n)
	for i := range picked {
		picked[i] = ranked[i].index
	}
	slices.Sort(picked)
	return picked
}

// weightedAge is age in seconds times weight, in integers so that the choice
// is the same on every machine; never refreshed is the largest.
func weightedAge(now time.Time, it Item) int64 {
	if it.RefreshedAt == nil {
		return math.MaxInt64
	}
	w := int64(it.Weight)
	if w <= 0 {
		w = defaultWeight
	}
	age := max(int64(now.Sub(*it.RefreshedAt)/time.Second), 0)
	// An age of decades times the largest weight still fits; clamp anyway.
	if age > math.MaxInt64/w-1 {
		return math.MaxInt64 - 1
	}
	return age * w
}

// PickTokens is the tenero run's choice (SPEC §4.1, §4.8), the one function
// the activity and the benchmark both call. checked holds each token's last
// check (nil: never), the first static of them the static base, the rest the
// traded tokens from most to least traded, weighted by RankWeights. A run
// with an allowance of n refreshes the static base first and always (what
// every page shows; Pick among it only when n cannot hold it all), then
// spends what is left on the traded tokens Pick chooses by staleness ×
// weight. It returns indexes into checked in list order: the order of the
// run's requests, so that a rate-limit cut takes the tail.
func PickTokens(now time.Time, checked []*time.Time, static, n int) []int {
	static = min(max(static, 0), len(checked))
	weights := RankWeights(static, len(checked)-static)
	items := make([]Item, len(checked))
	for i, at := range checked {
		items[i] = Item{Weight: weights[i], RefreshedAt: at}
	}
	picked := Pick(now, items[:static], min(n, static))
	for _, i := range Pick(now, items[static:], n-len(picked)) {
		picked = append(picked, static+i)
	}
	return picked
}
