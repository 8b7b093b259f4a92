package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pacer-dev/pacer/activities"
	"github.com/pacer-dev/pacer/internal/api"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/chainhook"
	"github.com/pacer-dev/pacer/internal/hiro"
)

func newChainhookCmd(c *config) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "chainhook",
		Short: "Hiro Chainhooks push: print the chainhook that sends every allowlisted swap call to pacer",
		Args:  wrapArgs(cobra.NoArgs),
	}
	cmd.AddCommand(newChainhookSpecCmd(c), newChainhookEnsureCmd(c))
	return cmd
}

func newChainhookEnsureCmd(c *config) *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "ensure",
		Short: "Keep pacer's one hook on Hiro's Chainhooks platform: created, in step with the allowlist, enabled, short gaps replayed",
		Long: `Keep the hook pacer-<network>-swaps on Hiro's Chainhooks platform
(PACER_CHAINHOOK_API_URL, key HIRO_API_KEY): created when missing with a
contract_call filter for every allowlisted (contract, function) pair and an
http_post action to PACER_PUBLIC_URL + /api/chainhook; updated when the
allowlist changed; enabled when Hiro paused or interrupted it; and, when its
last evaluated block lags the chain by at most PACER_CHAINHOOK_REPLAY_MAX
blocks, the missed blocks evaluated again, one call a block (a longer gap is
left to the readers). Run twice, it changes nothing the second time. The
chainhook task (PACER_CHAINHOOK_MANAGE=1) does the same every
PACER_CHAINHOOK_EVERY. --dry-run says what it would do.`,
		Args: wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if c.hook.publicURL == "" {
				return usagef("PACER_PUBLIC_URL (--public-url) is not set: the hook needs pacer's address as Hiro reaches it")
			}
			ctx := cmd.Context()
			out := cmd.OutOrStdout()
			tip, err := activities.ChainTip(ctx, hiro.New(hiro.Config{BaseURL: c.hiroBaseURL, APIKey: c.hiroAPIKey}))
			if err != nil {
				_, _ = fmt.Fprintf(cmd.ErrOrStderr(), "chain tip unknown (%v): nothing is replayed\n", err)
			}
			res, err := c.chainhookActivities().EnsureChainhook(ctx, catalog.Default(), tip, dryRun)
			for _, step := range res.Steps {
				prefix := ""
				if dryRun {
					prefix = "would "
				}
				_, _ = fmt.Fprintln(out, prefix+step)
			}
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(out, "hook %s: %s (status %q, enabled %t, last evaluated block %d, chain %d, lag %d, replayed %d)\n",
				res.UUID, res.Action, res.Status, res.Enabled, res.LastEvaluated, tip, res.Lag, res.Replayed)
			return err
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "say what would be done, change nothing")
	return cmd
}

func newChainhookSpecCmd(c *config) *cobra.Command {
	var (
		endpoint, network, format string
		startBlock                int64
		withSecret                bool
	)
	cmd := &cobra.Command{
		Use:   "spec",
		Short: "Print the chainhook definition that pushes every allowlisted swap call to POST /api/chainhook",
		Long: `Print the chainhook definition to register with Hiro: a contract_call filter for
every allowlisted (contract, function) pair and pacer's endpoint.

--format v2 (the default) is a Chainhooks 2.0 definition for Hiro's hosted
service (pacer chainhook ensure registers it for you); Hiro sends the
account's consumer secret as x-chainhook-consumer-secret (or Authorization:
Bearer): set PACER_CHAINHOOK_SECRET to it (both secrets, comma-separated,
while a rotation rolls over).
--format v1 prints chainhook 1.x predicates (one per pair, for a self-hosted
chainhook node or Clarinet's devnet), whose authorization_header carries the
secret. By default the header holds the placeholder ` + chainhook.PlaceholderSecret + `;
--with-secret writes the configured PACER_CHAINHOOK_SECRET there instead.`,
		Args: wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			secret := chainhook.PlaceholderSecret
			if withSecret {
				if c.chainhookSecret == "" {
					return usagef("--with-secret: PACER_CHAINHOOK_SECRET is not set")
				}
				secret = c.chainhookSecret
			}
			o := chainhook.SpecOptions{Endpoint: endpoint, Authorization: "Bearer " + secret,
				Pairs: catalog.Default().Pairs(), Network: network, Format: format}
			if cmd.Flags().Changed("start-block") {
				o.StartBlock = &startBlock
			}
			b, err := chainhook.Spec(o)
			if err != nil {
				return &UsageError{Err: err}
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), string(b))
			return err
		},
	}
	cmd.Flags().StringVar(&endpoint, "url", "http://127.0.0.1:8080"+api.ChainhookPath, "pacer's chainhook endpoint as Hiro reaches it")
	cmd.Flags().StringVar(&network, "network", "mainnet", "mainnet or testnet")
	cmd.Flags().StringVar(&format, "format", chainhook.FormatV2, "v2 (Chainhooks 2.0 definition) or v1 (chainhook 1.x predicates)")
	cmd.Flags().Int64Var(&startBlock, "start-block", 0, "first block a v1 predicate scans (v2 starts at the tip)")
	cmd.Flags().BoolVar(&withSecret, "with-secret", false, "write the configured secret into the v1 authorization_header instead of a placeholder")
	return cmd
}
