package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A delivery whose attempt holds a lease (its worker died mid-POST) is due
// when the lease lapses, not at its next attempt time: the deliver task
// does not wake every second until then. RetriesDue sees only deliveries
// that already had an attempt.
func TestDeliveryDueTimesHonourTheLease(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	now := ts("2026-11-03T10:00:00Z")
	_, err := s.Pool().Exec(ctx, `
insert into subscribers (id, url, secret, events, status) values ('sub_a', 'https://example.com/h', 'whsec_x', '{hourly}', 'active')`)
	require.NoError(t, err)
	add := func(id string, attempts int, next time.Time, claimed *time.Time) {
		_, err := s.Pool().Exec(ctx, `
insert into deliveries (id, subscriber_id, event, period_start, period_end, payload, status, attempts, next_attempt_at, claimed_until, created_at)
values ($1, 'sub_a', 'hourly', $2, $3, '{}', case when $4 > 0 then 'retrying' else 'pending' end, $4, $5, $6, $5)`,
			id, next.Add(-time.Duration(attempts+1)*time.Hour), next.Add(-time.Duration(attempts)*time.Hour), attempts, next, claimed)
		require.NoError(t, err)
	}
	lease := now.Add(40 * time.Second)
	add("leased", 1, now.Add(-time.Minute), &lease)
	next, err := s.NextDeliveryDue(ctx)
	require.NoError(t, err)
	require.Equal(t, lease, next.UTC(), "due when the lease lapses")
	due, err := s.RetriesDue(ctx, now)
	require.NoError(t, err)
	require.False(t, due, "a leased retry is not due yet")
	due, err = s.RetriesDue(ctx, lease)
	require.NoError(t, err)
	require.True(t, due)

	add("first", 0, now.Add(-time.Second), nil)
	next, err = s.NextDeliveryDue(ctx)
	require.NoError(t, err)
	require.Equal(t, now.Add(-time.Second), next.UTC())
	due, err = s.RetriesDue(ctx, now)
	require.NoError(t, err)
	require.False(t, due, "a first attempt is not a retry")
	after, err := s.NextDeliveryDueAfter(ctx, now)
	require.NoError(t, err)
	require.Equal(t, lease, after.UTC())
}
