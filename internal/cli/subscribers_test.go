package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/rollup"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/internal/webhook"
	"github.com/pacer-dev/pacer/internal/webhooktest"
)

// The subscriber and delivery commands against a real database and a real
// receiver: the secret is printed once and verifies the test event's
// signature; list never shows it; a 410 disables; redeliver puts a
// delivery back in the due set under its id.
func TestSubscribersAndDeliveries(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	// The store's own URL: its private schema.
	db := []string{"--database-url", st.Pool().Config().ConnString()}
	pacer := func(args ...string) (int, string, string) {
		return run(append(append([]string{}, db...), args...)...)
	}

	r := webhooktest.New(webhooktest.Behaviour{})
	t.Cleanup(r.Close)
	// A loopback receiver is refused unless private addresses are allowed.
	code, _, errOut := pacer("subscribers", "add", "--url", r.URL, "--events", "daily")
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "not a public address")
	db = append(db, "--webhook-allow-private")
	code, out, errOut := pacer("subscribers", "add", "--url", r.URL+"?token=t0ps3cret", "--events", "daily", "--tokens", "stx, stx")
	require.Equal(t, 0, code, errOut)
	m := regexp.MustCompile(`subscriber (sub_[a-z2-7]{16}) added \(daily\).*\nsigning secret: (whsec_\S+)\n`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	id, secret := m[1], m[2]
	require.NotContains(t, out, "t0ps3cret", "the URL's query is not echoed")
	r.SetSecret(secret)

	sub, found, err := st.Subscriber(t.Context(), id)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, []string{rollup.EventDaily}, sub.Events)
	require.Equal(t, []string{"stx"}, sub.Tokens)
	require.Nil(t, sub.Agents, "no filter")

	for _, args := range [][]string{{"subscribers", "list"}, {"subscribers", "list", "--json"}} {
		code, out, _ = pacer(args...)
		require.Equal(t, 0, code)
		require.Contains(t, out, id)
		require.NotContains(t, out, secret, "the secret is never shown again")
		require.NotContains(t, out, "t0ps3cret")
	}

	code, out, errOut = pacer("subscribers", "test", id)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "answered HTTP 204")
	arr := r.Arrivals()
	require.Len(t, arr, 1)
	require.NoError(t, arr[0].VerifyErr, "the printed secret verifies the signature")
	require.True(t, strings.HasPrefix(arr[0].ID, "test_"))

	// A delivery to list and redeliver.
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	did := webhook.DeliveryID(id, rollup.EventDaily, start)
	_, err = st.Pool().Exec(t.Context(), `
insert into deliveries (id, subscriber_id, event, period_start, period_end, payload, status, attempts, created_at, last_status, last_error)
values ($1, $2, 'daily', $3, $4, '{}', 'exhausted', 6, now(), 503, 'HTTP 503')`, did, id, start, start.Add(24*time.Hour))
	require.NoError(t, err)
	code, out, _ = pacer("deliveries", "list", "--status", "exhausted")
	require.Equal(t, 0, code)
	require.Contains(t, out, did)
	require.Contains(t, out, "HTTP 503")
	code, out, _ = pacer("deliveries", "list", "--status", "delivered", "--json")
	require.Equal(t, 0, code)
	var none []store.Delivery
	require.NoError(t, json.Unmarshal([]byte(out), &none))
	require.Empty(t, none)

	code, out, errOut = pacer("--temporal-address", "127.0.0.1:1", "deliveries", "redeliver", did)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "is due again")
	d, _, found, err := st.DeliveryWithSecret(t.Context(), did)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, store.DeliveryPending, d.Status)
	require.Zero(t, d.Attempts, "a fresh ladder")
	require.NotNil(t, d.NextAttemptAt)

	// A 410 to the test disables the subscriber; redeliver then refuses.
	gone := webhooktest.New(webhooktest.Behaviour{Mode: webhooktest.Gone})
	t.Cleanup(gone.Close)
	_, err = st.Pool().Exec(t.Context(), `update subscribers set url = $2 where id = $1`, id, gone.URL)
	require.NoError(t, err)
	code, _, errOut = pacer("subscribers", "test", id)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "subscriber disabled")
	sub, _, err = st.Subscriber(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, store.SubscriberDisabled, sub.Status)
	code, _, errOut = pacer("--temporal-address", "127.0.0.1:1", "deliveries", "redeliver", did)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "disabled")

	code, out, _ = pacer("subscribers", "remove", id)
	require.Equal(t, 0, code)
	require.Contains(t, out, "removed")
	code, out, errOut = pacer("subscribers", "remove", id)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "removed", "removing twice changes nothing")
	_, _, found, err = st.DeliveryWithSecret(t.Context(), did)
	require.NoError(t, err)
	require.True(t, found, "its deliveries are kept")
	code, out, _ = pacer("subscribers", "list")
	require.Equal(t, 0, code)
	require.NotContains(t, out, id, "a removed subscriber is not listed")
	code, _, errOut = pacer("subscribers", "remove", "sub_aaaaaaaaaaaaaaaa")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "not found")

	// Every change above is in the audit log, the CLI's as cli, the 410's
	// as pacer, the refused ones too (issue 41.13), and never with a
	// secret.
	code, out, errOut = pacer("audit", "--json")
	require.Equal(t, 0, code, errOut)
	var entries []store.AuditEntry
	require.NoError(t, json.Unmarshal([]byte(out), &entries))
	var got []string
	for _, e := range entries {
		got = append(got, e.Actor+" "+e.Action)
	}
	require.Equal(t, []string{"cli refused", "cli subscriber.delete", "cli refused", "pacer subscriber.disable", "cli delivery.redeliver",
		"cli subscriber.create", "cli refused"}, got)
	require.NotContains(t, out, secret)
	require.NotContains(t, out, "t0ps3cret")
}
