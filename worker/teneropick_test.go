//go:build tenerostack

package worker_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/activities"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/pacing"
	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/tenero"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

// cutRuns is how many runs cut by the budget the check waits for.
const cutRuns = 2

// fetchLog records the Tenero token requests a simulator received, in order.
type fetchLog struct {
	mu   sync.Mutex
	reqs []fetch
}

type fetch struct {
	at      time.Time
	address string
}

func (l *fetchLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if addr, ok := strings.CutPrefix(r.URL.Path, "/v1/stacks/tokens/"); ok {
			l.mu.Lock()
			l.reqs = append(l.reqs, fetch{at: time.Now(), address: addr})
			l.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})
}

func (l *fetchLog) between(from, to time.Time) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, f := range l.reqs {
		if !f.at.Before(from) && (to.IsZero() || f.at.Before(to)) {
			out = append(out, f.address)
		}
	}
	return out
}

// teneroRun is one RefreshTenero activity as the workflow's history holds it.
type teneroRun struct {
	in  pacer.TeneroInput
	res pacer.TeneroResult
}

// teneroRuns reads every finished RefreshTenero of the scheduler's current
// run from its history: what the workflow asked and what the activity said.
func teneroRuns(t *testing.T, s *stack) []teneroRun {
	t.Helper()
	dc := converter.GetDefaultDataConverter()
	inputs := map[int64]pacer.TeneroInput{}
	var runs []teneroRun
	it := s.tc.GetWorkflowHistory(context.Background(), s.sched.WorkflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			a := ev.GetActivityTaskScheduledEventAttributes()
			if a.GetActivityType().GetName() == workflows.ActivityRefreshTenero {
				var in pacer.TeneroInput
				require.NoError(t, dc.FromPayloads(a.GetInput(), &in))
				inputs[ev.GetEventId()] = in
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			a := ev.GetActivityTaskCompletedEventAttributes()
			if in, ok := inputs[a.GetScheduledEventId()]; ok {
				var res pacer.TeneroResult
				require.NoError(t, dc.FromPayloads(a.GetResult(), &res))
				runs = append(runs, teneroRun{in: in, res: res})
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
			a := ev.GetActivityTaskFailedEventAttributes()
			if in, ok := inputs[a.GetScheduledEventId()]; ok {
				var res pacer.TeneroResult
				if d := a.GetFailure().GetApplicationFailureInfo().GetDetails(); d != nil {
					require.NoError(t, dc.FromPayloads(d, &res))
				}
				runs = append(runs, teneroRun{in: in, res: res})
			}
		}
	}
	return runs
}

// TestTeneroFetchesWhatPickChoosesOnTheRealStack runs the worker and the
// workflow against the simulator's Tenero on the Starter plan (10/min,
// 10,000/month) with 50 traded tokens, each checked some minutes to hours
// before, and holds every run (the ones the budget cut above all) to the
// benchmark's rule: the tokens the simulator received, in order, are the
// first of what pacing.PickTokens chooses from the state before the run
// (each token's last check, read back from the price observations), at the
// instant the run started, for the allowance the workflow gave it.
func TestTeneroFetchesWhatPickChoosesOnTheRealStack(t *testing.T) {
	t.Parallel()
	const key = "starter-key"
	s := newStack(t, workflows.Config{TeneroEvery: pacer.Duration(5 * time.Second)})
	starter := sim.New(sim.Config{Seed: 7, Tenero: sim.TeneroConfig{Keyed: sim.Limits{PerMinute: 10, PerMonth: 10_000}}})
	var log fetchLog
	hs := httptest.NewServer(log.wrap(starter))
	t.Cleanup(hs.Close)

	cat := catalog.Default()
	static := cat.StaticBase()
	var traded []string
	for _, tok := range starter.Tokens() {
		if _, peg := cat.Peg(tok.ID); !tok.Peg && !peg && !slices.Contains(static, tok.ID) && len(traded) < catalog.MaxTraded {
			traded = append(traded, tok.ID)
		}
	}
	testenv.TradeTokens(t, s.st, traded)
	// The benchmark's list: the static base, then the traded tokens, most
	// traded first.
	tokens := append(slices.Clone(static), traded...)
	// Every token was checked before, some minutes to hours ago, as in a
	// service that has run for a while: from the first cut run on, the
	// choice is by staleness × weight, not "never checked first".
	seeded := time.Now().Truncate(time.Second)
	var obs []store.Observation
	for i, id := range tokens {
		at := seeded.Add(-time.Duration(10+(i*7919)%480) * time.Minute)
		_, err := s.st.UpsertPrice(t.Context(), store.Price{TokenID: id, Source: store.SourceTenero, FetchedAt: at})
		require.NoError(t, err)
		obs = append(obs, store.Observation{TokenID: id, ObservedAt: at})
	}
	_, err := s.st.InsertObservations(t.Context(), obs)
	require.NoError(t, err)

	w := worker.New(s.tc, s.sched.TaskQueue, activities.New(activities.Options{
		Discovery: discovery.Config{Mode: "agents"}, // per-agent visits, as these tests were written for
		Store:     s.st, Logger: s.log, TeneroBaseURL: hs.URL, TeneroAPIKey: key,
		HiroBaseURL: s.simU, HiroPerMinute: 10000, CompetitionStart: time.Unix(1778700600, 0),
	}))
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	_, err = worker.EnsureRunning(t.Context(), s.tc, s.sched)
	require.NoError(t, err)

	cut := func() int {
		n := 0
		for _, r := range teneroRuns(t, s) {
			if r.in.MaxTokens > 0 && r.in.MaxTokens < len(tokens) && r.res.Requests > 0 {
				n++
			}
		}
		return n
	}
	// Month pacing spreads 10,000 requests over what is left of the real
	// month: a run every few minutes, each cut to what accrued.
	deadline := time.Now().Add(30 * time.Minute)
	for cut() < cutRuns {
		require.True(t, time.Now().Before(deadline), "%d runs cut by the budget within 30 minutes", cutRuns)
		time.Sleep(10 * time.Second)
	}
	w.Stop()

	runs := teneroRuns(t, s)
	checkedAt := map[string][]time.Time{} // every check of each token, from the observations
	for _, id := range tokens {
		rows, err := s.st.Observations(t.Context(), id, time.Time{}, time.Now().Add(time.Hour))
		require.NoError(t, err)
		for _, o := range rows {
			checkedAt[id] = append(checkedAt[id], o.ObservedAt)
		}
	}
	compared, weighted := 0, 0 // runs cut by the budget; of them, chosen off the list's order
	for k, r := range runs {
		var next time.Time
		if k+1 < len(runs) {
			next = runs[k+1].res.StartedAt
		}
		got := log.between(r.res.StartedAt, next)
		require.Len(t, got, r.res.Requests, "run %d: the simulator saw the requests the run counted", k)
		at := r.res.StartedAt
		checked := make([]*time.Time, len(tokens))
		for i, id := range tokens {
			for _, c := range checkedAt[id] {
				if c.Before(at) && (checked[i] == nil || c.After(*checked[i])) {
					c := c
					checked[i] = &c
				}
			}
		}
		n := r.in.MaxTokens
		if n <= 0 {
			n = len(tokens)
		}
		var want []string
		for _, i := range pacing.PickTokens(at, checked, len(static), n) {
			want = append(want, tenero.Address(tokens[i]))
		}
		require.LessOrEqual(t, len(got), len(want))
		require.Equal(t, want[:len(got)], got, "run %d at %s, allowance %d", k, at, r.in.MaxTokens)
		listOrder := make([]string, 0, len(got))
		for _, id := range tokens[:len(got)] {
			listOrder = append(listOrder, tenero.Address(id))
		}
		byWeight := !slices.Equal(got, listOrder)
		if r.in.MaxTokens > 0 && r.in.MaxTokens < len(tokens) && len(got) > 0 {
			compared++
			if byWeight {
				weighted++
			}
		}
		t.Logf("figures: run %d at %s: allowance %d, fetched %d as PickTokens chose (not the list's order: %v): %v",
			k, at.Format(time.RFC3339), r.in.MaxTokens, len(got), byWeight, got)
	}
	require.GreaterOrEqual(t, compared, cutRuns)
	require.Equal(t, compared, weighted, "every cut run chose by staleness × weight, not the list's order")
}
