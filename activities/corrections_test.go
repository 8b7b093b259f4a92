package activities_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/rollup"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/webhook"
	"github.com/pacer-dev/pacer/internal/webhooktest"
)

// deliveryBody is a delivery's body as a subscriber reads it.
type deliveryBody struct {
	Type       string `json:"type"`
	Correction bool   `json:"correction"`
	Replaces   string `json:"replaces"`
	Data       struct {
		Period      string                     `json:"period"`
		PeriodStart time.Time                  `json:"periodStart"`
		PeriodEnd   time.Time                  `json:"periodEnd"`
		Complete    bool                       `json:"complete"`
		Tokens      map[string]json.RawMessage `json:"tokens"`
		Agents      map[string]json.RawMessage `json:"agents"`
		Competition json.RawMessage            `json:"competition"`
	} `json:"data"`
}

// rows turns a body's figures back into rollup rows, for checkRows.
func (b deliveryBody) rows(p rollup.Period) []store.Rollup {
	row := func(kind, subject string, data json.RawMessage) store.Rollup {
		return store.Rollup{Period: p.Kind, PeriodStart: p.Start, PeriodEnd: p.End, SubjectKind: kind, Subject: subject, Data: data}
	}
	out := []store.Rollup{row(rollup.KindCompetition, rollup.CompetitionSubject, b.Data.Competition)}
	for id, d := range b.Data.Tokens {
		out = append(out, row(rollup.KindToken, id, d))
	}
	for a, d := range b.Data.Agents {
		out = append(out, row(rollup.KindAgent, a, d))
	}
	return out
}

func parseBody(t *testing.T, raw []byte) deliveryBody {
	t.Helper()
	var b deliveryBody
	require.NoError(t, json.Unmarshal(raw, &b))
	return b
}

// payloadOf reads a delivery's stored payload.
func (f *rollupFixture) payloadOf(t *testing.T, id string) deliveryBody {
	t.Helper()
	d, _, found, err := f.st.DeliveryWithSecret(t.Context(), id)
	require.NoError(t, err)
	require.True(t, found, id)
	return parseBody(t, d.Payload)
}

// rollBack does what a chainhook rollback does to the ledger: the swap
// leaves swaps, and the UTC hour it was mined in is marked dirty.
func (f *rollupFixture) rollBack(t *testing.T, s swapRow) {
	t.Helper()
	tag, err := f.st.Pool().Exec(t.Context(), `delete from swaps where txid = $1`, s.txid)
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())
	f.markDirty(t, s.at, "rollback")
}

func (f *rollupFixture) markDirty(t *testing.T, at time.Time, reason string) {
	t.Helper()
	_, err := f.st.Pool().Exec(t.Context(), `
insert into rollup_dirty (hour_start, reason) values ($1, $2) on conflict (hour_start) do nothing`,
		at.UTC().Truncate(time.Hour), reason)
	require.NoError(t, err)
}

func (f *rollupFixture) dirtyMarks(t *testing.T) []time.Time {
	t.Helper()
	rows, err := f.st.Pool().Query(t.Context(), `select hour_start from rollup_dirty order by hour_start`)
	require.NoError(t, err)
	var out []time.Time
	for rows.Next() {
		var h time.Time
		require.NoError(t, rows.Scan(&h))
		out = append(out, h.UTC())
	}
	require.NoError(t, rows.Err())
	return out
}

// computedAt is when a period's competition row was last computed.
func (f *rollupFixture) computedAt(t *testing.T, p rollup.Period) time.Time {
	t.Helper()
	var at time.Time
	require.NoError(t, f.st.Pool().QueryRow(t.Context(), `
select computed_at from rollups where period = $1 and period_start = $2 and subject_kind = 'competition'`,
		p.Kind, p.Start).Scan(&at))
	return at
}

// A swap rolled back from an hour already delivered: the hour and its day
// are recomputed with the new figures (equal to the test's own exact
// computation without the swap), each subscriber of the hour and of the
// day gets exactly one correction carrying them, under a new id that names
// the delivery it replaces, signed and sent on the ladder like any other;
// periods the swap was not in get nothing. A run with no marks changes
// nothing, a second run sends no second correction, and a re-apply of the
// swap corrects the correction back to the original figures.
func TestRollupCorrectionsAfterRollback(t *testing.T) {
	t.Parallel()
	ny, err := rollup.LoadZone("America/New_York")
	require.NoError(t, err)
	f := newRollupFixture(t, fixtureOptions{zone: ny, ladder: webhook.Ladder{time.Second}})
	day := rollup.Period{Kind: rollup.Day,
		Start: time.Date(2026, 11, 10, 0, 0, 0, 0, ny).UTC(), End: time.Date(2026, 11, 11, 0, 0, 0, 0, ny).UTC()}
	w := simulateDay(7, day)
	f.load(t, w)

	// The swap to roll back: a successful one in an hour of the day other
	// than its last; "other" is another hour of the day with swaps.
	hourOf := func(at time.Time) rollup.Period {
		return rollup.Period{Kind: rollup.Hour, Start: at.UTC().Truncate(time.Hour), End: at.UTC().Truncate(time.Hour).Add(time.Hour)}
	}
	lastHour := rollup.Period{Kind: rollup.Hour, Start: day.End.Add(-time.Hour), End: day.End}
	var gone swapRow
	var hour, other rollup.Period
	for _, s := range w.swaps {
		h := hourOf(s.at)
		if s.status != "success" || h.Start.Before(day.Start) || !h.End.Before(lastHour.Start) {
			continue
		}
		if gone.txid == "" {
			gone, hour = s, h
		} else if !h.Start.Equal(hour.Start) {
			other = h
			break
		}
	}
	require.NotEmpty(t, gone.txid)
	require.False(t, other.Start.IsZero())
	after := world{obs: w.obs, swaps: slices.DeleteFunc(slices.Clone(w.swaps), func(s swapRow) bool { return s.txid == gone.txid })}
	_, total := w.volumes(hour)
	_, totalAfter := after.volumes(hour)
	require.Equal(t, total.swaps-1, totalAfter.swaps, "the oracle sees the rollback")

	// Subscribers: everything; hourly only, for another agent than the
	// rolled-back swap's (the competition totals still change); daily only.
	var otherAgent string
	for i := 1; i <= 5; i++ {
		if a := agentAddr(i); a != gone.sender {
			otherAgent = a
			break
		}
	}
	type subscriber struct {
		r      *webhooktest.Receiver
		sub    store.Subscriber
		agents []string
	}
	var subs []subscriber
	for _, s := range []struct {
		events []string
		agents []string
	}{{rollup.Events, nil}, {[]string{rollup.EventHourly}, []string{otherAgent}}, {[]string{rollup.EventDaily}, nil}} {
		r := webhooktest.New(webhooktest.Behaviour{})
		t.Cleanup(r.Close)
		sub := store.Subscriber{ID: webhook.NewSubscriberID(), URL: r.URL, Secret: webhook.NewSecret(), Events: s.events,
			Agents: s.agents, CreatedAt: day.Start}
		require.NoError(t, f.st.AddSubscriber(t.Context(), sub))
		r.SetSecret(sub.Secret)
		subs = append(subs, subscriber{r, sub, s.agents})
	}

	// The hours and the day computed, complete, and delivered.
	f.clock.Set(other.End.Add(time.Minute))
	f.rollup(t, hour.End.Add(time.Second))
	f.rollup(t, other.End.Add(time.Second))
	late := []obs{}
	for _, tok := range []string{tokSTX, tokSBTC, tokSTSTX, tokALEX, pegKey} {
		late = append(late, obs{tok, day.End.Add(3 * time.Minute), "2"})
	}
	f.addObservations(t, late)
	f.markSweptAt(t, day.End.Add(4*time.Minute))
	f.clock.Set(day.End.Add(5 * time.Minute))
	res := f.rollup(t, day.End.Add(5*time.Minute))
	require.True(t, res.Days[0].Start.Equal(day.Start) && res.Days[0].Complete)
	require.Empty(t, res.Dirty)
	require.Zero(t, res.Corrections)
	f.clock.Set(day.End.Add(10 * time.Minute))
	first := f.deliver(t)
	// Hourly: 3 hours × 2 subscribers; daily: the day × 2.
	require.Equal(t, 8, first.Emitted)
	require.Equal(t, 8, first.Delivered)
	sent := map[string]int{}
	for _, s := range subs {
		sent[s.sub.ID] = len(s.r.Arrivals())
	}
	require.Equal(t, map[string]int{subs[0].sub.ID: 4, subs[1].sub.ID: 3, subs[2].sub.ID: 1}, sent)
	untouched := []rollup.Period{hour, other, day}
	stamps := make([]time.Time, len(untouched))
	for i, p := range untouched {
		stamps[i] = f.computedAt(t, p)
	}

	// A run with no marks changes nothing: no period recomputed but its
	// own hour, no correction, nothing to deliver.
	f.clock.Set(day.End.Add(20 * time.Minute))
	quiet := f.rollup(t, day.End.Add(20*time.Minute))
	require.Empty(t, quiet.Dirty)
	require.Zero(t, quiet.Corrections)
	for i, p := range untouched {
		require.True(t, stamps[i].Equal(f.computedAt(t, p)), "%s %s untouched", p.Kind, p.Start)
	}
	require.Zero(t, f.deliver(t).Emitted)

	// The rollback.
	f.rollBack(t, gone)
	require.Equal(t, []time.Time{hour.Start}, f.dirtyMarks(t))
	f.clock.Set(day.End.Add(30 * time.Minute))
	res = f.rollup(t, day.End.Add(30*time.Minute))
	require.Equal(t, []time.Time{hour.Start}, utc(res.Dirty))
	require.Empty(t, f.dirtyMarks(t), "the mark handled is cleared")
	require.Contains(t, utc(res.Hours), hour.Start)
	require.True(t, slices.ContainsFunc(res.Days, func(d pacer.RollupDay) bool { return d.Start.Equal(day.Start) && d.Complete }),
		"the day holding the hour is recomputed, and stays complete")
	require.Equal(t, 4, res.Corrections, "hourly × 2 and daily × 2 subscribers")
	checkPeriod(t, f.st, after, hour)
	checkPeriod(t, f.st, after, day)
	checkPeriod(t, f.st, w, other)
	require.True(t, stamps[1].Equal(f.computedAt(t, other)), "the other hour is not recomputed")

	// One correction per subscriber and period, carrying the new figures.
	type correction struct {
		p      rollup.Period
		agents []string
	}
	wantCorrections := map[string]correction{}
	for _, s := range subs {
		for _, e := range s.sub.Events {
			p := hour
			if e == rollup.EventDaily {
				p = day
			}
			orig := webhook.DeliveryID(s.sub.ID, e, p.Start)
			id := orig + "-c1"
			require.True(t, webhook.ValidDeliveryID(id))
			wantCorrections[id] = correction{p, s.agents}
			b := f.payloadOf(t, id)
			require.Equal(t, "rollup."+e, b.Type)
			require.True(t, b.Correction)
			require.Equal(t, orig, b.Replaces)
			require.True(t, b.Data.PeriodStart.Equal(p.Start) && b.Data.PeriodEnd.Equal(p.End))
			checkRows(t, after, p, b.rows(p), s.agents)
			if s.agents != nil {
				require.Subset(t, s.agents, keys(b.Data.Agents))
			}
			// The original stays as it was sent, pullable.
			ob := f.payloadOf(t, orig)
			require.False(t, ob.Correction)
			checkRows(t, w, p, ob.rows(p), s.agents)
		}
	}
	ds := mustDeliveries(t, f.st)
	var corrections int
	for _, d := range ds {
		if d.Replaces != "" {
			corrections++
			_, ok := wantCorrections[d.ID]
			require.True(t, ok, "an unexpected correction %s", d.ID)
			require.Equal(t, store.DeliveryPending, d.Status)
		}
	}
	require.Equal(t, len(wantCorrections), corrections)

	// Delivered like any other: signed, once each.
	second := f.deliver(t)
	require.Zero(t, second.Emitted, "corrections are made by the rollup run, not here")
	require.Equal(t, 4, second.Delivered)
	for _, s := range subs {
		arr := s.r.Arrivals()
		fresh := arr[sent[s.sub.ID]:]
		require.Len(t, fresh, len(s.sub.Events), s.sub.ID)
		for _, a := range fresh {
			require.NoError(t, a.VerifyErr)
			require.True(t, a.Acked)
			c, ok := wantCorrections[a.ID]
			require.True(t, ok, a.ID)
			b := parseBody(t, a.Body)
			require.True(t, b.Correction)
			checkRows(t, after, c.p, b.rows(c.p), s.agents)
		}
		require.Empty(t, s.r.Duplicates())
		sent[s.sub.ID] = len(arr)
	}

	// A second run: nothing marked, no second correction.
	f.clock.Set(day.End.Add(40 * time.Minute))
	again := f.rollup(t, day.End.Add(40*time.Minute))
	require.Zero(t, again.Corrections)
	require.Empty(t, again.Dirty)
	idle := f.deliver(t)
	require.Zero(t, idle.Emitted+idle.Attempted)

	// The hour marked again without a change (a replayed rollback): the
	// figures are recomputed, equal, and nobody hears of it.
	f.markDirty(t, gone.at, "rollback")
	f.clock.Set(day.End.Add(50 * time.Minute))
	replay := f.rollup(t, day.End.Add(50*time.Minute))
	require.Equal(t, []time.Time{hour.Start}, utc(replay.Dirty))
	require.Zero(t, replay.Corrections)

	// The re-apply restores the swap: the figures changed again, so each
	// correction is corrected in turn, back to the original figures.
	f.insertSwaps(t, gone)
	f.markDirty(t, gone.at, "reapply")
	f.clock.Set(day.End.Add(55 * time.Minute))
	back := f.rollup(t, day.End.Add(55*time.Minute))
	require.Equal(t, 4, back.Corrections)
	checkPeriod(t, f.st, w, hour)
	checkPeriod(t, f.st, w, day)
	for id, c := range wantCorrections {
		b := f.payloadOf(t, strings.TrimSuffix(id, "-c1")+"-c2")
		require.Equal(t, id, b.Replaces)
		require.True(t, b.Correction)
		checkRows(t, w, c.p, b.rows(c.p), c.agents)
	}
	third := f.deliver(t)
	require.Equal(t, 4, third.Delivered)
	for _, s := range subs {
		require.Len(t, s.r.Arrivals(), sent[s.sub.ID]+len(s.sub.Events))
		require.Empty(t, s.r.Duplicates())
	}
	t.Logf("figures: rollback of …%s in hour %s (day %s, America/New_York): %d corrections, each equal to the exact oracle; re-apply: %d more",
		gone.txid[len(gone.txid)-6:], hour.Start.Format(time.RFC3339), day.Start.Format(time.RFC3339), res.Corrections, back.Corrections)
}
