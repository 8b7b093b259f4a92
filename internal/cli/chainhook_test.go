package cli

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/chainhook"
	"github.com/pacer-dev/pacer/internal/sim"
)

func TestChainhookSpecCommand(t *testing.T) {
	t.Parallel()
	code, out, errOut := run("chainhook", "spec", "--url", "https://pacer.example/api/chainhook")
	require.Equal(t, 0, code, errOut)
	var def struct {
		Network string `json:"network"`
		Filters struct {
			Events []map[string]string `json:"events"`
		} `json:"filters"`
		Action map[string]string `json:"action"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &def))
	require.Equal(t, "mainnet", def.Network)
	require.Equal(t, "https://pacer.example/api/chainhook", def.Action["url"])
	require.Len(t, def.Filters.Events, len(catalog.Default().Pairs()))

	code, out, errOut = run("chainhook", "spec", "--format", "v1", "--network", "testnet", "--start-block", "5",
		"--chainhook-secret", "hunter2-long-enough-for-pacer")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "Bearer "+chainhook.PlaceholderSecret, "a placeholder unless asked")
	require.NotContains(t, out, "hunter2-long-enough-for-pacer")
	require.Contains(t, out, `"start_block": 5`)

	code, out, errOut = run("chainhook", "spec", "--format", "v1", "--with-secret", "--chainhook-secret", "hunter2-long-enough-for-pacer")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "Bearer hunter2-long-enough-for-pacer")
}

func TestChainhookSpecUsage(t *testing.T) {
	t.Parallel()
	for _, give := range [][]string{
		{"chainhook", "spec", "--network", "devnet"},
		{"chainhook", "spec", "--url", "ftp://x"},
		{"chainhook", "spec", "--format", "v9"},
		{"chainhook", "spec", "--start-block", "5"},
		{"chainhook", "spec", "--format", "v1", "--start-block", "-1"},
		{"chainhook", "spec", "--with-secret", "--chainhook-secret", ""},
		{"chainhook", "spec", "extra"},
	} {
		code, out, errOut := run(give...)
		require.Equal(t, 2, code, "%v: %s", give, errOut)
		require.Empty(t, out)
		require.Equal(t, 1, strings.Count(errOut, "\n"), errOut)
	}
}

// TestChainhookEnsureCommand: `pacer chainhook ensure` run twice makes one
// hook on the platform; --dry-run changes nothing; without
// PACER_PUBLIC_URL it is a usage error.
func TestChainhookEnsureCommand(t *testing.T) {
	t.Parallel()
	sp := sim.NewPlatform("hiro-key-for-tests")
	srv := httptest.NewServer(sp)
	t.Cleanup(srv.Close)
	args := []string{"chainhook", "ensure", "--chainhook-api-url", srv.URL, "--hiro-api-key", "hiro-key-for-tests",
		"--public-url", "https://pacer.example", "--hiro-base-url", "http://127.0.0.1:1"}

	code, out, errOut := run(append(args, "--dry-run")...)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "would create pacer-mainnet-swaps")
	require.Empty(t, sp.Hooks())

	code, out, errOut = run(args...)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, ": created")
	code, out, errOut = run(args...)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, ": none")
	require.Len(t, sp.Hooks(), 1, "run twice: one hook")

	code, _, errOut = run("chainhook", "ensure", "--chainhook-api-url", srv.URL)
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "PACER_PUBLIC_URL")
}
