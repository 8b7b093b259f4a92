package metrics_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/metrics"
	"github.com/pacer-dev/pacer/internal/store"
)

// TestWatchPush: the push series say what push_state says, and nothing
// when no holder has written (or Postgres is away).
func TestWatchPush(t *testing.T) {
	t.Parallel()
	since := time.Unix(1_778_760_000, 0)
	st, found, err := store.PushState{Live: true, Since: since, Messages: 42, Reconnects: 3, Sockets: 5, LiveSockets: 5}, true, error(nil)
	m := metrics.New()
	require.NoError(t, m.WatchPush(func(context.Context) (store.PushState, bool, error) { return st, found, err }))
	want := `
# HELP pacer_push_live 1 while Hiro's WebSocket delivers (every socket had a block within 30 s): the tail then reads at PACER_RECONCILE_EVERY; 0 while it does not (the tail reads at PACER_TAIL_EVERY).
# TYPE pacer_push_live gauge
pacer_push_live 1
# HELP pacer_push_reconnects_total Sockets dialled again after they stopped (silent 30 s, closed or refused), by the current holder.
# TYPE pacer_push_reconnects_total counter
pacer_push_reconnects_total 3
`
	require.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "pacer_push_live", "pacer_push_reconnects_total"))
	n, gerr := testutil.GatherAndCount(m.Registry(), "pacer_push_messages_total", "pacer_push_sockets", "pacer_push_state_since_seconds")
	require.NoError(t, gerr)
	require.Equal(t, 4, n)

	found, err = false, nil
	n, gerr = testutil.GatherAndCount(m.Registry(), "pacer_push_live")
	require.NoError(t, gerr)
	require.Zero(t, n, "no holder yet: no series")
	found, err = true, errors.New("postgres away")
	n, _ = testutil.GatherAndCount(m.Registry(), "pacer_push_live")
	require.Zero(t, n)
}
