package operate_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/operate"
)

// Every rule on an operation's input is checked before anything is read
// or written (the service here has no store: reaching it would panic), and
// the rejection names the field as the API spells it.
func TestInputRulesComeFirst(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)
	svc := &operate.Service{Now: func() time.Time { return now }}
	ctx := context.Background()
	sub := "sub_aaaaaaaaaaaaaaaa"
	list := func(items ...string) *[]string { return &items }
	tests := []struct {
		name      string
		call      func() error
		wantField string
	}{
		{"no url", func() error { _, err := svc.CreateSubscriber(ctx, operate.SubscriberInput{}); return err }, "url"},
		{"no events", func() error {
			_, err := svc.CreateSubscriber(ctx, operate.SubscriberInput{URL: "https://a.example/", Events: []string{}})
			return err
		}, "events"},
		{"bad token", func() error {
			_, err := svc.CreateSubscriber(ctx, operate.SubscriberInput{URL: "https://a.example/", Tokens: []string{"x'; drop"}})
			return err
		}, "tokens"},
		{"bad agent", func() error {
			_, err := svc.CreateSubscriber(ctx, operate.SubscriberInput{URL: "https://a.example/", Agents: []string{"SPnope"}})
			return err
		}, "agents"},
		{"bad id", func() error {
			_, err := svc.UpdateSubscriber(ctx, "x", operate.SubscriberPatch{Events: list("daily")})
			return err
		}, "id"},
		{"empty patch", func() error { _, err := svc.UpdateSubscriber(ctx, sub, operate.SubscriberPatch{}); return err }, ""},
		{"patch no events", func() error {
			_, err := svc.UpdateSubscriber(ctx, sub, operate.SubscriberPatch{Events: list()})
			return err
		}, "events"},
		{"long reason", func() error { _, err := svc.DisableSubscriber(ctx, sub, strings.Repeat("r", 501)); return err }, "reason"},
		{"recover no from", func() error { _, err := svc.Recover(ctx, operate.RecoverInput{Subscriber: sub}); return err }, "from"},
		{"recover reversed", func() error {
			_, err := svc.Recover(ctx, operate.RecoverInput{Subscriber: sub, From: now, To: now.Add(-time.Hour)})
			return err
		}, "from"},
		{"recover too long", func() error {
			_, err := svc.Recover(ctx, operate.RecoverInput{Subscriber: sub, From: now.Add(-40 * 24 * time.Hour)})
			return err
		}, "from"},
		{"recover status", func() error {
			_, err := svc.Recover(ctx, operate.RecoverInput{Subscriber: sub, From: now.Add(-time.Hour), Statuses: []string{"lost"}})
			return err
		}, "statuses"},
		{"recover bad subscriber", func() error {
			_, err := svc.Recover(ctx, operate.RecoverInput{Subscriber: "sub_x", From: now.Add(-time.Hour)})
			return err
		}, "subscriber"},
		{"redeliver bad id", func() error { return svc.Redeliver(ctx, "sub_x-hourly-1") }, "id"},
		{"audit limit", func() error { _, err := svc.Audit(ctx, operate.AuditQuery{}); return err }, "limit"},
		{"pause task", func() error { _, err := svc.Pause(ctx, operate.PauseInput{Task: "nap", For: "1h"}); return err }, "task"},
		{"pause past", func() error { _, err := svc.Pause(ctx, operate.PauseInput{Until: "2020-01-01T00:00:00Z"}); return err }, ""},
		{"backfill future", func() error {
			_, err := svc.Backfill(ctx, operate.BackfillInput{Task: "rollup", From: now, To: now.Add(time.Hour)})
			return err
		}, "to"},
		{"backfill all", func() error {
			_, err := svc.Backfill(ctx, operate.BackfillInput{Task: "all", From: now.Add(-time.Hour), To: now})
			return err
		}, "task"},
	}
	for _, tt := range tests {
		err := tt.call()
		var inv *operate.Invalid
		require.True(t, errors.As(err, &inv), "%s: %v", tt.name, err)
		require.ErrorIs(t, err, operate.ErrInvalid, tt.name)
		require.Equal(t, tt.wantField, inv.Field, tt.name)
	}
	// Valid input past the rules needs what this service lacks.
	_, err := svc.Pause(ctx, operate.PauseInput{For: "1h"})
	require.ErrorIs(t, err, operate.ErrNoTemporal)
}
