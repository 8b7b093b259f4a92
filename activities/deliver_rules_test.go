package activities_test

import (
	"encoding/json"
	"io"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/activities"
	"github.com/pacer-dev/pacer/internal/metrics"
	"github.com/pacer-dev/pacer/internal/rollup"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/webhook"
	"github.com/pacer-dev/pacer/internal/webhooktest"
)

// addPeriod writes a period's competition row, as the rollup task would:
// what makes its deliveries due.
func (f *rollupFixture) addPeriod(t *testing.T, p rollup.Period, complete bool) {
	t.Helper()
	_, err := f.st.Pool().Exec(t.Context(), `
insert into rollups (period, period_start, period_end, subject_kind, subject, data, complete, computed_at)
values ($1, $2, $3, 'competition', 'all', '{"swaps":0}', $4, $3)`, p.Kind, p.Start, p.End, complete)
	require.NoError(t, err)
}

// subscribeMany registers n subscribers of one receiver, sharing its secret.
func (f *rollupFixture) subscribeMany(t *testing.T, r *webhooktest.Receiver, n int, at time.Time, events ...string) []store.Subscriber {
	t.Helper()
	secret := webhook.NewSecret()
	r.SetSecret(secret)
	subs := make([]store.Subscriber, n)
	for i := range subs {
		subs[i] = store.Subscriber{ID: webhook.NewSubscriberID(), URL: r.URL, Secret: secret, Events: events, CreatedAt: at}
		require.NoError(t, f.st.AddSubscriber(t.Context(), subs[i]))
	}
	return subs
}

// A run attempts at most 500 deliveries, read by keyset pages: the rest
// go at the next run, which is asked for soon; none is skipped or sent
// twice however the pages shift as rows are delivered.
func TestDeliverAttemptCap(t *testing.T) {
	t.Parallel()
	f := newRollupFixture(t, fixtureOptions{ladder: webhook.Ladder{time.Second}})
	hour := rollup.HourBefore(time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC))
	f.clock.Set(hour.End.Add(time.Second))
	r := webhooktest.New(webhooktest.Behaviour{})
	t.Cleanup(r.Close)
	f.subscribeMany(t, r, 620, hour.Start, rollup.EventHourly)
	f.addPeriod(t, hour, true)

	first := f.deliver(t)
	require.Equal(t, 620, first.Emitted)
	require.Equal(t, activities.MaxAttemptsPerRun, first.Attempted)
	require.True(t, first.Capped)
	require.NotNil(t, first.NextDueAt)
	require.WithinDuration(t, f.clock.Now().Add(time.Second), *first.NextDueAt, time.Second, "soon, at least a second ahead")
	require.True(t, first.NextDueAt.After(f.clock.Now()))
	require.Equal(t, 120, first.Pending)

	second := f.deliver(t)
	require.Equal(t, 120, second.Attempted)
	require.False(t, second.Capped)
	require.Nil(t, second.NextDueAt)
	byID := r.ByID()
	require.Len(t, byID, 620)
	for id, as := range byID {
		require.Len(t, as, 1, id)
		require.NoError(t, as[0].VerifyErr)
	}
}

// A run makes at most 50 retries; first attempts still go.
func TestDeliverRetryCap(t *testing.T) {
	t.Parallel()
	// Steps over a second: a run waits for what falls due within one.
	f := newRollupFixture(t, fixtureOptions{ladder: webhook.Ladder{5 * time.Second, 5 * time.Second}})
	hour := rollup.HourBefore(time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC))
	f.clock.Set(hour.End.Add(time.Second))
	bad := webhooktest.New(webhooktest.Behaviour{Mode: webhooktest.ServerError})
	t.Cleanup(bad.Close)
	f.subscribeMany(t, bad, 60, hour.Start, rollup.EventHourly)
	f.addPeriod(t, hour, true)

	first := f.deliver(t)
	require.Equal(t, 60, first.Attempted)
	require.Zero(t, first.Retries)
	require.Equal(t, 60, first.Failed)

	// A new hour's first attempts come along with the retries.
	next := rollup.Period{Kind: rollup.Hour, Start: hour.End, End: hour.End.Add(time.Hour)}
	f.clock.Set(next.End.Add(time.Second))
	f.addPeriod(t, next, true)
	second := f.deliver(t)
	require.Equal(t, activities.MaxRetriesPerRun, second.Retries)
	require.Equal(t, 60+activities.MaxRetriesPerRun, second.Attempted, "first attempts are not held by the retry cap")
	require.True(t, second.Capped)
	require.NotNil(t, second.NextDueAt)

	third := f.deliver(t)
	require.Equal(t, 10, third.Retries)
	require.Equal(t, 10, third.Attempted)
}

// A subscriber with a daily delivery still retrying gets no new daily one
// until it is delivered or exhausted; another subscriber is not held.
func TestDeliverDailyWaitsForPendingRetry(t *testing.T) {
	t.Parallel()
	f := newRollupFixture(t, fixtureOptions{ladder: webhook.Ladder{2 * time.Second}})
	d1 := rollup.Period{Kind: rollup.Day, Start: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)}
	d2 := rollup.Period{Kind: rollup.Day, Start: d1.End, End: d1.End.Add(24 * time.Hour)}
	f.clock.Set(d1.End.Add(time.Minute))
	flaky := webhooktest.New(webhooktest.Behaviour{Mode: webhooktest.ServerError})
	t.Cleanup(flaky.Close)
	fine := webhooktest.New(webhooktest.Behaviour{})
	t.Cleanup(fine.Close)
	slow := f.subscribe(t, flaky, d1.Start, rollup.EventDaily)
	ok := f.subscribe(t, fine, d1.Start, rollup.EventDaily)

	f.addPeriod(t, d1, false)
	require.Zero(t, f.deliver(t).Emitted, "an incomplete day is not delivered")
	_, err := f.st.Pool().Exec(t.Context(), `update rollups set complete = true where period = 'day'`)
	require.NoError(t, err)
	res := f.deliver(t)
	require.Equal(t, 2, res.Emitted)
	require.Equal(t, 1, res.Failed)

	// The next day completes while the first is still retrying for one.
	f.clock.Set(d2.End.Add(time.Minute))
	f.addPeriod(t, d2, true)
	res = f.deliver(t)
	require.Equal(t, 1, res.Emitted)
	ids := map[string]bool{}
	for _, d := range mustDeliveries(t, f.st) {
		ids[d.ID] = true
	}
	require.True(t, ids[webhook.DeliveryID(ok.ID, rollup.EventDaily, d2.Start)], "a healthy subscriber is not held")
	require.False(t, ids[webhook.DeliveryID(slow.ID, rollup.EventDaily, d2.Start)], "no new daily while one is retrying")
	// The retry was due too (the clock moved a day): it failed again, on
	// the ladder's last step, so the delivery is exhausted...
	d, _, _, err := f.st.DeliveryWithSecret(t.Context(), webhook.DeliveryID(slow.ID, rollup.EventDaily, d1.Start))
	require.NoError(t, err)
	require.Equal(t, store.DeliveryExhausted, d.Status)
	// ...and the next run emits the held day.
	res = f.deliver(t)
	require.Equal(t, 1, res.Emitted)
	d, _, found, err := f.st.DeliveryWithSecret(t.Context(), webhook.DeliveryID(slow.ID, rollup.EventDaily, d2.Start))
	require.NoError(t, err)
	require.True(t, found)
}

func mustDeliveries(t *testing.T, st *store.Store) []store.Delivery {
	t.Helper()
	ds, err := st.Deliveries(t.Context(), "", 1000)
	require.NoError(t, err)
	return ds
}

// A worker killed between a POST and its record leaves the delivery
// claimed: no run sends it while the lease holds, and once it lapses the
// next run sends it again under the same webhook-id (the receiver's key to
// drop the repeat), and records it once.
func TestDeliverAfterCrashBetweenPostAndRecord(t *testing.T) {
	t.Parallel()
	f := newRollupFixture(t, fixtureOptions{ladder: webhook.Ladder{time.Second}, deliveryTimeout: time.Second})
	hour := rollup.HourBefore(time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC))
	f.clock.Set(hour.End.Add(time.Second))
	r := webhooktest.New(webhooktest.Behaviour{})
	t.Cleanup(r.Close)
	sub := f.subscribe(t, r, hour.Start, rollup.EventHourly)
	f.addPeriod(t, hour, true)
	id := webhook.DeliveryID(sub.ID, rollup.EventHourly, hour.Start)

	// The run that died: it emitted, claimed and POSTed, then nothing.
	_, err := f.st.EmitDeliveries(t.Context(), rollup.EventHourly, f.clock.Now(), hour.Start)
	require.NoError(t, err)
	now := f.clock.Now()
	due, err := f.st.DueDeliveries(t.Context(), store.DueQuery{Now: now, Limit: 10})
	require.NoError(t, err)
	require.Len(t, due, 1)
	lease := time.Second + 30*time.Second // the attempt timeout and the lease margin
	claimed, err := f.st.ClaimDeliveries(t.Context(), due, now, now.Add(lease))
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	out := webhook.NewSender(webhook.SenderOptions{AllowPrivate: true}).Send(t.Context(), webhook.Message{
		ID: claimed[0].ID, URL: claimed[0].URL, Secret: claimed[0].Secret, Body: claimed[0].Body})
	require.Equal(t, webhook.Delivered, out.Result)

	res := f.deliver(t)
	require.Zero(t, res.Attempted, "the lease holds it")
	require.NotNil(t, res.NextDueAt, "it is still due: wake soon")

	f.clock.Set(now.Add(lease + time.Second))
	res = f.deliver(t)
	require.Equal(t, 1, res.Delivered)
	as := r.ByID()[id]
	require.Len(t, as, 2, "at least once: the same delivery twice")
	require.Equal(t, as[0].Body, as[1].Body, "the same bytes")
	for _, a := range as {
		require.NoError(t, a.VerifyErr)
	}
	d, _, _, err := f.st.DeliveryWithSecret(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, store.DeliveryDelivered, d.Status)
	require.Equal(t, 1, d.Attempts, "recorded once")
}

// A subscriber's filters narrow the tokens and agents it gets; the
// competition totals always come along.
func TestDeliverFilters(t *testing.T) {
	t.Parallel()
	f := newRollupFixture(t, fixtureOptions{})
	day := rollup.Period{Kind: rollup.Day, Start: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)}
	f.load(t, simulateDay(5, day))
	f.clock.Set(day.End.Add(time.Second))
	r := webhooktest.New(webhooktest.Behaviour{})
	t.Cleanup(r.Close)
	secret := webhook.NewSecret()
	r.SetSecret(secret)
	all := store.Subscriber{ID: webhook.NewSubscriberID(), URL: r.URL, Secret: secret, Events: []string{rollup.EventHourly}, CreatedAt: day.Start}
	some := all
	some.ID, some.Tokens, some.Agents = webhook.NewSubscriberID(), []string{tokSTX}, []string{agentAddr(2)}
	require.NoError(t, f.st.AddSubscriber(t.Context(), all))
	require.NoError(t, f.st.AddSubscriber(t.Context(), some))
	f.rollup(t, day.End.Add(time.Second))
	res := f.deliver(t)
	require.Equal(t, 2, res.Delivered)

	type payload struct {
		Data struct {
			Tokens      map[string]json.RawMessage `json:"tokens"`
			Agents      map[string]json.RawMessage `json:"agents"`
			Competition json.RawMessage            `json:"competition"`
		} `json:"data"`
	}
	read := func(id string) payload {
		as := r.ByID()[id]
		require.Len(t, as, 1)
		var p payload
		require.NoError(t, json.Unmarshal(as[0].Body, &p))
		return p
	}
	hour := rollup.HourBefore(day.End)
	full := read(webhook.DeliveryID(all.ID, rollup.EventHourly, hour.Start))
	narrow := read(webhook.DeliveryID(some.ID, rollup.EventHourly, hour.Start))
	require.Greater(t, len(full.Data.Tokens), 1)
	require.Equal(t, []string{tokSTX}, keys(narrow.Data.Tokens))
	require.Subset(t, keys(full.Data.Agents), keys(narrow.Data.Agents))
	for a := range narrow.Data.Agents {
		require.Equal(t, agentAddr(2), a)
	}
	require.JSONEq(t, string(full.Data.Competition), string(narrow.Data.Competition))
	require.JSONEq(t, string(full.Data.Tokens[tokSTX]), string(narrow.Data.Tokens[tokSTX]))
}

func keys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// The deliver task's metrics: attempts by result, the delay from the
// period's end, and (read from Postgres at each scrape) deliveries by
// status.
func TestDeliverMetrics(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	f := newRollupFixture(t, fixtureOptions{ladder: webhook.Ladder{time.Second}, metrics: m})
	require.NoError(t, m.WatchStore(f.st, f.acts.Catalog, f.acts.Budget))
	hour := rollup.HourBefore(time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC))
	f.clock.Set(hour.End.Add(3 * time.Second))
	ok := webhooktest.New(webhooktest.Behaviour{})
	t.Cleanup(ok.Close)
	gone := webhooktest.New(webhooktest.Behaviour{Mode: webhooktest.Gone})
	t.Cleanup(gone.Close)
	f.subscribe(t, ok, hour.Start, rollup.EventHourly)
	f.subscribe(t, gone, hour.Start, rollup.EventHourly)
	f.addPeriod(t, hour, true)
	f.deliver(t)

	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	resp, err := srv.Client().Get(srv.URL)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	sample := func(series string) float64 {
		mm := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(string(body))
		require.NotNil(t, mm, "no %s in the scrape", series)
		v, err := strconv.ParseFloat(mm[1], 64)
		require.NoError(t, err)
		return v
	}
	require.Equal(t, 1.0, sample(`pacer_delivery_attempts_total{result="delivered",retry="false"}`))
	require.Equal(t, 1.0, sample(`pacer_delivery_attempts_total{result="gone",retry="false"}`))
	require.Equal(t, 1.0, sample(`pacer_delivery_delay_seconds_count`))
	require.InDelta(t, 3, sample(`pacer_delivery_delay_seconds_sum`), 2, "delivered about 3 s after the hour's end")
	require.Equal(t, 1.0, sample(`pacer_deliveries{status="delivered"}`))
	require.Equal(t, 1.0, sample(`pacer_deliveries{status="exhausted"}`))
	require.Equal(t, 0.0, sample(`pacer_deliveries{status="pending"}`))
	require.Equal(t, 1.0, sample(`pacer_task_runs_total{task="deliver"}`))
}
