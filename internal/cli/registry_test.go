package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
)

// A file with one bad record writes nothing and names the record (SPEC
// §12); a good one is written in full, and --dry-run writes nothing.
func TestAgentsImport(t *testing.T) {
	t.Parallel()
	url := testenv.PostgresURL(t)
	ctx := context.Background()
	st, err := store.Open(ctx, url)
	require.NoError(t, err)
	t.Cleanup(st.Close)
	require.NoError(t, st.Migrate(ctx))
	count := func() (n int) {
		require.NoError(t, st.Pool().QueryRow(ctx, `select count(*) from agents`).Scan(&n))
		return n
	}
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}
	bad := write("bad.csv", "stxAddress,btcAddress,displayName,erc8004AgentId\n"+
		"SP1PFR4V08H1RAZXREBGFFQ59WB739XM8VVGTFSEA,bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4,One,1\n"+
		"SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3N,,Two,2\n")
	code, _, errOut := run("agents", "import", bad, "--database-url", url)
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "line 3: stxAddress:")
	require.Zero(t, count())

	good := write("good.ndjson", `{"stxAddress":"SP1PFR4V08H1RAZXREBGFFQ59WB739XM8VVGTFSEA","btcAddress":"bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4","erc8004AgentId":1}
{"stxAddress":"SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M","displayName":"Two","erc8004AgentId":2}
`)
	code, out, errOut := run("agents", "import", good, "--dry-run", "--json", "--database-url", url)
	require.Equal(t, 0, code, errOut)
	var change store.RegistryChange
	require.NoError(t, json.Unmarshal([]byte(out), &change))
	require.Len(t, change.Added, 2)
	require.True(t, change.DryRun)
	require.Zero(t, count())

	code, out, errOut = run("agents", "import", good, "--database-url", url)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "2 added")
	require.Equal(t, 2, count())

	claims := write("claims.csv", "btcAddress,status\nbc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4,verified\n")
	code, out, errOut = run("claims", "import", claims, "--database-url", url)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "claims changed: 1 added")
}
