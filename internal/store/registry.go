package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pacer-dev/pacer/internal/registry"
)

// Audit actions of the registry (SPEC §12).
const (
	ActionAgentsImport    = "agents.import"
	ActionAgentDeregister = "agent.deregister"
	ActionClaimsImport    = "claims.import"
	ActionRegistryRead    = "registry.read"
)

// RegistryChange is what one file, request or registry read changed (or,
// dry, would change).
type RegistryChange struct {
	Added        []string `json:"added"`
	Updated      []string `json:"updated"`
	Restored     []string `json:"restored"`
	Deregistered []string `json:"deregistered"`
	Unchanged    int      `json:"unchanged"`
	// Claims by Bitcoin address.
	ClaimsAdded     []string `json:"claimsAdded"`
	ClaimsUpdated   []string `json:"claimsUpdated"`
	ClaimsUnchanged int      `json:"claimsUnchanged"`
	DryRun          bool     `json:"dryRun,omitempty"`
}

// Changed says whether anything was (or would be) written.
func (c RegistryChange) Changed() bool {
	return len(c.Added)+len(c.Updated)+len(c.Restored)+len(c.Deregistered)+len(c.ClaimsAdded)+len(c.ClaimsUpdated) > 0
}

// ApplyAgents is one registry write.
type ApplyAgents struct {
	Agents []registry.Agent
	// Lines are the records' lines in their file (nil: known by index),
	// to name a record that conflicts with the database.
	Lines []int
	// Replace deregisters every registered agent not in Agents: the
	// registry's read, which lists them all.
	Replace bool
	DryRun  bool
	Change  Change
}

// errDry rolls a dry run's transaction back.
var errDry = errors.New("dry run")

// registryLock serialises registry writes: each computes its change from
// what it read.
const registryLock = `select pg_advisory_xact_lock(hashtext('pacer.registry'))`

type agentRow struct {
	btc, name    *string
	erc          *int64
	deregistered bool
}

// ApplyAgents validates (registry.CheckAgents) and writes agents, and the
// claims they carry, in one transaction with its audit entry: all of it or
// nothing. A record whose Bitcoin address another agent holds is named
// as a *registry.RecordError.
func (s *Store) ApplyAgents(ctx context.Context, in ApplyAgents) (RegistryChange, error) {
	if err := registry.CheckAgents(in.Agents, in.Lines); err != nil {
		return RegistryChange{}, err
	}
	var out RegistryChange
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		out = RegistryChange{DryRun: in.DryRun}
		if _, err := tx.Exec(ctx, registryLock); err != nil {
			return err
		}
		stx := make([]string, len(in.Agents))
		btc := make([]*string, len(in.Agents))
		for i, a := range in.Agents {
			stx[i] = a.STXAddress
			if a.BTCAddress != "" {
				btc[i] = &in.Agents[i].BTCAddress
			}
		}
		existing := map[string]agentRow{}
		rows, _ := tx.Query(ctx, `select stx_address, btc_address, display_name, erc8004_agent_id, deregistered_at is not null
from agents where stx_address = any($1)`, stx)
		var (
			addr string
			r    agentRow
		)
		if _, err := pgx.ForEachRow(rows, []any{&addr, &r.btc, &r.name, &r.erc, &r.deregistered}, func() error {
			existing[addr] = r
			return nil
		}); err != nil {
			return fmt.Errorf("read agents: %w", err)
		}
		// A Bitcoin address held by an agent this write does not move it
		// from is a conflict, named by the record that wants it.
		owners := map[string]string{}
		rows, _ = tx.Query(ctx, `select btc_address, stx_address from agents where btc_address = any($1)`, btc)
		var b string
		if _, err := pgx.ForEachRow(rows, []any{&b, &addr}, func() error {
			owners[b] = addr
			return nil
		}); err != nil {
			return fmt.Errorf("read btc owners: %w", err)
		}
		listed := map[string]int{}
		for i, a := range in.Agents {
			listed[a.STXAddress] = i
		}
		for i, a := range in.Agents {
			owner, held := owners[a.BTCAddress]
			if !held || owner == a.STXAddress {
				continue
			}
			if j, ok := listed[owner]; ok && in.Agents[j].BTCAddress != a.BTCAddress {
				continue // its holder gives it up in this write
			}
			return recordConflict(in.Lines, i, registry.FieldBTC, "already the Bitcoin address of "+owner)
		}
		for _, a := range in.Agents {
			old, ok := existing[a.STXAddress]
			switch {
			case !ok:
				out.Added = append(out.Added, a.STXAddress)
			case old.deregistered:
				out.Restored = append(out.Restored, a.STXAddress)
			case deref(old.btc) != a.BTCAddress || deref(old.name) != a.DisplayName || !sameID(old.erc, a.ERC8004AgentID):
				out.Updated = append(out.Updated, a.STXAddress)
			default:
				out.Unchanged++
			}
		}
		// Moved Bitcoin addresses are let go first: the unique index is
		// checked row by row.
		if _, err := tx.Exec(ctx, `
update agents a set btc_address = null
from unnest($1::text[], $2::text[]) as n(stx, btc)
where a.stx_address = n.stx and a.btc_address is distinct from n.btc and a.btc_address is not null`, stx, btc); err != nil {
			return fmt.Errorf("release btc addresses: %w", err)
		}
		names := make([]*string, len(in.Agents))
		ids := make([]*int64, len(in.Agents))
		for i, a := range in.Agents {
			if a.DisplayName != "" {
				names[i] = &in.Agents[i].DisplayName
			}
			ids[i] = a.ERC8004AgentID
		}
		if _, err := tx.Exec(ctx, `
insert into agents as a (stx_address, btc_address, display_name, erc8004_agent_id)
select * from unnest($1::text[], $2::text[], $3::text[], $4::bigint[])
on conflict (stx_address) do update set
    btc_address = excluded.btc_address, display_name = excluded.display_name,
    erc8004_agent_id = excluded.erc8004_agent_id, deregistered_at = null
where (a.btc_address, a.display_name, a.erc8004_agent_id, a.deregistered_at)
      is distinct from (excluded.btc_address, excluded.display_name, excluded.erc8004_agent_id, null)`,
			stx, btc, names, ids); err != nil {
			return fmt.Errorf("upsert agents: %w", err)
		}
		var claims []registry.Claim
		for _, a := range in.Agents {
			if a.ClaimStatus != nil {
				claims = append(claims, registry.Claim{BTCAddress: a.BTCAddress, Status: *a.ClaimStatus})
			}
		}
		if err := applyClaims(ctx, tx, claims, &out); err != nil {
			return err
		}
		if in.Replace {
			rows, _ := tx.Query(ctx, `
update agents set deregistered_at = now()
where deregistered_at is null and not (stx_address = any($1))
returning stx_address`, stx)
			gone, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return fmt.Errorf("deregister agents: %w", err)
			}
			slices.Sort(gone)
			out.Deregistered = gone
		}
		if out.Changed() {
			e, err := in.Change.entry("", nil, out)
			if err != nil {
				return err
			}
			if err := writeAudit(ctx, tx, e); err != nil {
				return err
			}
		}
		if in.DryRun {
			return errDry
		}
		return nil
	})
	if errors.Is(err, errDry) {
		err = nil
	}
	return out, err
}

func recordConflict(lines []int, i int, field, msg string) error {
	e := &registry.RecordError{Index: i, Field: field, Msg: msg}
	if lines != nil {
		e.Line = lines[i]
	}
	return e
}

func sameID(a, b *int64) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// applyClaims upserts claims in tx, counting them into out.
func applyClaims(ctx context.Context, tx pgx.Tx, claims []registry.Claim, out *RegistryChange) error {
	if len(claims) == 0 {
		return nil
	}
	btc := make([]string, len(claims))
	status := make([]string, len(claims))
	for i, c := range claims {
		btc[i], status[i] = c.BTCAddress, c.Status
	}
	existing := map[string]string{}
	rows, _ := tx.Query(ctx, `select btc_address, status from claims where btc_address = any($1)`, btc)
	var b, st string
	if _, err := pgx.ForEachRow(rows, []any{&b, &st}, func() error {
		existing[b] = st
		return nil
	}); err != nil {
		return fmt.Errorf("read claims: %w", err)
	}
	for _, c := range claims {
		old, ok := existing[c.BTCAddress]
		switch {
		case !ok:
			out.ClaimsAdded = append(out.ClaimsAdded, c.BTCAddress)
		case old != c.Status:
			out.ClaimsUpdated = append(out.ClaimsUpdated, c.BTCAddress)
		default:
			out.ClaimsUnchanged++
		}
	}
	if _, err := tx.Exec(ctx, `
insert into claims as c (btc_address, status)
select * from unnest($1::text[], $2::text[])
on conflict (btc_address) do update set status = excluded.status
where c.status is distinct from excluded.status`, btc, status); err != nil {
		return fmt.Errorf("upsert claims: %w", err)
	}
	return nil
}

// ApplyClaims validates and writes claims in one transaction with its
// audit entry; dry, it says what would change and writes nothing.
func (s *Store) ApplyClaims(ctx context.Context, claims []registry.Claim, lines []int, dryRun bool, c Change) (RegistryChange, error) {
	if err := registry.CheckClaims(claims, lines); err != nil {
		return RegistryChange{}, err
	}
	var out RegistryChange
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		out = RegistryChange{DryRun: dryRun}
		if _, err := tx.Exec(ctx, registryLock); err != nil {
			return err
		}
		if err := applyClaims(ctx, tx, claims, &out); err != nil {
			return err
		}
		if out.Changed() {
			e, err := c.entry("", nil, out)
			if err != nil {
				return err
			}
			if err := writeAudit(ctx, tx, e); err != nil {
				return err
			}
		}
		if dryRun {
			return errDry
		}
		return nil
	})
	if errors.Is(err, errDry) {
		err = nil
	}
	return out, err
}

// DeregisterAgent marks one agent deregistered (kept, with its swaps; no
// longer visited nor ranked) and audits it. ErrNotFound when no such
// agent is registered.
func (s *Store) DeregisterAgent(ctx context.Context, stx string, c Change) (at time.Time, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, registryLock); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, `
update agents set deregistered_at = now() where stx_address = $1 and deregistered_at is null
returning deregistered_at`, stx).Scan(&at)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("deregister %s: %w", stx, err)
		}
		e, err := c.entry(stx, map[string]any{"registered": true}, map[string]any{"registered": false, "deregisteredAt": at.UTC()})
		if err != nil {
			return err
		}
		return writeAudit(ctx, tx, e)
	})
	return at, err
}
