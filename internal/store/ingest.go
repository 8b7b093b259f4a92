package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/hiro"
	"github.com/pacer-dev/pacer/internal/ingest"
)

// AgentIngest is one row of agent_ingest (SPEC §5.1): the policy's view
// of the agent and where its transactions have been read to.
type AgentIngest struct {
	ingest.Agent
	// Cursor is the newest transaction already processed; nil before the
	// first complete visit.
	Cursor *hiro.Position `json:"cursor"`
	// VisitFrom and VisitTop describe a visit cut short: the page it goes
	// on from, and the newest position it saw (the cursor once it is done).
	VisitFrom     hiro.PageToken `json:"visitFrom,omitempty"`
	VisitTop      *hiro.Position `json:"visitTop,omitempty"`
	Status        string         `json:"status"`
	LastSuccessAt *time.Time     `json:"lastSuccessAt"`
	LastError     string         `json:"lastError,omitempty"`
	Visits        int64          `json:"visits"`
	SwapsFound    int64          `json:"swapsFound"`
	// Version is the row's version when it was read; SaveVisit writes only
	// over that version.
	Version int64 `json:"-"`
}

// Agent statuses.
const (
	IngestOK    = "ok"
	IngestError = "error"
)

// Scan is where a visit's walk of the agent's list goes on from: the
// cursor it reads down to (nil before the first complete visit) and the
// state of a visit cut short (the zero State: none).
func (a AgentIngest) Scan() (from *discovery.Position, st discovery.State) {
	if c := a.Cursor; c != nil {
		from = &discovery.Position{Position: *c}
	}
	st.Token = string(a.VisitFrom)
	if t := a.VisitTop; t != nil {
		st.Top = &discovery.Position{Position: *t}
	}
	return from, st
}

// Walked records where a visit's scan of the list stands: once it is
// done, the cursor advanced to its position and no visit cut short; else
// where the next visit goes on from.
func (a *AgentIngest) Walked(scan *discovery.Scan) {
	st := scan.State()
	a.VisitFrom, a.VisitTop = hiro.PageToken(st.Token), nil
	if st.Top != nil {
		a.VisitTop = new(st.Top.Position)
	}
	if !scan.Done() {
		return
	}
	if p := scan.Position(); p != nil {
		a.Cursor = new(p.Position)
	}
	a.VisitFrom, a.VisitTop = "", nil
}

// position is a cursor as agent_ingest stores it.
type position struct {
	BlockHeight int64 `json:"block_height"`
	TxIndex     int64 `json:"tx_index"`
}

func encodePosition(p *hiro.Position) ([]byte, error) {
	if p == nil {
		return nil, nil
	}
	return json.Marshal(position{BlockHeight: p.BlockHeight, TxIndex: p.TxIndex})
}

func decodePosition(b []byte) (*hiro.Position, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var p position
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("decode cursor: %w", err)
	}
	return &hiro.Position{BlockHeight: p.BlockHeight, TxIndex: p.TxIndex}, nil
}

const ingestColumns = `stx_address, tier, cursor, last_visit_at, last_success_at, last_swap_at,
       swap_rate, status, error_count, next_run_at, coalesce(visit_from, ''), visit_top,
       coalesce(last_error, ''), visits, swaps_found, version`

func scanIngest(row pgx.CollectableRow) (AgentIngest, error) {
	var (
		a              AgentIngest
		tier, from     string
		cursor, top    []byte
		lastVisit, lsa *time.Time
	)
	err := row.Scan(&a.Address, &tier, &cursor, &lastVisit, &lsa, &a.LastSwapAt,
		&a.SwapRate, &a.Status, &a.ErrorCount, &a.NextRunAt, &from, &top,
		&a.LastError, &a.Visits, &a.SwapsFound, &a.Version)
	if err != nil {
		return a, err
	}
	a.Tier, a.LastVisitAt, a.LastSuccessAt, a.VisitFrom = ingest.Tier(tier), lastVisit, lsa, hiro.PageToken(from)
	if a.Cursor, err = decodePosition(cursor); err != nil {
		return a, err
	}
	a.VisitTop, err = decodePosition(top)
	return a, err
}

// dueAgentsSQL is the due set in the order of ingest.Config.Less: critical agents
// (never visited, or last visited at $3 or before) first, the
// longest-waiting first (since their last visit, or since they were due);
// then,
// under tiers ($4), hot, warm, cold; then the earliest due; then the
// address in byte order.
const dueAgentsSQL = `
select ` + ingestColumns + `
from agent_ingest
where next_run_at <= $1 and not (stx_address = any($2))
order by (last_visit_at is null or last_visit_at <= $3) desc,
         case when last_visit_at is null or last_visit_at <= $3 then coalesce(last_visit_at, next_run_at) end,
         case when $4 then case tier when 'hot' then 0 when 'warm' then 1 else 2 end else 0 end,
         next_run_at,
         stx_address collate "C"
limit $5`

// DueAgents returns up to limit agents due at now, in the policy's order,
// leaving out those in skip (already visited by this run).
func (s *Store) DueAgents(ctx context.Context, cfg ingest.Config, now time.Time, limit int, skip []string) ([]AgentIngest, error) {
	if limit < 1 {
		return nil, fmt.Errorf("due agents: limit %d is not positive", limit)
	}
	if skip == nil {
		skip = []string{}
	}
	return collect(ctx, s.pool, "due agents", scanIngest, dueAgentsSQL, now, skip, now.Add(-cfg.StalenessCap()), cfg.Policy == ingest.PolicyTiers, limit)
}

// AgentIngestRow reads one agent's row; found is false when there is none.
func (s *Store) AgentIngestRow(ctx context.Context, stx string) (a AgentIngest, found bool, err error) {
	rows, err := s.pool.Query(ctx, `select `+ingestColumns+` from agent_ingest where stx_address = $1`, stx)
	if err != nil {
		return a, false, fmt.Errorf("agent ingest %s: %w", stx, err)
	}
	a, err = pgx.CollectExactlyOneRow(rows, scanIngest)
	if errors.Is(err, pgx.ErrNoRows) {
		return a, false, nil
	}
	if err != nil {
		return a, false, fmt.Errorf("agent ingest %s: %w", stx, err)
	}
	return a, true, nil
}

// ListAgentIngest returns every agent's row, or a tier's, hot first, then
// by next due time.
func (s *Store) ListAgentIngest(ctx context.Context, tier ingest.Tier) ([]AgentIngest, error) {
	return collect(ctx, s.pool, "list agent ingest", scanIngest, `
select `+ingestColumns+` from agent_ingest
where $1 = '' or tier = $1
order by case tier when 'hot' then 0 when 'warm' then 1 else 2 end, next_run_at, stx_address collate "C"`, string(tier))
}

// saveVisitSQL writes a visit's outcome over the version the visit read.
// A hint that arrived after the visit began ($16) keeps the agent due.
const saveVisitSQL = `
update agent_ingest set
    tier = $2, cursor = $3, last_visit_at = $4, last_success_at = $5, last_swap_at = $6,
    swap_rate = $7, status = $8, error_count = $9,
    next_run_at = case when hinted_at >= $16 then least($10, hinted_at) else $10 end,
    visit_from = nullif($11, ''), visit_top = $12, last_error = nullif($13, ''),
    visits = visits + 1, swaps_found = swaps_found + $14, version = version + 1
where stx_address = $1 and version = $15`

// SaveVisit records a visit that began at startedAt, with a found more
// swaps. saved is false when the row changed since a.Version was read
// (another attempt visited the agent meanwhile): nothing is written, and
// the caller's work, idempotent, is simply not recorded twice.
func (s *Store) SaveVisit(ctx context.Context, a AgentIngest, found int, startedAt time.Time) (saved bool, err error) {
	cursor, err := encodePosition(a.Cursor)
	if err != nil {
		return false, err
	}
	top, err := encodePosition(a.VisitTop)
	if err != nil {
		return false, err
	}
	tag, err := s.pool.Exec(ctx, saveVisitSQL, a.Address, string(a.Tier), cursor, a.LastVisitAt, a.LastSuccessAt,
		a.LastSwapAt, a.SwapRate, a.Status, a.ErrorCount, a.NextRunAt, string(a.VisitFrom), top,
		truncate(a.LastError, 500), found, a.Version, startedAt)
	if err != nil {
		return false, fmt.Errorf("save visit %s: %w", a.Address, err)
	}
	return tag.RowsAffected() == 1, nil
}

// HintAgent makes an agent due now (SPEC §5.3): something says it has a new
// transaction. found is false when the address is not a registered agent.
func (s *Store) HintAgent(ctx context.Context, stx string) (found bool, err error) {
	tag, err := s.pool.Exec(ctx, `
update agent_ingest set hinted_at = now(), next_run_at = least(next_run_at, now())
where stx_address = $1`, stx)
	if err != nil {
		return false, fmt.Errorf("hint agent %s: %w", stx, err)
	}
	return tag.RowsAffected() == 1, nil
}

// TierSummary is one tier's share of the due set.
type TierSummary struct {
	Agents int
	Due    int
	// MaxOverdue and OverdueP99 are how far past its next_run_at the most
	// overdue agent is, and the 99th percentile over the tier (0 for agents
	// not due), in seconds.
	MaxOverdue float64
	OverdueP99 float64
	// NextRunAt is the tier's earliest next_run_at.
	NextRunAt time.Time
}

// IngestTotals is an IngestSummary over every tier.
type IngestTotals struct {
	// Tiers are each tier's agents, Due the agents due.
	Tiers map[string]int
	Due   int
	// MaxOverdue is how far past its next_run_at the most overdue agent
	// is, in seconds; NextRunAt the earliest next_run_at (zero: no agent).
	MaxOverdue float64
	NextRunAt  time.Time
}

// Totals adds a summary's tiers up.
func Totals(sum map[ingest.Tier]TierSummary) IngestTotals {
	t := IngestTotals{Tiers: map[string]int{}}
	for _, tier := range ingest.Tiers {
		s := sum[tier]
		t.Tiers[string(tier)] = s.Agents
		t.Due += s.Due
		t.MaxOverdue = max(t.MaxOverdue, s.MaxOverdue)
		if s.Agents > 0 && (t.NextRunAt.IsZero() || s.NextRunAt.Before(t.NextRunAt)) {
			t.NextRunAt = s.NextRunAt
		}
	}
	return t
}

// IngestSummary summarises agent_ingest at now, per tier; tiers without an
// agent are absent.
func (s *Store) IngestSummary(ctx context.Context, now time.Time) (map[ingest.Tier]TierSummary, error) {
	rows, err := s.pool.Query(ctx, `
select tier, count(*), count(*) filter (where next_run_at <= $1),
       coalesce(max(extract(epoch from $1 - next_run_at)) filter (where next_run_at <= $1), 0)::float8,
       percentile_cont(0.99) within group (order by greatest(0, extract(epoch from $1 - next_run_at)))::float8,
       min(next_run_at)
from agent_ingest group by tier`, now)
	if err != nil {
		return nil, fmt.Errorf("ingest summary: %w", err)
	}
	out := map[ingest.Tier]TierSummary{}
	var (
		tier string
		t    TierSummary
	)
	_, err = pgx.ForEachRow(rows, []any{&tier, &t.Agents, &t.Due, &t.MaxOverdue, &t.OverdueP99, &t.NextRunAt}, func() error {
		out[ingest.Tier(tier)] = t
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ingest summary: %w", err)
	}
	return out, nil
}

// SwapRates returns every agent's smoothed swap rate (a day) at now, the
// input of the optimal policy's allocation.
func (s *Store) SwapRates(ctx context.Context, now time.Time) ([]float64, error) {
	rows, err := s.pool.Query(ctx, `select swap_rate, last_visit_at from agent_ingest`)
	if err != nil {
		return nil, fmt.Errorf("swap rates: %w", err)
	}
	var (
		rates []float64
		a     ingest.Agent
	)
	_, err = pgx.ForEachRow(rows, []any{&a.SwapRate, &a.LastVisitAt}, func() error {
		rates = append(rates, a.RateAt(now))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("swap rates: %w", err)
	}
	return rates, nil
}

// truncate keeps an error message short enough for a column.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
