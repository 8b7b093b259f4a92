package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
)

func TestAgentsCommand(t *testing.T) {
	t.Parallel()
	url := testenv.PostgresURL(t)
	ctx := context.Background()
	st, err := store.Open(ctx, url)
	require.NoError(t, err)
	t.Cleanup(st.Close)
	require.NoError(t, st.Migrate(ctx))
	for _, a := range []string{"SPAGENTHOT", "SPAGENTCOLD"} {
		require.NoError(t, st.UpsertAgent(ctx, competition.Agent{STXAddress: a}, ""))
	}
	_, err = st.Pool().Exec(ctx, `update agent_ingest set tier = 'hot', swap_rate = 12, cursor = '{"block_height": 7, "tx_index": 2}' where stx_address = 'SPAGENTHOT'`)
	require.NoError(t, err)

	code, out, errOut := run("agents", "--database-url", url, "--json")
	require.Equal(t, 0, code, errOut)
	var doc struct {
		Agents []store.AgentIngest `json:"agents"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.Len(t, doc.Agents, 2)
	require.Equal(t, "SPAGENTHOT", doc.Agents[0].Address, "hot first")
	require.Equal(t, int64(7), doc.Agents[0].Cursor.BlockHeight)

	code, out, errOut = run("agents", "--database-url", url, "--tier", "cold")
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	require.True(t, strings.HasPrefix(lines[0], "AGENT"))
	require.True(t, strings.HasPrefix(lines[1], "SPAGENTCOLD"), out)
}
