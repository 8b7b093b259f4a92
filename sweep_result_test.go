package pacer

import "testing"

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
