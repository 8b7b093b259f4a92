package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pacer-dev/pacer/internal/api"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/chainhook"
)

func newChainhookCmd(c *config) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "chainhook",
		Short: "Hiro Chainhooks push: print the chainhook that sends every allowlisted swap call to pacer",
		Args:  wrapArgs(cobra.NoArgs),
	}
	cmd.AddCommand(newChainhookSpecCmd(c))
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
service; it sends "Authorization: Bearer <consumer secret>", the secret Hiro's
rotateConsumerSecret returns: set PACER_CHAINHOOK_SECRET to it.
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
