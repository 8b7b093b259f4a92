package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/pacer-dev/pacer/internal/competition"
)

// The verifier reads and writes the ledger through this interface only.
var (
	_ competition.Ledger         = (*Store)(nil)
	_ competition.RollbackLedger = (*Store)(nil)
)

// SwapExists reports whether the ledger already holds txid.
func (s *Store) SwapExists(ctx context.Context, txid string) (bool, error) {
	var exists bool
	err := s.pool.QueryRow(ctx, `select exists (select 1 from swaps where txid = $1)`, txid).Scan(&exists)
	if err != nil {
		return false, fmt.Errorf("swap exists %s: %w", txid, err)
	}
	return exists, nil
}

// Agent looks a registered agent up by STX address, with the status of the
// claim filed under its BTC address ("" when it has none, or no BTC address).
// A deregistered agent is not registered (SPEC §12).
func (s *Store) Agent(ctx context.Context, stx string) (competition.Agent, bool, error) {
	var (
		a   competition.Agent
		btc *string
	)
	err := s.pool.QueryRow(ctx, `
select a.stx_address, a.btc_address, a.erc8004_agent_id, coalesce(c.status, '')
from agents a
left join claims c on c.btc_address = a.btc_address
where a.stx_address = $1 and a.deregistered_at is null`, stx).Scan(&a.STXAddress, &btc, &a.ERC8004AgentID, &a.ClaimStatus)
	if errors.Is(err, pgx.ErrNoRows) {
		return competition.Agent{}, false, nil
	}
	if err != nil {
		return competition.Agent{}, false, fmt.Errorf("agent %s: %w", stx, err)
	}
	if btc != nil {
		a.BTCAddress = *btc
	}
	return a, true, nil
}

// InsertSwap records a verified swap unless its txid is already there;
// inserted is false when another writer got there first. Either way the
// transaction is no longer pending, in the same statement. Amounts travel
// as text so that numeric keeps every digit, however far past 2^64.
func (s *Store) InsertSwap(ctx context.Context, sw competition.Swap) (inserted bool, err error) {
	err = s.pool.QueryRow(ctx, `
with ins as (
    insert into swaps (txid, sender, contract_id, function_name,
                       token_in, amount_in, token_out, amount_out,
                       burn_block_time, tx_status, source, raw_event_json, block_time)
    values ($1, $2, $3, $4, $5, $6::text::numeric, $7, $8::text::numeric, $9, $10, $11, $12::text::jsonb, nullif($13, 0))
    on conflict (txid) do nothing
    returning 1
), unpend as (
    delete from pending_txs where txid = $1
), pushed as (
    -- A row recorded from a chainhook delivery waits for a reader's
    -- confirmation (chainhook_pushed).
    insert into chainhook_pushed (txid) select $1 from ins where $11 = 'chainhook'
)
select count(*) = 1 from ins`,
		sw.TxID, sw.Sender, sw.ContractID, sw.FunctionName,
		sw.TokenIn, sw.AmountIn, sw.TokenOut, sw.AmountOut,
		sw.BurnBlockTime, sw.TxStatus, sw.Source, rawJSON(sw.RawEventJSON), sw.BlockTime).Scan(&inserted)
	if err != nil {
		return false, fmt.Errorf("insert swap %s: %w", sw.TxID, err)
	}
	return inserted, nil
}

// rawJSON turns a missing document into SQL null rather than invalid JSON.
func rawJSON(raw []byte) *string {
	if len(raw) == 0 {
		return nil
	}
	s := string(raw)
	return &s
}

// Amounts and the event document are read as text so nothing is rounded or
// re-encoded on the way out. raw_event_json comes back as Postgres renders
// jsonb (keys reordered, spaces added): compare it as JSON, not as bytes.
const selectSwaps = `
select txid, sender, contract_id, function_name,
       token_in, amount_in::text, token_out, amount_out::text,
       burn_block_time, tx_status, source, raw_event_json::text, block_time
from swaps`

// Swap returns the stored row of txid; found is false when there is none.
// The fast path answers a 409 with it.
func (s *Store) Swap(ctx context.Context, txid string) (sw competition.Swap, found bool, err error) {
	rows, err := s.pool.Query(ctx, selectSwaps+` where txid = $1`, txid)
	if err != nil {
		return competition.Swap{}, false, fmt.Errorf("swap %s: %w", txid, err)
	}
	sw, err = pgx.CollectExactlyOneRow(rows, scanSwap)
	if errors.Is(err, pgx.ErrNoRows) {
		return competition.Swap{}, false, nil
	}
	if err != nil {
		return competition.Swap{}, false, fmt.Errorf("swap %s: %w", txid, err)
	}
	return sw, true, nil
}

// Swaps returns every stored swap in txid order.
func (s *Store) Swaps(ctx context.Context) ([]competition.Swap, error) {
	return collect(ctx, s.pool, "swaps", scanSwap, selectSwaps+` order by txid collate "C"`)
}

func scanSwap(row pgx.CollectableRow) (competition.Swap, error) {
	var (
		sw        competition.Swap
		raw       *string
		blockTime pgtype.Int8
	)
	err := row.Scan(&sw.TxID, &sw.Sender, &sw.ContractID, &sw.FunctionName,
		&sw.TokenIn, &sw.AmountIn, &sw.TokenOut, &sw.AmountOut,
		&sw.BurnBlockTime, &sw.TxStatus, &sw.Source, &raw, &blockTime)
	sw.BlockTime = blockTime.Int64
	if raw != nil {
		sw.RawEventJSON = []byte(*raw)
	}
	return sw, err
}

// UpsertAgent registers an agent or updates its BTC address, display name
// and ERC-8004 id. a.ClaimStatus is ignored: claims live in their own table
// (UpsertClaim), keyed by BTC address. An empty BTC address or display name
// is stored as null.
func (s *Store) UpsertAgent(ctx context.Context, a competition.Agent, displayName string) error {
	_, err := s.pool.Exec(ctx, `
insert into agents (stx_address, btc_address, display_name, erc8004_agent_id)
values ($1, nullif($2, ''), nullif($3, ''), $4)
on conflict (stx_address) do update set
    btc_address      = excluded.btc_address,
    display_name     = excluded.display_name,
    erc8004_agent_id = excluded.erc8004_agent_id`,
		a.STXAddress, a.BTCAddress, displayName, a.ERC8004AgentID)
	if err != nil {
		return fmt.Errorf("upsert agent %s: %w", a.STXAddress, err)
	}
	return nil
}

// UpsertClaim files or updates the claim of a BTC address. The table's check
// constraint refuses a status other than pending, verified, rewarded or
// failed.
func (s *Store) UpsertClaim(ctx context.Context, btcAddress, status string) error {
	_, err := s.pool.Exec(ctx, `
insert into claims (btc_address, status) values ($1, $2)
on conflict (btc_address) do update set status = excluded.status`, btcAddress, status)
	if err != nil {
		return fmt.Errorf("upsert claim %s: %w", btcAddress, err)
	}
	return nil
}
