package admin_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/operate"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/internal/webhook"
)

// Issue 28 findings 7 and 11: the admin API's create returns the pull
// token (stored only as its hash), reissuing gives a new one (the old
// hash gone) and is audited as the operator; a rotated secret is forgotten
// once its overlap ends. Before, create returned no pull token and none
// could be reissued, and a previous secret stayed stored for good.
func TestPullTokensAndExpiredSecrets(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	now := time.Now().UTC()
	clk := func() time.Time { return now }
	a := newAPI(t, &operate.Service{Store: st, AllowPrivate: true, SecretOverlap: time.Hour, Now: clk})
	var created struct {
		Subscriber store.Subscriber `json:"subscriber"`
		PullToken  string           `json:"pullToken"`
	}
	a.do("POST", "subscribers", map[string]any{"url": "http://127.0.0.1:1/hook"}, 201, &created)
	require.True(t, strings.HasPrefix(created.PullToken, webhook.PullTokenPrefix), "create returns the pull token")
	storedHash := func() []byte {
		var h []byte
		require.NoError(t, st.Pool().QueryRow(ctx, `select pull_token_hash from subscribers where id = $1`, created.Subscriber.ID).Scan(&h))
		return h
	}
	require.True(t, bytes.Equal(webhook.HashPullToken(created.PullToken), storedHash()))

	var reissued operate.Reissued
	a.do("POST", "subscribers/"+created.Subscriber.ID+"/reissue-pull-token", nil, 200, &reissued)
	require.True(t, strings.HasPrefix(reissued.PullToken, webhook.PullTokenPrefix))
	require.NotEqual(t, created.PullToken, reissued.PullToken)
	require.True(t, bytes.Equal(webhook.HashPullToken(reissued.PullToken), storedHash()), "the new token's hash replaces the old")
	entries, err := st.AuditLog(ctx, store.AuditQuery{Limit: 1})
	require.NoError(t, err)
	require.Equal(t, operate.ActionReissuePull, entries[0].Action)
	require.Equal(t, "alice", entries[0].Actor)
	require.NotContains(t, string(entries[0].After)+string(entries[0].Before), reissued.PullToken, "the audit never holds the token")

	// Rotate: the old secret stays for the overlap, and goes after it.
	a.do("POST", "subscribers/"+created.Subscriber.ID+"/rotate-secret", nil, 200, nil)
	previous := func() int {
		var n int
		require.NoError(t, st.Pool().QueryRow(ctx, `select count(*) from subscribers where previous_secret is not null`).Scan(&n))
		return n
	}
	pruned, err := st.PrunePublicInput(ctx, now.Add(30*time.Minute))
	require.NoError(t, err)
	require.Zero(t, pruned[store.ExpiredSecrets])
	require.Equal(t, 1, previous(), "kept during its overlap")
	pruned, err = st.PrunePublicInput(ctx, now.Add(time.Hour+time.Second))
	require.NoError(t, err)
	require.EqualValues(t, 1, pruned[store.ExpiredSecrets])
	require.Zero(t, previous(), "forgotten once the overlap ended")
}
