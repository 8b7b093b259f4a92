package store_test

import (
	"errors"
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
