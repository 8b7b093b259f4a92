package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/operate"
	"github.com/pacer-dev/pacer/internal/rollup"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/webhook"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

// withStore runs f with a store for a one-shot command.
func (c *config) withStore(ctx context.Context, f func(*store.Store) error) error {
	st, err := c.openStore(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	return f(st)
}

func clipArg(s string) string {
	s = strings.ToValidUTF8(s, "?")
	if r := []rune(s); len(r) > 80 {
		return string(r[:80]) + "…"
	}
	return s
}

// groupCmd is a command that only holds subcommands.
func groupCmd(use, short string, subs ...*cobra.Command) *cobra.Command {
	names := make([]string, len(subs))
	for i, sub := range subs {
		names[i] = sub.Name()
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  wrapArgs(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			return usagef("give a subcommand: %s", strings.Join(names, ", "))
		},
	}
	cmd.AddCommand(subs...)
	return cmd
}

func newSubscribersCmd(c *config) *cobra.Command {
	return groupCmd("subscribers", "Manage webhook subscribers of the hourly and daily rollups",
		newSubscribersAddCmd(c), newSubscribersListCmd(c), newSubscribersUpdateCmd(c), newSubscribersDisableCmd(c),
		newSubscribersEnableCmd(c), newSubscribersRotateCmd(c), newSubscribersReissuePullCmd(c), newSubscribersRemoveCmd(c), newSubscribersTestCmd(c))
}

func newSubscribersAddCmd(c *config) *cobra.Command {
	var rawURL, events, tokens, agents string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "add --url URL [--events hourly,daily] [--tokens A,B] [--agents X,Y]",
		Short: "Register a webhook endpoint; prints its signing secret and pull token, once",
		Long: `add registers an endpoint for the hourly and/or daily rollups. Deliveries are
signed as Standard Webhooks with a secret generated here and printed once:
store it now, pacer never shows it again. The pull token printed beside it
fetches a missed delivery (GET /api/deliveries/{id}); pacer keeps only its
hash. --tokens and --agents narrow what
the deliveries carry (the competition totals always come along). Only
periods that end after now are delivered.`,
		Args: wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			// --events "" or "," is no event at all, which is refused, not
			// the default.
			in := operate.SubscriberInput{URL: rawURL, Events: append([]string{}, splitComma(events)...),
				Tokens: splitComma(tokens), Agents: splitComma(agents)}
			return c.withService(cmd, false, func(ctx context.Context, svc *operate.Service) error {
				sub, err := svc.CreateSubscriber(ctx, in)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if asJSON {
					return printJSON(out, struct {
						store.Subscriber
						Secret    string `json:"secret"`
						PullToken string `json:"pullToken"`
					}{sub, sub.Secret, sub.PullToken})
				}
				fmt.Fprintf(out, "subscriber %s added (%s) for %s\n", sub.ID, strings.Join(sub.Events, ","), redactURL(sub.URL))
				fmt.Fprintf(out, "signing secret: %s\n", sub.Secret)
				fmt.Fprintf(out, "pull token:     %s  (GET /api/deliveries/{id} with Authorization: Bearer <pull token>)\n", sub.PullToken)
				fmt.Fprintln(out, "store both now: they are shown this once and never again")
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&rawURL, "url", "", "the endpoint (http or https, no credentials in it)")
	cmd.Flags().StringVar(&events, "events", strings.Join(rollup.Events, ","), "what to deliver: hourly, daily (rollups), round.finalized (SPEC §13), comma-separated")
	cmd.Flags().StringVar(&tokens, "tokens", "", "deliver only these tokens' rollups (comma-separated ids; default all)")
	cmd.Flags().StringVar(&agents, "agents", "", "deliver only these agents' rollups (comma-separated addresses; default all)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the new subscriber, secret and pull token included, as JSON")
	return cmd
}

// redactURL shows an endpoint without its query, which may hold a token of
// the subscriber's.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unreadable URL)"
	}
	if u.RawQuery != "" {
		u.RawQuery = "…"
	}
	return u.String()
}

func newSubscribersListCmd(c *config) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the subscribers (never their secrets)",
		Args:  wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.readService(cmd, func(ctx context.Context, svc *operate.Service) error {
				subs, err := svc.Subscribers(ctx)
				if err != nil {
					return err
				}
				for i := range subs {
					subs[i] = redactSubscriber(subs[i])
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), subs)
				}
				return printSubscribers(cmd.OutOrStdout(), subs, time.Now())
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func printSubscribers(w io.Writer, subs []store.Subscriber, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tEVENTS\tTOKENS\tAGENTS\tURL\tCREATED\tNOTE")
	filter := func(items []string) string {
		if items == nil {
			return "all"
		}
		return fmt.Sprint(len(items))
	}
	for _, s := range subs {
		note := ""
		switch {
		case s.Status == store.SubscriberDisabled:
			note = "disabled " + fmtTime(s.DisabledAt, now) + ": " + s.DisabledReason
		case s.FailingSince != nil:
			note = "failing since " + fmtTime(s.FailingSince, now)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.Status, strings.Join(s.Events, ","),
			filter(s.Tokens), filter(s.Agents), s.URL, s.CreatedAt.UTC().Format(time.RFC3339), note)
	}
	return tw.Flush()
}

// onSubscriber runs f with a store and the subscriber id given as the
// command's one argument, once the id has the right shape.
func (c *config) onSubscriber(cmd *cobra.Command, args []string, f func(st *store.Store, id string) error) error {
	id := args[0]
	if !webhook.ValidSubscriberID(id) {
		return usagef("%q is not a subscriber id (sub_ and 16 characters)", clipArg(id))
	}
	return c.withStore(cmd.Context(), func(st *store.Store) error { return f(st, id) })
}

// testEvent is the body `subscribers test` sends.
type testEvent struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      struct {
		SubscriberID string `json:"subscriberId"`
	} `json:"data"`
}

func newSubscribersTestCmd(c *config) *cobra.Command {
	return &cobra.Command{
		Use:   "test ID",
		Short: "Send a signed test event to a subscriber now and print its answer",
		Long: `test POSTs a signed event of type "pacer.test" under a fresh webhook-id
("test_…", never a delivery's) and prints what the endpoint answered. A 410
disables the subscriber, as it would for a delivery.`,
		Args: wrapArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.onSubscriber(cmd, args, func(st *store.Store, id string) error {
				sub, found, err := st.Subscriber(cmd.Context(), id)
				if err != nil {
					return err
				}
				if !found {
					return fmt.Errorf("no subscriber %s", id)
				}
				ev := testEvent{Type: "pacer.test", Timestamp: time.Now().UTC().Truncate(time.Second)}
				ev.Data.SubscriberID = sub.ID
				body, err := json.Marshal(ev)
				if err != nil {
					return err
				}
				nonce := make([]byte, 8)
				_, _ = rand.Read(nonce)
				msg := webhook.Message{ID: "test_" + hex.EncodeToString(nonce), URL: sub.URL, Secret: sub.Secret, Body: body}
				out := webhook.NewSender(webhook.SenderOptions{AllowPrivate: c.webhookAllowPrivate}).Send(cmd.Context(), msg)
				took := out.Took.Round(time.Millisecond)
				switch out.Result {
				case webhook.Delivered:
					fmt.Fprintf(cmd.OutOrStdout(), "%s answered HTTP %d in %s (webhook-id %s)\n", sub.ID, out.Status, took, msg.ID)
					return nil
				case webhook.Gone:
					if _, _, err := st.DisableSubscriber(cmd.Context(), store.Failure{
						SubscriberID: sub.ID, At: time.Now(), Status: out.Status, Error: out.Error,
					}); err != nil {
						return err
					}
					return fmt.Errorf("%s answered 410 Gone in %s: subscriber disabled", sub.ID, took)
				}
				return fmt.Errorf("%s failed after %s: %s", sub.ID, took, out.Error)
			})
		},
	}
}

func newDeliveriesCmd(c *config) *cobra.Command {
	return groupCmd("deliveries", "Inspect webhook deliveries and send one again",
		newDeliveriesListCmd(c), newDeliveriesRedeliverCmd(c), newDeliveriesRecoverCmd(c))
}

func newDeliveriesListCmd(c *config) *cobra.Command {
	var status string
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--status pending|retrying|delivered|exhausted] [--json]",
		Short: "List deliveries, newest first",
		Args:  wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if status != "" && !slices.Contains(store.DeliveryStatuses, status) {
				return usagef("--status must be one of %s", strings.Join(store.DeliveryStatuses, ", "))
			}
			if limit < 1 || limit > 10000 {
				return usagef("--limit must be between 1 and 10000")
			}
			return c.withStore(cmd.Context(), func(st *store.Store) error {
				ds, err := st.Deliveries(cmd.Context(), status, limit)
				if err != nil {
					return err
				}
				if asJSON {
					if ds == nil {
						ds = []store.Delivery{}
					}
					return printJSON(cmd.OutOrStdout(), ds)
				}
				return printDeliveries(cmd.OutOrStdout(), ds, time.Now())
			})
		},
	}
	cmd.Flags().StringVar(&status, "status", "", "only deliveries in this status")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func printDeliveries(w io.Writer, ds []store.Delivery, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tATTEMPTS\tLAST\tNEXT ATTEMPT\tDELIVERED\tLAST ERROR")
	for _, d := range ds {
		last := "-"
		if d.LastStatus != nil {
			last = fmt.Sprint(*d.LastStatus)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", d.ID, d.Status, d.Attempts, last,
			fmtTime(d.NextAttemptAt, now), fmtTime(d.DeliveredAt, now), d.LastError)
	}
	return tw.Flush()
}

func newDeliveriesRedeliverCmd(c *config) *cobra.Command {
	return &cobra.Command{
		Use:   "redeliver ID",
		Short: "Send a delivery again, under the same webhook-id, on a fresh ladder",
		Args:  wrapArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			err := c.withService(cmd, false, func(ctx context.Context, svc *operate.Service) error {
				return svc.Redeliver(ctx, id)
			})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "delivery %s is due again\n", id)
			// The deliver task may be asleep (nothing was pending): ask the
			// scheduler to run it now. Without an answer, its next run
			// (after the next rollup at the latest) sends it.
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			defer cancel()
			err = c.withClient(ctx, func(tc client.Client) error {
				return worker.Signal(ctx, tc, c.workflowID, workflows.SignalRefresh, workflows.RefreshInput{Task: pacer.TaskDeliver})
			})
			if err != nil {
				fmt.Fprintf(out, "the scheduler could not be asked to run deliver now (%v); its next run sends it\n", err)
				return nil
			}
			fmt.Fprintln(out, "the scheduler was asked to run deliver now")
			return nil
		},
	}
}
