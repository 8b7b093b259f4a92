package pacing

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func tp(t time.Time) *time.Time { return &t }

func ago(d time.Duration) *time.Time { return tp(t0.Add(-d)) }

func TestPick(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		give  []Item
		giveN int
		want  []int
	}{
		{name: "nothing allowed", give: []Item{{ID: "stx"}}, giveN: 0, want: nil},
		{name: "room for all keeps list order",
			give:  []Item{{ID: "a", RefreshedAt: ago(time.Minute)}, {ID: "b"}},
			giveN: 5, want: []int{0, 1}},
		{name: "never refreshed first",
			give:  []Item{{ID: "a", RefreshedAt: ago(time.Hour)}, {ID: "b"}, {ID: "c", RefreshedAt: ago(2 * time.Hour)}},
			giveN: 1, want: []int{1}},
		{name: "oldest first, returned in list order",
			give: []Item{
				{ID: "a", RefreshedAt: ago(time.Minute)}, {ID: "b", RefreshedAt: ago(3 * time.Hour)},
				{ID: "c", RefreshedAt: ago(time.Hour)}, {ID: "d", RefreshedAt: ago(2 * time.Hour)},
			},
			giveN: 2, want: []int{1, 3}},
		{name: "weight beats age",
			give: []Item{
				{ID: "static", Weight: StaticWeight, RefreshedAt: ago(time.Hour)},
				{ID: "tail", Weight: BottomWeight, RefreshedAt: ago(2 * time.Hour)},
			},
			giveN: 1, want: []int{0}},
		{name: "ties go to the earlier item",
			give: []Item{
				{ID: "a", RefreshedAt: ago(time.Hour)}, {ID: "b", RefreshedAt: ago(time.Hour)}, {ID: "c", RefreshedAt: ago(time.Hour)},
			},
			giveN: 2, want: []int{0, 1}},
		{name: "zero weight counts as 1000",
			give: []Item{
				{ID: "a", Weight: 1000, RefreshedAt: ago(time.Hour)}, {ID: "b", RefreshedAt: ago(2 * time.Hour)},
			},
			giveN: 1, want: []int{1}},
		{name: "refreshed in the future counts as fresh",
			give:  []Item{{ID: "a", RefreshedAt: tp(t0.Add(time.Hour))}, {ID: "b", RefreshedAt: ago(time.Second)}},
			giveN: 1, want: []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, Pick(t0, tt.give, tt.giveN))
		})
	}
}

func TestRankWeights(t *testing.T) {
	t.Parallel()
	require.Equal(t, []int{3000, 3000, 2000, 1500, 1000}, RankWeights(2, 3))
	require.Equal(t, []int{3000, 2000}, RankWeights(1, 1))
	require.Empty(t, RankWeights(0, 0))
}

// TestPickRotates refreshes 3 static and 50 traded tokens ten at a time,
// every 43 minutes (the Starter plan's month pace): every token comes round,
// static ones about every two hours, the least traded about every six (84
// weight units share ten refreshes a run).
func TestPickRotates(t *testing.T) {
	t.Parallel()
	weights := RankWeights(3, 50)
	items := make([]Item, len(weights))
	for i, w := range weights {
		items[i] = Item{Weight: w}
	}
	count := make([]int, len(items))
	maxAge := make([]time.Duration, len(items))
	now := t0
	for round := range 200 {
		for i := range items {
			// Never-refreshed tokens go first, so the first rounds are a
			// cold start, not the steady rotation measured here.
			if round >= 10 {
				maxAge[i] = max(maxAge[i], now.Sub(*items[i].RefreshedAt))
			}
		}
		picked := Pick(now, items, 10)
		require.Len(t, picked, 10)
		for _, i := range picked {
			at := now
			items[i].RefreshedAt = &at
			count[i]++
		}
		now = now.Add(43 * time.Minute)
	}
	for i := range items {
		require.Positive(t, count[i], "item %d never refreshed", i)
	}
	require.Greater(t, count[0], 2*count[52], "static tokens come round more often than the tail")
	require.Greater(t, count[3], count[52], "the most traded more often than the least")
	require.LessOrEqual(t, maxAge[52], 7*time.Hour)
	require.LessOrEqual(t, maxAge[0], 3*time.Hour)
}

func TestPickTokens(t *testing.T) {
	t.Parallel()
	never := (*time.Time)(nil)
	// 2 static, 3 traded (weights 2000, 1500, 1000).
	checked := []*time.Time{ago(time.Minute), ago(time.Minute), ago(time.Hour), ago(90 * time.Minute), ago(2 * time.Hour)}
	require.Equal(t, []int{0, 1, 3}, PickTokens(t0, checked, 2, 3),
		"the static base, fresh as it is, then the stalest traded token by weight (1.5 × 90 m beats 1 × 120 m and 2 × 60 m)")
	require.Equal(t, []int{0, 1, 2, 3, 4}, PickTokens(t0, checked, 2, 9), "room for all")
	require.Equal(t, []int{1}, PickTokens(t0, []*time.Time{ago(time.Minute), ago(time.Hour), never}, 2, 1),
		"an allowance smaller than the static base picks within it")
	require.Equal(t, []int{0, 2}, PickTokens(t0, []*time.Time{never, ago(time.Hour), never}, 1, 2), "never checked first")
	require.Empty(t, PickTokens(t0, checked, 2, 0))
	require.Equal(t, []int{1}, PickTokens(t0, []*time.Time{ago(time.Minute), ago(time.Hour)}, 5, 1), "a static count past the list is the list")
}

// TestPickTokensAgainstARestatement holds PickTokens to the rule as SPEC §4.8
// and RankWeights state it, written out afresh: the static base first, then
// the traded tokens by age in seconds × weight, never checked first, ties to
// the more traded, in list order.
func TestPickTokensAgainstARestatement(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		static, traded := rng.IntN(4), rng.IntN(60)
		checked := make([]*time.Time, static+traded)
		for i := range checked {
			if rng.IntN(8) > 0 {
				// Whole seconds, a few hours back, with ties.
				checked[i] = ago(time.Duration(rng.IntN(5000)) * 3 * time.Second)
			}
		}
		n := rng.IntN(static + traded + 3)
		want := restatedPick(checked, static, n)
		require.Equal(t, want, PickTokens(t0, checked, static, n), "static %d, traded %d, n %d", static, traded, n)
	}
}

func restatedPick(checked []*time.Time, static, n int) []int {
	var out []int
	order := func(from, to int, weight func(i int) int64) []int {
		idx := make([]int, 0, to-from)
		for i := from; i < to; i++ {
			idx = append(idx, i)
		}
		score := func(i int) (bool, int64) {
			if checked[i] == nil {
				return true, 0
			}
			return false, int64(t0.Sub(*checked[i])/time.Second) * weight(i)
		}
		sort.SliceStable(idx, func(a, b int) bool {
			na, sa := score(idx[a])
			nb, sb := score(idx[b])
			if na != nb {
				return na
			}
			return sa > sb
		})
		return idx
	}
	traded := len(checked) - static
	s := order(0, static, func(int) int64 { return 1 })
	s = s[:min(n, len(s))]
	tail := order(static, len(checked), func(i int) int64 {
		if traded == 1 {
			return 2000
		}
		return int64(2000 - 1000*(i-static)/(traded-1))
	})
	tail = tail[:min(max(n-len(s), 0), len(tail))]
	out = append(append(out, s...), tail...)
	sort.Ints(out)
	if len(out) == 0 {
		return nil
	}
	return out
}
