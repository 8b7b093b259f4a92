package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/cron"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/internal/webhook"
	"github.com/pacer-dev/pacer/workflows"
)

// unreachable is a Temporal address nothing listens on: `schedule next`
// then falls back to the configuration.
const unreachable = "127.0.0.1:1"

func TestScheduleBadArgumentsExitTwo(t *testing.T) {
	requireUsageErrors(t, []usageCase{
		{name: "no subcommand", give: []string{"schedule"}, wantErr: "give a subcommand: next, history, backfill or skip"},
		{name: "unknown subcommand", give: []string{"schedule", "later"}, wantErr: `unknown command "later"`},
		{name: "next without task", give: []string{"schedule", "next"}, wantErr: "accepts 1 arg"},
		{name: "next unknown task", give: []string{"schedule", "next", "prices"}, wantErr: `unknown task "prices" (want tenero, sweep, rollup, deliver)`},
		{name: "next n zero", give: []string{"schedule", "next", "rollup", "--n", "0"}, wantErr: "--n 0 is outside 1..1000"},
		{name: "next n not a number", give: []string{"schedule", "next", "rollup", "--n", "ten"}, wantErr: "invalid argument"},
		{name: "next deliver", give: []string{"schedule", "next", "deliver", "--temporal-address", unreachable}, wantErr: "deliver has no schedule of its own"},
		{name: "history unknown task", give: []string{"schedule", "history", "all"}, wantErr: `unknown task "all"`},
		{name: "history bad since", give: []string{"schedule", "history", "rollup", "--since", "yesterday"}, wantErr: `--since "yesterday" is neither`},
		{name: "history negative since", give: []string{"schedule", "history", "rollup", "--since", "-1h"}, wantErr: "--since"},
		{name: "history bad limit", give: []string{"schedule", "history", "rollup", "--limit", "0"}, wantErr: "--limit 0"},
		{name: "bad PACER_SCHEDULES json", give: []string{"status"}, env: map[string]string{"PACER_SCHEDULES": `{"rollup":`}, wantErr: "PACER_SCHEDULES: bad schedule: not JSON"},
		{name: "PACER_SCHEDULES unknown field", give: []string{"status"}, env: map[string]string{"PACER_SCHEDULES": `{"rollup":{"cron":"5 * * * *","catchp":"all"}}`}, wantErr: `PACER_SCHEDULES: "rollup": bad schedule: unknown field "catchp"`},
		{name: "PACER_SCHEDULES bad zone", give: []string{"status"}, env: map[string]string{"PACER_SCHEDULES": `{"rollup":{"cron":"5 * * * *","tz":"Europe/Londn"}}`}, wantErr: `unknown time zone "Europe/Londn"`},
		{name: "PACER_SCHEDULES unknown task", give: []string{"status"}, env: map[string]string{"PACER_SCHEDULES": `{"rollups":{"cron":"5 * * * *"}}`}, wantErr: `PACER_SCHEDULES: unknown task "rollups"`},
		{name: "--schedules bad", give: []string{"status", "--schedules", `{"rollup":{"every":"0s"}}`}, wantErr: "below 1s"},
	})
}

func TestPacerSchedulesReachesTheSchedulersConfig(t *testing.T) {
	c := &config{schedulesJSON: `{"rollup":{"cron":"5 * * * *","catchup":"backfill"},"tenero":{"every":"2m"}}`,
		teneroBaseURL: "http://x", hiroBaseURL: "http://x", teneroEvery: time.Minute, sweepEvery: time.Minute,
		rollups: rollupConfig{dayTZ: "UTC", ladder: webhook.DefaultLadder}}
	require.NoError(t, c.validate())
	require.Equal(t, []string{"rollup", "tenero"}, c.schedules.Tasks())
	cfg := c.scheduler().Config
	require.Equal(t, c.schedules, cfg.Schedules)
	require.Equal(t, cron.CatchupBackfill, cfg.Schedules["rollup"].Catchup)
	require.Equal(t, 2*time.Minute, cfg.Schedules["tenero"].Every)
}

func TestResolveSchedulePrefersTheSchedulersStatus(t *testing.T) {
	t.Parallel()
	due := time.Date(2026, 6, 1, 12, 5, 0, 0, time.UTC)
	configured, err := cron.ParseSchedules([]byte(`{"rollup":{"cron":"15 * * * *"}}`))
	require.NoError(t, err)
	c := &config{schedules: configured, teneroEvery: 5 * time.Minute, sweepEvery: time.Minute}
	status := map[string]statusTask{
		pacer.TaskRollup: {Schedule: json.RawMessage(`{"cron":"45 * * * *","tz":"Europe/London"}`)},
		pacer.TaskTenero: {Every: "7m0s", NextDueAt: &due},
	}
	tests := []struct {
		task       string
		status     map[string]statusTask
		statusErr  error
		wantSource string
		wantSpec   string
		wantWhy    string
	}{
		{pacer.TaskRollup, status, nil, sourceStatus, `{"cron":"45 * * * *","tz":"Europe/London","catchup":"latest","dst":{"gap":"shift","overlap":"first"}}`, ""},
		{pacer.TaskTenero, status, nil, sourceStatus, `{"every":"7m"}`, ""},
		{pacer.TaskSweep, status, nil, sourceDefault, `{"every":"1m"}`, "the scheduler does not run sweep yet"},
		{pacer.TaskRollup, nil, errors.New("deadline exceeded"), sourceConfigured, `{"cron":"15 * * * *","tz":"UTC","catchup":"latest","dst":{"gap":"shift","overlap":"first"}}`, "the scheduler did not answer: deadline exceeded"},
		{pacer.TaskRollup, map[string]statusTask{pacer.TaskRollup: {Every: "0s"}}, nil, sourceConfigured, `{"cron":"15 * * * *","tz":"UTC","catchup":"latest","dst":{"gap":"shift","overlap":"first"}}`, "shows no schedule"},
		{pacer.TaskTenero, nil, errors.New("down"), sourceDefault, `{"every":"5m"}`, "did not answer"},
	}
	for _, tt := range tests {
		ts, err := c.resolveSchedule(tt.task, tt.status, tt.statusErr)
		require.NoError(t, err)
		require.Equal(t, tt.wantSource, ts.Source, tt.task)
		require.Equal(t, tt.wantSpec, ts.Spec.String(), tt.task)
		require.Contains(t, ts.Why, tt.wantWhy)
	}
	ts, err := c.resolveSchedule(pacer.TaskTenero, status, nil)
	require.NoError(t, err)
	require.Equal(t, &due, ts.NextDueAt)

	_, err = c.resolveSchedule(pacer.TaskRollup, map[string]statusTask{pacer.TaskRollup: {Schedule: json.RawMessage(`{"cron":"61 * * * *"}`)}}, nil)
	require.ErrorContains(t, err, "the scheduler's schedule of rollup")
}

func TestScheduleNextShowsDSTAndJitter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	ts := taskSchedule{Task: pacer.TaskRollup, Source: sourceConfigured, Spec: mustSpec(t, `{"cron":"30 2 * * *","tz":"America/New_York"}`)}
	require.NoError(t, printNext(&out, ts, now, 3, false))
	require.Equal(t, []string{
		`rollup: {"cron":"30 2 * * *","tz":"America/New_York","catchup":"latest","dst":{"gap":"shift","overlap":"first"}} (from PACER_SCHEDULES)`,
		"NOMINAL (UTC)         IN ZONE               STARTS   NOTE",
		"2026-03-08T07:00:00Z  2026-03-08 03:00 EDT  on time  02:30 does not exist that day: runs at the first instant after",
		"2026-03-09T06:30:00Z  2026-03-09 02:30 EDT  on time",
		"2026-03-10T06:30:00Z  2026-03-10 02:30 EDT  on time",
	}, trimLines(out.String()))

	out.Reset()
	ts.Spec = mustSpec(t, `{"cron":"30 2 * * *","tz":"America/New_York","jitter":"10m","dst":{"gap":"skip"}}`)
	require.NoError(t, printNext(&out, ts, now, 2, false))
	lines := trimLines(out.String())
	require.Regexp(t, `^2026-03-08T07:00:00Z  2026-03-08 03:00 EDT  - +02:30 does not exist that day: skipped \(dst_gap\)$`, lines[2])
	jitter := cron.Jitter(pacer.TaskRollup, time.Date(2026, 3, 9, 6, 30, 0, 0, time.UTC), 10*time.Minute)
	require.Equal(t, "2026-03-09T06:30:00Z  2026-03-09 02:30 EDT  +"+jitter.String()+" (jitter)", lines[3])

	out.Reset()
	require.NoError(t, printNext(&out, ts, now, 2, true))
	var doc struct {
		Task, Source string
		Schedule     cron.Spec
		Fires        []nextFire
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	require.Equal(t, ts.Spec, doc.Schedule)
	require.Equal(t, []nextFire{
		{NominalAt: time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC), DueAt: time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC), Local: "2026-03-08 03:00 EDT", Wall: "2026-03-08 02:30", Gap: true, Skip: true},
		{NominalAt: time.Date(2026, 3, 9, 6, 30, 0, 0, time.UTC), DueAt: time.Date(2026, 3, 9, 6, 30, 0, 0, time.UTC).Add(jitter), Local: "2026-03-09 02:30 EDT", Wall: "2026-03-09 02:30"},
	}, doc.Fires)
}

func TestScheduleNextOfAnIntervalTask(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	due := now.Add(90 * time.Second)
	var out bytes.Buffer
	ts := taskSchedule{Task: pacer.TaskTenero, Source: sourceStatus, Spec: cron.Spec{Every: 5 * time.Minute}, NextDueAt: &due}
	require.NoError(t, printNext(&out, ts, now, 3, false))
	require.Equal(t, []string{
		`tenero: {"every":"5m"} (from the scheduler's status)`,
		"an interval after the last start, from the scheduler's next due time; pacing and back-off can move them",
		"NEXT (UTC)", "2026-06-01T12:01:30Z", "2026-06-01T12:06:30Z", "2026-06-01T12:11:30Z",
	}, trimLines(out.String()))
}

// Through the real command: no scheduler answers, so PACER_SCHEDULES is
// the source; the times are the next ones after the local clock.
func TestScheduleNextFallsBackToPacerSchedules(t *testing.T) {
	t.Setenv("PACER_SCHEDULES", `{"rollup":{"cron":"*/20 * * * *","catchup":"backfill"}}`)
	before := time.Now()
	code, stdout, stderr := run("schedule", "next", "rollup", "--n", "4", "--json", "--temporal-address", unreachable)
	require.Equal(t, 0, code, stderr)
	var doc struct {
		Source string
		Why    string
		Fires  []nextFire
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	require.Equal(t, sourceConfigured, doc.Source)
	require.Contains(t, doc.Why, "did not answer")
	require.Len(t, doc.Fires, 4)
	first := before.UTC().Truncate(20 * time.Minute).Add(20 * time.Minute)
	for i, f := range doc.Fires {
		require.Equal(t, first.Add(time.Duration(i)*20*time.Minute), f.NominalAt)
	}
}

// The ledger through the real command and a real Postgres.
func TestScheduleHistoryReadsTheLedger(t *testing.T) {
	t.Parallel()
	url := testenv.PostgresURL(t)
	st, err := store.Open(t.Context(), url)
	require.NoError(t, err)
	t.Cleanup(st.Close)
	require.NoError(t, st.Migrate(t.Context()))

	ctx := t.Context()
	base := time.Now().UTC().Truncate(time.Hour).Add(-6 * time.Hour)
	at := func(h int) time.Time { return base.Add(time.Duration(h) * time.Hour) }
	into := at(3)
	coalesced := pacer.Occurrence{Task: pacer.TaskRollup, NominalAt: into, Coalesced: &pacer.CoalescedRange{First: at(1), Last: into, Count: 3},
		Passed: []pacer.PassedOccurrence{
			{NominalAt: at(0), Status: pacer.RunSkipped, Reason: pacer.SkipPaused},
			{NominalAt: at(1), Status: pacer.RunCoalesced, CoalescedInto: &into, Count: 2, StepSeconds: 3600},
		}}
	_, err = st.RecordPassed(ctx, pacer.TaskRollup, coalesced.Passed)
	require.NoError(t, err)
	_, _, err = st.BeginRun(ctx, coalesced)
	require.NoError(t, err)
	require.NoError(t, st.FinishRun(ctx, coalesced, 0, pacer.RunOK, "", json.RawMessage(`{"rows":9}`)))
	failed := pacer.Occurrence{Task: pacer.TaskRollup, NominalAt: at(4)}
	_, _, err = st.BeginRun(ctx, failed)
	require.NoError(t, err)
	_, _, err = st.BeginRun(ctx, failed)
	require.NoError(t, err)
	require.NoError(t, st.FinishRun(ctx, failed, 0, pacer.RunFailed, pacer.ClassTransport, nil))
	other := pacer.Occurrence{Task: pacer.TaskTenero, NominalAt: at(4)}
	_, _, err = st.BeginRun(ctx, other)
	require.NoError(t, err)

	code, stdout, stderr := run("schedule", "history", "rollup", "--since", "12h", "--database-url", url)
	require.Equal(t, 0, code, stderr)
	lines := trimLines(stdout)
	require.Equal(t, "rollup: 5 occurrences since", lines[0][:27])
	require.Regexp(t, `^NOMINAL \(UTC\) +STATUS +REASON +STARTED +FINISHED +COALESCED INTO +MISSED$`, lines[1])
	rfc := func(h int) string { return at(h).Format(time.RFC3339) }
	require.Regexp(t, `^`+rfc(0)+` +skipped +paused +- +- +- +-$`, lines[2])
	require.Regexp(t, `^`+rfc(1)+` +coalesced +- +- +- +`+rfc(3)+` +-$`, lines[3])
	require.Regexp(t, `^`+rfc(2)+` +coalesced +- +- +- +`+rfc(3)+` +-$`, lines[4])
	require.Regexp(t, `^`+rfc(3)+` +ok +- +\S+Z +\S+Z +- +3$`, lines[5])
	require.Regexp(t, `^`+rfc(4)+` +failed \(transport\), 2 attempts +- +\S+Z +\S+Z +- +-$`, lines[6])
	require.Equal(t, []string{"", "2 coalesced, 1 failed, 1 ok, 1 skipped paused"}, lines[7:])

	code, stdout, stderr = run("schedule", "history", "rollup", "--since", at(2).Format(time.RFC3339), "--json", "--database-url", url)
	require.Equal(t, 0, code, stderr)
	var doc struct {
		Task string
		Runs []store.TaskRun
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	require.Len(t, doc.Runs, 3)
	require.Equal(t, at(2), doc.Runs[0].NominalAt.UTC())
	require.JSONEq(t, `{"rows":9}`, string(doc.Runs[1].Result))

	code, stdout, _ = run("schedule", "history", "deliver", "--database-url", url, "--json")
	require.Equal(t, 0, code)
	require.Contains(t, stdout, `"runs": []`)
}

func mustSpec(t *testing.T, s string) cron.Spec {
	t.Helper()
	spec, err := cron.ParseSpec([]byte(s))
	require.NoError(t, err)
	return spec
}

func trimLines(s string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		out = append(out, strings.TrimRight(l, " "))
	}
	return out
}

// The status document the scheduler answers today (tasks with `every`, no
// `schedule` yet) is read as the interval tasks' source; a document with a
// task's `schedule` is read as its cron schedule.
func TestStatusDocumentsAreRead(t *testing.T) {
	t.Parallel()
	due := time.Date(2026, 6, 1, 12, 5, 0, 0, time.UTC)
	raw, err := json.Marshal(workflows.Status{Tasks: map[string]workflows.TaskStatus{
		pacer.TaskTenero: {Every: (5 * time.Minute).String(), NextDueAt: &due},
		pacer.TaskSweep:  {Every: time.Minute.String()},
	}})
	require.NoError(t, err)
	tasks, err := decodeStatusTasks(raw)
	require.NoError(t, err)
	c := &config{}
	ts, err := c.resolveSchedule(pacer.TaskTenero, tasks, nil)
	require.NoError(t, err)
	require.Equal(t, taskSchedule{Task: pacer.TaskTenero, Source: sourceStatus, Spec: cron.Spec{Every: 5 * time.Minute}, NextDueAt: &due}, ts)
	ts, err = c.resolveSchedule(pacer.TaskRollup, tasks, nil)
	require.NoError(t, err)
	require.Equal(t, sourceDefault, ts.Source)

	tasks, err = decodeStatusTasks([]byte(`{"tasks":{"rollup":{"every":"","schedule":{"cron":"5 * * * *","catchup":"backfill"}}}}`))
	require.NoError(t, err)
	ts, err = c.resolveSchedule(pacer.TaskRollup, tasks, nil)
	require.NoError(t, err)
	require.Equal(t, sourceStatus, ts.Source)
	require.Equal(t, cron.CatchupBackfill, ts.Spec.Catchup)

	_, err = decodeStatusTasks([]byte(`{"tasks":[]}`))
	require.ErrorContains(t, err, "status document")
}
