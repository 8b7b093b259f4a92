package page_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The ledger section says where Hiro's WebSocket stands (SPEC §5.0
// "Push"): nothing before a worker held it, live with its counts, and
// down since the holder's last word once it stops writing.
func TestLedgerShowsPush(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	require.Empty(t, newPage(d, nil).View(t.Context()).Ledger.Push)

	d.exec(`insert into push_state (holder, live, since, messages, reconnects, sockets, live_sockets, updated_at)
values ('w1:42', true, $1, 1234, 2, 5, 5, $2)`, now.Add(-3*60e9), now)
	line := newPage(d, nil).View(t.Context()).Ledger.Push
	require.Regexp(t, `^live since .* UTC \(3m ago\), 5 of 5 sockets live, 1,234 messages, 2 reconnects, held by w1:42$`, line)
	_, body := get(t, newPage(d, nil))
	require.Contains(t, body, `data-k="ledger.push"`)

	d.exec(`update push_state set updated_at = $1, last_error = 'upgrade refused: 503'`, now.Add(-2*60e9))
	line = newPage(d, nil).View(t.Context()).Ledger.Push
	require.Regexp(t, `^down: the tail reads at PACER_TAIL_EVERY since .* \(2m ago\).*; last error: upgrade refused: 503$`, line)
}
