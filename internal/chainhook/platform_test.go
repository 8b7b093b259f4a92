package chainhook_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/chainhook"
	"github.com/pacer-dev/pacer/internal/sim"
)

const platformKey = "hiro-key-for-tests"

func newPlatform(t *testing.T) (*sim.Platform, *chainhook.Platform) {
	t.Helper()
	sp := sim.NewPlatform(platformKey)
	srv := httptest.NewServer(sp)
	t.Cleanup(srv.Close)
	return sp, &chainhook.Platform{BaseURL: srv.URL, APIKey: platformKey}
}

// TestEnsureKeepsOneHook: run twice, ensure makes one hook, with a
// contract_call filter for every allowlisted pair and the http_post
// action; the second run changes nothing.
func TestEnsureKeepsOneHook(t *testing.T) {
	t.Parallel()
	sp, p := newPlatform(t)
	pairs := catalog.Default().Pairs()
	o := chainhook.EnsureOptions{Network: "mainnet", Endpoint: "https://pacer.example/api/chainhook", Pairs: pairs, ReplayMax: 30}

	dry := o
	dry.DryRun = true
	res, err := chainhook.Ensure(t.Context(), p, dry)
	require.NoError(t, err)
	require.Equal(t, chainhook.ActionCreated, res.Action)
	require.Empty(t, sp.Hooks(), "a dry run changes nothing")

	res, err = chainhook.Ensure(t.Context(), p, o)
	require.NoError(t, err)
	require.Equal(t, chainhook.ActionCreated, res.Action)
	res, err = chainhook.Ensure(t.Context(), p, o)
	require.NoError(t, err)
	require.Equal(t, chainhook.ActionNone, res.Action)
	require.Len(t, sp.Hooks(), 1, "run twice: one hook")

	var h struct {
		Definition struct {
			Name    string `json:"name"`
			Filters struct {
				Events []map[string]string `json:"events"`
			} `json:"filters"`
			Action map[string]string `json:"action"`
		} `json:"definition"`
		Status struct {
			Enabled bool `json:"enabled"`
		} `json:"status"`
	}
	require.NoError(t, json.Unmarshal(sp.Hooks()[0], &h))
	require.Equal(t, "pacer-mainnet-swaps", h.Definition.Name)
	require.Equal(t, map[string]string{"type": "http_post", "url": "https://pacer.example/api/chainhook"}, h.Definition.Action)
	require.True(t, h.Status.Enabled)
	want := map[string]bool{}
	for _, pr := range pairs {
		want[pr.ContractID+" "+pr.Function] = true
	}
	got := map[string]bool{}
	for _, e := range h.Definition.Filters.Events {
		require.Equal(t, "contract_call", e["type"])
		got[e["contract_identifier"]+" "+e["function_name"]] = true
	}
	require.Equal(t, want, got, "one filter per allowlisted pair")

	// The allowlist changes: the hook follows it, still one.
	o.Pairs = pairs[1:]
	res, err = chainhook.Ensure(t.Context(), p, o)
	require.NoError(t, err)
	require.Equal(t, chainhook.ActionUpdated, res.Action)
	require.Len(t, sp.Hooks(), 1)
	require.NoError(t, json.Unmarshal(sp.Hooks()[0], &h))
	require.Len(t, h.Definition.Filters.Events, len(pairs)-1)

	_, err = chainhook.Ensure(t.Context(), &chainhook.Platform{BaseURL: p.BaseURL, APIKey: "wrong"}, o)
	var pe *chainhook.PlatformError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, http.StatusUnauthorized, pe.Status)
}

// TestEnsureReenablesAndReplays: an interrupted hook is enabled again and
// its missed blocks (up to the replay bound) evaluated, one call a
// block; a longer gap is left to the readers; a streaming hook a block
// behind is left alone.
func TestEnsureReenablesAndReplays(t *testing.T) {
	t.Parallel()
	sp, p := newPlatform(t)
	o := chainhook.EnsureOptions{Network: "mainnet", Endpoint: "https://pacer.example/api/chainhook",
		Pairs: catalog.Default().Pairs(), ReplayMax: 30}
	res, err := chainhook.Ensure(t.Context(), p, o)
	require.NoError(t, err)
	uuid := res.UUID

	sp.Interrupt(uuid, 1000)
	o.Tip = 1007
	res, err = chainhook.Ensure(t.Context(), p, o)
	require.NoError(t, err)
	require.Equal(t, chainhook.ActionEnabled, res.Action)
	require.Equal(t, chainhook.HookInterrupted, res.Status)
	require.Equal(t, int64(7), res.Lag)
	require.Equal(t, 7, res.Replayed)
	require.Equal(t, []int64{1001, 1002, 1003, 1004, 1005, 1006, 1007}, sp.Evaluated(uuid))
	require.Equal(t, 1, sp.Calls("PATCH /me/"+uuid+"/enabled"))

	sp.Streaming(uuid, 1006)
	o.Tip = 1007
	res, err = chainhook.Ensure(t.Context(), p, o)
	require.NoError(t, err)
	require.Equal(t, chainhook.ActionNone, res.Action)
	require.Zero(t, res.Replayed, "a streaming hook a block behind is delivering it")

	sp.Interrupt(uuid, 1007)
	o.Tip = 1007 + 31
	res, err = chainhook.Ensure(t.Context(), p, o)
	require.NoError(t, err)
	require.Equal(t, chainhook.ActionEnabled, res.Action)
	require.Equal(t, int64(31), res.Lag)
	require.Zero(t, res.Replayed, "past the bound: the readers' gap")
	require.Len(t, sp.Evaluated(uuid), 7)
}
