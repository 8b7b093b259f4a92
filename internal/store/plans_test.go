package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/store"
)

// One agent's trades page reaches the sender's index even on the generic
// plan a prepared statement may settle on (issue 41, item 10): with the
// catch-all "($1 = ” or sender = $1)" the generic plan could only filter
// by sender after walking every newer swap.
func TestTradesOfOneSenderUseItsIndexOnAGenericPlan(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	conn, err := s.Pool().Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	for _, set := range []string{"set plan_cache_mode = force_generic_plan", "set enable_seqscan = off"} {
		_, err := conn.Exec(ctx, set)
		require.NoError(t, err)
	}
	_, err = conn.Exec(ctx, "prepare trades_of as "+store.TradesOf)
	require.NoError(t, err)
	rows, err := conn.Query(ctx, "explain execute trades_of(9223372036854775807, '', 51, 'SPX')")
	require.NoError(t, err)
	var lines []string
	for rows.Next() {
		var line string
		require.NoError(t, rows.Scan(&line))
		lines = append(lines, line)
	}
	require.NoError(t, rows.Err())
	plan := strings.Join(lines, "\n")
	require.Regexp(t, `Index Cond: .*sender = \$4`, plan, "the sender bounds the index scan:\n%s", plan)
}
