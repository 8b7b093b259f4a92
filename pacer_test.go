package pacer

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSweepResultSuccesses(t *testing.T) {
	for _, tt := range []struct {
		name string
		give SweepResult
		want int
	}{
		{"agents mode: agents visited", SweepResult{Scanned: 7}, 7},
		{"tail mode: pages of the tail and the reconciler count", SweepResult{Scanned: 1, Readers: map[string]ReaderReport{
			"tail": {Pages: 3}, "contract:SP1.dex": {Pages: 2}, "agents": {Pages: 9}}}, 6},
		{"nothing read", SweepResult{}, 0},
	} {
		if got := tt.give.Successes(); got != tt.want {
			t.Errorf("%s: Successes() = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestSweepResultAddAndCount(t *testing.T) {
	var run SweepResult
	piece := SweepResult{Scanned: 1, Found: 4, Inserted: 1, AlreadyKnown: 1, Pending: 1, Rejected: 1, HiroErrors: 2,
		RejectionReasons: map[string]int{"tx_failed": 1}}
	piece.Requests = 5
	piece.Count(ClassRateLimit)
	piece.Count(ClassServerError)
	piece.Count(ClassNotFound) // an item problem: not the upstream's
	run.Add(piece)
	run.Add(piece)
	want := SweepResult{Scanned: 2, Found: 8, Inserted: 2, AlreadyKnown: 2, Pending: 2, Rejected: 2, HiroErrors: 4,
		RejectionReasons: map[string]int{"tx_failed": 2}}
	want.Requests, want.Run.Rejected, want.UpstreamFailed = 10, 2, 4
	require.Equal(t, want, run)
}
