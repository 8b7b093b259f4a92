package activities_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/rollup"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/webhook"
	"github.com/pacer-dev/pacer/internal/webhooktest"
)

// deliver runs the Deliver activity the way a worker does, as its own
// occurrence.
func (f *rollupFixture) deliver(t *testing.T) pacer.DeliverResult {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(f.acts)
	v, err := env.ExecuteActivity(f.acts.Deliver, pacer.DeliverInput{
		Occurrence: pacer.Occurrence{Task: pacer.TaskDeliver, NominalAt: f.clock.Now()},
	})
	require.NoError(t, err)
	var res pacer.DeliverResult
	require.NoError(t, v.Get(&res))
	return res
}

// subscribe registers a subscriber for r, created at `at`, and hands r the
// secret.
func (f *rollupFixture) subscribe(t *testing.T, r *webhooktest.Receiver, at time.Time, events ...string) store.Subscriber {
	t.Helper()
	if len(events) == 0 {
		events = rollup.Events
	}
	sub := store.Subscriber{ID: webhook.NewSubscriberID(), URL: r.URL, Secret: webhook.NewSecret(), PullToken: webhook.NewPullToken(),
		Events: events, CreatedAt: at}
	require.NoError(t, f.st.AddSubscriber(t.Context(), sub))
	r.SetSecret(sub.Secret)
	return sub
}

// An hour's rollups reach a subscriber once, signed, under the id derived
// from (subscriber, event, period), with the period's figures; nothing is
// left pending, so the task need not wake.
func TestDeliverHourly(t *testing.T) {
	t.Parallel()
	f := newRollupFixture(t, fixtureOptions{ladder: webhook.Ladder{time.Second}})
	hourEnd := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	f.clock.Set(hourEnd.Add(2 * time.Second))
	r := webhooktest.New(webhooktest.Behaviour{})
	t.Cleanup(r.Close)
	sub := f.subscribe(t, r, hourEnd.Add(-30*time.Minute), rollup.EventHourly)

	none := f.deliver(t)
	require.Zero(t, none.Emitted, "no rollup yet, nothing to deliver")
	require.Nil(t, none.NextDueAt)

	f.rollup(t, hourEnd.Add(time.Second))
	res := f.deliver(t)
	require.Equal(t, 1, res.Emitted)
	require.Equal(t, 1, res.Delivered)
	require.Nil(t, res.NextDueAt, "nothing pending: the task sleeps")

	arr := r.Arrivals()
	require.Len(t, arr, 1)
	require.NoError(t, arr[0].VerifyErr)
	require.True(t, arr[0].Acked)
	require.Equal(t, webhook.DeliveryID(sub.ID, rollup.EventHourly, hourEnd.Add(-time.Hour)), arr[0].ID)
	var body struct {
		Type string `json:"type"`
		Data struct {
			Period      string          `json:"period"`
			PeriodStart time.Time       `json:"periodStart"`
			PeriodEnd   time.Time       `json:"periodEnd"`
			Competition json.RawMessage `json:"competition"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(arr[0].Body, &body))
	require.Equal(t, "rollup.hourly", body.Type)
	require.Equal(t, rollup.Hour, body.Data.Period)
	require.True(t, body.Data.PeriodEnd.Equal(hourEnd))
	require.JSONEq(t, `{"swaps":0,"volumeUsd":0,"unpriced":0,"tokensTraded":[],"activeAgents":0}`, string(body.Data.Competition))

	again := f.deliver(t)
	require.Zero(t, again.Emitted+again.Attempted, "delivered once")
	require.Len(t, r.Arrivals(), 1)
}
