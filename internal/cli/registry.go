package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/operate"
	"github.com/pacer-dev/pacer/internal/registry"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
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
			return c.withService(cmd, false, func(ctx context.Context, svc *operate.Service) error {
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

// newRegistryCmd is `pacer registry` (the read held for confirmation, if
// any) and `pacer registry confirm [DIGEST]` (SPEC §12).
func newRegistryCmd(c *config) *cobra.Command {
	var asJSON bool
	show := &cobra.Command{
		Use:   "show",
		Short: "Show the registry read held for confirmation, if any: what it lists and whom it would deregister",
		Args:  wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.readService(cmd, func(ctx context.Context, svc *operate.Service) error {
				h, err := svc.RegistryHold(ctx)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), h)
				}
				if h == nil {
					fmt.Fprintln(cmd.OutOrStdout(), "no registry read is held")
					return nil
				}
				printHold(cmd.OutOrStdout(), *h)
				return nil
			})
		},
	}
	show.Flags().BoolVar(&asJSON, "json", false, "print as JSON (null when none is held)")
	confirm := &cobra.Command{
		Use:   "confirm [DIGEST]",
		Short: "Apply the registry read held for its drop: the next read that deregisters the same agents is applied",
		Args:  wrapArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			digest := ""
			if len(args) == 1 {
				digest = args[0]
			}
			var h store.DropHeld
			err := c.withService(cmd, false, func(ctx context.Context, svc *operate.Service) error {
				var err error
				h, err = svc.ConfirmRegistryDrop(ctx, digest)
				return err
			})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "confirmed %s: the next registry read that deregisters these %d agents applies it\n", h.Digest, h.Deregister)
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			defer cancel()
			err = c.withClient(ctx, func(tc client.Client) error {
				return worker.Signal(ctx, tc, c.workflowID, workflows.SignalRefresh, workflows.RefreshInput{Task: pacer.TaskRegistry})
			})
			if err != nil {
				fmt.Fprintf(out, "the scheduler could not be asked to read the registry now (%v); its next read applies it\n", err)
				return nil
			}
			fmt.Fprintln(out, "the scheduler was asked to read the registry now")
			return nil
		},
	}
	return groupCmd("registry", "The registry's reads: one held for confirmation, and its confirmation", show, confirm)
}

func printHold(w io.Writer, h store.DropHeld) {
	why := fmt.Sprintf("it would deregister %d of %d registered agents (more than %.0f%%)", h.Deregister, h.Registered, h.MaxShare*100)
	if h.Listed == 0 {
		why = fmt.Sprintf("it lists nobody: all %d registered agents would be deregistered", h.Registered)
	}
	fmt.Fprintf(w, "registry read held since %s: %s\n", h.At.Format(time.RFC3339), why)
	fmt.Fprintf(w, "  lists %d agents; digest %s\n", h.Listed, h.Digest)
	for _, a := range h.Sample {
		fmt.Fprintf(w, "  deregister %s\n", a)
	}
	if more := h.Deregister - len(h.Sample); more > 0 {
		fmt.Fprintf(w, "  … and %d more\n", more)
	}
	fmt.Fprintf(w, "apply it with: pacer registry confirm %s\n", h.Digest)
}
