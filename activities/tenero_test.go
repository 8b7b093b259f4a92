package activities_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/activities"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/fault"
	"github.com/pacer-dev/pacer/internal/metrics"
	"github.com/pacer-dev/pacer/internal/pacing"
	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
)

// noSleep keeps the client's in-attempt retry delays out of test time.
func noSleep(context.Context, time.Duration) error { return nil }

type teneroFixture struct {
	st      *store.Store
	sim     *sim.Server
	acts    *activities.Activities
	metrics *metrics.Metrics

	mu sync.Mutex
	// fetched is the path of every Tenero token request, in the order the
	// simulator received them.
	fetched []string
}

func newTeneroFixture(t *testing.T, cfg sim.Config, opts ...func(*activities.Options)) *teneroFixture {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, testenv.PostgresURL(t))
	require.NoError(t, err)
	t.Cleanup(st.Close)
	require.NoError(t, st.Migrate(ctx))
	f := &teneroFixture{st: st, sim: sim.New(cfg), metrics: metrics.New()}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if addr, ok := strings.CutPrefix(r.URL.Path, "/v1/stacks/tokens/"); ok {
			f.mu.Lock()
			f.fetched = append(f.fetched, addr)
			f.mu.Unlock()
		}
		f.sim.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	o := activities.Options{
		Discovery: discovery.Config{Mode: "agents"}, // per-agent visits, as these tests were written for
		Store:     st, Logger: zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)), Metrics: f.metrics,
		TeneroBaseURL: hs.URL, HiroBaseURL: hs.URL, Sleep: noSleep,
	}
	for _, opt := range opts {
		opt(&o)
	}
	f.acts = activities.New(o)
	return f
}

// takeFetched returns the addresses fetched since the last call.
func (f *teneroFixture) takeFetched() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.fetched
	f.fetched = nil
	return out
}

// run executes RefreshTenero the way a worker does.
func (f *teneroFixture) run(t *testing.T) (pacer.TeneroResult, error) {
	t.Helper()
	return f.runWith(t, pacer.TeneroInput{})
}

func (f *teneroFixture) runWith(t *testing.T, in pacer.TeneroInput) (pacer.TeneroResult, error) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(f.acts)
	v, err := env.ExecuteActivity(f.acts.RefreshTenero, in)
	var res pacer.TeneroResult
	if err != nil {
		var appErr *temporal.ApplicationError
		require.True(t, errors.As(err, &appErr), "want an application error, got %v", err)
		require.NoError(t, appErr.Details(&res))
		return res, err
	}
	require.NoError(t, v.Get(&res))
	return res, nil
}

func errType(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Type()
	}
	return ""
}

func TestRefreshTeneroWritesStaticBaseAndPegs(t *testing.T) {
	t.Parallel()
	f := newTeneroFixture(t, sim.Config{Seed: 3})
	res, err := f.run(t)
	require.NoError(t, err)
	want := catalog.Default().TokenSet(nil)
	require.Equal(t, len(want), res.TokensAttempted)
	require.Equal(t, len(want), res.Succeeded)
	require.Equal(t, 5, res.Pegged)
	require.Equal(t, len(want), res.Written)
	require.NotNil(t, res.MinuteRemaining)
	require.NotNil(t, res.MonthRemaining)

	// A second run finds every price unchanged and writes nothing.
	res, err = f.run(t)
	require.NoError(t, err)
	require.Equal(t, len(want), res.Unchanged)
	require.Zero(t, res.Written)
}

func TestRefreshTeneroStopsWhenMinuteQuotaIsSpent(t *testing.T) {
	t.Parallel()
	f := newTeneroFixture(t, sim.Config{Seed: 3, Tenero: sim.TeneroConfig{Anonymous: sim.Limits{PerMinute: 2}}})
	res, err := f.run(t)
	require.Error(t, err)
	require.Equal(t, string(pacer.ClassRateLimit), errType(err))
	require.False(t, temporal.IsApplicationError(err) && isRetryable(err), "rate limits are not retried by Temporal")
	require.True(t, res.RateLimited)
	require.Equal(t, fault.MinuteQuotaBackoff.Milliseconds(), res.RateLimitBackoffMs)
	require.Equal(t, 2, res.TokensAttempted, "stopped at once: the static base came first")
	require.Equal(t, 0, *res.MinuteRemaining)
	require.Equal(t, len(catalog.Default().TokenSet(nil))-2, res.Skipped)
	require.Equal(t, 2, f.sim.Stats().Total, "no call after the quota said 0")
}

func TestRefreshTeneroMonthQuotaWins(t *testing.T) {
	t.Parallel()
	f := newTeneroFixture(t, sim.Config{Seed: 3, Tenero: sim.TeneroConfig{Anonymous: sim.Limits{PerMinute: 1, PerMonth: 1}}})
	res, err := f.run(t)
	require.Error(t, err)
	require.True(t, res.RateLimited)
	require.Equal(t, fault.MonthQuotaBackoff.Milliseconds(), res.RateLimitBackoffMs)
	require.Equal(t, 1, res.Succeeded)
}

// A month quota past 2^31 (a big plan, an "unlimited" sentinel) used to fail
// every price write (int columns): the run was retried three times,
// re-fetching every token, and the breaker tripped.
func TestRefreshTeneroStoresQuotaPast32Bits(t *testing.T) {
	t.Parallel()
	const month = 3_000_000_000
	f := newTeneroFixture(t, sim.Config{Seed: 3, Tenero: sim.TeneroConfig{Anonymous: sim.Limits{PerMonth: month}}})
	res, err := f.run(t)
	require.NoError(t, err)
	want := catalog.Default().TokenSet(nil)
	require.Equal(t, len(want), res.Written)
	require.Greater(t, *res.MonthRemaining, math.MaxInt32)
	prices, err := f.st.Prices(t.Context(), []string{"stx"})
	require.NoError(t, err)
	require.NotNil(t, prices["stx"].MonthRemaining)
	require.Greater(t, *prices["stx"].MonthRemaining, int64(math.MaxInt32))
	require.LessOrEqual(t, *prices["stx"].MonthRemaining, int64(month))
	t.Logf("figures: month quota header %d: %d prices written, 0 failed, stored %d", *res.MonthRemaining, res.Written, *prices["stx"].MonthRemaining)
}

func TestRefreshTeneroUpstreamDown(t *testing.T) {
	t.Parallel()
	f := newTeneroFixture(t, sim.Config{Seed: 3})
	require.NoError(t, f.sim.SetFaults(sim.Faults{ServerError: 1}))
	res, err := f.run(t)
	require.Error(t, err)
	require.Equal(t, string(pacer.ClassServerError), errType(err))
	require.Equal(t, 3, res.Failed, "every Tenero token failed")
	require.Equal(t, 5, res.Pegged, "pegs need no upstream and are still written")
	require.False(t, res.RateLimited)
}

func TestRefreshTeneroDatabaseDownIsRetryable(t *testing.T) {
	t.Parallel()
	f := newTeneroFixture(t, sim.Config{Seed: 3})
	f.st.Close() // the pool refuses every query from now on
	_, err := f.run(t)
	require.Error(t, err)
	require.Equal(t, string(pacer.ClassTransport), errType(err))
	require.True(t, isRetryable(err), "transport trouble is worth Temporal's retries")
}

func isRetryable(err error) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && !appErr.NonRetryable()
}

func TestRefreshTeneroKeepsTheMinuteReserve(t *testing.T) {
	t.Parallel()
	f := newTeneroFixture(t, sim.Config{Seed: 3, Tenero: sim.TeneroConfig{Anonymous: sim.Limits{PerMinute: 3}}})
	res, err := f.runWith(t, pacer.TeneroInput{StopAtMinuteRemaining: 1})
	require.NoError(t, err, "stopping at the reserve is a normal finish")
	require.False(t, res.RateLimited)
	require.Equal(t, 2, res.Requests)
	require.Equal(t, 1, *res.MinuteRemaining)
	require.Equal(t, len(catalog.Default().TokenSet(nil))-2, res.Skipped)

	// A batch cut keeps the static base first; pegs cost no request and
	// always come along.
	f2 := newTeneroFixture(t, sim.Config{Seed: 3})
	res, err = f2.runWith(t, pacer.TeneroInput{MaxTokens: 2})
	require.NoError(t, err)
	require.Equal(t, 2, res.Requests)
	require.Equal(t, 2+res.Pegged, res.TokensAttempted)
	prices, err := f2.st.Prices(context.Background(), catalog.Default().StaticBase()[:2])
	require.NoError(t, err)
	require.Len(t, prices, 2)
}

// A failed token's one log line names the answer's cf-ray.
func TestRefreshTeneroLogsTheCFRay(t *testing.T) {
	t.Parallel()
	upstreamSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("cf-ray", "8f1c2d3e4a5b6c7d-AMS")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(upstreamSrv.Close)
	core, logs := observer.New(zap.WarnLevel)
	acts := activities.New(activities.Options{Discovery: discovery.Config{Mode: "agents"}, Store: testenv.Store(t), Logger: zap.New(core),
		TeneroBaseURL: upstreamSrv.URL, HiroBaseURL: upstreamSrv.URL, Sleep: noSleep})
	f := &teneroFixture{acts: acts}
	_, err := f.run(t)
	require.Error(t, err)
	failed := logs.FilterMessage("tenero.token_failed").All()
	require.NotEmpty(t, failed)
	for _, e := range failed {
		require.Equal(t, "8f1c2d3e4a5b6c7d-AMS", e.ContextMap()["cfRay"])
		require.Contains(t, e.ContextMap()["error"], "(cf-ray 8f1c2d3e4a5b6c7d-AMS)")
	}
}

// Tenero says only what is left of its month (no limit): a paced run
// holds the next one until the even pace of what is left, over what is
// left of the month, has paid for the requests it will make (issue 41.0:
// 400 left two days before the end at a 1-minute cadence spent 47 requests
// in 11 minutes). Mid-month with plenty left, the cadence stands.
func TestRefreshTeneroPacesTheMonthToItsEnd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		giveNow  time.Time
		giveUsed int // of a 10,000 month
		wantHeld bool
	}{
		{"400 left two days before the end", time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), 9_600, true},
		{"half left mid-month", time.Date(2026, 11, 16, 0, 0, 0, 0, time.UTC), 5_000, true},
		{"a fresh month on its first day", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			now := func() time.Time { return tt.giveNow }
			f := newTeneroFixture(t, sim.Config{Seed: 3, Now: now,
				Tenero: sim.TeneroConfig{Anonymous: sim.Limits{PerMinute: 100, PerMonth: 10_000, MonthUsed: tt.giveUsed}}},
				func(o *activities.Options) { o.Clock = now })
			cadence := pacer.Duration(time.Minute)
			res, err := f.runWith(t, pacer.TeneroInput{Pace: &pacer.PaceInput{Cadence: cadence}})
			require.NoError(t, err)
			require.NotNil(t, res.Pace)
			// The oracle: what is left, spread evenly over what is left of
			// the month, pays one request every (month's end − now) / left;
			// the next run makes min(batch, tokens wanted) requests.
			left := 10_000 - tt.giveUsed - res.Requests
			require.Equal(t, left, *res.MonthRemaining)
			end := time.Date(tt.giveNow.Year(), tt.giveNow.Month()+1, 1, 0, 0, 0, 0, time.UTC)
			perRequest := end.Sub(tt.giveNow) / time.Duration(left)
			cost := min(res.Pace.Status.Batch, res.Wanted)
			want := time.Duration(cost) * perRequest
			require.InDelta(t, float64(want), float64(res.Pace.Every), float64(time.Duration(cost)*time.Nanosecond+time.Microsecond))
			require.Equal(t, tt.wantHeld, time.Duration(res.Pace.Every) > time.Duration(cadence))
			if tt.wantHeld {
				require.Equal(t, pacing.HeldByMonth, res.Pace.Status.HeldBy)
				require.Equal(t, time.Duration(res.Pace.Every).String(), res.Pace.Status.Interval)
			}
			t.Logf("figures: %s: %d left, next run of %d requests in %s (cadence %s)", tt.name, left, cost,
				time.Duration(res.Pace.Every).Round(time.Second), time.Duration(cadence))
		})
	}

	// Plenty left mid-month: the controller's cadence stands.
	now := func() time.Time { return time.Date(2026, 11, 16, 0, 0, 0, 0, time.UTC) }
	f := newTeneroFixture(t, sim.Config{Seed: 3, Now: now,
		Tenero: sim.TeneroConfig{Anonymous: sim.Limits{PerMinute: 100, PerMonth: 100_000_000}}},
		func(o *activities.Options) { o.Clock = now })
	res, err := f.runWith(t, pacer.TeneroInput{Pace: &pacer.PaceInput{Cadence: pacer.Duration(time.Minute)}})
	require.NoError(t, err)
	require.Equal(t, pacer.Duration(time.Minute), res.Pace.Every)
	require.Empty(t, res.Pace.Status.HeldBy)
}
