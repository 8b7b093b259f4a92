package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/hiro"
	"github.com/pacer-dev/pacer/internal/store"
)

func TestDiscoveryReaderKeepsItsPlace(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	_, found, err := s.DiscoveryReader(ctx, discovery.ReaderTail)
	require.NoError(t, err)
	require.False(t, found)

	head := &discovery.Position{Position: hiro.Position{BlockHeight: 100, TxIndex: 3}, TxID: "0xa", Time: 1000}
	now := time.Now()
	require.NoError(t, s.SaveDiscoveryReader(ctx, store.Reader{Name: discovery.ReaderTail, Position: head, Start: head, LastReadAt: &now},
		store.ReaderCounts{Requests: 2, Pages: 1}))
	scan := discovery.State{Top: &discovery.Position{Position: hiro.Position{BlockHeight: 120}, TxID: "0xb"}, Offset: 49, Pages: 1}
	newer := &discovery.Position{Position: hiro.Position{BlockHeight: 110, TxIndex: 0}, TxID: "0xc"}
	require.NoError(t, s.SaveDiscoveryReader(ctx, store.Reader{Name: discovery.ReaderTail, Position: newer,
		Start: &discovery.Position{Position: hiro.Position{BlockHeight: 1}}, Scan: scan, HeadLagSeconds: 7}, store.ReaderCounts{Requests: 3, Pages: 2, Candidates: 1}))
	// A stale writer (an attempt that lost its lease) never moves it back.
	require.NoError(t, s.SaveDiscoveryReader(ctx, store.Reader{Name: discovery.ReaderTail, Position: head, Scan: scan, HeadLagSeconds: 7},
		store.ReaderCounts{}))

	rd, found, err := s.DiscoveryReader(ctx, discovery.ReaderTail)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, newer.BlockHeight, rd.Position.BlockHeight)
	require.Equal(t, "0xc", rd.Position.TxID)
	require.Equal(t, head.BlockHeight, rd.Start.BlockHeight, "where it began is kept")
	require.Equal(t, scan.Offset, rd.Scan.Offset)
	require.Equal(t, int64(5), rd.Requests)
	require.Equal(t, int64(3), rd.Pages)
	require.Equal(t, int64(1), rd.Candidates)
	require.Equal(t, 7.0, rd.HeadLagSeconds)

	// A gap stays open until every contract's reader has covered it.
	require.NoError(t, s.RecordGap(ctx, discovery.ReaderTail, discovery.Gap{From: head, To: *newer}))
	contracts := []string{discovery.ContractReader("SP1.a"), discovery.ContractReader("SP1.b")}
	open, err := s.FillGaps(ctx, contracts)
	require.NoError(t, err)
	require.Equal(t, 1, open)
	later := time.Now().Add(time.Second)
	require.NoError(t, s.SaveDiscoveryReader(ctx, store.Reader{Name: contracts[0], Position: newer, CoveredAt: &later}, store.ReaderCounts{}))
	open, err = s.FillGaps(ctx, contracts)
	require.NoError(t, err)
	require.Equal(t, 1, open, "one contract has not covered it yet")
	require.NoError(t, s.SaveDiscoveryReader(ctx, store.Reader{Name: contracts[1], Position: head, CoveredAt: &later}, store.ReaderCounts{}))
	open, err = s.FillGaps(ctx, contracts)
	require.NoError(t, err)
	require.Zero(t, open)
	rd, _, err = s.DiscoveryReader(ctx, discovery.ReaderTail)
	require.NoError(t, err)
	require.Equal(t, int64(1), rd.Gaps)
}
