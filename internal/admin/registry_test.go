package admin_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/operate"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
)

// PUT /api/admin/agents is all or nothing: one bad record is a 400 naming
// its index and field, and nothing is written or audited; a good array is
// written and audited with its actor; DELETE deregisters.
func TestAgentsThroughTheAdminAPI(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	a := newAPI(t, &operate.Service{Store: st})
	count := func(sql string) (n int) {
		require.NoError(t, st.Pool().QueryRow(t.Context(), sql).Scan(&n))
		return n
	}
	good := map[string]any{"stxAddress": "SP1PFR4V08H1RAZXREBGFFQ59WB739XM8VVGTFSEA",
		"btcAddress": "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4", "displayName": "One", "erc8004AgentId": 1}
	var e struct{ Error string }
	a.do("PUT", "agents", []any{good, map[string]any{"stxAddress": "SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M", "erc8004AgentId": -4}}, 400, &e)
	require.Contains(t, e.Error, "record 1: erc8004AgentId:")
	a.do("PUT", "agents", []any{good, "SP1"}, 400, &e)
	require.Contains(t, e.Error, "record 1: not a JSON object")
	require.Zero(t, count(`select count(*) from agents`))
	require.Equal(t, 2, count(`select count(*) from audit_log where action = 'refused' and target = 'PUT /api/admin/agents'`), "the refusals, and nothing else")
	require.Equal(t, 2, count(`select count(*) from audit_log`))

	var out store.RegistryChange
	a.do("PUT", "agents?dryRun=true", []any{good}, 200, &out)
	require.Len(t, out.Added, 1)
	require.Zero(t, count(`select count(*) from agents`))

	a.do("PUT", "agents", []any{good}, 200, &out)
	require.Len(t, out.Added, 1)
	require.Equal(t, 1, count(`select count(*) from audit_log where actor = 'alice' and action = 'agents.import'`))

	a.do("PUT", "claims", []any{map[string]any{"btcAddress": "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4", "status": "won"}}, 400, &e)
	require.Contains(t, e.Error, "record 0: status:")
	a.do("PUT", "claims", []any{map[string]any{"btcAddress": "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4", "status": "verified"}}, 200, &out)
	require.Len(t, out.ClaimsAdded, 1)

	a.do("DELETE", "agents/SP1PFR4V08H1RAZXREBGFFQ59WB739XM8VVGTFSEA", nil, 200, nil)
	a.do("DELETE", "agents/SP1PFR4V08H1RAZXREBGFFQ59WB739XM8VVGTFSEA", nil, 404, nil)
	a.do("DELETE", "agents/SPnope", nil, 400, nil)
	require.Equal(t, 1, count(`select count(*) from agents where deregistered_at is not null`))
	require.Zero(t, count(`select count(*) from agent_ingest`))
	require.Equal(t, 1, count(`select count(*) from audit_log where action = 'agent.deregister' and target = 'SP1PFR4V08H1RAZXREBGFFQ59WB739XM8VVGTFSEA'`))
}
