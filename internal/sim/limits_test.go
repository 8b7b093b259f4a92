package sim

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// headers is what Hiro sends with the answer a.
func headers(a Answer, l Limits, now time.Time) http.Header {
	h := http.Header{}
	a.WriteHiroHeaders(h, l, now, 1)
	return h
}

// Quota is what the benchmarks spend: the same windows the HTTP limiter
// serves, and the headers Hiro sends with an answer, as hiroLimitFor sends
// them (the advertised limit, what is really left, the month only on a
// plan that has one).
func TestQuotaAndItsHeaders(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 6, 30, 23, 59, 30, 0, time.UTC)
	q := Quota{Limits: Limits{PerMinute: 5, HiddenPerMinute: 2, PerMonth: 3}}
	a := q.Take(at, 1)
	require.True(t, a.Allowed)
	h := headers(a, q.Limits, at)
	require.Equal(t, "5", h.Get("ratelimit-limit"), "the advertised limit")
	require.Equal(t, "1", h.Get("ratelimit-remaining"), "the hidden one's rest")
	require.Equal(t, "1", h.Get("x-ratelimit-remaining-stacks-minute"))
	require.Equal(t, "30", h.Get("ratelimit-reset"))
	require.Equal(t, "2", h.Get("x-ratelimit-remaining-stacks-month"))
	require.Equal(t, "3", h.Get("x-ratelimit-limit-stacks-month"))
	require.Empty(t, h.Get("retry-after"))

	require.True(t, q.Take(at, 1).Allowed)
	refused := q.Take(at.Add(time.Second), 1)
	require.False(t, refused.Allowed, "the hidden minute is spent")
	require.Equal(t, "29", headers(refused, q.Limits, at.Add(time.Second)).Get("retry-after"))
	require.Nil(t, q.DryAt)

	next := at.Add(time.Minute) // July: a new month and a new minute
	require.True(t, q.Take(next, 1).Allowed)
	require.Equal(t, 2, q.MonthLeft())

	none := Quota{Limits: Limits{PerMinute: 5}}
	h = headers(none.Take(at, 1), none.Limits, at)
	require.Empty(t, h.Values("x-ratelimit-remaining-stacks-month"), "no month headers without a month quota")
	require.Equal(t, -1, none.MonthLeft())

	dry := Quota{Limits: Limits{PerMinute: 5, PerMonth: 1}}
	require.True(t, dry.Take(at, 1).Allowed)
	require.False(t, dry.Take(at.Add(time.Second), 1).Allowed)
	require.Equal(t, at.Add(time.Second), *dry.DryAt, "when the month first refused")
}

// TestQuotaShapes: a sliding window holds at most its limit in any 60 s
// and frees each unit 60 s after it was spent; a token bucket holds its
// burst and fills at the limit a minute; a lagging header says what was
// left before the last requests. The headers name the minute's end
// whatever the shape.
func TestQuotaShapes(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 6, 1, 0, 0, 50, 0, time.UTC)
	sliding := Quota{Limits: Limits{PerMinute: 500, HiddenPerMinute: 3, Shape: ShapeSliding}}
	for i := range 3 {
		require.True(t, sliding.Take(at.Add(time.Duration(i)*time.Second), 1).Allowed)
	}
	over := sliding.Take(at.Add(15*time.Second), 1) // a new minute, the same 60 s
	require.False(t, over.Allowed, "three in the last 60 s")
	require.Equal(t, 45*time.Second, over.RetryAfter, "until the first ages out")
	require.Equal(t, "55", headers(over, sliding.Limits, at.Add(15*time.Second)).Get("ratelimit-reset"),
		"the header says the minute ends on the minute")
	freed := sliding.Take(at.Add(60*time.Second), 1)
	require.True(t, freed.Allowed)
	require.Equal(t, 0, freed.MinuteRemaining, "one freed, one spent")

	bucket := Quota{Limits: Limits{PerMinute: 30, Burst: 2, Shape: ShapeBucket}}
	require.True(t, bucket.Take(at, 1).Allowed)
	require.True(t, bucket.Take(at, 1).Allowed)
	empty := bucket.Take(at, 1)
	require.False(t, empty.Allowed)
	require.Equal(t, 2*time.Second, empty.RetryAfter, "30 a minute: a token every 2 s")
	require.True(t, bucket.Take(at.Add(2*time.Second), 1).Allowed)
	require.Equal(t, 2, bucket.Take(at.Add(time.Hour), 1).MinuteRemaining+1, "full again, at most the burst")

	lag := Quota{Limits: Limits{PerMinute: 10, HeaderLag: 2}}
	var said []int
	for range 4 {
		said = append(said, lag.Take(at, 1).MinuteRemaining)
	}
	require.Equal(t, []int{9, 9, 9, 8}, said)
}
