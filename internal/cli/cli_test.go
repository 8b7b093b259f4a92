package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/discovery"
)

func run(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// usageCase is a command line that must fail as bad usage: exit 2, one
// line on stderr naming the problem, nothing on stdout.
type usageCase struct {
	name    string
	give    []string
	env     map[string]string
	wantErr string
}

// requireUsageErrors runs the cases; not in parallel, since cases set
// environment variables.
func requireUsageErrors(t *testing.T, tests []usageCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			code, stdout, stderr := run(tt.give...)
			require.Equal(t, 2, code, "stderr: %s", stderr)
			require.Empty(t, stdout)
			require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
			require.True(t, strings.HasPrefix(stderr, "pacer: "), stderr)
			require.Contains(t, stderr, tt.wantErr)
		})
	}
}

func TestBadArgumentsExitTwoWithOneLine(t *testing.T) {
	requireUsageErrors(t, []usageCase{
		{name: "unknown command", give: []string{"frobnicate"}, wantErr: `unknown command "frobnicate"`},
		{name: "unknown flag", give: []string{"status", "--nope"}, wantErr: "unknown flag: --nope"},
		{name: "extra argument", give: []string{"status", "now"}, wantErr: "unknown command"},
		{name: "pause without a time", give: []string{"pause"}, wantErr: `give "until"`},
		{name: "pause with both", give: []string{"pause", "--for", "1m", "--until", "2030-01-01T00:00:00Z"}, wantErr: "not both"},
		{name: "pause negative", give: []string{"pause", "--for", "-1m"}, wantErr: "must be positive"},
		{name: "pause in the past", give: []string{"pause", "--until", "2001-01-01T00:00:00Z"}, wantErr: "not in the future"},
		{name: "pause bad time", give: []string{"pause", "--until", "tomorrow"}, wantErr: "not an RFC3339 time"},
		{name: "pause unknown task", give: []string{"pause", "--for", "1m", "--task", "nope"}, wantErr: "unknown task"},
		{name: "backfill without a range", give: []string{"schedule", "backfill", "rollup"}, wantErr: "give --from and --to"},
		{name: "backfill unknown task", give: []string{"schedule", "backfill", "nope", "--from", "2026-01-01T00:00:00Z", "--to", "2026-01-01T06:00:00Z"}, wantErr: "unknown task"},
		{name: "backfill bad time", give: []string{"schedule", "backfill", "rollup", "--from", "yesterday", "--to", "2026-01-01T06:00:00Z"}, wantErr: "--from is not an RFC3339"},
		{name: "backfill backwards", give: []string{"schedule", "backfill", "rollup", "--from", "2026-01-01T06:00:00Z", "--to", "2026-01-01T00:00:00Z"}, wantErr: "must be before"},
		{name: "backfill future", give: []string{"schedule", "backfill", "rollup", "--from", "2026-01-01T06:00:00Z", "--to", "2999-01-01T00:00:00Z"}, wantErr: "in the future"},
		{name: "skip without --at", give: []string{"schedule", "skip", "rollup"}, wantErr: "give --at"},
		{name: "skip bad time", give: []string{"schedule", "skip", "rollup", "--at", "noon"}, wantErr: "--at is not an RFC3339"},
		{name: "skip unknown task", give: []string{"schedule", "skip", "nope", "--at", "2026-01-01T06:05:00Z"}, wantErr: "unknown task"},
		{name: "backfill two tasks", give: []string{"schedule", "backfill", "rollup", "sweep"}, wantErr: "accepts 1 arg"},
		{name: "refresh without task", give: []string{"refresh"}, wantErr: "accepts 1 arg"},
		{name: "refresh unknown task", give: []string{"refresh", "prices"}, wantErr: `unknown task "prices"`},
		{name: "refresh two tasks", give: []string{"refresh", "tenero", "all"}, wantErr: "accepts 1 arg"},
		{name: "prices bad id", give: []string{"prices", "x'; drop table swaps"}, wantErr: "malformed token id"},
		{name: "bad duration flag", give: []string{"status", "--tenero-every", "soon"}, wantErr: "invalid argument"},
		{name: "cadence too short", give: []string{"status", "--tenero-every", "500ms"}, wantErr: "teneroEvery 500ms: want 0 (the default) or 1s to"},
		{name: "bad base url", give: []string{"status", "--tenero-base-url", "ftp://x"}, wantErr: "must start with http"},
		{name: "bad env duration", give: []string{"status"}, env: map[string]string{"PACER_TENERO_EVERY": "abc"}, wantErr: "PACER_TENERO_EVERY"},
		{name: "bad env integer", give: []string{"status"}, env: map[string]string{"COMPETITION_START": "soon"}, wantErr: "COMPETITION_START"},
		{name: "status bad interval", give: []string{"status", "--watch", "--every", "0s"}, wantErr: "--every"},
		{name: "agents bad tier", give: []string{"agents", "--tier", "lukewarm"}, wantErr: "hot, warm or cold"},
		{name: "unknown sweep policy", give: []string{"status", "--sweep-policy", "fastest"}, wantErr: "optimal or tiers"},
		{name: "hot slower than warm", give: []string{"status", "--hot-every", "1h"}, wantErr: "hot-every"},
		{name: "staleness under the hot interval", give: []string{"status", "--max-staleness", "1m"}, wantErr: "max-staleness"},
		{name: "reconcile floor past staleness with push on", give: []string{"status", "--reconcile-every", "7h"},
			env: map[string]string{"PACER_CHAINHOOK_SECRET": "s3"}, wantErr: "reconcile-every"},
		{name: "bad env reconcile floor", give: []string{"status"}, env: map[string]string{"PACER_RECONCILE_EVERY": "often"}, wantErr: "PACER_RECONCILE_EVERY"},
		{name: "bad env policy", give: []string{"status"}, env: map[string]string{"PACER_SWEEP_POLICY": "greedy"}, wantErr: "optimal or tiers"},
		{name: "bad env discovery", give: []string{"status"}, env: map[string]string{"PACER_DISCOVERY": "everything"}, wantErr: "want tail or agents"},
		{name: "sub-second tail", give: []string{"status", "--tail-every", "500ms"}, wantErr: "tail-every 500ms is below 1s"},
		{name: "bad push", give: []string{"status", "--push", "sse"}, wantErr: "push sse: want ws or off"},
		{name: "bad env push", give: []string{"status"}, env: map[string]string{"PACER_PUSH": "chainhook"}, wantErr: "push chainhook: want ws or off"},
		{name: "bad env tail pages", give: []string{"status"}, env: map[string]string{"PACER_TAIL_MAX_PAGES": "-3"}, wantErr: "tail-max-pages -3"},
		{name: "fast path limit negative", give: []string{"status", "--fastpath-per-minute", "-1"}, wantErr: "fastpath-per-minute"},
		{name: "sweep cadence too short", give: []string{"status", "--sweep-every", "500ms"}, wantErr: "sweepEvery 500ms: want 0 (the default) or 1s"},
		{name: "watch faster than 10s", give: []string{"status", "--watch", "--every", "2s"}, wantErr: "--every must be at least 10s"},
		{name: "reconfigure nothing", give: []string{"reconfigure"}, wantErr: `give "teneroEvery"`},
		{name: "reconfigure sub-second", give: []string{"reconfigure", "--tenero-every", "500ms"}, wantErr: "teneroEvery 500ms"},
		{name: "reconfigure bad duration", give: []string{"reconfigure", "--sweep-every", "often"}, wantErr: `"sweepEvery" must be a positive Go duration`},
		{name: "reconfigure schedule", give: []string{"reconfigure", "--schedule", "rollup=61 * * * *"}, wantErr: "61"},
		{name: "reconfigure deliver schedule", give: []string{"reconfigure", "--schedule", "deliver=5 * * * *"}, wantErr: "deliver has no schedule"},
		{name: "reconfigure tenero cron", give: []string{"reconfigure", "--schedule", "tenero=5 * * * *"}, wantErr: "paced to its upstream"},
		{name: "reconfigure bad schedule", give: []string{"reconfigure", "--schedule", "rollup"}, wantErr: "want TASK=SPEC"},
		{name: "stop long reason", give: []string{"stop", "--reason", strings.Repeat("x", 501)}, wantErr: "at most 500"},
		{name: "tune nothing", give: []string{"tune", "tenero"}, wantErr: `give "batch"`},
		{name: "tune unknown task", give: []string{"tune", "prices", "--batch", "5"}, wantErr: `unknown task "prices"`},
		{name: "tune reset and batch", give: []string{"tune", "all", "--reset", "--batch", "5"}, wantErr: "cannot be combined"},
	})
}

func TestHelpHidesSecrets(t *testing.T) {
	t.Setenv("TENERO_API_KEY", "sekrit-tenero")
	t.Setenv("HIRO_API_KEY", "sekrit-hiro")
	code, stdout, _ := run("--help")
	require.Equal(t, 0, code)
	require.Contains(t, stdout, "tenero-api-key")
	require.NotContains(t, stdout, "sekrit")
}

// TestReconcileFloorOnlyWithPush: the floor is in the sweep's policy while
// a chainhook secret is set, and nowhere else (a floor past max-staleness
// without push is no error: it is not in force).
func TestReconcileFloorOnlyWithPush(t *testing.T) {
	for _, tt := range []struct {
		name   string
		give   []string
		secret string
		want   time.Duration
	}{
		{"push off", []string{"--reconcile-every", "7h"}, "", 0},
		{"push on, default floor", nil, "s3", discovery.DefaultReconcileEvery},
		{"push on, own floor", []string{"--reconcile-every", "2m"}, "s3", 2 * time.Minute},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PACER_CHAINHOOK_SECRET", tt.secret)
			c := &config{}
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			c.bind(fs)
			require.NoError(t, fs.Parse(tt.give))
			got, err := c.ingest()
			require.NoError(t, err)
			require.Equal(t, tt.want, got.ReconcileEvery)
		})
	}
}
