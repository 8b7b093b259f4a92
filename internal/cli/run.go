package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/pacer-dev/pacer/internal/api"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

func newWorkerCmd(c *config) *cobra.Command {
	var migrate bool
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run the Temporal worker, keep the scheduler running, and serve the HTTP API",
		Args:  wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.runStack(cmd.Context(), stackOptions{worker: true, http: c.httpAddr, migrate: migrate})
		},
	}
	cmd.Flags().BoolVar(&migrate, "migrate", true, "apply database migrations at start")
	cmd.Flags().StringVar(&c.httpAddr, "http", env("PACER_HTTP_ADDR", "127.0.0.1:8080"), `HTTP API address, "" for none [PACER_HTTP_ADDR]`)
	return cmd
}

func newServeCmd(c *config) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API alone",
		Args:  wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if c.httpAddr == "" {
				return usagef("--http must not be empty for serve")
			}
			return c.runStack(cmd.Context(), stackOptions{http: c.httpAddr})
		},
	}
	cmd.Flags().StringVar(&c.httpAddr, "http", env("PACER_HTTP_ADDR", "127.0.0.1:8080"), "HTTP API address [PACER_HTTP_ADDR]")
	return cmd
}

func newMigrateCmd(c *config) *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Apply database migrations",
		Args:  wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := c.openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			if err := st.Migrate(cmd.Context()); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "migrations applied")
			return nil
		},
	}
}

type stackOptions struct {
	worker  bool
	migrate bool
	http    string
	// onReady, when set, is called once everything is up.
	onReady func()
}

// runStack runs a worker and/or the HTTP API until ctx ends.
func (c *config) runStack(ctx context.Context, o stackOptions) error {
	log, err := c.logger()
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	st, err := c.openStore(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if o.migrate {
		if err := st.Migrate(ctx); err != nil {
			return err
		}
		log.Info("store.migrated")
	}
	tc, err := c.dial(ctx, log)
	if err != nil {
		return err
	}
	defer tc.Close()

	acts := c.activities(st, log)
	g, ctx := errgroup.WithContext(ctx)
	if o.worker {
		g.Go(func() error {
			return worker.Run(ctx, tc, c.scheduler(), acts, log)
		})
	}
	if o.http != "" {
		h := c.apiHandler(st, tc, acts.Verifier, log)
		g.Go(func() error { return api.Serve(ctx, o.http, h, log) })
	}
	if o.onReady != nil {
		o.onReady()
	}
	return g.Wait()
}

func (c *config) apiHandler(st *store.Store, tc client.Client, v *competition.Verifier, log *zap.Logger) *api.Server {
	return api.New(api.Options{
		Store:    st,
		Verifier: v,
		Catalog:  catalog.Default(),
		Logger:   log.Named("api"),
		Status: func(ctx context.Context) (workflows.Status, error) {
			return worker.Status(ctx, tc, c.workflowID)
		},
		TemporalHealth: func(ctx context.Context) error {
			_, err := tc.CheckHealth(ctx, &client.CheckHealthRequest{})
			return err
		},
	})
}
