package tally

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
)

func TestSuccesses(t *testing.T) {
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
		if got := Successes(&tt.give); got != tt.want {
			t.Errorf("%s: Successes() = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestAddAndCount(t *testing.T) {
	var run pacer.SweepResult
	piece := pacer.SweepResult{Scanned: 1, Found: 4, Inserted: 1, AlreadyKnown: 1, Pending: 1, Rejected: 1, HiroErrors: 2,
		RejectionReasons: map[string]int{"tx_failed": 1}}
	piece.Requests = 5
	Count(&piece.Run, pacer.ClassRateLimit)
	Count(&piece.Run, pacer.ClassServerError)
	Count(&piece.Run, pacer.ClassNotFound) // an item problem: not the upstream's
	Add(&run, piece)
	Add(&run, piece)
	want := pacer.SweepResult{Scanned: 2, Found: 8, Inserted: 2, AlreadyKnown: 2, Pending: 2, Rejected: 2, HiroErrors: 4,
		RejectionReasons: map[string]int{"tx_failed": 2}}
	want.Requests, want.Run.Rejected, want.UpstreamFailed = 10, 2, 4
	require.Equal(t, want, run)
}

func TestLeftKeepsWhatTheBudgetHad(t *testing.T) {
	var r pacer.Run
	month := int64(1) << 40
	Left(&r, 12, &month)
	if *r.MinuteRemaining != 12 || *r.MonthRemaining != math.MaxInt32 {
		t.Errorf("Left(12, 2^40) = %d, %d; want 12 and the clamp", *r.MinuteRemaining, *r.MonthRemaining)
	}
	Left(&r, 3, nil)
	if *r.MinuteRemaining != 3 || r.MonthRemaining != nil {
		t.Errorf("Left(3, nil): the month must go, as it stands")
	}
}

func TestReportUpdatesAReader(t *testing.T) {
	var r pacer.SweepResult
	Report(&r, "tail", func(rep *pacer.ReaderReport) { rep.Pages += 2 })
	Report(&r, "tail", func(rep *pacer.ReaderReport) { rep.Pages++; rep.Source = "feed" })
	if got := r.Readers["tail"]; got.Pages != 3 || got.Source != "feed" || len(r.Readers) != 1 {
		t.Errorf("Readers = %+v", r.Readers)
	}
}

func TestCloneSharesNoMap(t *testing.T) {
	r := pacer.SweepResult{RejectionReasons: map[string]int{"tx_failed": 1}, Tiers: map[string]int{"hot": 2},
		Readers: map[string]pacer.ReaderReport{"tail": {Pages: 1}}}
	c := Clone(r)
	c.RejectionReasons["tx_failed"]++
	c.Tiers["hot"]++
	c.Readers["tail"] = pacer.ReaderReport{Pages: 9}
	require.Equal(t, 1, r.RejectionReasons["tx_failed"])
	require.Equal(t, 2, r.Tiers["hot"])
	require.Equal(t, 1, r.Readers["tail"].Pages)
}

func TestRemainingKeepsTheLastHeader(t *testing.T) {
	var r pacer.Run
	n := int64(7)
	Remaining(&r.MinuteRemaining, &n)
	Remaining(&r.MinuteRemaining, nil) // an answer without the header
	require.Equal(t, 7, *r.MinuteRemaining)
	require.Nil(t, r.MonthRemaining)
}

func TestEnding(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	e := Ending{Reserve: 1}
	for i := 1; i < MaxUpstreamStreak; i++ {
		ends, streak := e.Failed(pacer.ClassServerError)
		require.False(t, ends, "failure %d of a streak", i)
		require.Equal(t, i, streak)
	}
	ends, _ := e.Failed(pacer.ClassNotFound) // an item's problem: no end, no break
	require.False(t, ends)
	ends, streak := e.Failed(pacer.ClassTimeout)
	require.True(t, ends, "the fifth upstream failure in a row ends the run")
	require.Equal(t, MaxUpstreamStreak, streak)

	e = Ending{Reserve: 1}
	for range MaxUpstreamStreak - 1 {
		e.Failed(pacer.ClassServerError)
	}
	e.Succeeded()
	ends, _ = e.Failed(pacer.ClassServerError)
	require.False(t, ends, "a success ends the streak")
	for _, c := range []pacer.ErrorClass{pacer.ClassRateLimit, pacer.ClassPermanent} {
		ends, _ = (&Ending{}).Failed(c)
		require.True(t, ends, "%s ends the run at once", c)
	}

	require.True(t, e.Reserved(n(1), true), "down to the reserve with more to send")
	require.True(t, e.Reserved(n(0), true))
	require.False(t, e.Reserved(n(2), true))
	require.False(t, e.Reserved(n(1), false), "nothing more to send: the run ends anyway, not at the reserve")
	require.False(t, e.Reserved(nil, true), "an unknown remaining is never a reason to stop")
	require.False(t, (&Ending{}).Reserved(n(1), true), "a forced run keeps no reserve")
}
