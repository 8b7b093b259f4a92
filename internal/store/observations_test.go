package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/store"
)

// Observations are written in one statement, exactly, a repeat changes
// nothing, and pruning keeps what is inside the retention.
func TestObservationsWriteAndPrune(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	now := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	price := "0.000000012345678901234567"
	obs := []store.Observation{
		{TokenID: "stx", ObservedAt: now.Add(-store.ObservationRetention - time.Minute), PriceUSD: &price},
		{TokenID: "stx", ObservedAt: now.Add(-time.Hour), PriceUSD: &price},
		{TokenID: "stx", ObservedAt: now}, // a confirmed "no price"
	}
	n, err := s.InsertObservations(t.Context(), obs)
	require.NoError(t, err)
	require.EqualValues(t, 3, n)
	n, err = s.InsertObservations(t.Context(), obs)
	require.NoError(t, err)
	require.Zero(t, n, "a retried run observes nothing new")

	got, err := s.Observations(t.Context(), "stx", now.Add(-2*time.Hour), now.Add(time.Second))
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, price, *got[0].PriceUSD, "every digit kept")
	require.Nil(t, got[1].PriceUSD)

	pruned, err := s.PruneObservations(t.Context(), now.Add(-store.ObservationRetention))
	require.NoError(t, err)
	require.EqualValues(t, 1, pruned)
	got, err = s.Observations(t.Context(), "stx", time.Unix(0, 0), now.Add(time.Second))
	require.NoError(t, err)
	require.Len(t, got, 2)

	bad := "-1"
	_, err = s.InsertObservations(t.Context(), []store.Observation{{TokenID: "stx", ObservedAt: now.Add(time.Second), PriceUSD: &bad}})
	require.Error(t, err, "a price must be positive")
}
