package page_test

import (
	"context"
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/page"
)

// The operations section shows a scheduler whose workflow tasks keep
// failing, the subscribers that are failing or disabled (with why and
// since when; removed ones left out), and the last operator actions.
func TestOperationsSection(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	now := time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)
	d.exec(`insert into subscribers (id, url, secret, events, status, created_at, failing_since, failure_streak)
values ('sub_failingaaaaaaaaaa', 'https://a.example/hook?k=t0ps3cret', 'whsec_x', '{hourly}', 'active', $1, $2, 7)`,
		now.Add(-48*time.Hour), now.Add(-3*time.Hour))
	d.exec(`insert into subscribers (id, url, secret, events, status, created_at, disabled_at, disabled_reason, failure_streak)
values ('sub_disabledaaaaaaaaa', 'https://b.example/', 'whsec_y', '{daily}', 'disabled', $1, $2, 'failed every attempt for 120h0m0s', 40)`,
		now.Add(-200*time.Hour), now.Add(-time.Hour))
	d.exec(`insert into subscribers (id, url, secret, events, status, created_at, disabled_at, deleted_at)
values ('sub_removedaaaaaaaaaa', 'https://c.example/', 'whsec_z', '{daily}', 'disabled', $1, $1, $1)`, now.Add(-time.Hour))
	d.exec(`insert into subscribers (id, url, secret, events, status, created_at)
values ('sub_healthyaaaaaaaaaa', 'https://d.example/', 'whsec_w', '{daily}', 'active', $1)`, now.Add(-time.Hour))
	d.exec(`insert into audit_log (at, actor, action, target, after) values ($1, 'alice', 'subscriber.enable', 'sub_healthyaaaaaaaaaa', '{}'),
($2, 'pacer', 'subscriber.disable', 'sub_disabledaaaaaaaaa', '{}')`, now.Add(-2*time.Hour), now.Add(-time.Hour))

	since := now.Add(-90 * time.Second)
	p := page.New(page.Options{Store: d.st, Now: func() time.Time { return now },
		SchedulerHealth: func(context.Context) (page.SchedulerHealth, error) {
			return page.SchedulerHealth{Failing: true, Attempt: 9, Since: &since, Version: "pacer.B"}, nil
		}})
	v := p.View(t.Context())
	ops := v.Operations
	require.Empty(t, ops.Unavailable)
	require.Equal(t, "FAILING: attempt 9, since 1m 30s ago", ops.Tasks)
	require.Equal(t, page.LevelBad, ops.Level)
	require.Equal(t, "2", ops.Active)
	require.Equal(t, "1", ops.Failing)
	require.Equal(t, "1", ops.Disabled, "the removed one is not counted")
	require.Len(t, ops.Unhealthy, 2)
	require.Equal(t, page.HealthRow{ID: "sub_disabledaaaaaaaaa", Host: "b.example", State: "disabled", Streak: "40",
		Reason: "failed every attempt for 120h0m0s", Since: ops.Unhealthy[0].Since, Level: page.LevelBad}, ops.Unhealthy[0])
	require.Equal(t, "failing", ops.Unhealthy[1].State)
	require.Equal(t, "3h ago", ops.Unhealthy[1].Since.Rel)
	require.Len(t, ops.Actions, 2)
	require.Equal(t, "subscriber.disable", ops.Actions[0].Action, "newest first")

	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	body, _ := io.ReadAll(rec.Body)
	html := string(body)
	require.Contains(t, html, `data-k="ops.tasks">FAILING: attempt 9`)
	require.Contains(t, html, `data-health="sub_failingaaaaaaaaaa"`)
	require.Contains(t, html, `data-action="subscriber.enable"`)
	require.NotContains(t, html, "t0ps3cret")
	require.NotContains(t, html, "sub_removedaaaaaaaaaa")

	// A healthy scheduler says so.
	p = page.New(page.Options{Store: d.st, Now: func() time.Time { return now },
		SchedulerHealth: func(context.Context) (page.SchedulerHealth, error) {
			return page.SchedulerHealth{Version: "pacer.A"}, nil
		}})
	require.Equal(t, "healthy", p.View(t.Context()).Operations.Tasks)
}
