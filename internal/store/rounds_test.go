package store_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/store"
)

func roundChange(at time.Time) store.Change {
	return store.Change{At: at, Actor: "test", Action: store.ActionRoundPut}
}

func spec(id string, start time.Time) store.RoundSpec {
	return store.RoundSpec{ID: id, StartsAt: start, EndsAt: start.Add(time.Hour), GraceEndsAt: start.Add(2 * time.Hour),
		MinVolumeUSD: 50, MinPricedTradeCount: 3}
}

// A round is added and changed with an audit row each time it changes,
// not when it is put again unchanged; a finalized one is never changed;
// it is invisible to the public reads until it is final.
func TestPutRoundAndFinalReads(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	start := time.Date(2026, 5, 13, 0, 0, 0, 0, time.UTC)
	now := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)

	r, created, err := s.PutRound(ctx, spec("week-1", start), roundChange(now))
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, store.RoundOpen, r.Status)
	require.Equal(t, start, r.StartsAt)

	changed := spec("week-1", start)
	changed.MinVolumeUSD = 10
	r, created, err = s.PutRound(ctx, changed, roundChange(now))
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, 10.0, r.MinVolumeUSD)
	_, _, err = s.PutRound(ctx, changed, roundChange(now))
	require.NoError(t, err)
	var audits int
	require.NoError(t, s.Pool().QueryRow(ctx, `select count(*) from audit_log where action = $1 and target = 'week-1'`,
		store.ActionRoundPut).Scan(&audits))
	require.Equal(t, 2, audits, "added, changed; the unchanged put is not audited")

	_, found, err := s.FinalRound(ctx, "week-1")
	require.NoError(t, err)
	require.False(t, found, "open rounds are not public")
	rounds, more, err := s.FinalRounds(ctx, 10, 0)
	require.NoError(t, err)
	require.Empty(t, rounds)
	require.False(t, more)
	_, roundFound, err := s.FinalRoundResult(ctx, "week-1", regA)
	require.NoError(t, err)
	require.False(t, roundFound)

	// Finalize with a made-up outcome: what the store writes is what
	// compute said, once.
	calls := 0
	pct := 0.5
	out, err := s.FinalizeRound(ctx, "week-1", func(in store.FinalizeInputs) (store.FinalizeOutcome, error) {
		calls++
		require.Empty(t, in.Swaps)
		return store.FinalizeOutcome{
			Results: []store.RoundResult{{RoundID: "week-1", Rank: 1, STXAddress: regA, TradeCount: 1, PricedTradeCount: 1,
				VolumeUSD: 2, ReceivedUSD: 3, PnLUSD: 1, PnLPercent: &pct, UnpricedTokens: []string{}, CalculatedAt: in.At}},
			Rewards: []store.RoundReward{{RoundID: "week-1", Category: store.RewardOverallPnL, Rank: 1, STXAddress: regA,
				Status: store.RewardPending, CreatedAt: in.At}},
		}, nil
	})
	require.NoError(t, err)
	require.True(t, out.Finalized)
	again, err := s.FinalizeRound(ctx, "week-1", func(store.FinalizeInputs) (store.FinalizeOutcome, error) {
		calls++
		return store.FinalizeOutcome{}, nil
	})
	require.NoError(t, err)
	require.False(t, again.Finalized, "a final round is left as it is")
	require.Equal(t, 1, calls)

	d, found, err := s.FinalRound(ctx, "week-1")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, store.RoundFinalized, d.Round.Status)
	require.NotNil(t, d.Round.FinalizedAt)
	require.Len(t, d.Results, 1)
	require.Equal(t, 0.5, *d.Results[0].PnLPercent)
	require.Len(t, d.Rewards, 1)
	res, roundFound, err := s.FinalRoundResult(ctx, "week-1", regA)
	require.NoError(t, err)
	require.True(t, roundFound)
	require.Equal(t, 1, res.Rank)
	res, roundFound, err = s.FinalRoundResult(ctx, "week-1", regB)
	require.NoError(t, err)
	require.True(t, roundFound)
	require.Nil(t, res, "not placed")
	latest, err := s.LatestRoundResult(ctx, regA)
	require.NoError(t, err)
	require.Equal(t, "week-1", latest.RoundID)
	latest, err = s.LatestRoundResult(ctx, regB)
	require.NoError(t, err)
	require.Nil(t, latest)

	_, _, err = s.PutRound(ctx, spec("week-1", start.Add(time.Minute)), roundChange(now))
	require.True(t, errors.Is(err, store.ErrRoundFinal), "%v", err)
	d, _, err = s.FinalRound(ctx, "week-1")
	require.NoError(t, err)
	require.Equal(t, start, d.Round.StartsAt, "left unchanged")

	// Paging: newest first, hasMore while another follows.
	for i, id := range []string{"week-2", "week-3"} {
		_, _, err := s.PutRound(ctx, spec(id, start.AddDate(0, 0, 7*(i+1))), roundChange(now))
		require.NoError(t, err)
		_, err = s.FinalizeRound(ctx, id, func(store.FinalizeInputs) (store.FinalizeOutcome, error) { return store.FinalizeOutcome{}, nil })
		require.NoError(t, err)
	}
	rounds, more, err = s.FinalRounds(ctx, 2, 0)
	require.NoError(t, err)
	require.True(t, more)
	require.Equal(t, "week-3", rounds[0].ID)
	require.Equal(t, "week-2", rounds[1].ID)
	rounds, more, err = s.FinalRounds(ctx, 2, 2)
	require.NoError(t, err)
	require.False(t, more)
	require.Equal(t, "week-1", rounds[0].ID)
}

// Finalizing queues a round.finalized delivery for each active subscriber
// that asked for it, through its agents filter, in the same transaction;
// none for one that did not ask.
func TestFinalizeRoundQueuesDeliveries(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	start := time.Date(2026, 5, 13, 0, 0, 0, 0, time.UTC)
	for _, sub := range []store.Subscriber{
		{ID: "sub-all", URL: "http://127.0.0.1:1/a", Secret: "whsec_x", Events: []string{store.EventRoundFinalized}, CreatedAt: start},
		{ID: "sub-b", URL: "http://127.0.0.1:1/b", Secret: "whsec_x", Events: []string{"daily", store.EventRoundFinalized},
			Agents: []string{regB}, CreatedAt: start},
		{ID: "sub-none", URL: "http://127.0.0.1:1/c", Secret: "whsec_x", Events: []string{"hourly"}, CreatedAt: start},
	} {
		require.NoError(t, s.AddSubscriber(ctx, sub))
	}
	_, _, err := s.PutRound(ctx, spec("r1", start), roundChange(start))
	require.NoError(t, err)
	out, err := s.FinalizeRound(ctx, "r1", func(in store.FinalizeInputs) (store.FinalizeOutcome, error) {
		return store.FinalizeOutcome{Results: []store.RoundResult{
			{RoundID: "r1", Rank: 1, STXAddress: regA, UnpricedTokens: []string{}, CalculatedAt: in.At},
			{RoundID: "r1", Rank: 2, STXAddress: regB, UnpricedTokens: []string{}, CalculatedAt: in.At},
		}}, nil
	})
	require.NoError(t, err)
	require.Equal(t, 2, out.Deliveries)
	bodies := map[string]store.RoundEvent{}
	rows, err := s.Pool().Query(ctx, `select subscriber_id, payload from deliveries where event = $1`, store.EventRoundFinalized)
	require.NoError(t, err)
	for rows.Next() {
		var id string
		var raw []byte
		require.NoError(t, rows.Scan(&id, &raw))
		var ev store.RoundEvent
		require.NoError(t, json.Unmarshal(raw, &ev))
		bodies[id] = ev
	}
	require.NoError(t, rows.Err())
	require.Len(t, bodies, 2)
	require.Len(t, bodies["sub-all"].Data.Results, 2)
	require.Len(t, bodies["sub-b"].Data.Results, 1)
	require.Equal(t, regB, bodies["sub-b"].Data.Results[0].STXAddress)
	require.Equal(t, "r1", bodies["sub-all"].Data.Round.ID)
}
