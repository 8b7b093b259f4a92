package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
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
	// ActionRegistryConfirm is an operator's confirmation of a held read.
	ActionRegistryConfirm = "registry.confirm"
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
	// Confirmed is the digest of the held read an operator confirmed,
	// when this change applied one (DropHeld).
	Confirmed string `json:"confirmed,omitempty"`
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
	// Pages, with Replace, are the registry's pages the read came from,
	// kept with what was applied (RegistryPages).
	Pages []registry.Page
	// Guard, with Replace, holds a read that would deregister too many
	// agents until an operator confirms it (DropHeld); nil applies any.
	Guard *DropGuard
}

// DropGuard bounds what one registry read may deregister (SPEC §12):
// more than MaxShare of the registered agents, or all of them because the
// read lists nobody, is held for an operator's confirmation. A registry
// that answers an empty list, or a page walk its server cut short, would
// otherwise deregister everyone in one read.
type DropGuard struct {
	MaxShare float64
}

// DefaultMaxDrop is PACER_REGISTRY_MAX_DROP's default.
const DefaultMaxDrop = 0.2

// DropHeld is a registry read that was not applied because it would
// deregister more agents than its guard allows: nothing of it is written
// until an operator confirms Digest (ConfirmRegistryDrop); the next read
// that would deregister the same agents is then applied.
type DropHeld struct {
	At         time.Time `json:"at"`
	Listed     int       `json:"listed"`
	Registered int       `json:"registered"`
	// Deregister is how many agents the read would deregister; Sample
	// names the first of them.
	Deregister int      `json:"deregister"`
	Sample     []string `json:"sample"`
	MaxShare   float64  `json:"maxShare"`
	// Digest names the set of agents the read would deregister.
	Digest string `json:"digest"`
}

func (h *DropHeld) Error() string {
	if h.Listed == 0 {
		return fmt.Sprintf("registry read held: it lists nobody and would deregister all %d registered agents; "+
			"pacer registry confirm %s applies it", h.Registered, h.Digest)
	}
	return fmt.Sprintf("registry read held: it would deregister %d of %d registered agents (more than %.0f%%); "+
		"pacer registry confirm %s applies it", h.Deregister, h.Registered, h.MaxShare*100, h.Digest)
}

// Where a held read and its confirmation are kept (competition_state).
const (
	RegistryHeldKey      = "registry_held"
	registryConfirmedKey = "registry_confirmed"
	// heldSample is how many addresses a held read names.
	heldSample = 10
)

// dropDigest names a set of addresses, whatever their order.
func dropDigest(gone []string) string {
	sorted := slices.Sorted(slices.Values(gone))
	sum := sha256.Sum256([]byte(strings.Join(sorted, "\n")))
	return hex.EncodeToString(sum[:8])
}

// checkDrop holds a read that would deregister gone of registered agents
// beyond g's share, unless confirmed names exactly that set.
func (g *DropGuard) checkDrop(listed, registered int, gone []string, confirmed string, at time.Time) *DropHeld {
	if g == nil || len(gone) == 0 {
		return nil
	}
	if listed > 0 && float64(len(gone)) <= g.MaxShare*float64(registered) {
		return nil
	}
	h := &DropHeld{At: at.UTC(), Listed: listed, Registered: registered, Deregister: len(gone),
		MaxShare: g.MaxShare, Digest: dropDigest(gone)}
	if h.Digest == confirmed {
		return nil
	}
	h.Sample = slices.Sorted(slices.Values(gone))[:min(len(gone), heldSample)]
	return h
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
		if in.Replace && in.Guard != nil {
			confirmed, err := guardDrop(ctx, tx, in, stx)
			if err != nil {
				return err
			}
			out.Confirmed = confirmed
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
			if err := savePages(ctx, tx, in.Pages); err != nil {
				return err
			}
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

// guardDrop holds a registry read that would deregister more than its
// guard allows (a *DropHeld, nothing written), unless an operator
// confirmed that very set; a read that passes clears any earlier hold and
// its confirmation, and returns the digest it applied when it needed one.
func guardDrop(ctx context.Context, tx pgx.Tx, in ApplyAgents, stx []string) (confirmed string, err error) {
	var registered int
	if err := tx.QueryRow(ctx, `select count(*) from agents where deregistered_at is null`).Scan(&registered); err != nil {
		return "", fmt.Errorf("count registered agents: %w", err)
	}
	rows, _ := tx.Query(ctx, `select stx_address from agents where deregistered_at is null and not (stx_address = any($1))`, stx)
	gone, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", fmt.Errorf("read the agents a read drops: %w", err)
	}
	var ok bool
	if err := tx.QueryRow(ctx, `select value from competition_state where key = $1`, registryConfirmedKey).Scan(&confirmed); err == nil {
		ok = true
	} else if !errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("read the registry confirmation: %w", err)
	}
	if held := in.Guard.checkDrop(len(in.Agents), registered, gone, confirmed, in.Change.At); held != nil {
		return "", held
	}
	if _, err := tx.Exec(ctx, `delete from competition_state where key = any($1)`,
		[]string{RegistryHeldKey, registryConfirmedKey}); err != nil {
		return "", fmt.Errorf("clear the registry hold: %w", err)
	}
	if !ok || len(gone) == 0 || confirmed != dropDigest(gone) {
		confirmed = ""
	}
	return confirmed, nil
}

// savePages keeps the registry's pages a read was applied from, in place
// of the last read's.
func savePages(ctx context.Context, tx pgx.Tx, pages []registry.Page) error {
	if _, err := tx.Exec(ctx, `delete from registry_pages`); err != nil {
		return fmt.Errorf("registry pages: %w", err)
	}
	for i, p := range pages {
		agents, err := json.Marshal(p.Agents)
		if err != nil {
			return fmt.Errorf("registry page %d: %w", i+1, err)
		}
		if _, err := tx.Exec(ctx, `insert into registry_pages (seq, url, etag, agents, next) values ($1, $2, $3, $4, nullif($5, ''))`,
			i, p.URL, p.ETag, agents, p.Next); err != nil {
			return fmt.Errorf("registry page %d: %w", i+1, err)
		}
	}
	return nil
}

// RegistryPages are the registry's pages the last applied read came
// from, in order; none before the first.
func (s *Store) RegistryPages(ctx context.Context) ([]registry.Page, error) {
	rows, _ := s.pool.Query(ctx, `select url, etag, agents, coalesce(next, '') from registry_pages order by seq`)
	var out []registry.Page
	var p registry.Page
	var agents []byte
	if _, err := pgx.ForEachRow(rows, []any{&p.URL, &p.ETag, &agents, &p.Next}, func() error {
		page := p
		page.Agents = nil
		if err := json.Unmarshal(agents, &page.Agents); err != nil {
			return err
		}
		out = append(out, page)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("registry pages: %w", err)
	}
	return out, nil
}

// RecordRegistryHold keeps a held read for the operator (pacer registry,
// the operator's page).
func (s *Store) RecordRegistryHold(ctx context.Context, h DropHeld) error {
	v, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("record the registry hold: %w", err)
	}
	return s.SetState(ctx, RegistryHeldKey, string(v))
}

// ClearRegistryHold forgets a held read and its confirmation: the registry
// answers as it did before the read that was held.
func (s *Store) ClearRegistryHold(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, `delete from competition_state where key = any($1)`,
		[]string{RegistryHeldKey, registryConfirmedKey}); err != nil {
		return fmt.Errorf("clear the registry hold: %w", err)
	}
	return nil
}

// RegistryHold is the read held for an operator's confirmation, if any.
func (s *Store) RegistryHold(ctx context.Context) (*DropHeld, error) {
	v, ok, err := s.GetState(ctx, RegistryHeldKey)
	if err != nil || !ok {
		return nil, err
	}
	var h DropHeld
	if err := json.Unmarshal([]byte(v), &h); err != nil {
		return nil, fmt.Errorf("read the registry hold: %w", err)
	}
	return &h, nil
}

// ErrStaleConfirm is returned when an operator confirms a digest that is
// not the held read's (the registry answered differently since).
var ErrStaleConfirm = errors.New("not the held read")

// ConfirmRegistryDrop confirms the held read (when digest is not empty,
// only if it is the held read's), audited: the next read that would
// deregister the same agents is applied. ErrNotFound when no read is held.
func (s *Store) ConfirmRegistryDrop(ctx context.Context, digest string, c Change) (DropHeld, error) {
	var h DropHeld
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, registryLock); err != nil {
			return err
		}
		var v string
		err := tx.QueryRow(ctx, `select value from competition_state where key = $1`, RegistryHeldKey).Scan(&v)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("read the registry hold: %w", err)
		}
		if err := json.Unmarshal([]byte(v), &h); err != nil {
			return fmt.Errorf("read the registry hold: %w", err)
		}
		if digest != "" && digest != h.Digest {
			return fmt.Errorf("%w: the held read is %s", ErrStaleConfirm, h.Digest)
		}
		if _, err := tx.Exec(ctx, `
insert into competition_state (key, value) values ($1, $2)
on conflict (key) do update set value = excluded.value, updated_at = now()`, registryConfirmedKey, h.Digest); err != nil {
			return fmt.Errorf("confirm the registry read: %w", err)
		}
		e, err := c.entry(h.Digest, nil, h)
		if err != nil {
			return err
		}
		return writeAudit(ctx, tx, e)
	})
	return h, err
}
