package activities

import (
	"testing"

	"github.com/pacer-dev/pacer"
)

func TestSweepResultSuccesses(t *testing.T) {
	for _, tt := range []struct {
		name string
		give pacer.SweepResult
		want int
	}{
		{"agents mode: agents visited", pacer.SweepResult{Scanned: 7}, 7},
		{"tail mode: pages of the tail and the reconciler count", pacer.SweepResult{Scanned: 1, Readers: map[string]pacer.ReaderReport{
			"tail": {Pages: 3}, "contract:SP1.dex": {Pages: 2}, "agents": {Pages: 9}}}, 6},
		{"nothing read", pacer.SweepResult{}, 0},
	} {
		if got := successes(tt.give); got != tt.want {
			t.Errorf("%s: successes() = %d, want %d", tt.name, got, tt.want)
		}
	}
}
