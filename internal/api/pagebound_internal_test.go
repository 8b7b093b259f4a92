package api

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/store"
)

// While the leaderboard cannot be recomputed (Postgres down, the read pool
// saturated) its last computation lives on, and every offset and limit is
// a distinct page (issue 41, item 9). Without a bound, 3,000 distinct
// full pages of 200 rows kept ~140 MB; the set keeps at most its bound and
// the heap grows by less than 50 MiB.
func TestTheLeaderboardKeepsABoundedSetOfPages(t *testing.T) {
	agents := make([]store.BoardAgent, 10_000)
	for i := range agents {
		agents[i] = store.BoardAgent{STXAddress: fmt.Sprintf("SP%038d", i), DisplayName: fmt.Sprintf("agent %d", i),
			Trades: int64(i % 97), LatestTrade: 1_780_000_000 + int64(i), SentUSD: float64(i), ReceivedUSD: float64(i) * 1.01, AllPriced: true}
	}
	b := rankBoard(agents)
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	start := heap()
	const pages = 3_000
	for i := range pages {
		q := boardQuery{by: ByAddress, sort: boardSorts[i%len(boardSorts)], limit: MaxBoardLimit, offset: i % 9_800}
		e, err := b.pages.get(q, func() (encodedRead, error) { return encodeRead(b.page(q)) })
		require.NoError(t, err)
		require.NotEmpty(t, e.body)
	}
	kept := b.pages.len()
	grew := int64(heap()) - int64(start)
	t.Logf("figures: board_pages_kept=%d of %d asked, heap grew %.1f MiB", kept, pages, float64(grew)/(1<<20))
	require.LessOrEqual(t, kept, maxBoardPages)
	require.Less(t, grew, int64(50<<20))

	// A page kept is served as encoded; one past the bound is encoded anew
	// with the same bytes.
	q := boardQuery{by: ByIdentity, sort: SortPnL, limit: MaxBoardLimit, offset: 9_799}
	again, err := b.pages.get(q, func() (encodedRead, error) { return encodeRead(b.page(q)) })
	require.NoError(t, err)
	want, err := encodeRead(b.page(q))
	require.NoError(t, err)
	require.Equal(t, want, again)
}

// Distinct rollup queries are bounded the same way, in entries and in the
// bytes their answers hold.
func TestKeyedCacheStartsOverAtItsBound(t *testing.T) {
	made := 0
	var adds []func(int)
	c := newKeyed(4, 1000, func(_ int, add func(int)) *cell[int] {
		made++
		adds = append(adds, add)
		return &cell[int]{}
	})
	for k := range 10 {
		c.get(k)
		require.LessOrEqual(t, c.len(), 4)
	}
	require.Equal(t, 10, made)
	c.get(9)
	require.Equal(t, 10, made, "a key it holds is not made again")

	adds[len(adds)-1](1000) // an answer as large as the bytes' bound
	c.get(10)
	require.Equal(t, 1, c.len(), "past its bytes it started over")
}
