package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/pacer-dev/pacer/internal/operate"
	"github.com/pacer-dev/pacer/internal/registry"
	"github.com/pacer-dev/pacer/internal/store"
)

func newAgentsImportCmd(c *config) *cobra.Command {
	return importCmd(c, "agents", "Register agents from an NDJSON or CSV file (stxAddress, btcAddress, displayName, erc8004AgentId), all or nothing; --dry-run says what would change",
		func(ctx context.Context, svc *operate.Service, r io.Reader, dry bool) (store.RegistryChange, error) {
			recs, err := registry.ReadAgents(r)
			if err != nil {
				return store.RegistryChange{}, err
			}
			return svc.ImportAgents(ctx, recs.Items, recs.Lines, dry)
		})
}

func newClaimsCmd(c *config) *cobra.Command {
	return groupCmd("claims", "Manage the claims filed under agents' Bitcoin addresses",
		importCmd(c, "claims", "File claims from an NDJSON or CSV file (btcAddress, status), all or nothing; --dry-run says what would change",
			func(ctx context.Context, svc *operate.Service, r io.Reader, dry bool) (store.RegistryChange, error) {
				recs, err := registry.ReadClaims(r)
				if err != nil {
					return store.RegistryChange{}, err
				}
				return svc.ImportClaims(ctx, recs.Items, recs.Lines, dry)
			}))
}

// importCmd is `pacer agents import FILE` and `pacer claims import FILE`:
// one transaction a file; a bad record is a usage error naming its line
// and field, and nothing is written.
func importCmd(c *config, what, short string,
	apply func(context.Context, *operate.Service, io.Reader, bool) (store.RegistryChange, error)) *cobra.Command {
	var dryRun, asJSON bool
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: short,
		Args:  wrapArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return usagef("%s: %v", clipArg(args[0]), err)
			}
			defer f.Close()
			return c.withService(cmd.Context(), false, func(ctx context.Context, svc *operate.Service) error {
				out, err := apply(ctx, svc, f, dryRun)
				if err != nil {
					return recordInvalid(args[0], err)
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), out)
				}
				return printRegistryChange(cmd.OutOrStdout(), what, out)
			})
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "say what would change and write nothing")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

// recordInvalid makes a file's bad record a usage error: FILE:LINE: field: why.
func recordInvalid(file string, err error) error {
	var re *registry.RecordError
	var inv *operate.Invalid
	if errors.As(err, &re) || errors.As(err, &inv) {
		return usagef("%s: %s", clipArg(file), err.Error())
	}
	return err
}

func printRegistryChange(w io.Writer, what string, c store.RegistryChange) error {
	verb := "changed"
	if c.DryRun {
		verb = "would change (dry run, nothing written)"
	}
	if what == "agents" {
		fmt.Fprintf(w, "agents %s: %d added, %d updated, %d restored, %d unchanged\n", verb,
			len(c.Added), len(c.Updated), len(c.Restored), c.Unchanged)
		for _, l := range []struct {
			name  string
			addrs []string
		}{{"add", c.Added}, {"update", c.Updated}, {"restore", c.Restored}} {
			for _, a := range l.addrs {
				fmt.Fprintf(w, "  %s %s\n", l.name, a)
			}
		}
	}
	if what == "claims" || len(c.ClaimsAdded)+len(c.ClaimsUpdated)+c.ClaimsUnchanged > 0 {
		fmt.Fprintf(w, "claims %s: %d added, %d updated, %d unchanged\n", verb,
			len(c.ClaimsAdded), len(c.ClaimsUpdated), c.ClaimsUnchanged)
	}
	return nil
}
