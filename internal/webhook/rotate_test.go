package webhook_test

import (
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/webhook"
)

// During a rotation's overlap a message carries two signatures, and the
// standard-webhooks library verifies it with the old secret and with the
// new one alike; a third secret still fails. Without a previous secret
// there is one signature.
func TestSignDuringRotation(t *testing.T) {
	t.Parallel()
	oldSecret, newSecret, other := webhook.NewSecret(), webhook.NewSecret(), webhook.NewSecret()
	m := webhook.Message{ID: "msg_1", Secret: newSecret, PreviousSecret: oldSecret, Body: []byte(`{"a":1}`)}
	ts := time.Now()
	h, err := webhook.Sign(m, ts)
	require.NoError(t, err)
	require.Len(t, splitSigs(h.Get(standardwebhooks.HeaderWebhookSignature)), 2)
	for _, secret := range []string{oldSecret, newSecret} {
		wh, err := standardwebhooks.NewWebhook(secret)
		require.NoError(t, err)
		require.NoError(t, wh.Verify(m.Body, h), "a receiver knowing either secret verifies")
	}
	wh, err := standardwebhooks.NewWebhook(other)
	require.NoError(t, err)
	require.Error(t, wh.Verify(m.Body, h))

	m.PreviousSecret = ""
	h, err = webhook.Sign(m, ts)
	require.NoError(t, err)
	require.Len(t, splitSigs(h.Get(standardwebhooks.HeaderWebhookSignature)), 1)
	wh, err = standardwebhooks.NewWebhook(oldSecret)
	require.NoError(t, err)
	require.Error(t, wh.Verify(m.Body, h), "after the overlap the old secret no longer verifies")
}

func splitSigs(h string) []string { return strings.Fields(h) }
