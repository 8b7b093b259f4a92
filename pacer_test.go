package pacer

import (
	"math"
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

func TestRunLeftKeepsWhatTheBudgetHad(t *testing.T) {
	var r Run
	month := int64(1) << 40
	r.Left(12, &month)
	if *r.MinuteRemaining != 12 || *r.MonthRemaining != math.MaxInt32 {
		t.Errorf("Left(12, 2^40) = %d, %d; want 12 and the clamp", *r.MinuteRemaining, *r.MonthRemaining)
	}
	r.Left(3, nil)
	if *r.MinuteRemaining != 3 || r.MonthRemaining != nil {
		t.Errorf("Left(3, nil): the month must go, as it stands")
	}
}

func TestSweepResultReportUpdatesAReader(t *testing.T) {
	var r SweepResult
	r.Report("tail", func(rep *ReaderReport) { rep.Pages += 2 })
	r.Report("tail", func(rep *ReaderReport) { rep.Pages++; rep.Source = "feed" })
	if got := r.Readers["tail"]; got.Pages != 3 || got.Source != "feed" || len(r.Readers) != 1 {
		t.Errorf("Readers = %+v", r.Readers)
	}
}

func TestSweepResultCloneSharesNoMap(t *testing.T) {
	r := SweepResult{RejectionReasons: map[string]int{"tx_failed": 1}, Tiers: map[string]int{"hot": 2},
		Readers: map[string]ReaderReport{"tail": {Pages: 1}}}
	c := r.Clone()
	c.RejectionReasons["tx_failed"]++
	c.Tiers["hot"]++
	c.Readers["tail"] = ReaderReport{Pages: 9}
	require.Equal(t, 1, r.RejectionReasons["tx_failed"])
	require.Equal(t, 2, r.Tiers["hot"])
	require.Equal(t, 1, r.Readers["tail"].Pages)
}
