package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"

	"github.com/pacer-dev/pacer/internal/actor"
	"github.com/pacer-dev/pacer/internal/operate"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/worker"
)

// operatingConfig is what operating pacer takes (SPEC §2, §10.2):
// PACER_SECRET_OVERLAP and PACER_DISABLE_AFTER, each also a flag.
type operatingConfig struct {
	secretOverlap time.Duration
	disableAfter  time.Duration
	// The workers' Worker Deployment Version (SPEC §3.5).
	versioning     bool
	deploymentName string
	buildID        string
	promoteOnStart bool // pacer dev
}

func (o *operatingConfig) bind(c *config, fs *pflag.FlagSet) {
	fs.DurationVar(&o.secretOverlap, "secret-overlap", c.envDuration("PACER_SECRET_OVERLAP", operate.DefaultSecretOverlap),
		"after a subscriber's secret is rotated, the old one stays valid this long: deliveries carry both signatures [PACER_SECRET_OVERLAP]")
	fs.DurationVar(&o.disableAfter, "disable-after", c.envDuration("PACER_DISABLE_AFTER", 120*time.Hour),
		"a subscriber failing every delivery attempt for this long is disabled [PACER_DISABLE_AFTER]")
	fs.BoolVar(&o.versioning, "versioning", env("PACER_VERSIONING", "true") != "false",
		"workers declare a Worker Deployment Version and the scheduler is pinned to its build (false: unversioned) [PACER_VERSIONING]")
	fs.StringVar(&o.deploymentName, "deployment-name", env("PACER_DEPLOYMENT_NAME", worker.DefaultDeploymentName),
		"the workers' Worker Deployment name [PACER_DEPLOYMENT_NAME]")
	fs.StringVar(&o.buildID, "build-id", env("PACER_BUILD_ID", worker.BuildID()),
		"this build's ID in its deployment (default: the VCS revision it was built from) [PACER_BUILD_ID]")
}

func (o *operatingConfig) validate() error {
	if !o.versioning {
		return nil
	}
	// An empty build ID is this binary naming none: only a worker needs
	// one (namesBuild).
	if o.buildID != "" && !worker.ValidBuildID(o.buildID) {
		return usagef("--build-id / PACER_BUILD_ID %q: letters, digits and -_.+ only, at most 128", clipArg(o.buildID))
	}
	if !worker.ValidBuildID(o.deploymentName) {
		return usagef("--deployment-name / PACER_DEPLOYMENT_NAME %q: letters, digits and -_.+ only, at most 128", clipArg(o.deploymentName))
	}
	return nil
}

// namesBuild refuses a versioned worker under a build ID that names no
// build (SPEC §3.5); pacer dev runs under "dev" (one build at a time).
func (o *operatingConfig) namesBuild() error {
	if !o.versioning || worker.NamesBuild(o.buildID) {
		return nil
	}
	return usagef("build ID %q names no build: build with make build (an image: docker build --build-arg PACER_COMMIT=$(git rev-parse --short HEAD)), "+
		"set --build-id / PACER_BUILD_ID to the build's commit, or run unversioned with --versioning=false", o.buildID)
}

// deployment is the workers' version, nil when versioning is off.
func (o *operatingConfig) deployment() *worker.Deployment {
	if !o.versioning {
		return nil
	}
	return &worker.Deployment{Name: o.deploymentName, BuildID: o.buildID, PromoteOnStart: o.promoteOnStart}
}

// withService runs f with the operations, acting as the CLI: a store, and
// a Temporal client when withTemporal. f changes something: a refusal
// (its input, a target that does not exist, a conflict) is audited with
// the command's name and the reason (issue 41.13), unless the operation
// audited it already.
func (c *config) withService(cmd *cobra.Command, withTemporal bool, f func(context.Context, *operate.Service) error) error {
	return c.runService(cmd, withTemporal, true, f)
}

// readService is withService for f that reads only: nothing to audit.
func (c *config) readService(cmd *cobra.Command, f func(context.Context, *operate.Service) error) error {
	return c.runService(cmd, false, false, f)
}

func (c *config) runService(cmd *cobra.Command, withTemporal, change bool, f func(context.Context, *operate.Service) error) error {
	ctx := actor.With(cmd.Context(), actor.CLI)
	return c.withStore(ctx, func(st *store.Store) error {
		svc := &operate.Service{Store: st, WorkflowID: c.workflowID, SecretOverlap: c.operating.secretOverlap,
			AllowPrivate: c.webhookAllowPrivate, RoundGrace: c.roundGrace}
		run := func() error {
			err := f(ctx, svc)
			if change && operate.Refused(err) {
				// Best effort: nothing was changed, and the one line a
				// refusal prints is the refusal's (a database that cannot
				// take the entry says so at the next change).
				_ = svc.RecordRefusal(context.WithoutCancel(ctx), operate.Refusal{Via: cmd.CommandPath(), Error: err.Error()})
			}
			return cliError(err)
		}
		if !withTemporal {
			return run()
		}
		return c.withClient(ctx, func(tc client.Client) error {
			svc.Temporal = tc
			return run()
		})
	})
}

// cliError turns an operation's rejection of its input into a usage error
// (exit 2).
func cliError(err error) error {
	var inv *operate.Invalid
	switch {
	case errors.As(err, &inv) && inv.Field != "":
		// The API names its JSON field; the CLI names its flag.
		return usagef("--%s: %s", inv.Field, inv.Msg)
	case inv != nil:
		return &UsageError{Err: err}
	}
	return err
}

func newAuditCmd(c *config) *cobra.Command {
	var since string
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "audit [--since RFC3339|DURATION] [--limit N] [--json]",
		Short: "Show the audit log: who changed what, when, before and after (newest first)",
		Args:  wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := operate.AuditQuery{Limit: limit}
			if since != "" {
				t, err := parseSince(since, time.Now())
				if err != nil {
					return err
				}
				q.Since = t
			}
			return c.readService(cmd, func(ctx context.Context, svc *operate.Service) error {
				entries, err := svc.Audit(ctx, q)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), entries)
				}
				return printAudit(cmd.OutOrStdout(), entries)
			})
		},
	}
	cmd.Flags().StringVar(&since, "since", "", "only entries since this RFC3339 time, or this long ago (like 24h)")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many entries")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func printAudit(w io.Writer, entries []store.AuditEntry) error {
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tAT\tACTOR\tACTION\tTARGET\tAFTER")
	for _, e := range entries {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", e.ID, e.At.UTC().Format(time.RFC3339), e.Actor, e.Action,
			orDash(e.Target), clipLine(string(e.After), 100))
	}
	return tw.Flush()
}

func newSubscribersUpdateCmd(c *config) *cobra.Command {
	var rawURL, events, tokens, agents string
	cmd := &cobra.Command{
		Use:   "update ID [--url URL] [--events hourly,daily] [--tokens A,B] [--agents X,Y]",
		Short: "Change a subscriber's endpoint, events or filters (an empty --tokens or --agents means all)",
		Args:  wrapArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			var p operate.SubscriberPatch
			if cmd.Flags().Changed("url") {
				p.URL = &rawURL
			}
			for name, pair := range map[string]struct {
				raw string
				dst **[]string
			}{"events": {events, &p.Events}, "tokens": {tokens, &p.Tokens}, "agents": {agents, &p.Agents}} {
				if cmd.Flags().Changed(name) {
					l := splitComma(pair.raw)
					*pair.dst = &l
				}
			}
			return c.withService(cmd, false, func(ctx context.Context, svc *operate.Service) error {
				sub, err := svc.UpdateSubscriber(ctx, args[0], p)
				if err != nil {
					return err
				}
				return printSubscribers(cmd.OutOrStdout(), []store.Subscriber{redactSubscriber(sub)}, time.Now())
			})
		},
	}
	cmd.Flags().StringVar(&rawURL, "url", "", "the new endpoint")
	cmd.Flags().StringVar(&events, "events", "", "which rollups to deliver: hourly, daily or both")
	cmd.Flags().StringVar(&tokens, "tokens", "", "deliver only these tokens' rollups (empty: all)")
	cmd.Flags().StringVar(&agents, "agents", "", "deliver only these agents' rollups (empty: all)")
	return cmd
}

// splitComma splits a comma-separated flag into its non-empty items.
func splitComma(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func redactSubscriber(sub store.Subscriber) store.Subscriber {
	sub.URL = redactURL(sub.URL)
	return sub
}

// subscriberCmd is a command taking one subscriber id that runs one
// operation and prints the subscriber it returns.
func subscriberCmd(c *config, use, short string, op func(context.Context, *operate.Service, string) (store.Subscriber, error)) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  wrapArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withService(cmd, false, func(ctx context.Context, svc *operate.Service) error {
				sub, err := op(ctx, svc, args[0])
				if err != nil {
					return err
				}
				return printSubscribers(cmd.OutOrStdout(), []store.Subscriber{redactSubscriber(sub)}, time.Now())
			})
		},
	}
}

func newSubscribersDisableCmd(c *config) *cobra.Command {
	var reason string
	cmd := subscriberCmd(c, "disable ID [--reason TEXT]", "Stop deliveries to a subscriber (its undelivered ones are exhausted; recover them after enable)",
		func(ctx context.Context, svc *operate.Service, id string) (store.Subscriber, error) {
			return svc.DisableSubscriber(ctx, id, reason)
		})
	cmd.Flags().StringVar(&reason, "reason", "", "why (kept with the subscriber and in the audit log)")
	return cmd
}

func newSubscribersEnableCmd(c *config) *cobra.Command {
	return subscriberCmd(c, "enable ID", "Make a disabled subscriber active again (then recover what it missed)",
		func(ctx context.Context, svc *operate.Service, id string) (store.Subscriber, error) {
			return svc.EnableSubscriber(ctx, id)
		})
}

func newSubscribersRemoveCmd(c *config) *cobra.Command {
	return &cobra.Command{
		Use:   "remove ID",
		Short: "Remove a subscriber; its deliveries are kept, readable",
		Args:  wrapArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withService(cmd, false, func(ctx context.Context, svc *operate.Service) error {
				sub, err := svc.DeleteSubscriber(ctx, args[0])
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "subscriber %s removed at %s; its deliveries are kept\n",
					sub.ID, sub.DeletedAt.UTC().Format(time.RFC3339))
				return nil
			})
		},
	}
}

func newSubscribersRotateCmd(c *config) *cobra.Command {
	return &cobra.Command{
		Use:   "rotate-secret ID",
		Short: "Give a subscriber a new signing secret; the old one stays valid for --secret-overlap",
		Args:  wrapArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withService(cmd, false, func(ctx context.Context, svc *operate.Service) error {
				rot, err := svc.RotateSecret(ctx, args[0])
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "new signing secret of %s: %s\n", rot.Subscriber.ID, rot.Secret)
				fmt.Fprintf(out, "until %s deliveries carry a signature by the old secret too\n", rot.PreviousSecretUntil.Format(time.RFC3339))
				fmt.Fprintln(out, "store it now: it is shown this once and never again")
				return nil
			})
		},
	}
}

func newSubscribersReissuePullCmd(c *config) *cobra.Command {
	return &cobra.Command{
		Use:   "reissue-pull-token ID",
		Short: "Give a subscriber a new pull token (GET /api/deliveries/{id}); the old one stops working at once",
		Args:  wrapArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withService(cmd, false, func(ctx context.Context, svc *operate.Service) error {
				out, err := svc.ReissuePullToken(ctx, args[0])
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "new pull token of %s: %s\n", out.Subscriber.ID, out.PullToken)
				fmt.Fprintln(cmd.OutOrStdout(), "store it now: it is shown this once and never again")
				return nil
			})
		},
	}
}

func newDeliveriesRecoverCmd(c *config) *cobra.Command {
	var subscriber, statuses, from, to string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "recover --subscriber ID --from RFC3339 [--to RFC3339] [--status exhausted,...]",
		Short: "Send again a subscriber's deliveries of periods that ended in (from, to] (default: the exhausted ones, and those never created)",
		Args:  wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			in := operate.RecoverInput{Subscriber: subscriber, Statuses: splitComma(statuses)}
			for _, t := range []struct {
				flag, raw string
				dst       *time.Time
			}{{"--from", from, &in.From}, {"--to", to, &in.To}} {
				if t.raw == "" {
					continue
				}
				v, err := time.Parse(time.RFC3339, t.raw)
				if err != nil {
					return usagef("%s %q: want an RFC3339 time", t.flag, clipArg(t.raw))
				}
				*t.dst = v
			}
			return c.withService(cmd, false, func(ctx context.Context, svc *operate.Service) error {
				res, err := svc.Recover(ctx, in)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), res)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%d deliveries of %s are due again %v\n", res.Count, subscriber, res.From)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&subscriber, "subscriber", "", "the subscriber")
	cmd.Flags().StringVar(&statuses, "status", "", "statuses to recover, comma-separated (default exhausted)")
	cmd.Flags().StringVar(&from, "from", "", "periods that ended after this time")
	cmd.Flags().StringVar(&to, "to", "", "periods that ended at or before this time (default now)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}
