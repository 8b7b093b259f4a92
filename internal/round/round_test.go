package round_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/round"
	"github.com/pacer-dev/pacer/internal/store"
)

var t0 = time.Date(2026, 5, 13, 0, 0, 0, 0, time.UTC)

func open(id string, end time.Time, grace time.Duration) store.Round {
	return store.Round{ID: id, StartsAt: end.Add(-time.Hour), EndsAt: end, GraceEndsAt: end.Add(grace), Status: store.RoundOpen}
}

func ptr(v int64) *int64 { return &v }

func TestDecide(t *testing.T) {
	t.Parallel()
	a := open("a", t0, time.Hour)                // grace ends t0+1h
	b := open("b", t0.Add(time.Hour), time.Hour) // grace ends t0+2h
	for _, tc := range []struct {
		name         string
		give         []store.Round
		giveThrough  *int64
		giveNow      time.Time
		wantFinalize []string
		wantWait     *pacer.RoundWait
		wantNext     *time.Time
	}{
		{name: "nothing open", giveNow: t0},
		{name: "in grace", give: []store.Round{b, a}, giveThrough: ptr(t0.Unix() + 7200), giveNow: t0.Add(30 * time.Minute),
			wantWait: &pacer.RoundWait{Round: "a", Reason: pacer.WaitGrace, BehindSeconds: 1800}, wantNext: new(t0.Add(time.Hour))},
		{name: "past grace, complete", give: []store.Round{a, b}, giveThrough: ptr(t0.Unix()), giveNow: t0.Add(time.Hour),
			wantFinalize: []string{"a"}, wantWait: &pacer.RoundWait{Round: "b", Reason: pacer.WaitGrace, BehindSeconds: 3600},
			wantNext: new(t0.Add(2 * time.Hour))},
		{name: "past grace, completeThrough behind", give: []store.Round{a, b}, giveThrough: ptr(t0.Unix() - 90),
			giveNow: t0.Add(time.Hour), wantWait: &pacer.RoundWait{Round: "a", Reason: pacer.WaitCompleteThrough, BehindSeconds: 90},
			wantNext: new(t0.Add(time.Hour + round.WaitPoll))},
		{name: "completeThrough unknown", give: []store.Round{a}, giveNow: t0.Add(3 * time.Hour),
			wantWait: &pacer.RoundWait{Round: "a", Reason: pacer.WaitCompleteThrough}, wantNext: new(t0.Add(3*time.Hour + round.WaitPoll))},
		{name: "both past grace, one complete", give: []store.Round{a, b}, giveThrough: ptr(t0.Unix() + 1800), giveNow: t0.Add(5 * time.Hour),
			wantFinalize: []string{"a"}, wantWait: &pacer.RoundWait{Round: "b", Reason: pacer.WaitCompleteThrough, BehindSeconds: 1800},
			wantNext: new(t0.Add(5*time.Hour + round.WaitPoll))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := round.Decide(tc.give, tc.giveThrough, tc.giveNow)
			require.Equal(t, tc.wantFinalize, p.Finalize)
			require.Equal(t, tc.wantWait, p.Waiting)
			require.Equal(t, tc.wantNext, p.NextDueAt)
		})
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	good := store.RoundSpec{ID: "week-1", StartsAt: t0, EndsAt: t0.Add(time.Hour), GraceEndsAt: t0.Add(2 * time.Hour), MinVolumeUSD: 50, MinPricedTradeCount: 3}
	require.NoError(t, round.Check(good))
	for _, tc := range []struct {
		name      string
		give      func(*store.RoundSpec)
		wantField string
	}{
		{"empty id", func(s *store.RoundSpec) { s.ID = "" }, "id"},
		{"upper case", func(s *store.RoundSpec) { s.ID = "Week" }, "id"},
		{"65 characters", func(s *store.RoundSpec) { s.ID = string(make([]byte, 65)) }, "id"},
		{"end at start", func(s *store.RoundSpec) { s.EndsAt = s.StartsAt }, "endsAt"},
		{"end before start", func(s *store.RoundSpec) { s.EndsAt = s.StartsAt.Add(-time.Second) }, "endsAt"},
		{"grace before end", func(s *store.RoundSpec) { s.GraceEndsAt = s.EndsAt.Add(-time.Second) }, "grace"},
		{"negative volume floor", func(s *store.RoundSpec) { s.MinVolumeUSD = -1 }, "minVolumeUsd"},
		{"negative trades floor", func(s *store.RoundSpec) { s.MinPricedTradeCount = -1 }, "minPricedTradeCount"},
	} {
		s := good
		tc.give(&s)
		err := round.Check(s)
		var inv *round.InvalidError
		require.True(t, errors.As(err, &inv), "%s: %v", tc.name, err)
		require.Equal(t, tc.wantField, inv.Field, tc.name)
		require.ErrorIs(t, err, round.ErrInvalid)
	}
	s := good
	s.ID = strings.Repeat("a-", 32) // 64 characters
	require.NoError(t, round.Check(s))
}
