package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/cron"
	"github.com/pacer-dev/pacer/internal/operate"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/workflows"
)

// scheduledTasks are the tasks a schedule may name (SPEC §3).
var scheduledTasks = []string{pacer.TaskTenero, pacer.TaskSweep, pacer.TaskRollup, pacer.TaskDeliver}

func checkTask(task string) error {
	if !slices.Contains(scheduledTasks, task) {
		return usagef("unknown task %.40q (want %s)", task, strings.Join(scheduledTasks, ", "))
	}
	return nil
}

// parseSchedules reads PACER_SCHEDULES (or --schedules) strictly: a bad
// schedule or an unknown task is a usage error before anything starts.
func (c *config) parseSchedules() error {
	c.schedules = nil
	if strings.TrimSpace(c.schedulesJSON) == "" {
		return nil
	}
	ss, err := cron.ParseSchedules([]byte(c.schedulesJSON))
	if err != nil {
		return usagef("PACER_SCHEDULES: %v", err)
	}
	for _, task := range ss.Tasks() {
		if err := checkTask(task); err != nil {
			return usagef("PACER_SCHEDULES: %v", err)
		}
	}
	// What the scheduler would refuse (deliver's schedule, a cron spec for
	// a paced task) is refused here, before anything starts.
	if err := (workflows.Config{Schedules: ss}).Validate(); err != nil {
		return usagef("PACER_SCHEDULES: %v", err)
	}
	c.schedules = ss
	return nil
}

func newScheduleCmd(c *config) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedule",
		Short: "A task's schedule: its next fire times, its occurrence ledger",
		Args:  wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usagef("give a subcommand: next, history, backfill or skip")
		},
	}
	cmd.AddCommand(newScheduleNextCmd(c), newScheduleHistoryCmd(c), newScheduleBackfillCmd(c), newScheduleSkipCmd(c))
	return cmd
}

// newScheduleBackfillCmd runs a cron task's occurrences over a past range,
// each as of its own nominal time, through the ledger (the backfill
// update; SPEC §3.4).
func newScheduleBackfillCmd(c *config) *cobra.Command {
	var from, to string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "backfill TASK --from RFC3339 --to RFC3339",
		Short: "Run a task's occurrences over a past range, each as of its own nominal time (the backfill update)",
		Args:  wrapArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			task := args[0]
			if err := checkTask(task); err != nil {
				return err
			}
			f, errFrom := time.Parse(time.RFC3339, from)
			t, errTo := time.Parse(time.RFC3339, to)
			switch {
			case from == "" || to == "":
				return usagef("give --from and --to (RFC3339)")
			case errFrom != nil:
				return usagef("--from is not an RFC3339 time: %.80q", from)
			case errTo != nil:
				return usagef("--to is not an RFC3339 time: %.80q", to)
			case !f.Before(t):
				return usagef("--from %s must be before --to %s", from, to)
			case t.After(time.Now()):
				return usagef("--to %s is in the future: a backfill runs past occurrences", to)
			}
			// Through the operations, as the admin API sends it: audited.
			return c.withService(cmd, true, func(ctx context.Context, svc *operate.Service) error {
				raw, err := svc.Backfill(ctx, operate.BackfillInput{Task: task, From: f, To: t})
				if err != nil {
					return err
				}
				var res workflows.BackfillResult
				if err := json.Unmarshal(raw, &res); err != nil {
					return fmt.Errorf("decode the backfill result: %w", err)
				}
				out := cmd.OutOrStdout()
				if asJSON {
					return printJSON(out, res)
				}
				fmt.Fprintf(out, "queued %d occurrence(s) of %s; `pacer schedule history %s` shows each as it runs\n",
					res.Queued, res.Task, res.Task)
				for _, at := range res.Times {
					fmt.Fprintf(out, "  %s\n", at.UTC().Format(time.RFC3339))
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the first nominal time of the range (RFC3339, inclusive)")
	cmd.Flags().StringVar(&to, "to", "", "the last nominal time of the range (RFC3339, inclusive)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

// newScheduleSkipCmd gives up on one owed occurrence of a cron task (the
// skip update; SPEC §3.4): a failed occurrence is retried on the task's
// back-off until it succeeds or an operator skips it.
func newScheduleSkipCmd(c *config) *cobra.Command {
	var at string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "skip TASK --at RFC3339",
		Short: "Give up on an owed occurrence: it is not run again, and task_runs shows it skipped, reason operator (the skip update)",
		Args:  wrapArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			task := args[0]
			if err := checkTask(task); err != nil {
				return err
			}
			if at == "" {
				return usagef("give --at, the occurrence's nominal time (RFC3339; `pacer schedule history %s` lists them)", task)
			}
			nominal, err := time.Parse(time.RFC3339, at)
			if err != nil {
				return usagef("--at is not an RFC3339 time: %.80q", at)
			}
			return c.withService(cmd, true, func(ctx context.Context, svc *operate.Service) error {
				raw, err := svc.Skip(ctx, operate.SkipInput{Task: task, NominalAt: nominal})
				if raw == nil {
					return err
				}
				var res workflows.SkipResult
				if err := json.Unmarshal(raw, &res); err != nil {
					return fmt.Errorf("decode the skip result: %w", err)
				}
				out := cmd.OutOrStdout()
				if asJSON {
					if perr := printJSON(out, res); perr != nil {
						return perr
					}
					return err
				}
				fmt.Fprintf(out, "skipped %s at %s (reason operator); %d occurrence(s) still owed\n",
					res.Task, res.NominalAt.UTC().Format(time.RFC3339), len(res.Owed))
				for _, o := range res.Owed {
					fmt.Fprintf(out, "  %s\n", o.UTC().Format(time.RFC3339))
				}
				return err
			})
		},
	}
	cmd.Flags().StringVar(&at, "at", "", "the nominal time of the owed occurrence (RFC3339)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

// Where a task's schedule came from, most authoritative first.
const (
	sourceStatus     = "status"
	sourceConfigured = "PACER_SCHEDULES"
	sourceDefault    = "default"
)

// statusWait bounds how long `schedule next` waits for the scheduler
// before it falls back to the configuration.
const statusWait = 3 * time.Second

// taskSchedule is the schedule `schedule next` shows and where it came
// from.
type taskSchedule struct {
	Task   string    `json:"task"`
	Source string    `json:"source"`
	Spec   cron.Spec `json:"schedule"`
	// NextDueAt is when the scheduler says an interval task is next due.
	NextDueAt *time.Time `json:"nextDueAt,omitempty"`
	// Why says why the scheduler's status was not the source.
	Why string `json:"why,omitempty"`
}

// statusTask is the part of a task's entry in the status document that
// `schedule next` reads. It is decoded from the raw document so that a
// scheduler whose status already carries `schedule` is read, and one whose
// status does not yet is not an error.
type statusTask struct {
	Schedule  json.RawMessage `json:"schedule"`
	Every     string          `json:"every"`
	NextDueAt *time.Time      `json:"nextDueAt"`
}

// resolveSchedule picks a task's schedule: the scheduler's status when it
// answered and shows the task (its `schedule`, else its interval), else
// PACER_SCHEDULES, else the task's default.
func (c *config) resolveSchedule(task string, status map[string]statusTask, statusErr error) (taskSchedule, error) {
	ts := taskSchedule{Task: task}
	if statusErr != nil {
		ts.Why = "the scheduler did not answer: " + clipLine(statusErr.Error(), 120)
	} else if st, ok := status[task]; ok {
		if len(st.Schedule) > 0 && string(st.Schedule) != "null" {
			spec, err := cron.ParseSpec(st.Schedule)
			if err != nil {
				return ts, fmt.Errorf("the scheduler's schedule of %s: %w", task, err)
			}
			ts.Source, ts.Spec = sourceStatus, spec
			return ts, nil
		}
		if every, err := time.ParseDuration(st.Every); err == nil && every > 0 {
			ts.Source, ts.Spec, ts.NextDueAt = sourceStatus, cron.Spec{Every: every}, st.NextDueAt
			return ts, nil
		}
		ts.Why = "the scheduler's status shows no schedule for " + task
	} else {
		ts.Why = "the scheduler does not run " + task + " yet"
	}
	if spec, ok := c.schedules[task]; ok {
		ts.Source, ts.Spec = sourceConfigured, spec
		return ts, nil
	}
	ts.Source = sourceDefault
	switch task {
	case pacer.TaskTenero:
		ts.Spec = cron.Spec{Every: c.teneroEvery}
	case pacer.TaskSweep:
		ts.Spec = cron.Spec{Every: c.sweepEvery}
	default:
		spec, ok := cron.Default(task)
		if !ok {
			return ts, usagef("%s has no schedule of its own: it runs while deliveries are due", task)
		}
		ts.Spec = spec
	}
	return ts, nil
}

// statusTasks asks the scheduler for its status document's tasks.
func (c *config) statusTasks(ctx context.Context) (map[string]statusTask, error) {
	ctx, cancel := context.WithTimeout(ctx, statusWait)
	defer cancel()
	var tasks map[string]statusTask
	err := c.withClient(ctx, func(tc client.Client) error {
		v, err := tc.QueryWorkflow(ctx, c.workflowID, "", workflows.QueryStatus)
		if err != nil {
			return err
		}
		var raw json.RawMessage
		if err := v.Get(&raw); err != nil {
			return err
		}
		tasks, err = decodeStatusTasks(raw)
		return err
	})
	return tasks, err
}

func decodeStatusTasks(raw []byte) (map[string]statusTask, error) {
	var doc struct {
		Tasks map[string]statusTask `json:"tasks"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("status document: %w", err)
	}
	return doc.Tasks, nil
}

func newScheduleNextCmd(c *config) *cobra.Command {
	var n int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "next TASK [--n N]",
		Short: "A task's next fire times (schedule from the scheduler's status, else PACER_SCHEDULES, else the default)",
		Args:  wrapArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			task := args[0]
			if err := checkTask(task); err != nil {
				return err
			}
			if n < 1 || n > 1000 {
				return usagef("--n %d is outside 1..1000", n)
			}
			status, statusErr := c.statusTasks(cmd.Context())
			ts, err := c.resolveSchedule(task, status, statusErr)
			if err != nil {
				return err
			}
			return printNext(cmd.OutOrStdout(), ts, time.Now(), n, asJSON)
		},
	}
	cmd.Flags().IntVar(&n, "n", 10, "how many fire times")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

// nextFire is one line of `schedule next`.
type nextFire struct {
	NominalAt time.Time `json:"nominalAt"`
	// DueAt is when the run starts: the nominal time plus the task's
	// jitter for it.
	DueAt time.Time `json:"dueAt"`
	// Local is the nominal time in the schedule's zone; Wall the wall-clock
	// time the spec named, which differs for a DST gap.
	Local string `json:"local,omitempty"`
	Wall  string `json:"wall,omitempty"`
	Gap   bool   `json:"gap,omitempty"`
	Skip  bool   `json:"skip,omitempty"`
}

func nextFires(ts taskSchedule, now time.Time, n int) ([]nextFire, error) {
	out := make([]nextFire, 0, n)
	if !ts.Spec.IsCron() {
		at := now.Add(ts.Spec.Every)
		if ts.NextDueAt != nil {
			at = *ts.NextDueAt
		}
		for i := range n {
			t := at.Add(time.Duration(i) * ts.Spec.Every).UTC()
			out = append(out, nextFire{NominalAt: t, DueAt: t})
		}
		return out, nil
	}
	s, err := cron.New(ts.Spec)
	if err != nil {
		return nil, err
	}
	after := now
	for range n {
		f, ok := s.Next(after)
		if !ok {
			break
		}
		out = append(out, nextFire{
			NominalAt: f.At, DueAt: s.DueAt(ts.Task, f).UTC(), Local: f.At.In(s.Location()).Format("2006-01-02 15:04 MST"),
			Wall: f.Wall(), Gap: f.Gap, Skip: f.Skip,
		})
		after = f.At
	}
	return out, nil
}

func printNext(w io.Writer, ts taskSchedule, now time.Time, n int, asJSON bool) error {
	fires, err := nextFires(ts, now, n)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(w, struct {
			taskSchedule
			Fires []nextFire `json:"fires"`
		}{ts, fires})
	}
	source := map[string]string{
		sourceStatus: "the scheduler's status", sourceConfigured: "PACER_SCHEDULES", sourceDefault: "the default",
	}[ts.Source]
	fmt.Fprintf(w, "%s: %s (from %s", ts.Task, ts.Spec, source)
	if ts.Why != "" {
		fmt.Fprintf(w, "; %s", ts.Why)
	}
	fmt.Fprintln(w, ")")
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	if !ts.Spec.IsCron() {
		from := "counted from now"
		if ts.NextDueAt != nil {
			from = "from the scheduler's next due time"
		}
		fmt.Fprintf(w, "an interval after the last start, %s; pacing and back-off can move them\n", from)
		fmt.Fprintln(tw, "NEXT (UTC)")
		for _, f := range fires {
			fmt.Fprintf(tw, "%s\n", f.NominalAt.Format(time.RFC3339))
		}
		return tw.Flush()
	}
	fmt.Fprintln(tw, "NOMINAL (UTC)\tIN ZONE\tSTARTS\tNOTE")
	for _, f := range fires {
		starts := "on time"
		if d := f.DueAt.Sub(f.NominalAt); d > 0 {
			starts = "+" + d.String() + " (jitter)"
		}
		note := ""
		switch {
		case f.Skip:
			note, starts = fmt.Sprintf("%s does not exist that day: skipped (dst_gap)", f.Wall[11:]), "-"
		case f.Gap:
			note = fmt.Sprintf("%s does not exist that day: runs at the first instant after", f.Wall[11:])
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.NominalAt.Format(time.RFC3339), f.Local, starts, note)
	}
	return tw.Flush()
}

// parseSince reads --since: an RFC3339 time, or a Go duration back from
// now.
func parseSince(v string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return time.Time{}, usagef("--since %.80q is neither an RFC3339 time nor a positive Go duration (like 24h)", v)
	}
	return now.Add(-d), nil
}

func newScheduleHistoryCmd(c *config) *cobra.Command {
	var since string
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "history TASK [--since T] [--json]",
		Short: "A task's occurrence ledger (task_runs): what ran, what was skipped and why, what was coalesced",
		Args:  wrapArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			task := args[0]
			if err := checkTask(task); err != nil {
				return err
			}
			from, err := parseSince(since, time.Now())
			if err != nil {
				return err
			}
			if limit < 1 || limit > 100_000 {
				return usagef("--limit %d is outside 1..100000", limit)
			}
			st, err := c.openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			runs, err := st.TaskRuns(cmd.Context(), task, from, limit)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), struct {
					Task  string          `json:"task"`
					Since time.Time       `json:"since"`
					Runs  []store.TaskRun `json:"runs"`
				}{task, from.UTC(), nonNil(runs)})
			}
			return printHistory(cmd.OutOrStdout(), task, from, runs, limit)
		},
	}
	cmd.Flags().StringVar(&since, "since", "24h", "from this RFC3339 time, or this long ago (a Go duration)")
	cmd.Flags().IntVar(&limit, "limit", 1000, "at most this many occurrences (the newest)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func optTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func printHistory(w io.Writer, task string, since time.Time, runs []store.TaskRun, limit int) error {
	fmt.Fprintf(w, "%s: %d occurrences since %s", task, len(runs), since.UTC().Format(time.RFC3339))
	if len(runs) == limit {
		fmt.Fprintf(w, " (the newest %d; --limit for more)", limit)
	}
	fmt.Fprintln(w)
	if len(runs) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "NOMINAL (UTC)\tSTATUS\tREASON\tSTARTED\tFINISHED\tCOALESCED INTO\tMISSED")
	tally := map[string]int{}
	for _, r := range runs {
		status := r.Status
		if r.ErrorClass != "" {
			status += " (" + r.ErrorClass + ")"
		}
		if r.Attempts > 1 {
			status += fmt.Sprintf(", %d attempts", r.Attempts)
		}
		reason, missed := "-", "-"
		if r.Reason != "" {
			reason = r.Reason
		}
		if r.MissedCount != nil {
			missed = fmt.Sprint(*r.MissedCount)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.NominalAt.UTC().Format(time.RFC3339), status, reason,
			optTime(r.StartedAt), optTime(r.FinishedAt), optTime(r.CoalescedInto), missed)
		key := r.Status
		if r.Reason != "" {
			key += " " + r.Reason
		}
		tally[key]++
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(tally)) {
		parts = append(parts, fmt.Sprintf("%d %s", tally[k], k))
	}
	_, err := fmt.Fprintf(w, "\n%s\n", strings.Join(parts, ", "))
	return err
}
