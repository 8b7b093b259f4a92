package page

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
)

// The ledger's windows: swaps per hour over two days, discovery delays of
// the swaps mined in the last day.
const (
	hourlySlots = 48
	delayWindow = 24 * time.Hour
)

// OverdueAfter is how long an agent may be due before the page calls it
// overdue: the sweep looks for due agents every minute (PACER_SWEEP_EVERY),
// so an agent due this long has been passed over by several sweeps.
const OverdueAfter = 5 * time.Minute

// tierOrder is the order tiers are listed in (SPEC §5.3).
var tierOrder = []string{"hot", "warm", "cold"}

// LedgerSection is the swap ledger and the sweep's progress through the
// agents.
type LedgerSection struct {
	Section
	Hourly             BarChart
	Last48h, LastHour  string
	Delays             []DelayRow
	Agents             []AgentRow
	AgentsAbsent       string
	Registered, Behind string
	OverdueAfter       string
	// CompleteThrough and Registry are SPEC §7's completeThrough and the
	// registry's last read (registry.go); Push is where Hiro's WebSocket
	// stands (push.go).
	CompleteThrough, Registry, Push string
	// Rounds are the competition's rounds: their state, the last winners
	// (rounds.go).
	Rounds string
}

// DelayRow is the discovery delay of one tier's swaps: from the block that
// mined a swap to the row pacer inserted.
type DelayRow struct {
	Tier, Swaps, P50, P99 string
	Level                 Level
}

// AgentRow is one tier of agent_ingest.
type AgentRow struct {
	Tier, Agents, Due, Overdue, MaxLag string
	Level                              Level
}

type delayRow struct {
	tier     string
	n        int64
	p50, p99 float64
}

type agentRow struct {
	tier            string
	n, due, overdue int64
	maxLagSeconds   *float64
}

type ledgerData struct {
	hourStart  time.Time
	hourly     []int64
	delays     []delayRow
	haveIngest bool
	agents     []agentRow
	registered int64
	// complete and registry are registry.go's lines, push push.go's,
	// rounds rounds.go's.
	complete, registry, push, rounds string
}

// hourlySQL counts swaps per hour of chain time, over swaps_burn_block_time_idx.
const hourlySQL = `
select ((burn_block_time - $1) / 3600)::int as slot, count(*)
from swaps where burn_block_time >= $1 and burn_block_time < $2
group by 1`

// delaySQL measures, for the swaps mined since $1, how long after their
// block pacer inserted them, per tier of their agent (and overall). Clock
// skew between the chain and the database never makes a delay negative.
const delaySQL = `
select case when grouping(a.tier) = 1 then '' else coalesce(a.tier, 'untracked') end as tier,
       count(*),
       percentile_cont(0.5) within group (order by s.delay),
       percentile_cont(0.99) within group (order by s.delay)
from (
    select sender, greatest(0, extract(epoch from inserted_at) - burn_block_time)::float8 as delay
    from swaps where burn_block_time >= $1
) s
left join agent_ingest a on a.stx_address = s.sender
group by grouping sets ((a.tier), ())`

// delayAllSQL is delaySQL before agent_ingest exists: overall only.
const delayAllSQL = `
select '' as tier, count(*),
       coalesce(percentile_cont(0.5) within group (order by delay), 0),
       coalesce(percentile_cont(0.99) within group (order by delay), 0)
from (
    select greatest(0, extract(epoch from inserted_at) - burn_block_time)::float8 as delay
    from swaps where burn_block_time >= $1
) s`

// agentsSQL counts the agents per tier, those due at $1 and those due
// since $2. Every registered agent has its row (a trigger adds it), so one
// scan of agent_ingest answers without reading agents.
const agentsSQL = `
select tier, count(*),
       count(*) filter (where next_run_at <= $1),
       count(*) filter (where next_run_at <= $2),
       extract(epoch from max($1 - next_run_at) filter (where next_run_at <= $1))::float8
from agent_ingest
group by 1`

func (p *Page) loadLedger(ctx context.Context, pool *pgxpool.Pool, now time.Time) (ledgerData, error) {
	d := ledgerData{hourly: make([]int64, hourlySlots)}
	if reg, err := p.loadRegistry(ctx); err != nil {
		p.o.Logger.Warn("page.registry_unavailable", zap.Error(err))
	} else {
		d.complete, d.registry = reg.completeLine(now), reg.registryLine(now)
	}
	if line, err := p.loadRounds(ctx, now); err != nil {
		p.o.Logger.Warn("page.rounds_unavailable", zap.Error(err))
	} else {
		d.rounds = line
	}
	if line, err := p.loadPush(ctx, pool, now); err != nil {
		p.o.Logger.Warn("page.push_unavailable", zap.Error(err))
	} else {
		d.push = line
	}
	d.hourStart = now.Truncate(time.Hour).Add(-(hourlySlots - 1) * time.Hour)
	rows, _ := pool.Query(ctx, hourlySQL, d.hourStart.Unix(), d.hourStart.Add(hourlySlots*time.Hour).Unix())
	var slot int
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&slot, &n}, func() error {
		if slot >= 0 && slot < hourlySlots {
			d.hourly[slot] = n
		}
		return nil
	}); err != nil {
		return d, fmt.Errorf("swaps per hour: %w", err)
	}

	var err error
	d.haveIngest, err = p.tables.has(ctx, pool, "agent_ingest")
	if err != nil {
		return d, fmt.Errorf("agent_ingest: %w", err)
	}
	q := delayAllSQL
	if d.haveIngest {
		q = delaySQL
	}
	rows, _ = pool.Query(ctx, q, now.Add(-delayWindow).Unix())
	d.delays, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (delayRow, error) {
		var x delayRow
		var p50, p99 *float64
		err := r.Scan(&x.tier, &x.n, &p50, &p99)
		if p50 != nil && p99 != nil {
			x.p50, x.p99 = *p50, *p99
		}
		return x, err
	})
	if err != nil {
		return d, fmt.Errorf("discovery delay: %w", err)
	}
	if !d.haveIngest {
		return d, nil
	}

	rows, _ = pool.Query(ctx, agentsSQL, now, now.Add(-OverdueAfter))
	tiers, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (agentRow, error) {
		var x agentRow
		return x, r.Scan(&x.tier, &x.n, &x.due, &x.overdue, &x.maxLagSeconds)
	})
	if err != nil {
		return d, fmt.Errorf("agents per tier: %w", err)
	}
	for _, x := range tiers {
		d.registered += x.n
	}
	d.agents = tiers
	return d, nil
}

func tierRank(t string) int {
	if i := slices.Index(tierOrder, t); i >= 0 {
		return i
	}
	return len(tierOrder)
}

func buildLedger(d ledgerData) LedgerSection {
	s := LedgerSection{OverdueAfter: span(OverdueAfter), CompleteThrough: d.complete, Registry: d.registry, Push: d.push,
		Rounds: d.rounds}
	var total int64
	for _, n := range d.hourly {
		total += n
	}
	s.Last48h, s.LastHour = count(total), count(d.hourly[len(d.hourly)-1])
	s.Hourly = newBarChart(d.hourly, 960, 150,
		func(i int) string {
			from := d.hourStart.Add(time.Duration(i) * time.Hour).UTC()
			return from.Format("Mon 15:04") + "–" + from.Add(time.Hour).Format("15:04") + " UTC"
		},
		func(i int) string {
			if from := d.hourStart.Add(time.Duration(i) * time.Hour).UTC(); from.Hour()%6 == 0 {
				return from.Format("Mon 15h")
			}
			return ""
		})

	delays := slices.Clone(d.delays)
	slices.SortFunc(delays, func(a, b delayRow) int {
		// Overall last; tiers in their order.
		if (a.tier == "") != (b.tier == "") {
			if a.tier == "" {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(tierRank(a.tier), tierRank(b.tier)), cmp.Compare(a.tier, b.tier))
	})
	for _, x := range delays {
		row := DelayRow{Tier: x.tier, Swaps: count(x.n), P50: "—", P99: "—", Level: LevelNone}
		if row.Tier == "" {
			row.Tier = "all"
		}
		if x.n > 0 {
			row.P50, row.P99 = span(seconds(x.p50)), span(seconds(x.p99))
			row.Level = LevelOK
		}
		s.Delays = append(s.Delays, row)
	}

	if !d.haveIngest {
		s.AgentsAbsent = "not available yet: table agent_ingest does not exist in this database"
		return s
	}
	// Every tier has its row, empty or not, so the table keeps its shape.
	agents := slices.Clone(d.agents)
	for _, tier := range tierOrder {
		if !slices.ContainsFunc(agents, func(a agentRow) bool { return a.tier == tier }) {
			agents = append(agents, agentRow{tier: tier})
		}
	}
	slices.SortFunc(agents, func(a, b agentRow) int {
		return cmp.Or(cmp.Compare(tierRank(a.tier), tierRank(b.tier)), cmp.Compare(a.tier, b.tier))
	})
	var behind int64
	for _, x := range agents {
		row := AgentRow{Tier: x.tier, Agents: count(x.n), Due: count(x.due), Overdue: count(x.overdue), MaxLag: "—", Level: LevelOK}
		if x.maxLagSeconds != nil {
			row.MaxLag = span(seconds(*x.maxLagSeconds))
		}
		if x.overdue > 0 {
			row.Level = LevelBad
		}
		behind += x.overdue
		s.Agents = append(s.Agents, row)
	}
	s.Registered, s.Behind = count(d.registered), count(behind)
	return s
}

func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
