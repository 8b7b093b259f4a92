package page_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The ledger section says how far the ledger is complete and what the
// registry's last read did (SPEC §7, §12), and that neither is known yet
// before the readers and the registry task have run.
func TestLedgerShowsCompletenessAndTheRegistry(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	v := newPage(d, nil).View(t.Context())
	require.Contains(t, v.Ledger.CompleteThrough, "not yet known")
	require.Contains(t, v.Ledger.Registry, "no read yet")

	d.exec(`insert into discovery_cursors (reader, block_height, tx_index, block_time, updated_at) values ('tail', 9, 0, $1, now())`,
		now.Add(-10*60e9).Unix()+1)
	d.exec(`insert into competition_state (key, value) values ('registry_last_read', $1)`,
		`{"startedAt":"`+now.Add(-120e9).UTC().Format("2006-01-02T15:04:05Z")+`","agents":3,"added":1,"deregistered":1}`)
	v = newPage(d, nil).View(t.Context())
	require.Equal(t, now.Add(-10*60e9).UTC().Format("2006-01-02 15:04:05 UTC")+" (10m ago)", v.Ledger.CompleteThrough)
	require.Equal(t, "read 2m ago: 3 agents listed; 1 added, 0 updated, 0 restored, 1 deregistered", v.Ledger.Registry)
	_, body := get(t, newPage(d, nil))
	require.Contains(t, body, `data-k="ledger.completeThrough"`)
	require.Contains(t, body, `data-k="ledger.registry"`)
}
