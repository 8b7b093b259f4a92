package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/hiro"
	"github.com/pacer-dev/pacer/internal/ingest"
	"github.com/pacer-dev/pacer/internal/store"
)

func TestPlanReadersFromTheRows(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	start := &discovery.Position{Position: hiro.Position{BlockHeight: 100}}
	contracts := []string{"SP1.dex", "SP2.pool"}
	tail := store.Reader{Name: discovery.ReaderTail, Position: start, Start: start, LastReadAt: &at}
	dex := store.Reader{Name: discovery.ContractReader("SP1.dex"), Scan: discovery.State{Top: start}}

	var fresh discovery.Run
	store.PlanReaders(&fresh, nil, contracts, nil, false, time.Time{})
	require.Equal(t, &discovery.Reader{Name: discovery.ReaderTail}, fresh.Tail)
	require.Empty(t, fresh.Contracts, "the tail has not begun: nothing to reconcile yet")

	var s discovery.Run
	held := map[string]bool{discovery.ReaderTail: true, discovery.ContractReader("SP2.pool"): true}
	store.PlanReaders(&s, []store.Reader{tail, dex}, contracts, held, false, time.Time{})
	require.Equal(t, &discovery.Reader{Name: discovery.ReaderTail, LastRead: at, Held: true}, s.Tail)
	require.Equal(t, []discovery.Reader{
		{Name: "contract:SP1.dex", Scanning: true},
		{Name: "contract:SP2.pool", Held: true},
	}, s.Contracts, "a contract's reader not yet written is due; one cut short is scanning")

	probe := at.Add(time.Minute)
	lists := discovery.Run{ContractsAreTail: true}
	store.PlanReaders(&lists, nil, contracts, held, false, probe)
	require.Equal(t, &discovery.Reader{Name: discovery.ReaderTail, LastRead: probe, Held: true}, lists.Tail, "the feed's probe")
	require.Len(t, lists.Contracts, 2, "the lists are the tail, begun or not")

	off := discovery.Run{ContractsAreTail: true}
	store.PlanReaders(&off, []store.Reader{tail}, contracts, nil, true, probe)
	require.Nil(t, off.Tail, "the feed switched off: no tail, not even its probe")
	require.Len(t, off.Contracts, 2)
}

func TestReaderReportsItsStanding(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	now := at.Add(time.Minute)
	rd := store.Reader{Position: &discovery.Position{Position: hiro.Position{BlockHeight: 7, TxIndex: 2}}, HeadLagSeconds: 4.5, Gaps: 2, LastReadAt: &at}
	rep := pacer.ReaderReport{Requests: 3, Source: "v3"}
	rd.Report(&rep, 10*time.Second, now)
	next := at.Add(10 * time.Second)
	require.Equal(t, pacer.ReaderReport{Requests: 3, Source: "v3", Position: "7:2", LagSeconds: 4.5, Gaps: 2, NextDueAt: &next}, rep)

	rd.Scan = discovery.State{Top: rd.Position}
	rd.Report(&rep, 10*time.Second, now)
	require.Equal(t, now, *rep.NextDueAt, "cut short: due at once")

	var never pacer.ReaderReport
	store.Reader{}.Report(&never, time.Minute, now)
	require.Equal(t, pacer.ReaderReport{}, never, "never read: no position, no next read")
}

func TestAgentIngestKeepsWhereAVisitStands(t *testing.T) {
	t.Parallel()
	list := func(from, to int64) []hiro.Entry { // newest first, heights to..from
		var out []hiro.Entry
		for h := to; h >= from; h-- {
			out = append(out, hiro.Entry{TxID: fmt.Sprintf("0x%d", h), BlockHeight: h, Canonical: true, TxStatus: "success",
				TxType: hiro.TxTypeContractCall, BlockTime: 1000 + h})
		}
		return out
	}
	row := store.AgentIngest{Cursor: &hiro.Position{BlockHeight: 10, TxIndex: 1}}
	from, st := row.Scan()
	require.Equal(t, &discovery.Position{Position: hiro.Position{BlockHeight: 10, TxIndex: 1}}, from)
	require.Equal(t, discovery.State{}, st, "no visit cut short")

	// A first page, and the budget stops the visit: the next goes on.
	s := discovery.NewScan(discovery.ScanConfig{From: from, Tokens: true, Agent: true}, st)
	s.AddList(list(20, 30), "p2")
	s.Commit()
	row.Walked(s)
	require.Equal(t, hiro.PageToken("p2"), row.VisitFrom)
	require.Equal(t, &hiro.Position{BlockHeight: 30}, row.VisitTop)
	require.Equal(t, int64(10), row.Cursor.BlockHeight, "the cursor waits for the whole range")
	from, st = row.Scan()
	require.Equal(t, discovery.State{Token: "p2", Top: &discovery.Position{Position: hiro.Position{BlockHeight: 30}}}, st)

	// It goes on and reaches the cursor: the cursor advances to the top.
	s = discovery.NewScan(discovery.ScanConfig{From: from, Tokens: true, Agent: true}, st)
	s.AddList(list(9, 19), "")
	s.Commit()
	require.True(t, s.Done())
	row.Walked(s)
	require.Equal(t, &hiro.Position{BlockHeight: 30}, row.Cursor)
	require.Empty(t, row.VisitFrom)
	require.Nil(t, row.VisitTop)
}

func TestReaderCoveredAfterACompleteRead(t *testing.T) {
	t.Parallel()
	began, now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC), time.Date(2026, 6, 1, 12, 1, 0, 0, time.UTC)
	first := &discovery.Position{Position: hiro.Position{BlockHeight: 5}}
	rd := store.Reader{Scan: discovery.State{Top: first}, ScanBegan: &began}
	rd.Covered(first, now)
	require.Equal(t, store.Reader{Position: first, Start: first, CoveredAt: &began, LastReadAt: &now}, rd)
	next := &discovery.Position{Position: hiro.Position{BlockHeight: 9}}
	rd.Covered(next, now)
	require.Equal(t, first, rd.Start, "the start stays where the reader began")
	require.Equal(t, next, rd.Position)
	require.Nil(t, rd.CoveredAt, "no scan had begun")
}

func TestTotalsAddTheTiersUp(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	got := store.Totals(map[ingest.Tier]store.TierSummary{
		ingest.Hot:  {Agents: 2, Due: 1, MaxOverdue: 30, NextRunAt: at.Add(time.Minute)},
		ingest.Cold: {Agents: 5, Due: 3, MaxOverdue: 90, NextRunAt: at},
	})
	require.Equal(t, store.IngestTotals{Tiers: map[string]int{"hot": 2, "warm": 0, "cold": 5}, Due: 4, MaxOverdue: 90, NextRunAt: at}, got)
	require.Equal(t, store.IngestTotals{Tiers: map[string]int{"hot": 0, "warm": 0, "cold": 0}}, store.Totals(nil), "no agents")
}

func TestReaderBeginsWhereTheTailBegan(t *testing.T) {
	t.Parallel()
	start := &discovery.Position{Position: hiro.Position{BlockHeight: 42, TxIndex: 3}}
	var rd store.Reader
	rd.BeginAt(start)
	require.Equal(t, start, rd.Position)
	require.Equal(t, start, rd.Start)
	start.BlockHeight = 1
	require.Equal(t, int64(42), rd.Position.BlockHeight, "a copy: the tail's row is not the reader's")
	var fresh store.Reader
	fresh.BeginAt(nil)
	require.Nil(t, fresh.Position, "the feed never served: the list's first read finds its head")
}
