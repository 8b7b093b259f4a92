package cli

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
)

// rounds add validates (one-line error, exit 2, nothing written), adds
// and changes a round with an audit row, lists and shows it, and refuses
// a finalized round with exit 2, leaving it unchanged (SPEC §13).
func TestRoundsCommands(t *testing.T) {
	t.Parallel()
	url := testenv.PostgresURL(t)
	ctx := context.Background()
	st, err := store.Open(ctx, url)
	require.NoError(t, err)
	t.Cleanup(st.Close)
	require.NoError(t, st.Migrate(ctx))
	db := []string{"--database-url", url, "--temporal-address", "127.0.0.1:1"}
	add := func(args ...string) (int, string, string) {
		return run(append(append([]string{"rounds", "add"}, args...), db...)...)
	}

	for _, bad := range [][]string{
		{"Week-1", "--starts", "2026-05-13T00:00:00Z", "--ends", "2026-05-20T00:00:00Z"},
		{"week-1", "--starts", "2026-05-13T00:00:00Z", "--ends", "2026-05-13T00:00:00Z"},
		{"week-1", "--starts", "2026-05-13T00:00:00Z"},
		{"week-1", "--starts", "tomorrow", "--ends", "2026-05-20T00:00:00Z"},
		{"week-1", "--starts", "2026-05-13T00:00:00Z", "--ends", "2026-05-20T00:00:00Z", "--min-volume-usd", "-1"},
		{"week-1", "--starts", "2026-05-13T00:00:00Z", "--ends", "2026-05-20T00:00:00Z", "--min-priced-trades", "-2"},
		{"week-1", "--starts", "2026-05-13T00:00:00Z", "--ends", "2026-05-20T00:00:00Z", "--grace", "-1h"},
	} {
		code, _, errOut := add(bad...)
		require.Equal(t, 2, code, "%v: %s", bad, errOut)
		require.Regexp(t, `^pacer: [^\n]+\n$`, errOut)
	}
	rounds, err := st.Rounds(ctx)
	require.NoError(t, err)
	require.Empty(t, rounds)

	code, out, errOut := add("week-1", "--starts", "2026-05-13T00:00:00Z", "--ends", "1779235200", "--grace", "30m")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "round week-1 added")
	require.Contains(t, out, "grace until 2026-05-20T00:30:00Z")
	code, out, errOut = add("week-1", "--starts", "2026-05-13T00:00:00Z", "--ends", "1779235200", "--min-volume-usd", "10", "--json")
	require.Equal(t, 0, code, errOut)
	var r store.Round
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	require.Equal(t, 10.0, r.MinVolumeUSD)
	require.Equal(t, "2026-05-20T01:00:00Z", stampUTC(r.GraceEndsAt), "PACER_ROUND_GRACE's default, 1h")

	code, out, errOut = run(append([]string{"rounds", "list"}, db...)...)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "week-1")
	code, out, errOut = run(append([]string{"rounds", "show", "week-1", "--json"}, db...)...)
	require.Equal(t, 0, code, errOut)
	var d store.RoundDetail
	require.NoError(t, json.Unmarshal([]byte(out), &d))
	require.Equal(t, store.RoundOpen, d.Round.Status)
	code, _, _ = run(append([]string{"rounds", "show", "nope"}, db...)...)
	require.Equal(t, 2, code)

	_, err = st.FinalizeRound(ctx, "week-1", func(store.FinalizeInputs) (store.FinalizeOutcome, error) {
		return store.FinalizeOutcome{}, nil
	})
	require.NoError(t, err)
	code, _, errOut = add("week-1", "--starts", "2026-05-14T00:00:00Z", "--ends", "1779235200")
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "finalized")
	got, _, err := st.RoundByID(ctx, "week-1")
	require.NoError(t, err)
	require.Equal(t, "2026-05-13T00:00:00Z", stampUTC(got.Round.StartsAt), "unchanged")
	var audits int
	require.NoError(t, st.Pool().QueryRow(ctx, `select count(*) from audit_log where action = 'round.put' and actor = 'cli'`).Scan(&audits))
	require.Equal(t, 2, audits)
}
