package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/pacer-dev/pacer/internal/ingest"
	"github.com/pacer-dev/pacer/internal/store"
)

func newAgentsCmd(c *config) *cobra.Command {
	var (
		asJSON bool
		tier   string
	)
	cmd := &cobra.Command{
		Use:   "agents",
		Short: "Registered agents: each one's ingestion state (tier, swap rate, cursor, last and next visit); import registers them",
		Args:  wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var only ingest.Tier
			if tier != "" {
				t, err := ingest.ParseTier(tier)
				if err != nil {
					return usagef("--tier %q must be hot, warm or cold", tier)
				}
				only = t
			}
			st, err := c.openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			rows, err := st.ListAgentIngest(cmd.Context(), only)
			if err != nil {
				return err
			}
			if asJSON {
				if rows == nil {
					rows = []store.AgentIngest{}
				}
				return printJSON(cmd.OutOrStdout(), map[string]any{"agents": rows})
			}
			return printAgents(cmd, rows)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	cmd.Flags().StringVar(&tier, "tier", "", "only this tier: hot, warm or cold")
	cmd.AddCommand(newAgentsImportCmd(c))
	return cmd
}

func printAgents(cmd *cobra.Command, rows []store.AgentIngest) error {
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tTIER\tSWAPS/DAY\tLAST SWAP\tCURSOR\tLAST VISIT\tNEXT VISIT\tSTATUS\tVISITS\tFOUND")
	now := time.Now()
	for _, a := range rows {
		cursor := "-"
		if a.Cursor != nil {
			cursor = a.Cursor.String()
		}
		if a.VisitFrom != "" {
			cursor += " (visit cut short)"
		}
		status := a.Status
		if a.ErrorCount > 0 {
			status = fmt.Sprintf("%s ×%d", status, a.ErrorCount)
		}
		next := a.NextRunAt
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%s\t%s\t%s\t%s\t%s\t%d\t%d\n", a.Address, a.Tier, a.RateAt(now),
			fmtTime(a.LastSwapAt, now), cursor, fmtTime(a.LastVisitAt, now), fmtTime(&next, now), status, a.Visits, a.SwapsFound)
	}
	return tw.Flush()
}
