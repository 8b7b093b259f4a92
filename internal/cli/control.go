package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/api"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/operate"
	"github.com/pacer-dev/pacer/internal/schedule"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

// withClient runs f with a Temporal client for a one-shot operator command.
func (c *config) withClient(ctx context.Context, f func(client.Client) error) error {
	tc, err := c.dialQuiet(ctx)
	if err != nil {
		return err
	}
	defer tc.Close()
	return f(tc)
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newStatusCmd(c *config) *cobra.Command {
	var asJSON, watch bool
	var every time.Duration
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the scheduler's status (the status query)",
		Args:  wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if every < MinWatchEvery {
				return usagef("--every must be at least %s", MinWatchEvery)
			}
			out := cmd.OutOrStdout()
			return c.withClient(cmd.Context(), func(tc client.Client) error {
				show := func() error {
					st, err := worker.Status(cmd.Context(), tc, c.workflowID)
					if err != nil {
						if st, err = c.stoppedStatus(cmd.Context(), err); err != nil {
							return err
						}
					}
					return writeStatus(out, st, asJSON, false, every)
				}
				if !watch {
					return show()
				}
				t := time.NewTicker(every)
				defer t.Stop()
				for {
					fmt.Fprint(out, "\033[H\033[2J") // clear the terminal
					// The memo's status: however many watch, no query (SPEC §7).
					st, err := worker.StatusShared(cmd.Context(), tc, c.workflowID)
					if err != nil {
						st, err = c.stoppedStatus(cmd.Context(), err)
					}
					if err != nil {
						fmt.Fprintf(out, "%s  status unavailable: %v\n", time.Now().UTC().Format(time.RFC3339), err)
					} else {
						_ = writeStatus(out, st, asJSON, true, every)
					}
					select {
					case <-cmd.Context().Done():
						return nil
					case <-t.C:
					}
				}
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status document as JSON")
	cmd.Flags().BoolVar(&watch, "watch", false, "refresh the view until interrupted")
	cmd.Flags().DurationVar(&every, "every", MinWatchEvery, "refresh interval for --watch (at least 10s; --watch reads the status the scheduler keeps in its memo, which costs no query)")
	return cmd
}

// stoppedStatus answers, for a scheduler Temporal no longer holds (its
// namespace's retention deleted the stopped run), with the stop kept in
// Postgres (SPEC §3.5); any other error, or no recorded stop, is err.
func (c *config) stoppedStatus(ctx context.Context, err error) (workflows.Status, error) {
	var nf *serviceerror.NotFound
	if !errors.As(err, &nf) {
		return workflows.Status{}, err
	}
	var st workflows.Status
	var ok bool
	serr := c.withStore(ctx, func(s *store.Store) error {
		var e error
		st, ok, e = worker.StoppedStatus(ctx, s, c.workflowID)
		return e
	})
	if serr != nil || !ok {
		return workflows.Status{}, err
	}
	return st, nil
}

// MinWatchEvery is the shortest refresh of status --watch: each refresh is
// a description of the workflow (the memo's status; a query for a
// scheduler from before it kept one).
const MinWatchEvery = 10 * time.Second

// writeStatus prints the status document as pacer status shows it: the
// public document, whose errors are classes with a fixed text (the raw
// error, which may name database hosts or quote upstream bodies, is in the
// worker's logs: scheduler.task_failed).
func writeStatus(w io.Writer, st workflows.Status, asJSON, watch bool, every time.Duration) error {
	st = api.PublicStatus(st)
	switch {
	case asJSON:
		return printJSON(w, st)
	case watch:
		return printWatch(w, st, time.Now(), every)
	}
	return printStatus(w, st)
}

func fmtTime(t *time.Time, now time.Time) string {
	if t == nil {
		return "-"
	}
	d := t.Sub(now).Round(time.Second)
	switch {
	case d > 0:
		return fmt.Sprintf("%s (in %s)", t.UTC().Format(time.RFC3339), d)
	case d < 0:
		return fmt.Sprintf("%s (%s ago)", t.UTC().Format(time.RFC3339), -d)
	}
	return t.UTC().Format(time.RFC3339)
}

func printStatus(w io.Writer, st workflows.Status) error {
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintf(tw, "scheduler\t%s (run %s, generation %d, %d history events)\n", st.WorkflowID, st.RunID, st.Generation, st.HistoryLength)
	fmt.Fprintf(tw, "as of\t%s\n", st.Now.Format(time.RFC3339))
	paused := "no"
	if st.PausedUntil != nil {
		paused = "until " + fmtTime(st.PausedUntil, st.Now)
	}
	fmt.Fprintf(tw, "paused\t%s\n", paused)
	if st.Stopping != nil {
		// Stopped once no run is in flight (workers leave it stopped).
		state := "stopped"
		for _, t := range st.Tasks {
			if t.Running {
				state = "stopping"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\n", state, orDash(st.Stopping.Reason))
	}
	fmt.Fprintf(tw, "next wake\t%s\n\n", fmtTime(st.NextWakeAt, st.Now))
	fmt.Fprintf(tw, "config\ttenero every %s, sweep every %s\n\n", st.Config.TeneroEvery, st.Config.SweepEvery)
	fmt.Fprintln(tw, "TASK\tEVERY\tSTATE\tLAST RUN\tNEXT DUE\tWAITING ON\tFAILURES\tLAST ERROR")
	names := make([]string, 0, len(st.Tasks))
	for name := range st.Tasks {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		t := st.Tasks[name]
		state := taskState(t)
		lastErr := "-"
		if t.LastError != nil {
			lastErr = fmt.Sprintf("%s at %s: %s", t.LastError.Class, t.LastError.At.UTC().Format(time.RFC3339), t.LastError.Message)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", name, everyText(t), state, fmtTime(t.LastRunAt, st.Now),
			fmtTime(t.NextDueAt, st.Now), orDash(t.Waiting), st.ConsecutiveFailures[name], lastErr)
	}
	if r := st.LastTeneroResult; r != nil {
		fmt.Fprintf(tw, "\nlast tenero\t%s\n", teneroLine(r))
	}
	if r := st.LastSweepResult; r != nil {
		fmt.Fprintf(tw, "last sweep\t%s\n", sweepLine(r))
	}
	for _, name := range []string{pacer.TaskRollup, pacer.TaskDeliver} {
		if _, line := lastRun(st, name); line != "-" {
			fmt.Fprintf(tw, "last %s\t%s\n", name, line)
		}
	}
	if t, ok := st.Tasks[pacer.TaskRollup]; ok && t.Occurrences != nil {
		fmt.Fprintf(tw, "rollup occurrences\tnext %s; %d missed, %d skipped, %d coalesced since the schedule began; %d queued\n",
			fmtTime(t.Occurrences.NextAt, st.Now), t.Missed, t.Occurrences.Skipped, t.Coalesced, t.Occurrences.Queued)
	}
	if d := st.Deliveries; d != nil {
		fmt.Fprintf(tw, "deliveries\t%d pending, %d retrying, %d exhausted (as of %s)\n", d.Pending, d.Retrying, d.Exhausted,
			fmtTime(d.AsOf, st.Now))
	}
	return tw.Flush()
}

// printWatch is the live operator view of status --watch: a header, one
// line per task, and the last error of a failing task, in about 120
// columns. Times are relative to now, the local clock, so they keep moving
// while the workflow sleeps (its own "now" is the time of its last event).
func printWatch(w io.Writer, st workflows.Status, now time.Time, every time.Duration) error {
	state := "running"
	if st.PausedUntil != nil {
		state = "PAUSED until " + st.PausedUntil.UTC().Format(time.RFC3339) + " (" + relTime(st.PausedUntil, now) + ")"
	}
	fmt.Fprintf(w, "%s  run %s  gen %d  %d events  at %s  (refreshes every %s from the memo, no query; Ctrl-C stops)\n",
		st.WorkflowID, shortID(st.RunID), st.Generation, st.HistoryLength, now.UTC().Format(time.RFC3339), every)
	fmt.Fprintf(w, "%s; next wake %s\n\n", state, relTime(st.NextWakeAt, now))

	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tSTATE\tEVERY\tLAST RUN\tNEXT DUE\tFAILS\tBREAKER\tBATCH\tZONE\tQUOTA MIN/MONTH\tLAST RESULT")
	var failing []string
	for _, name := range slices.Sorted(maps.Keys(st.Tasks)) {
		t := st.Tasks[name]
		breaker := "closed"
		if t.Breaker.Open {
			breaker = "OPEN, probe " + relTime(t.Breaker.ProbeAt, now)
		}
		run, last := lastRun(st, name)
		quota := "-"
		if run != nil {
			quota = optInt(run.MinuteRemaining) + "/" + optInt(run.MonthRemaining)
		}
		// A run from before adaptive pacing has no pacing, the sweep no
		// batch: "-".
		every, batch, zone := everyText(t), "-", "-"
		if p := t.Pacing; p != nil {
			every, zone = p.Interval, string(p.Zone)
			if p.Batch > 0 {
				batch = strconv.Itoa(p.Batch)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", name, taskState(t), every,
			relTime(t.LastRunAt, now), nextDue(t, now), st.ConsecutiveFailures[name], breaker,
			batch, zone, quota, last)
		if st.ConsecutiveFailures[name] > 0 && t.LastError != nil {
			failing = append(failing, fmt.Sprintf("%s: %s %s: %s", name, t.LastError.Class,
				relTime(&t.LastError.At, now), clipLine(t.LastError.Message, 100)))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, f := range failing {
		fmt.Fprintf(w, "\nlast error  %s", f)
	}
	if len(failing) > 0 {
		fmt.Fprintln(w)
	}
	return nil
}

// nextDue is when a task runs next and, when it waits, why: "in 3m (pacing)".
func nextDue(t workflows.TaskStatus, now time.Time) string {
	when := relTime(t.NextDueAt, now)
	switch t.Waiting {
	case "", "due", "running", "requested":
		return when
	}
	return when + " (" + t.Waiting + ")"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// taskState is a task's state in one word.
func taskState(t workflows.TaskStatus) string {
	switch {
	case t.Running:
		return "running"
	case t.Requested:
		return "requested"
	}
	return "idle"
}

// lastRun returns a task's last result's run part and a short summary of it.
func lastRun(st workflows.Status, task string) (*pacer.Run, string) {
	switch {
	case task == pacer.TaskTenero && st.LastTeneroResult != nil:
		r := st.LastTeneroResult
		if r.ErrorClass != "" {
			return &r.Run, "FAILED " + string(r.ErrorClass)
		}
		return &r.Run, fmt.Sprintf("ok %d/%d tokens, %d written, %dms", r.Succeeded, r.TokensAttempted, r.Written, r.DurationMs)
	case task == pacer.TaskSweep && st.LastSweepResult != nil:
		r := st.LastSweepResult
		if r.ErrorClass != "" {
			return &r.Run, "FAILED " + string(r.ErrorClass)
		}
		return &r.Run, fmt.Sprintf("ok %d agents, %d found, %d inserted, %d rejected, %dms", r.Scanned, r.Found, r.Inserted, r.Rejected, r.DurationMs)
	case task == pacer.TaskRollup && st.LastRollupResult != nil:
		r := st.LastRollupResult
		if r.ErrorClass != "" {
			return nil, "FAILED " + string(r.ErrorClass)
		}
		return nil, fmt.Sprintf("ok %d hours, %d days, %d rows, %dms", len(r.Hours), len(r.Days), r.Rows, r.DurationMs)
	case task == pacer.TaskDeliver && st.LastDeliverResult != nil:
		r := st.LastDeliverResult
		if r.ErrorClass != "" {
			return nil, "FAILED " + string(r.ErrorClass)
		}
		return nil, fmt.Sprintf("ok %d delivered, %d failed; %d pending, %d retrying, %d exhausted, %dms",
			r.Delivered, r.Failed, r.Pending, r.Retrying, r.ExhaustedTotal, r.DurationMs)
	}
	return nil, "-"
}

// everyText is a task's schedule in a column: its interval, its cron
// spec, or "on demand" for a task without a schedule (deliver).
func everyText(t workflows.TaskStatus) string {
	switch {
	case t.Schedule != nil && t.Schedule.IsCron():
		s := t.Schedule.Cron
		if t.Schedule.TZ != "" && t.Schedule.TZ != "UTC" {
			s += " " + t.Schedule.TZ
		}
		return s
	case t.OnDemand():
		return "on demand"
	}
	return t.Every
}

// relTime says when t is relative to now, compactly ("in 3m40s", "12s ago").
func relTime(t *time.Time, now time.Time) string {
	if t == nil {
		return "-"
	}
	d := t.Sub(now).Round(time.Second)
	switch {
	case d > 0:
		return "in " + d.String()
	case d < 0:
		return (-d).String() + " ago"
	}
	return "now"
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8] + "…"
	}
	return id
}

func clipLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

func optInt(p *int) string {
	if p == nil {
		return "?"
	}
	return fmt.Sprint(*p)
}

func teneroLine(r *pacer.TeneroResult) string {
	return fmt.Sprintf("%s: %d attempted, %d succeeded (%d written, %d unchanged, %d pegged, %d no price), %d failed, %d skipped; quota left %s/min %s/month; %dms",
		outcomeWord(&r.Run), r.TokensAttempted, r.Succeeded, r.Written, r.Unchanged, r.Pegged, r.NoPrice, r.Failed, r.Skipped,
		optInt(r.MinuteRemaining), optInt(r.MonthRemaining), r.DurationMs)
}

func outcomeWord(r *pacer.Run) string {
	if r.ErrorClass != "" {
		return fmt.Sprintf("FAILED (%s: %s)", r.ErrorClass, r.Error)
	}
	return "ok"
}

func sweepLine(r *pacer.SweepResult) string {
	cursor := "wrapped"
	if r.Cursor != nil {
		cursor = "after " + *r.Cursor
	}
	var reasons []string
	for _, k := range slices.Sorted(maps.Keys(r.RejectionReasons)) {
		if n := r.RejectionReasons[k]; n > 0 {
			reasons = append(reasons, fmt.Sprintf("%s=%d", k, n))
		}
	}
	rejected := fmt.Sprintf("%d rejected", r.Rejected)
	if len(reasons) > 0 {
		rejected += " (" + strings.Join(reasons, ", ") + ")"
	}
	spent := fmt.Sprintf("%d Hiro requests", r.Requests)
	if r.StoppedBy != "" {
		spent += ", stopped by " + r.StoppedBy
	}
	return fmt.Sprintf("%s: %d agents scanned, %d swaps found, %d inserted, %d already known, %d pending, %s; %d Hiro errors; %s; cursor %s; %dms",
		outcomeWord(&r.Run), r.Scanned, r.Found, r.Inserted, r.AlreadyKnown, r.Pending, rejected, r.HiroErrors, spent, cursor, r.DurationMs)
}

// refreshable are the names refresh takes.
var refreshable = []string{pacer.TaskTenero, pacer.TaskSweep, pacer.TaskRollup, pacer.TaskDeliver, pacer.TaskRegistry,
	pacer.TaskFinalize, pacer.TaskChainhook, pacer.TaskAll}

func newRefreshCmd(c *config) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "refresh tenero|sweep|rollup|deliver|registry|finalize|chainhook|all",
		Short: "Run tasks now (the refreshNow update) and print their results",
		Long: `refresh runs tasks now, ignoring pause and due checks, and prints their
results. A refresh of rollup computes the hour and days as of now and never
takes the place of a scheduled occurrence; it is recorded as manual.`,
		Args:      wrapArgs(cobra.ExactArgs(1)),
		ValidArgs: refreshable,
		RunE: func(cmd *cobra.Command, args []string) error {
			task := args[0]
			if !slices.Contains(refreshable, task) {
				return usagef("unknown task %q (want %s)", task, strings.Join(refreshable, ", "))
			}
			return c.withClient(cmd.Context(), func(tc client.Client) error {
				res, err := worker.RefreshNow(cmd.Context(), tc, c.workflowID, task)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), res)
				}
				if res.Tenero != nil {
					fmt.Fprintf(cmd.OutOrStdout(), "tenero: %s\n", teneroLine(res.Tenero))
				}
				if res.Sweep != nil {
					fmt.Fprintf(cmd.OutOrStdout(), "sweep: %s\n", sweepLine(res.Sweep))
				}
				if r := res.Rollup; r != nil {
					fmt.Fprintf(cmd.OutOrStdout(), "rollup: %s: %d hours, %d days, %d rows; %dms\n",
						outcomeWord(&r.Run), len(r.Hours), len(r.Days), r.Rows, r.DurationMs)
				}
				if r := res.Deliver; r != nil {
					fmt.Fprintf(cmd.OutOrStdout(), "deliver: %s: %d emitted, %d attempted, %d delivered, %d failed; now %d pending, %d retrying, %d exhausted; %dms\n",
						outcomeWord(&r.Run), r.Emitted, r.Attempted, r.Delivered, r.Failed, r.Pending, r.Retrying, r.ExhaustedTotal, r.DurationMs)
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the results as JSON")
	return cmd
}

func newPauseCmd(c *config) *cobra.Command {
	var until, forDur, task string
	cmd := &cobra.Command{
		Use:   "pause --until RFC3339 | --for DURATION [--task TASK]",
		Short: "Stop scheduled runs of every task, or of one, until a time (explicit refreshes still run; the pause update)",
		Args:  wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := schedule.PauseUntil(time.Now(), until, forDur); err != nil {
				return &UsageError{Err: err}
			}
			if task != "" {
				if err := checkTask(task); err != nil {
					return err
				}
			}
			return c.withService(cmd, true, func(ctx context.Context, svc *operate.Service) error {
				raw, err := svc.Pause(ctx, operate.PauseInput{Task: task, Until: until, For: forDur})
				if err != nil {
					return err
				}
				var res workflows.PauseResult
				if err := json.Unmarshal(raw, &res); err != nil {
					return fmt.Errorf("decode the pause result: %w", err)
				}
				what := "no scheduled runs"
				if res.Task != "" {
					what = "no scheduled " + res.Task + " runs"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "paused: %s until %s\n", what, res.PausedUntil.UTC().Format(time.RFC3339))
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&until, "until", "", "pause until this RFC3339 time")
	cmd.Flags().StringVar(&forDur, "for", "", "pause for this Go duration (like 30m)")
	cmd.Flags().StringVar(&task, "task", "", "pause this task only (tenero, sweep, rollup or deliver)")
	return cmd
}

func newResumeCmd(c *config) *cobra.Command {
	var task string
	cmd := &cobra.Command{
		Use:   "resume [--task TASK]",
		Short: "Clear a pause and close open circuit breakers (the resume update)",
		Args:  wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.withService(cmd, true, func(ctx context.Context, svc *operate.Service) error {
				raw, err := svc.Resume(ctx, operate.ResumeInput{Task: task})
				if err != nil {
					return err
				}
				var res workflows.ResumeResult
				if err := json.Unmarshal(raw, &res); err != nil {
					return fmt.Errorf("decode the resume result: %w", err)
				}
				out := cmd.OutOrStdout()
				if res.WasPaused {
					fmt.Fprintln(out, "resumed: scheduled runs start again")
				} else {
					fmt.Fprintln(out, "resumed (it was not paused)")
				}
				if len(res.BreakersClosed) > 0 {
					fmt.Fprintf(out, "closed breakers: %s\n", strings.Join(res.BreakersClosed, ", "))
				}
				if len(res.BackoffsCleared) > 0 {
					fmt.Fprintf(out, "cleared back-offs: %s\n", strings.Join(res.BackoffsCleared, ", "))
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&task, "task", "", "resume this task only (default all)")
	return cmd
}

func newTuneCmd(c *config) *cobra.Command {
	var batch int
	var interval string
	var reset bool
	cmd := &cobra.Command{
		Use:       "tune tenero|sweep|all [--batch N] [--interval D] [--reset]",
		Short:     "Set a task's pacing within its bounds, or reset it (the tune update)",
		Args:      wrapArgs(cobra.ExactArgs(1)),
		ValidArgs: []string{pacer.TaskTenero, pacer.TaskSweep, pacer.TaskAll},
		RunE: func(cmd *cobra.Command, args []string) error {
			in := workflows.TuneInput{Task: args[0], Interval: interval, Reset: reset}
			if cmd.Flags().Changed("batch") {
				in.Batch = &batch
			}
			raw, err := json.Marshal(in)
			if err != nil {
				return err
			}
			// The workflow's own parser, so that the CLI refuses what the
			// update's validator would, with the same words.
			if err := workflows.CheckTune(raw, []string{pacer.TaskTenero, pacer.TaskSweep}); err != nil {
				return &UsageError{Err: err}
			}
			return c.withService(cmd, true, func(ctx context.Context, svc *operate.Service) error {
				out, err := svc.Tune(ctx, raw)
				if err != nil {
					return err
				}
				var res workflows.TuneResult
				if err := json.Unmarshal(out, &res); err != nil {
					return fmt.Errorf("decode the tune result: %w", err)
				}
				for _, name := range slices.Sorted(maps.Keys(res.Tasks)) {
					p := res.Tasks[name]
					if p.Batch > 0 {
						fmt.Fprintf(cmd.OutOrStdout(), "%s: batch %d, every %s\n", name, p.Batch, p.Interval)
					} else {
						fmt.Fprintf(cmd.OutOrStdout(), "%s: every %s\n", name, p.Interval)
					}
				}
				return nil
			})
		},
	}
	cmd.Flags().IntVar(&batch, "batch", 0, "items per run (tenero; the sweep has none)")
	cmd.Flags().StringVar(&interval, "interval", "", "interval between runs (Go duration)")
	cmd.Flags().BoolVar(&reset, "reset", false, "back to the configured cadence and the whole batch")
	return cmd
}

func newStartCmd(c *config) *cobra.Command {
	return &cobra.Command{
		Use:   "start",
		Short: "Start the scheduler, carrying the state of its last run (a stopped one too)",
		Args:  wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var e worker.Ensured
			err := c.withService(cmd, true, func(ctx context.Context, svc *operate.Service) error {
				var err error
				e, err = svc.Start(ctx, c.scheduler())
				return err
			})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			switch {
			case e.Restart != nil:
				fmt.Fprintf(out, "scheduler %s started (run %s), carrying the state of run %s (%s), as of %s\n",
					c.workflowID, e.RunID, e.Restart.RunID, e.Restart.After, e.Restart.StateFrom.Format(time.RFC3339))
			case e.Started:
				fmt.Fprintf(out, "scheduler %s started (run %s)\n", c.workflowID, e.RunID)
			default:
				fmt.Fprintf(out, "scheduler %s is already running (run %s)\n", c.workflowID, e.RunID)
			}
			return nil
		},
	}
}

func newStopCmd(c *config) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "stop [--reason TEXT]",
		Short: "Stop the scheduler on purpose: running tasks finish, workers leave it stopped until pacer start",
		Args:  wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			raw, err := json.Marshal(workflows.StopInput{Reason: reason})
			if err != nil {
				return err
			}
			if _, err := workflows.ParseStop(raw); err != nil {
				return &UsageError{Err: err}
			}
			return c.withService(cmd, true, func(ctx context.Context, svc *operate.Service) error {
				res, err := svc.Stop(ctx, c.scheduler(), raw)
				if err != nil {
					return err
				}
				// Failing to keep it in Postgres, workers record it at their
				// next check (while Temporal still holds the stopped run).
				if res.RecordedErr != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "pacer: stopped, but not recorded in Postgres yet (workers record it at their next check): %v\n", res.RecordedErr)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "scheduler %s stopped at %s; workers leave it stopped; pacer start resumes it with its state\n",
					c.workflowID, res.Result.StoppedAt.Format(time.RFC3339))
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why it is stopped (kept with its state)")
	return cmd
}

func newReconfigureCmd(c *config) *cobra.Command {
	var teneroEvery, sweepEvery string
	var schedules []string
	cmd := &cobra.Command{
		Use:   "reconfigure [--tenero-every D] [--sweep-every D] [--schedule TASK=SPEC]...",
		Short: "Change the running scheduler's configuration in place (the reconfigure update)",
		Long: `reconfigure changes the cadences and schedules of the running scheduler
without a restart; the new configuration is carried from then on.
--schedule TASK=SPEC takes a schedule as JSON
({"cron":"5 * * * *","tz":"Europe/London","catchup":"backfill"}, or
{"every":"10m"}) or a bare cron spec. rollup takes a cron spec or an
interval; tenero and sweep an interval (they are paced to their upstream);
deliver none (it runs while deliveries are due).`,
		Args: wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			// --tenero-every is also the worker's flag for a first start;
			// here only the command's own flags count.
			in := map[string]any{}
			if teneroEvery != "" {
				in["teneroEvery"] = teneroEvery
			}
			if sweepEvery != "" {
				in["sweepEvery"] = sweepEvery
			}
			if len(schedules) > 0 {
				sched := map[string]json.RawMessage{}
				for _, sc := range schedules {
					task, spec, ok := strings.Cut(sc, "=")
					if !ok || task == "" || spec == "" {
						return usagef("--schedule %q: want TASK=SPEC", sc)
					}
					if json.Valid([]byte(spec)) {
						sched[task] = json.RawMessage(spec)
					} else {
						b, _ := json.Marshal(map[string]string{"cron": spec})
						sched[task] = b
					}
				}
				in["schedules"] = sched
			}
			raw, err := json.Marshal(in)
			if err != nil {
				return err
			}
			if _, err := workflows.ParseReconfigure(raw, workflows.Config{}); err != nil {
				return &UsageError{Err: err}
			}
			return c.withService(cmd, true, func(ctx context.Context, svc *operate.Service) error {
				got, err := svc.Reconfigure(ctx, raw)
				if err != nil {
					return err
				}
				var res workflows.ReconfigureResult
				if err := json.Unmarshal(got, &res); err != nil {
					return fmt.Errorf("decode the reconfigure result: %w", err)
				}
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "reconfigured: tenero every %s, sweep every %s (in force now, carried from the next idle moment)\n",
					res.Config.TeneroEvery, res.Config.SweepEvery)
				for _, task := range res.Config.Schedules.Tasks() {
					fmt.Fprintf(out, "schedule %s: %s\n", task, res.Config.Schedules[task])
				}
				if note := worker.CostNote(res.Config); note != "" {
					fmt.Fprintf(out, "cost: %s\n", note)
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&teneroEvery, "tenero-every", "", "tenero's cadence (Go duration, at least 1s)")
	cmd.Flags().StringVar(&sweepEvery, "sweep-every", "", "how often the sweep looks for due agents (Go duration, at least 1s)")
	cmd.Flags().StringArrayVar(&schedules, "schedule", nil, "TASK=SPEC, a task's schedule: JSON or a bare cron spec (repeatable)")
	return cmd
}

func newPricesCmd(c *config) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "prices [TOKEN...]",
		Short: "Print cached prices from Postgres (all of them when no token is given)",
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, id := range args {
				if !catalog.ValidTokenID(id) {
					return usagef("malformed token id %q", id)
				}
			}
			st, err := c.openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			var rows []store.Price
			var missing []string
			if len(args) == 0 {
				if rows, err = st.AllPrices(cmd.Context()); err != nil {
					return err
				}
			} else {
				found, err := st.Prices(cmd.Context(), args)
				if err != nil {
					return err
				}
				for _, id := range args {
					if p, ok := found[id]; ok {
						rows = append(rows, p)
					} else {
						missing = append(missing, id)
					}
				}
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), map[string]any{"prices": rows, "missing": missing})
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 2, 2, ' ', 0)
			fmt.Fprintln(tw, "TOKEN\tPRICE USD\tDECIMALS\tSOURCE\tFETCHED")
			now := time.Now()
			for _, p := range rows {
				price := "no price"
				if p.PriceUSD != nil {
					price = *p.PriceUSD
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.TokenID, price, optInt(p.Decimals), p.Source, fmtTime(&p.FetchedAt, now))
			}
			for _, id := range missing {
				fmt.Fprintf(tw, "%s\t(not cached)\t\t\t\n", id)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}
