package page

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/budget"
	"github.com/pacer-dev/pacer/internal/metrics"
	"github.com/pacer-dev/pacer/workflows"
)

// upstreams are the rate-limited upstreams and the task whose runs spend
// each (their results report requests and the quota headers).
var upstreams = []struct{ name, task string }{
	{metrics.UpstreamTenero, pacer.TaskTenero},
	{metrics.UpstreamHiro, pacer.TaskSweep},
}

// reportLookback bounds the search for the newest run that reported a month
// quota: a plan without one (Hiro without a key) never does, and the page
// must not scan a month of runs to find that out.
const reportLookback = 500

// BudgetsSection is one panel per upstream.
type BudgetsSection struct {
	Section
	Upstreams []UpstreamBudget
}

// UpstreamBudget is what is left of an upstream's minute and month.
type UpstreamBudget struct {
	Name, Task string
	Minute     Gauge
	MinuteNote string
	Month      Gauge
	MonthNote  string
	// Spent is pacer's requests this month; PerDay those of the last 24 h.
	Spent, PerDay string
	Chart         LineChart
	RunOut        string
	RunOutLevel   Level
}

type monthReport struct {
	at        time.Time
	remaining int64
}

// sharedWindow is what a budget shared through Postgres has left.
type sharedWindow struct {
	minuteLeft, minuteCapacity int64
	monthLeft, monthLimit      *int64
}

type upstreamData struct {
	name, task string
	report     *monthReport
	shared     *sharedWindow
	days       []Point // requests finished each day (not cumulative)
	spent      int64   // this month
	last24h    int64
	sinceRep   int64 // finished after the report
}

type budgetsData struct {
	monthStart, monthEnd time.Time
	upstreams            []upstreamData
}

// reportSQL finds the newest of a task's last runs this month whose result
// carries the month's remaining quota.
const reportSQL = `
select finished_at, (result->>'monthRemaining')::numeric::bigint
from (
    select finished_at, result from task_runs
    where task = $1 and finished_at >= $2 and finished_at <= $3
    order by finished_at desc limit $4
) recent
where jsonb_typeof(result->'monthRemaining') = 'number'
order by finished_at desc limit 1`

// spendSQL sums the requests of a task's runs finished in [$2, $3] per day
// since $2 (a day's start), with the share finished after $4 (the last 24
// hours) and after $5 (the month report). It reads one index range of
// task_runs_finished_idx.
const spendSQL = `
select floor(extract(epoch from finished_at - $2) / 86400)::int as day,
       sum(requests)::bigint,
       coalesce(sum(requests) filter (where finished_at > $4), 0)::bigint,
       coalesce(sum(requests) filter (where finished_at > $5), 0)::bigint
from (
    select finished_at,
           case when jsonb_typeof(result->'requests') = 'number' then (result->>'requests')::numeric else 0 end as requests
    from task_runs
    where task = $1 and finished_at >= $2 and finished_at <= $3
) runs
group by 1 order by 1`

// spendRow is one day of spendSQL.
type spendRow struct {
	day                      time.Time
	requests, last24h, since int64
}

func querySpend(ctx context.Context, pool *pgxpool.Pool, task string, from, to, last24h, since time.Time) ([]spendRow, error) {
	rows, _ := pool.Query(ctx, spendSQL, task, from, to, last24h, since)
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (spendRow, error) {
		var x spendRow
		var day int
		err := r.Scan(&day, &x.requests, &x.last24h, &x.since)
		x.day = from.AddDate(0, 0, day)
		return x, err
	})
}

// spendMemo keeps each task's requests per day for the days that ended
// before the window a view reads afresh. A run's requests count on the day
// it finished, so a day that has ended keeps its sum, and a view reads at
// most two days of runs however late in the month it is. (A failed run
// retried on a later day moves its requests to that day; the memo keeps the
// first day's count too, a rare and small overcount.)
type spendMemo struct {
	mu   sync.Mutex
	days map[string]map[time.Time]int64 // task → day start → requests
}

// closed returns the task's requests per day over [from, to), days at
// their start, querying only the days it does not hold yet.
func (m *spendMemo) closed(ctx context.Context, pool *pgxpool.Pool, task string, from, to time.Time) ([]Point, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.days == nil {
		m.days = map[string]map[time.Time]int64{}
	}
	days := m.days[task]
	if days == nil {
		days = map[time.Time]int64{}
		m.days[task] = days
	}
	for d := range days {
		if d.Before(from) {
			delete(days, d) // a month that has ended
		}
	}
	missing := to
	for d := from; d.Before(to); d = d.AddDate(0, 0, 1) {
		if _, ok := days[d]; !ok {
			missing = d
			break
		}
	}
	if missing.Before(to) {
		rows, err := querySpend(ctx, pool, task, missing, to.Add(-time.Nanosecond), to, to)
		if err != nil {
			return nil, err
		}
		for d := missing; d.Before(to); d = d.AddDate(0, 0, 1) {
			days[d] = 0
		}
		for _, r := range rows {
			days[r.day] = r.requests
		}
	}
	var out []Point
	for d := from; d.Before(to); d = d.AddDate(0, 0, 1) {
		if n := days[d]; n > 0 {
			out = append(out, Point{At: d, Value: n})
		}
	}
	return out, nil
}

func (p *Page) loadBudgets(ctx context.Context, pool *pgxpool.Pool, now time.Time) (budgetsData, error) {
	d := budgetsData{}
	d.monthStart, d.monthEnd = budget.MonthOf(now)
	for _, u := range upstreams {
		ud := upstreamData{name: u.name, task: u.task}
		var rep monthReport
		err := pool.QueryRow(ctx, reportSQL, u.task, d.monthStart, now, reportLookback).Scan(&rep.at, &rep.remaining)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return d, fmt.Errorf("month report of %s: %w", u.name, err)
		default:
			ud.report = &rep
		}
		if u.name == metrics.UpstreamHiro && p.o.HiroBudget != nil {
			st, at, err := p.o.HiroBudget.Snapshot(ctx)
			if err != nil {
				return d, fmt.Errorf("hiro's shared budget: %w", err)
			}
			cfg := p.o.HiroBudget.Config()
			w := &sharedWindow{minuteCapacity: st.MinuteCapacity(cfg, at), monthLimit: st.Month.Limit}
			w.minuteLeft, w.monthLeft = st.Remaining(cfg, at)
			ud.shared = w
		}
		// Afresh: the days that hold the last 24 hours and the report.
		fresh, since := dayOf(now.Add(-24*time.Hour)), now
		if ud.report != nil {
			fresh, since = minTime(fresh, dayOf(ud.report.at)), ud.report.at
		}
		fresh = maxTime(fresh, d.monthStart)
		closed, err := p.spend.closed(ctx, pool, u.task, d.monthStart, fresh)
		if err != nil {
			return d, fmt.Errorf("spend of %s: %w", u.name, err)
		}
		rows, err := querySpend(ctx, pool, u.task, fresh, now, now.Add(-24*time.Hour), since)
		if err != nil {
			return d, fmt.Errorf("spend of %s: %w", u.name, err)
		}
		ud.days = closed
		for _, r := range rows {
			ud.days = append(ud.days, Point{At: r.day, Value: r.requests})
			ud.last24h += r.last24h
			ud.sinceRep += r.since
		}
		for _, p := range ud.days {
			ud.spent += p.Value
		}
		d.upstreams = append(d.upstreams, ud)
	}
	return d, nil
}

func dayOf(t time.Time) time.Time { return t.UTC().Truncate(24 * time.Hour) }

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func buildBudgets(d budgetsData, st *workflows.Status, now time.Time) BudgetsSection {
	var s BudgetsSection
	for _, ud := range d.upstreams {
		u := UpstreamBudget{Name: ud.name, Task: ud.task, Spent: count(ud.spent), PerDay: count(ud.last24h)}

		// The minute: the shared budget's window, else what the last run's
		// headers said was left (its capacity unknown).
		u.Minute, u.MinuteNote = newGauge(0, 0), "unknown: the scheduler's status is unavailable"
		if ud.shared != nil {
			u.Minute = newGauge(ud.shared.minuteLeft, ud.shared.minuteCapacity)
			u.MinuteNote = "left in the current window of the budget every pacer process shares (Postgres)"
		} else if st != nil {
			if left := lastMinuteRemaining(st, ud.task); left != nil {
				u.Minute = Gauge{Known: true, Value: count(int64(*left)), Level: LevelNone, Track: arc(0, 1)}
				u.MinuteNote = "left in its window when the last run ended, as its headers said"
			} else {
				u.MinuteNote = "unknown: no run has reported it yet"
			}
		}

		// The month: the newest report, less what pacer spent since.
		// Each day's spend rises across that day, from what came before.
		cumulative := make([]Point, 0, 2*len(ud.days))
		var sum int64
		for _, p := range ud.days {
			cumulative = append(cumulative, Point{At: p.At, Value: sum})
			sum += p.Value
			end := p.At.Add(24 * time.Hour)
			if end.After(now) {
				end = now
			}
			cumulative = append(cumulative, Point{At: end, Value: sum})
		}
		var quota int64
		u.Month, u.RunOut, u.RunOutLevel = newGauge(0, 0), "—", LevelNone
		u.MonthNote = "no month quota reported (Hiro sends none without a key)"
		switch {
		case ud.shared != nil && ud.shared.monthLeft != nil && ud.shared.monthLimit != nil:
			quota = *ud.shared.monthLimit
			left := *ud.shared.monthLeft
			u.Month = newGauge(left, quota)
			u.MonthNote = fmt.Sprintf("the shared budget: %s of the month's %s left, after every caller's spend (the fast path's and any neighbour's too)",
				count(left), count(quota))
			u.RunOut, u.RunOutLevel = runOut(left, ud.last24h, now, d.monthEnd)
		case ud.report != nil:
			quota = ud.report.remaining + (ud.spent - ud.sinceRep)
			left := max(0, ud.report.remaining-ud.sinceRep)
			u.Month = newGauge(left, quota)
			u.MonthNote = fmt.Sprintf("reported %s %s, less %s spent since; the month held about %s for pacer",
				count(ud.report.remaining), relative(ud.report.at, now), count(ud.sinceRep), count(quota))
			u.RunOut, u.RunOutLevel = runOut(left, ud.last24h, now, d.monthEnd)
		}
		u.Chart = newLineChart(cumulative, quota, d.monthStart, d.monthEnd, now, 480, 150)
		s.Upstreams = append(s.Upstreams, u)
	}
	return s
}

// runOut projects when left runs out at perDay requests a day.
func runOut(left, perDay int64, now, monthEnd time.Time) (string, Level) {
	if perDay <= 0 {
		return "nothing spent in the last 24 h", LevelOK
	}
	days := float64(left) / float64(perDay)
	at := now.Add(time.Duration(days * float64(24*time.Hour)))
	if days*24 > monthEnd.Sub(now).Hours() {
		return "lasts the month at this pace (" + decimal(days) + " days of quota left)", LevelOK
	}
	return "runs out " + day(at) + " (" + relative(at, now) + "), before the month ends", LevelBad
}

// lastMinuteRemaining is what the task's last run read of its upstream's
// minute window, nil when it read nothing.
func lastMinuteRemaining(st *workflows.Status, task string) *int {
	switch {
	case task == pacer.TaskTenero && st.LastTeneroResult != nil:
		return st.LastTeneroResult.MinuteRemaining
	case task == pacer.TaskSweep && st.LastSweepResult != nil:
		return st.LastSweepResult.MinuteRemaining
	}
	return nil
}
