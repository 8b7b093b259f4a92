package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/store"
)

func TestPlanReadersFromTheRows(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	start := &discovery.Position{BlockHeight: 100}
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
	rd := store.Reader{Position: &discovery.Position{BlockHeight: 7, TxIndex: 2}, HeadLagSeconds: 4.5, Gaps: 2, LastReadAt: &at}
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
