package store_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/registry"
	"github.com/pacer-dev/pacer/internal/store"
)

// Addresses with valid checksums (the allowlist's deployers) and BIP 173's
// example.
const (
	regA   = "SP1PFR4V08H1RAZXREBGFFQ59WB739XM8VVGTFSEA"
	regB   = "SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M"
	regBTC = "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4"
)

func change() store.Change {
	return store.Change{At: time.Now(), Actor: "test", Action: store.ActionAgentsImport}
}

func agentCount(t *testing.T, s *store.Store) (n int) {
	t.Helper()
	require.NoError(t, s.Pool().QueryRow(t.Context(), `select count(*) from agents`).Scan(&n))
	return n
}

func TestApplyAgentsAllOrNothing(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	id := int64(3)
	good := registry.Agent{STXAddress: regA, BTCAddress: regBTC, ERC8004AgentID: &id}

	// The second record is bad: nothing is written, and it is named.
	_, err := s.ApplyAgents(ctx, store.ApplyAgents{Agents: []registry.Agent{good, {STXAddress: "SP1BAD"}}, Lines: []int{1, 2}, Change: change()})
	var re *registry.RecordError
	require.True(t, errors.As(err, &re), "%v", err)
	require.Equal(t, 2, re.Line)
	require.Equal(t, registry.FieldSTX, re.Field)
	require.Zero(t, agentCount(t, s))

	// Dry: says what would change, writes nothing.
	out, err := s.ApplyAgents(ctx, store.ApplyAgents{Agents: []registry.Agent{good}, DryRun: true, Change: change()})
	require.NoError(t, err)
	require.Equal(t, []string{regA}, out.Added)
	require.Zero(t, agentCount(t, s))

	out, err = s.ApplyAgents(ctx, store.ApplyAgents{Agents: []registry.Agent{good}, Change: change()})
	require.NoError(t, err)
	require.Equal(t, []string{regA}, out.Added)
	a, found, err := s.Agent(ctx, regA)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, regBTC, a.BTCAddress)

	// Another agent wanting A's Bitcoin address is a conflict named by its index.
	_, err = s.ApplyAgents(ctx, store.ApplyAgents{Agents: []registry.Agent{{STXAddress: regB, BTCAddress: regBTC}}, Change: change()})
	require.True(t, errors.As(err, &re), "%v", err)
	require.Equal(t, 0, re.Index)
	require.Equal(t, registry.FieldBTC, re.Field)
	require.Equal(t, 1, agentCount(t, s))

	// The same again changes nothing and audits nothing.
	out, err = s.ApplyAgents(ctx, store.ApplyAgents{Agents: []registry.Agent{good}, Change: change()})
	require.NoError(t, err)
	require.Equal(t, 1, out.Unchanged)
	var audits int
	require.NoError(t, s.Pool().QueryRow(ctx, `select count(*) from audit_log where action = $1`, store.ActionAgentsImport).Scan(&audits))
	require.Equal(t, 1, audits)
}

func TestDeregisterAndComeBack(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	_, err := s.ApplyAgents(ctx, store.ApplyAgents{Agents: []registry.Agent{{STXAddress: regA}, {STXAddress: regB}}, Change: change()})
	require.NoError(t, err)

	// The registry's read lists A only: B is kept, deregistered, not visited.
	out, err := s.ApplyAgents(ctx, store.ApplyAgents{Agents: []registry.Agent{{STXAddress: regA}}, Replace: true, Change: change()})
	require.NoError(t, err)
	require.Equal(t, []string{regB}, out.Deregistered)
	require.Equal(t, 2, agentCount(t, s))
	_, found, err := s.AgentIngestRow(ctx, regB)
	require.NoError(t, err)
	require.False(t, found, "a deregistered agent is not visited")
	_, registered, err := s.Agent(ctx, regB)
	require.NoError(t, err)
	require.False(t, registered)

	// Listed again: back, due at once.
	before := time.Now().Add(-time.Second)
	out, err = s.ApplyAgents(ctx, store.ApplyAgents{Agents: []registry.Agent{{STXAddress: regA}, {STXAddress: regB}}, Replace: true, Change: change()})
	require.NoError(t, err)
	require.Equal(t, []string{regB}, out.Restored)
	row, found, err := s.AgentIngestRow(ctx, regB)
	require.NoError(t, err)
	require.True(t, found)
	require.WithinRange(t, row.NextRunAt, before, time.Now().Add(time.Second))

	_, err = s.DeregisterAgent(ctx, regA, change())
	require.NoError(t, err)
	_, err = s.DeregisterAgent(ctx, regA, change())
	require.ErrorIs(t, err, store.ErrNotFound)
}

func TestClaimChangeMakesAgentDue(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	pending, verified := "pending", "verified"
	_, err := s.ApplyAgents(ctx, store.ApplyAgents{Agents: []registry.Agent{{STXAddress: regA, BTCAddress: regBTC, ClaimStatus: &pending}}, Change: change()})
	require.NoError(t, err)
	_, err = s.Pool().Exec(ctx, `update agent_ingest set next_run_at = now() + interval '1 hour'`)
	require.NoError(t, err)
	out, err := s.ApplyClaims(ctx, []registry.Claim{{BTCAddress: regBTC, Status: verified}}, nil, false, change())
	require.NoError(t, err)
	require.Equal(t, []string{regBTC}, out.ClaimsUpdated)
	row, _, err := s.AgentIngestRow(ctx, regA)
	require.NoError(t, err)
	require.False(t, row.NextRunAt.After(time.Now().Add(time.Second)), "a claim change makes the agent due at once")
}

// One registry answer that lists nobody, or drops more than the guard's
// share, deregisters nobody until an operator confirms it (issue 41.6);
// the confirmed read is applied, audited; an agent deregistered and listed
// again comes back with its ingest progress (its cursor), not from the
// start of its history.
func TestRegistryReadThatDropsTooManyIsHeld(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	var agents []registry.Agent
	for i := range 10 {
		agents = append(agents, registry.Agent{STXAddress: registry.MainnetSP([]byte(fmt.Sprintf("guarded-agent-%06d", i)))})
	}
	_, err := s.ApplyAgents(ctx, store.ApplyAgents{Agents: agents, Change: change()})
	require.NoError(t, err)
	// The first agent has been read up to a position, in five visits.
	_, err = s.Pool().Exec(ctx, `update agent_ingest set cursor = '{"block_height": 1000, "tx_index": 7}', visits = 5, tier = 'hot'
where stx_address = $1`, agents[0].STXAddress)
	require.NoError(t, err)
	registered := func() (n int) {
		require.NoError(t, s.Pool().QueryRow(ctx, `select count(*) from agents where deregistered_at is null`).Scan(&n))
		return n
	}
	guard := &store.DropGuard{MaxShare: 0.2}
	read := func(list []registry.Agent) (store.RegistryChange, error) {
		return s.ApplyAgents(ctx, store.ApplyAgents{Agents: list, Replace: true, Guard: guard,
			Change: store.Change{At: time.Now(), Actor: "registry", Action: store.ActionRegistryRead}})
	}

	// An empty list: held, nothing written.
	_, err = read(nil)
	var held *store.DropHeld
	require.ErrorAs(t, err, &held)
	require.Equal(t, store.DropHeld{At: held.At, Listed: 0, Registered: 10, Deregister: 10, Sample: held.Sample,
		MaxShare: 0.2, Digest: held.Digest}, *held)
	require.Contains(t, held.Error(), "lists nobody")
	require.Equal(t, 10, registered())

	// Dropping one of ten (10%) is within the share: applied.
	out, err := read(agents[1:])
	require.NoError(t, err)
	require.Equal(t, []string{agents[0].STXAddress}, out.Deregistered)
	require.Equal(t, 9, registered())

	// Dropping four of nine (44%): held until confirmed.
	_, err = read(agents[5:])
	require.ErrorAs(t, err, &held)
	require.Equal(t, 4, held.Deregister)
	require.Equal(t, 9, registered())
	_, err = s.ConfirmRegistryDrop(ctx, "", change())
	require.ErrorIs(t, err, store.ErrNotFound, "nothing recorded as held yet")
	require.NoError(t, s.RecordRegistryHold(ctx, *held))
	_, err = s.ConfirmRegistryDrop(ctx, "0123456789abcdef", change())
	require.ErrorIs(t, err, store.ErrStaleConfirm)
	confirmed, err := s.ConfirmRegistryDrop(ctx, held.Digest, store.Change{At: time.Now(), Actor: "cli", Action: store.ActionRegistryConfirm})
	require.NoError(t, err)
	require.Equal(t, held.Digest, confirmed.Digest)
	var audited int
	require.NoError(t, s.Pool().QueryRow(ctx, `select count(*) from audit_log where action = $1 and target = $2`,
		store.ActionRegistryConfirm, held.Digest).Scan(&audited))
	require.Equal(t, 1, audited)

	// The confirmed read is applied; the hold and its confirmation go.
	out, err = read(agents[5:])
	require.NoError(t, err)
	require.Len(t, out.Deregistered, 4)
	require.Equal(t, held.Digest, out.Confirmed)
	require.Equal(t, 5, registered())
	h, err := s.RegistryHold(ctx)
	require.NoError(t, err)
	require.Nil(t, h)

	// Listed again, the first agent comes back where its visits had read
	// to, due at once.
	before := time.Now().Add(-time.Second)
	out, err = read(agents)
	require.NoError(t, err)
	require.Len(t, out.Restored, 5)
	row, found, err := s.AgentIngestRow(ctx, agents[0].STXAddress)
	require.NoError(t, err)
	require.True(t, found)
	require.NotNil(t, row.Cursor, "its cursor survived its deregistration")
	require.Equal(t, "1000:7", row.Cursor.String())
	require.Equal(t, int64(5), row.Visits)
	require.WithinRange(t, row.NextRunAt, before, time.Now().Add(time.Second))
	var kept int
	require.NoError(t, s.Pool().QueryRow(ctx, `select count(*) from agent_ingest_kept`).Scan(&kept))
	require.Zero(t, kept, "what came back is no longer kept aside")
}
