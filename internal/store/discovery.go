package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/hiro"
)

// Reader is one row of discovery_cursors (SPEC §5.0, §6): a reader's
// position, where it began, a scan cut short, and its running counts.
type Reader struct {
	Name string `json:"reader"`
	// Position is the newest entry fully read; nil before the first read.
	Position *discovery.Position `json:"position"`
	// Start is where the reader began (the tail's first head).
	Start *discovery.Position `json:"start,omitempty"`
	// Scan is a scan cut short, to go on with; the zero State when none.
	Scan discovery.State `json:"-"`
	// ScanBegan is when the scan in progress began; CoveredAt when the
	// last complete scan began (everything mined before it is read).
	ScanBegan      *time.Time `json:"-"`
	CoveredAt      *time.Time `json:"coveredAt,omitempty"`
	HeadLagSeconds float64    `json:"headLagSeconds"`
	LastReadAt     *time.Time `json:"lastReadAt"`
	UpdatedAt      time.Time  `json:"updatedAt"`
	// Cumulative counts since the reader began.
	Requests   int64 `json:"requests"`
	Pages      int64 `json:"pages"`
	Candidates int64 `json:"candidates"`
	Gaps       int64 `json:"gaps"`
}

// Plan is the reader as discovery.Plan reads it, named name (a row not
// yet written is the zero Reader), held when it stopped short in this
// run.
func (rd Reader) Plan(name string, held bool) discovery.Reader {
	out := discovery.Reader{Name: name, Scanning: rd.Scan.Started(), Held: held}
	if rd.LastReadAt != nil {
		out.LastRead = *rd.LastReadAt
	}
	return out
}

// PlanReaders fills a run's readers into s from the discovery_cursors
// rows: the tail (none once Hiro has switched the feed off; while the
// contracts' lists are the tail, the feed's probe, read last at probeAt)
// and each allowlisted contract's list, once the tail has begun or when
// the lists are the tail. held are the readers that stopped short in the
// run.
func PlanReaders(s *discovery.Run, rows []Reader, contracts []string, held map[string]bool, feedOff bool, probeAt time.Time) {
	byName := map[string]Reader{}
	for _, rd := range rows {
		byName[rd.Name] = rd
	}
	tail := byName[discovery.ReaderTail]
	if !feedOff {
		t := tail.Plan(discovery.ReaderTail, held[discovery.ReaderTail])
		if s.ContractsAreTail {
			t = discovery.Reader{Name: discovery.ReaderTail, LastRead: probeAt, Held: t.Held}
		}
		s.Tail = &t
	}
	if tail.Start == nil && !s.ContractsAreTail {
		return // the tail has not begun: nothing to reconcile yet
	}
	for _, name := range discovery.ContractReaders(contracts) {
		s.Contracts = append(s.Contracts, byName[name].Plan(name, held[name]))
	}
}

// Report fills the reader's standing into its part of a run's report:
// position, lag, gaps, and when it reads next: every after its last
// read, or now while a scan of it is cut short.
func (rd Reader) Report(rep *pacer.ReaderReport, every time.Duration, now time.Time) {
	if rd.Position != nil {
		rep.Position = rd.Position.String()
	}
	rep.LagSeconds, rep.Gaps = rd.HeadLagSeconds, int(rd.Gaps)
	if rd.LastReadAt != nil {
		at := rd.LastReadAt.Add(every).UTC()
		if rd.Scan.Started() {
			at = now.UTC()
		}
		rep.NextDueAt = &at
	}
}

// BeginAt begins a reader not yet written at start, where the tail
// began, so that together they leave nothing out (nil: the feed never
// served, and the list's first read finds its head).
func (rd *Reader) BeginAt(start *discovery.Position) {
	if start != nil {
		s := *start
		rd.Position, rd.Start = &s, &s
	}
}

// Covered records a complete read that found the reader's list down to
// pos at now: its position (and its start, the first time), no scan cut
// short, and everything mined before the scan began covered.
func (rd *Reader) Covered(pos *discovery.Position, now time.Time) {
	rd.Position = pos
	if rd.Start == nil {
		rd.Start = pos
	}
	rd.Scan = discovery.State{}
	rd.CoveredAt, rd.ScanBegan, rd.LastReadAt = rd.ScanBegan, nil, &now
}

// ReaderCounts is what one read adds to a reader's counts.
type ReaderCounts struct {
	Requests, Pages, Candidates int
}

const readerColumns = `reader, block_height, tx_index, txid, block_time, start_block_height, start_tx_index,
       start_txid, scan, scan_began_at, covered_at, coalesce(head_lag_seconds, 0), last_read_at, updated_at, requests, pages, candidates, gaps`

func scanReader(row pgx.CollectableRow) (Reader, error) {
	var (
		r                      Reader
		height, btime, sHeight *int64
		index, sIndex          *int32
		txid, sTxID            *string
		scan                   []byte
	)
	err := row.Scan(&r.Name, &height, &index, &txid, &btime, &sHeight, &sIndex, &sTxID, &scan,
		&r.ScanBegan, &r.CoveredAt, &r.HeadLagSeconds, &r.LastReadAt, &r.UpdatedAt, &r.Requests, &r.Pages, &r.Candidates, &r.Gaps)
	if err != nil {
		return r, err
	}
	r.Position = position3(height, index, txid, btime)
	r.Start = position3(sHeight, sIndex, sTxID, nil)
	if len(scan) > 0 {
		if err := json.Unmarshal(scan, &r.Scan); err != nil {
			return r, fmt.Errorf("reader %s: decode scan: %w", r.Name, err)
		}
	}
	return r, nil
}

func position3(height *int64, index *int32, txid *string, btime *int64) *discovery.Position {
	if height == nil || index == nil {
		return nil
	}
	p := &discovery.Position{Position: hiro.Position{BlockHeight: *height, TxIndex: int64(*index)}}
	if txid != nil {
		p.TxID = *txid
	}
	if btime != nil {
		p.Time = *btime
	}
	return p
}

// DiscoveryReader reads one reader's row; found is false before its
// first read.
func (s *Store) DiscoveryReader(ctx context.Context, name string) (r Reader, found bool, err error) {
	rows, err := s.pool.Query(ctx, `select `+readerColumns+` from discovery_cursors where reader = $1`, name)
	if err != nil {
		return r, false, fmt.Errorf("discovery reader %s: %w", name, err)
	}
	r, err = pgx.CollectExactlyOneRow(rows, scanReader)
	if errors.Is(err, pgx.ErrNoRows) {
		return Reader{Name: name}, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("discovery reader %s: %w", name, err)
	}
	return r, true, nil
}

// DiscoveryReaders returns every reader's row, the tail first.
func (s *Store) DiscoveryReaders(ctx context.Context) ([]Reader, error) {
	return collect(ctx, s.pool, "discovery readers", scanReader, `select `+readerColumns+` from discovery_cursors
order by reader <> 'tail', reader collate "C"`)
}

// SaveDiscoveryReader writes a reader's position, start, scan and lag,
// and adds add to its counts. A position never moves back: a stale writer
// (an attempt that lost its lease) leaves a newer one alone.
func (s *Store) SaveDiscoveryReader(ctx context.Context, r Reader, add ReaderCounts) error {
	var scan []byte
	if r.Scan.Started() {
		b, err := json.Marshal(r.Scan)
		if err != nil {
			return fmt.Errorf("save reader %s: %w", r.Name, err)
		}
		scan = b
	}
	var height, btime, sHeight *int64
	var index, sIndex *int64
	var txid, sTxID *string
	if p := r.Position; p != nil {
		height, index, txid, btime = &p.BlockHeight, &p.TxIndex, &p.TxID, &p.Time
	}
	if p := r.Start; p != nil {
		sHeight, sIndex, sTxID = &p.BlockHeight, &p.TxIndex, &p.TxID
	}
	_, err := s.pool.Exec(ctx, `
insert into discovery_cursors as c (reader, block_height, tx_index, txid, block_time, start_block_height,
    start_tx_index, start_txid, scan, head_lag_seconds, last_read_at, updated_at, requests, pages, candidates,
    scan_began_at, covered_at)
values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, now(), $12, $13, $14, $15, $16)
on conflict (reader) do update set
    block_height = case when c.block_height is null or (excluded.block_height, excluded.tx_index) >= (c.block_height, c.tx_index)
                        then excluded.block_height else c.block_height end,
    tx_index = case when c.block_height is null or (excluded.block_height, excluded.tx_index) >= (c.block_height, c.tx_index)
                    then excluded.tx_index else c.tx_index end,
    txid = case when c.block_height is null or (excluded.block_height, excluded.tx_index) >= (c.block_height, c.tx_index)
                then excluded.txid else c.txid end,
    block_time = case when c.block_height is null or (excluded.block_height, excluded.tx_index) >= (c.block_height, c.tx_index)
                      then excluded.block_time else c.block_time end,
    start_block_height = coalesce(c.start_block_height, excluded.start_block_height),
    start_tx_index = coalesce(c.start_tx_index, excluded.start_tx_index),
    start_txid = coalesce(c.start_txid, excluded.start_txid),
    scan = excluded.scan, head_lag_seconds = excluded.head_lag_seconds,
    scan_began_at = excluded.scan_began_at, covered_at = coalesce(excluded.covered_at, c.covered_at),
    last_read_at = coalesce(excluded.last_read_at, c.last_read_at), updated_at = now(),
    requests = c.requests + excluded.requests, pages = c.pages + excluded.pages,
    candidates = c.candidates + excluded.candidates`,
		r.Name, height, index, txid, btime, sHeight, sIndex, sTxID, scan, r.HeadLagSeconds, r.LastReadAt,
		add.Requests, add.Pages, add.Candidates, r.ScanBegan, r.CoveredAt)
	if err != nil {
		return fmt.Errorf("save reader %s: %w", r.Name, err)
	}
	return nil
}

// RecordGap keeps a range a reader gave up on (SPEC §5.0: reported, left
// to the reconciler, never skipped silently) and counts it on the reader.
func (s *Store) RecordGap(ctx context.Context, reader string, g discovery.Gap) error {
	var fromHeight, fromIndex *int64
	if g.From != nil {
		fromHeight, fromIndex = &g.From.BlockHeight, &g.From.TxIndex
	}
	_, err := s.pool.Exec(ctx, `
with gap as (
    insert into discovery_gaps (reader, from_height, from_tx_index, to_height, to_tx_index)
    values ($1, $2, $3, $4, $5)
)
update discovery_cursors set gaps = gaps + 1 where reader = $1`, reader, fromHeight, fromIndex, g.To.BlockHeight, g.To.TxIndex)
	if err != nil {
		return fmt.Errorf("record gap of %s: %w", reader, err)
	}
	return nil
}

// FillGaps marks filled the open gaps that every one of readers (each
// allowlisted contract's) has covered, a complete scan of it having begun
// after the gap was found, and returns how many gaps are still open.
func (s *Store) FillGaps(ctx context.Context, readers []string) (open int, err error) {
	if readers == nil {
		readers = []string{}
	}
	err = s.pool.QueryRow(ctx, `
with filled as (
    update discovery_gaps g set filled_at = now()
    where filled_at is null and cardinality($1::text[]) > 0 and not exists (
        select 1 from unnest($1::text[]) as r(reader)
        left join discovery_cursors c on c.reader = r.reader
        where c.covered_at is null or c.covered_at <= g.found_at)
    returning id
)
select count(*) from discovery_gaps where filled_at is null and id not in (select id from filled)`, readers).Scan(&open)
	if err != nil {
		return 0, fmt.Errorf("fill gaps: %w", err)
	}
	return open, nil
}

// AgentAddresses returns every registered agent's STX address: the
// discovery filter's set, checked against each page locally.
func (s *Store) AgentAddresses(ctx context.Context) (map[string]bool, error) {
	rows, err := s.pool.Query(ctx, `select stx_address from agents`)
	if err != nil {
		return nil, fmt.Errorf("agent addresses: %w", err)
	}
	out := map[string]bool{}
	var a string
	_, err = pgx.ForEachRow(rows, []any{&a}, func() error {
		out[a] = true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("agent addresses: %w", err)
	}
	return out, nil
}

// HintedAgents returns up to limit agents a hint made due since their last
// visit began, the earliest hint first: a sweep visits them before the
// rest of the due set (SPEC §5.3).
func (s *Store) HintedAgents(ctx context.Context, now time.Time, limit int, skip []string) ([]AgentIngest, error) {
	if skip == nil {
		skip = []string{}
	}
	return collect(ctx, s.pool, "hinted agents", scanIngest, `
select `+ingestColumns+` from agent_ingest
where next_run_at <= $1 and hinted_at is not null and (last_visit_at is null or hinted_at >= last_visit_at)
  and not (stx_address = any($2))
order by hinted_at, stx_address collate "C"
limit $3`, now, skip, limit)
}
