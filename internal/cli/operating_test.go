package cli

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/operate"
	"github.com/pacer-dev/pacer/internal/rollup"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/internal/webhook"
)

// The CLI's subscriber lifecycle runs the operations the admin API runs
// (internal/operate): update, disable, enable, rotate-secret and recover
// change the subscriber as the API would, and each is audited as cli.
func TestSubscriberLifecycleCommands(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	db := []string{"--database-url", st.Pool().Config().ConnString(), "--secret-overlap", "2h"}
	pacer := func(args ...string) (int, string, string) {
		return run(append(append([]string{}, db...), args...)...)
	}
	code, out, errOut := pacer("subscribers", "add", "--url", "https://hooks.example/p", "--events", "hourly")
	require.Equal(t, 0, code, errOut)
	m := regexp.MustCompile(`subscriber (sub_[a-z2-7]{16}) added.*\nsigning secret: (whsec_\S+)\n`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	id, secret := m[1], m[2]

	code, _, errOut = pacer("subscribers", "update", id, "--tokens", "stx", "--events", "hourly,daily")
	require.Equal(t, 0, code, errOut)
	sub, _, err := st.Subscriber(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, []string{"stx"}, sub.Tokens)
	require.Equal(t, []string{"hourly", "daily"}, sub.Events)
	code, _, errOut = pacer("subscribers", "update", id, "--tokens", "")
	require.Equal(t, 0, code, errOut)
	sub, _, _ = st.Subscriber(t.Context(), id)
	require.Nil(t, sub.Tokens, "an empty --tokens means all")

	// An exhausted delivery to recover once the subscriber is enabled again.
	start := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	did := webhook.DeliveryID(id, rollup.EventHourly, start)
	_, err = st.Pool().Exec(t.Context(), `
insert into deliveries (id, subscriber_id, event, period_start, period_end, payload, status, attempts, created_at)
values ($1, $2, 'hourly', $3, $4, '{}', 'exhausted', 4, now())`, did, id, start, start.Add(time.Hour))
	require.NoError(t, err)

	code, _, errOut = pacer("subscribers", "disable", id, "--reason", "endpoint moving")
	require.Equal(t, 0, code, errOut)
	code, _, errOut = pacer("deliveries", "recover", "--subscriber", id, "--from", "2026-11-01T00:00:00Z")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "enable it first")
	code, _, errOut = pacer("subscribers", "enable", id)
	require.Equal(t, 0, code, errOut)
	code, out, errOut = pacer("deliveries", "recover", "--subscriber", id, "--from", "2026-11-01T00:00:00Z", "--json")
	require.Equal(t, 0, code, errOut)
	var rec store.Recovered
	require.NoError(t, json.Unmarshal([]byte(out), &rec))
	require.Equal(t, []string{did}, rec.IDs)

	code, out, errOut = pacer("subscribers", "rotate-secret", id)
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `new signing secret of `+id+`: whsec_\S+`, out)
	sub, _, _ = st.Subscriber(t.Context(), id)
	require.Equal(t, secret, sub.PreviousSecret, "the old secret stays valid")
	require.WithinDuration(t, time.Now().Add(2*time.Hour), *sub.PreviousSecretUntil, time.Minute, "for --secret-overlap")

	code, out, errOut = pacer("audit", "--since", "1h", "--json")
	require.Equal(t, 0, code, errOut)
	var entries []store.AuditEntry
	require.NoError(t, json.Unmarshal([]byte(out), &entries))
	var actions []string
	for _, e := range entries {
		require.Equal(t, "cli", e.Actor)
		actions = append(actions, e.Action)
	}
	require.Equal(t, []string{"subscriber.rotate_secret", "deliveries.recover", "subscriber.enable", operate.ActionRefused, "subscriber.disable",
		"subscriber.update", "subscriber.update", "subscriber.create"}, actions, "the recover refused while disabled too")
	require.NotContains(t, out, secret)
	code, out, _ = pacer("audit")
	require.Equal(t, 0, code)
	require.Contains(t, out, "subscriber.rotate_secret")
}

// A command refused by the operation it runs (its input, a target that
// does not exist, a conflict) keeps an audit entry as cli, naming the
// command and the reason (issue 41.13; before, only what was done was
// audited). A read refused for its flags is not a change.
func TestRefusedCommandsAreAudited(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	db := []string{"--database-url", st.Pool().Config().ConnString()}
	pacer := func(args ...string) int {
		code, _, _ := run(append(append([]string{}, db...), args...)...)
		return code
	}
	require.Equal(t, 1, pacer("subscribers", "remove", "sub_aaaaaaaaaaaaaaaa"), "not found")
	require.Equal(t, 2, pacer("subscribers", "add", "--url", "http://127.0.0.1:9/hook"))
	require.Equal(t, 2, pacer("audit", "--limit", "5000"))
	entries, err := st.AuditLog(t.Context(), store.AuditQuery{Limit: 10})
	require.NoError(t, err)
	var got []string
	for _, e := range entries {
		require.Equal(t, operate.ActionRefused, e.Action)
		require.Equal(t, "cli", e.Actor)
		var r operate.Refusal
		require.NoError(t, json.Unmarshal(e.After, &r))
		require.NotEmpty(t, r.Error)
		got = append(got, e.Target)
	}
	require.Equal(t, []string{"pacer subscribers add", "pacer subscribers remove"}, got)
}
