package sim

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Quota is what the benchmarks spend: the same windows the HTTP limiter
// serves, and the headers pacer reads of an answer, as hiroLimitFor sends
// them (the advertised limit, what is really left, the month only on a
// plan that has one).
func TestQuotaAndItsObservation(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 6, 30, 23, 59, 30, 0, time.UTC)
	q := Quota{Limits: Limits{PerMinute: 5, HiddenPerMinute: 2, PerMonth: 3}}
	a := q.Take(at, 1)
	require.True(t, a.Allowed)
	o := a.Observation(q.Limits, at, 1)
	require.Equal(t, http.StatusOK, o.Status)
	require.EqualValues(t, 5, *o.Limit, "the advertised limit")
	require.EqualValues(t, 1, *o.Remaining, "the hidden one's rest")
	require.EqualValues(t, 30*time.Second, *o.Reset)
	require.EqualValues(t, 2, *o.MonthRemaining)
	require.EqualValues(t, 3, *o.MonthLimit)

	require.True(t, q.Take(at, 1).Allowed)
	refused := q.Take(at.Add(time.Second), 1)
	require.False(t, refused.Allowed, "the hidden minute is spent")
	o = refused.Observation(q.Limits, at.Add(time.Second), 1)
	require.Equal(t, http.StatusTooManyRequests, o.Status)
	require.EqualValues(t, 29*time.Second, *o.RetryAfter)
	require.Nil(t, q.DryAt)

	next := at.Add(time.Minute) // July: a new month and a new minute
	require.True(t, q.Take(next, 1).Allowed)
	require.Equal(t, 2, q.MonthLeft())

	none := Quota{Limits: Limits{PerMinute: 5}}
	o = none.Take(at, 1).Observation(none.Limits, at, 1)
	require.Nil(t, o.MonthRemaining, "no month headers without a month quota")
	require.Equal(t, -1, none.MonthLeft())

	dry := Quota{Limits: Limits{PerMinute: 5, PerMonth: 1}}
	require.True(t, dry.Take(at, 1).Allowed)
	require.False(t, dry.Take(at.Add(time.Second), 1).Allowed)
	require.Equal(t, at.Add(time.Second), *dry.DryAt, "when the month first refused")
}
