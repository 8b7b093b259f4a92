package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/pacer-dev/pacer/internal/operate"
	"github.com/pacer-dev/pacer/internal/store"
)

func newRoundsCmd(c *config) *cobra.Command {
	return groupCmd("rounds", "The competition's rounds: windows with their own results, finalized by the finalize task (SPEC §13)",
		newRoundsAddCmd(c), newRoundsListCmd(c), newRoundsShowCmd(c))
}

// parseWhen reads a round's time: RFC3339 or unix seconds.
func parseWhen(flag, raw string) (time.Time, error) {
	if raw == "" {
		return time.Time{}, usagef("--%s is required (RFC3339, like 2026-05-13T19:30:00Z, or unix seconds)", flag)
	}
	if n, err := strconv.ParseInt(raw, 10, 64); err == nil {
		return time.Unix(n, 0).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339, raw)
	if err != nil {
		return time.Time{}, usagef("--%s %q: want RFC3339 (like 2026-05-13T19:30:00Z) or unix seconds", flag, clipArg(raw))
	}
	return t.UTC(), nil
}

func newRoundsAddCmd(c *config) *cobra.Command {
	var starts, ends string
	var grace time.Duration
	var minVolume float64
	var minTrades int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "add ID --starts T --ends T [--grace D] [--min-volume-usd N] [--min-priced-trades N]",
		Short: "Add a round, or change one not yet finalized (audited)",
		Long: `add defines a round: ID is 1-64 of a-z, 0-9 and -; its window is [starts, ends).
The finalize task finalizes it once its grace (default PACER_ROUND_GRACE after
its end) has passed and completeThrough has reached its end. A round can be
changed by adding it again until it is finalized, never after (exit 2).`,
		Args: wrapArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			in := operate.RoundInput{ID: args[0]}
			var err error
			if in.StartsAt, err = parseWhen("starts", starts); err != nil {
				return err
			}
			if in.EndsAt, err = parseWhen("ends", ends); err != nil {
				return err
			}
			if cmd.Flags().Changed("grace") {
				in.Grace = &grace
			}
			if cmd.Flags().Changed("min-volume-usd") {
				in.MinVolumeUSD = &minVolume
			}
			if cmd.Flags().Changed("min-priced-trades") {
				in.MinPricedTradeCount = &minTrades
			}
			return c.withService(cmd, false, func(ctx context.Context, svc *operate.Service) error {
				woken := c.wakeable(ctx, svc)
				defer woken()
				r, created, err := svc.PutRound(ctx, in)
				if errors.Is(err, operate.ErrConflict) {
					return &UsageError{Err: err}
				}
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if asJSON {
					return printJSON(out, r)
				}
				verb := "changed"
				if created {
					verb = "added"
				}
				fmt.Fprintf(out, "round %s %s: [%s, %s), grace until %s, floors %g USD and %d priced trades\n", r.ID, verb,
					stampUTC(r.StartsAt), stampUTC(r.EndsAt), stampUTC(r.GraceEndsAt), r.MinVolumeUSD, r.MinPricedTradeCount)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&starts, "starts", "", "the window's start (RFC3339 or unix seconds), inclusive")
	cmd.Flags().StringVar(&ends, "ends", "", "the window's end (RFC3339 or unix seconds), exclusive")
	cmd.Flags().DurationVar(&grace, "grace", 0, "how long after the end the round waits before it is finalized (default PACER_ROUND_GRACE)")
	cmd.Flags().Float64Var(&minVolume, "min-volume-usd", 50, "the return reward's volume floor, USD")
	cmd.Flags().IntVar(&minTrades, "min-priced-trades", 3, "the return reward's floor of priced trades")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the round as JSON")
	return cmd
}

// wakeable gives svc a Temporal client when one answers within a few
// seconds, so that a new round wakes the finalize task at once; without
// one, the task sees the round at its next run. The returned func closes
// the client.
func (c *config) wakeable(ctx context.Context, svc *operate.Service) func() {
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	tc, err := c.dialQuiet(dctx)
	if err != nil {
		return func() {}
	}
	svc.Temporal = tc
	return tc.Close
}

func stampUTC(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// roundState says where an open round stands at now: in its window, in
// its grace, or due (past its grace, waiting to be finalized).
func roundState(r store.Round, now time.Time) string {
	switch {
	case r.Final():
		return "finalized"
	case now.Before(r.StartsAt):
		return "upcoming"
	case now.Before(r.EndsAt):
		return "running"
	case now.Before(r.GraceEndsAt):
		return "grace"
	}
	return "due"
}

func newRoundsListCmd(c *config) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--json]",
		Short: "List the rounds, newest first, with their state",
		Args:  wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.withStore(cmd.Context(), func(st *store.Store) error {
				rounds, err := st.Rounds(cmd.Context())
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if asJSON {
					if rounds == nil {
						rounds = []store.Round{}
					}
					return printJSON(out, map[string]any{"rounds": rounds})
				}
				if len(rounds) == 0 {
					fmt.Fprintln(out, "no rounds (add one with: pacer rounds add ID --starts T --ends T)")
					return nil
				}
				tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tSTATE\tSTARTS\tENDS\tGRACE ENDS\tMIN VOLUME\tMIN PRICED\tFINALIZED")
				now := time.Now()
				for _, r := range rounds {
					fin := "-"
					if r.FinalizedAt != nil {
						fin = stampUTC(*r.FinalizedAt)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%g\t%d\t%s\n", r.ID, roundState(r, now), stampUTC(r.StartsAt),
						stampUTC(r.EndsAt), stampUTC(r.GraceEndsAt), r.MinVolumeUSD, r.MinPricedTradeCount, fin)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func newRoundsShowCmd(c *config) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show ID [--json]",
		Short: "Show a round: its window, state and, once finalized, its results, rewards and prices",
		Args:  wrapArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withStore(cmd.Context(), func(st *store.Store) error {
				d, found, err := st.RoundByID(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if !found {
					return usagef("no round %q (pacer rounds list shows them)", clipArg(args[0]))
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), d)
				}
				return printRound(cmd.OutOrStdout(), d, time.Now())
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func printRound(w io.Writer, d store.RoundDetail, now time.Time) error {
	r := d.Round
	fmt.Fprintf(w, "round %s: %s\n", r.ID, roundState(r, now))
	fmt.Fprintf(w, "  window      [%s, %s)\n  grace ends  %s\n  floors      %g USD volume, %d priced trades\n",
		stampUTC(r.StartsAt), stampUTC(r.EndsAt), stampUTC(r.GraceEndsAt), r.MinVolumeUSD, r.MinPricedTradeCount)
	if !r.Final() {
		return nil
	}
	fmt.Fprintf(w, "  finalized   %s (%d results, %d prices)\n\n", stampUTC(*r.FinalizedAt), len(d.Results), len(d.Prices))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CATEGORY\tRANK\tSTX ADDRESS")
	for _, rw := range d.Rewards {
		fmt.Fprintf(tw, "%s\t%d\t%s\n", rw.Category, rw.Rank, rw.STXAddress)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "RANK\tSTX ADDRESS\tTRADES\tPRICED\tVOLUME USD\tPNL USD\tPNL %")
	for _, res := range d.Results {
		pct := "-"
		if res.PnLPercent != nil {
			pct = fmt.Sprintf("%.2f", *res.PnLPercent*100)
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%.2f\t%.2f\t%s\n", res.Rank, res.STXAddress, res.TradeCount, res.PricedTradeCount,
			res.VolumeUSD, res.PnLUSD, pct)
	}
	return tw.Flush()
}
