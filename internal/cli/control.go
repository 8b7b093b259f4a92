package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/catalog"
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
			if every < time.Second {
				return usagef("--every must be at least 1s")
			}
			out := cmd.OutOrStdout()
			return c.withClient(cmd.Context(), func(tc client.Client) error {
				show := func() error {
					st, err := worker.Status(cmd.Context(), tc, c.workflowID)
					if err != nil {
						return err
					}
					if asJSON {
						return printJSON(out, st)
					}
					return printStatus(out, st)
				}
				if !watch {
					return show()
				}
				t := time.NewTicker(every)
				defer t.Stop()
				for {
					fmt.Fprint(out, "\033[H\033[2J") // clear the terminal
					st, err := worker.Status(cmd.Context(), tc, c.workflowID)
					switch {
					case err != nil:
						fmt.Fprintf(out, "%s  status unavailable: %v\n", time.Now().UTC().Format(time.RFC3339), err)
					case asJSON:
						_ = printJSON(out, st)
					default:
						_ = printWatch(out, st, time.Now(), every)
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
	cmd.Flags().DurationVar(&every, "every", 2*time.Second, "refresh interval for --watch")
	return cmd
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
	fmt.Fprintf(tw, "next wake\t%s\n\n", fmtTime(st.NextWakeAt, st.Now))
	fmt.Fprintln(tw, "TASK\tEVERY\tSTATE\tLAST RUN\tNEXT DUE\tFAILURES\tLAST ERROR")
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", name, t.Every, state, fmtTime(t.LastRunAt, st.Now),
			fmtTime(t.NextDueAt, st.Now), st.ConsecutiveFailures[name], lastErr)
	}
	if r := st.LastTeneroResult; r != nil {
		fmt.Fprintf(tw, "\nlast tenero\t%s\n", teneroLine(r))
	}
	if r := st.LastSweepResult; r != nil {
		fmt.Fprintf(tw, "last sweep\t%s\n", sweepLine(r))
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
	fmt.Fprintf(w, "%s  run %s  gen %d  %d events  at %s  (every %s, Ctrl-C stops)\n",
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
		// A run from before adaptive pacing has no pacing: "-".
		every, batch, zone := t.Every, "-", "-"
		if p := t.Pacing; p != nil {
			every, batch, zone = p.Interval, strconv.Itoa(p.Batch), string(p.Zone)
			if p.Budget != nil && p.Budget.RunsOutEarly {
				quota += " RUNS OUT EARLY"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", name, taskState(t), every,
			relTime(t.LastRunAt, now), relTime(t.NextDueAt, now), st.ConsecutiveFailures[name], breaker,
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
	}
	return nil, "-"
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
	return fmt.Sprintf("%s: %d agents scanned, %d swaps found, %d inserted, %d already known, %d pending, %s; %d Hiro errors; cursor %s; %dms",
		outcomeWord(&r.Run), r.Scanned, r.Found, r.Inserted, r.AlreadyKnown, r.Pending, rejected, r.HiroErrors, cursor, r.DurationMs)
}

func newRefreshCmd(c *config) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:       "refresh tenero|sweep|all",
		Short:     "Run tasks now (the refreshNow update) and print their results",
		Args:      wrapArgs(cobra.ExactArgs(1)),
		ValidArgs: []string{pacer.TaskTenero, pacer.TaskSweep, pacer.TaskAll},
		RunE: func(cmd *cobra.Command, args []string) error {
			task := args[0]
			if !slices.Contains([]string{pacer.TaskTenero, pacer.TaskSweep, pacer.TaskAll}, task) {
				return usagef("unknown task %q (want tenero, sweep or all)", task)
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
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the results as JSON")
	return cmd
}

func newPauseCmd(c *config) *cobra.Command {
	var until string
	var forDur string
	cmd := &cobra.Command{
		Use:   "pause --until RFC3339 | --for DURATION",
		Short: "Stop scheduled task runs until a time (explicit refreshes still run)",
		Args:  wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			end, err := schedule.PauseUntil(time.Now(), until, forDur)
			if err != nil {
				return &UsageError{Err: err}
			}
			return c.withClient(cmd.Context(), func(tc client.Client) error {
				if err := worker.Signal(cmd.Context(), tc, c.workflowID, workflows.SignalPause,
					workflows.PauseInput{Until: until, For: forDur}); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "pause sent: no scheduled runs until about %s\n", end.UTC().Format(time.RFC3339))
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&until, "until", "", "pause until this RFC3339 time")
	cmd.Flags().StringVar(&forDur, "for", "", "pause for this Go duration (like 30m)")
	return cmd
}

func newResumeCmd(c *config) *cobra.Command {
	return &cobra.Command{
		Use:   "resume",
		Short: "Clear a pause",
		Args:  wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.withClient(cmd.Context(), func(tc client.Client) error {
				if err := worker.Signal(cmd.Context(), tc, c.workflowID, workflows.SignalResume, nil); err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), "resume sent")
				return nil
			})
		},
	}
}

func newStartCmd(c *config) *cobra.Command {
	return &cobra.Command{
		Use:   "start",
		Short: "Ensure the scheduler workflow is running",
		Args:  wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.withClient(cmd.Context(), func(tc client.Client) error {
				runID, err := worker.EnsureRunning(cmd.Context(), tc, c.scheduler())
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "scheduler %s running (run %s)\n", c.workflowID, runID)
				return nil
			})
		},
	}
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
