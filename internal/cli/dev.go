package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pacer-dev/pacer/internal/api"
	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/worker"
)

func newDevCmd(c *config) *cobra.Command {
	var (
		temporalBin string
		stateDir    string
		uiPort      int
		so          simOptions
	)
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run everything locally: Temporal dev server, simulator, worker and API (Ctrl-C stops all)",
		Long: `dev runs the whole stack on this machine. It uses the Temporal server at
--temporal-address if one answers there, else starts the Temporal CLI's dev
server (state kept in --state-dir). Postgres must be reachable at DATABASE_URL
(make dev starts a local one); the database is created if missing. Tenero and
Hiro are the simulator unless TENERO_BASE_URL / HIRO_BASE_URL are set.`,
		Args: wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			out := cmd.OutOrStdout()
			if c.httpAddr == "" {
				return usagef("--http must not be empty for dev")
			}
			if f := cmd.Flag("webhook-allow-private"); f != nil && !f.Changed && os.Getenv("PACER_WEBHOOK_ALLOW_PRIVATE") == "" {
				// Everything runs on this machine: so do the receivers
				// one tries pacer with.
				c.webhookAllowPrivate = true
			}
			if err := os.MkdirAll(stateDir, 0o750); err != nil {
				return err
			}
			if err := store.EnsureDatabase(ctx, c.databaseURL); err != nil {
				return fmt.Errorf("postgres at DATABASE_URL is not usable (start it, or run make dev which does): %w", err)
			}
			addr := c.temporalAddress
			if addr == "" {
				addr = worker.DefaultAddress
				c.temporalAddress = addr
			}
			stop, err := ensureTemporal(ctx, addr, temporalBin, stateDir, uiPort)
			if err != nil {
				return err
			}
			defer stop()

			simURL := ""
			if !cmd.Flags().Changed("tenero-base-url") && os.Getenv("TENERO_BASE_URL") == "" ||
				!cmd.Flags().Changed("hiro-base-url") && os.Getenv("HIRO_BASE_URL") == "" {
				log, err := c.logger()
				if err != nil {
					return err
				}
				// The simulator outlives Ctrl-C until the worker has stopped: a
				// run still in flight then ends against it, not against a
				// closed port.
				simCtx, stopSim := context.WithCancel(context.WithoutCancel(ctx))
				defer stopSim()
				if err := devPush(&so, c, cmd.Flags().Changed("sim-push-url")); err != nil {
					return err
				}
				// Agents arrive as in a deployment: through the registry
				// the simulator serves (SPEC §12), not written by it.
				registryFromSim := !cmd.Flags().Changed("registry-url") && os.Getenv("PACER_REGISTRY_URL") == ""
				if registryFromSim {
					so.writeDB = false
				}
				u, err := startSim(simCtx, so, c, log)
				if err != nil {
					return err
				}
				simURL = u
				if registryFromSim {
					c.registryURL = simURL + sim.RegistryPath
				}
				if !cmd.Flags().Changed("tenero-base-url") && os.Getenv("TENERO_BASE_URL") == "" {
					c.teneroBaseURL = simURL
				}
				if !cmd.Flags().Changed("hiro-base-url") && os.Getenv("HIRO_BASE_URL") == "" {
					c.hiroBaseURL = simURL
				}
			}
			host, _, _ := net.SplitHostPort(addr)
			// The dev server keeps its state across restarts, the last
			// build's workers are gone: this build takes over at once.
			c.operating.promoteOnStart = true
			if c.operating.buildID == "" {
				c.operating.buildID = "dev"
			}
			return c.runStack(ctx, stackOptions{worker: true, dev: true, migrate: true, http: c.httpAddr, admin: c.adminAddr, adminSet: adminFlagSet(cmd), onReady: func() {
				devBanner(out, devURLs{api: c.httpAddr, admin: c.adminAddr, temporal: addr, ui: fmt.Sprintf("%s:%d", host, uiPort),
					workflowID: c.workflowID, sim: simURL, tenero: c.teneroBaseURL})
			}})
		},
	}
	cmd.Flags().StringVar(&temporalBin, "temporal-bin", "", "Temporal CLI binary (default: bin/temporal beside pacer, else temporal on PATH)")
	cmd.Flags().StringVar(&stateDir, "state-dir", ".dev", "where the dev server keeps its database")
	cmd.Flags().IntVar(&uiPort, "ui-port", 8233, "Temporal Web UI port")
	so.bind(cmd, true)
	cmd.Flags().StringVar(&c.httpAddr, "http", env("PACER_HTTP_ADDR", "127.0.0.1:8080"), "HTTP API address [PACER_HTTP_ADDR]")
	bindAdmin(cmd, c)
	return cmd
}

// devPush points the simulator's Chainhooks deliveries at dev's own API
// unless told otherwise, with a secret made up for the run when none is
// set: push on end to end, the sweep's reconciling floor with it.
func devPush(so *simOptions, c *config, urlGiven bool) error {
	if urlGiven {
		return nil
	}
	host, port, err := net.SplitHostPort(c.httpAddr)
	if err != nil {
		return usagef("--http %q: %v", c.httpAddr, err)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	so.pushURL = "http://" + net.JoinHostPort(host, port) + api.ChainhookPath
	if c.chainhookSecret == "" {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		c.chainhookSecret = hex.EncodeToString(b)
	}
	return nil
}

// devURLs are the addresses `pacer dev` runs on.
type devURLs struct {
	api, admin, temporal, ui, workflowID, sim, tenero string
}

// devBanner says what runs where once `pacer dev` is up, the operator's
// page first: the one address to open. It is on the operator listener;
// the public API is apart (SPEC §7).
func devBanner(out io.Writer, u devURLs) {
	page := u.admin
	if page == "" {
		page = "(no operator listener: --admin is empty)"
	} else {
		page = "http://" + page + "/"
	}
	fmt.Fprintf(out, "\npacer dev is up: %s (Ctrl-C stops everything)\n", page)
	fmt.Fprintf(out, "  operator page    %s\n", page)
	if u.admin != "" {
		fmt.Fprintf(out, "  admin API        http://%s%s\n", u.admin, api.AdminPrefix)
	}
	fmt.Fprintf(out, "  public API       http://%s/\n", u.api)
	fmt.Fprintf(out, "  Temporal Web UI  http://%s/namespaces/default/workflows/%s\n", u.ui, u.workflowID)
	fmt.Fprintf(out, "  Temporal gRPC    %s\n", u.temporal)
	fmt.Fprintf(out, "  pacer API        http://%s/api/prices  http://%s/api/scheduler/status\n", u.api, u.api)
	if u.sim != "" {
		fmt.Fprintf(out, "  simulator        %s/_sim/stats\n", u.sim)
	}
	fmt.Fprintf(out, "  Tenero           %s\n", u.tenero)
	fmt.Fprintf(out, "  try              temporal workflow query --workflow-id %s --type status\n\n", u.workflowID)
}

// findTemporal locates the Temporal CLI: an explicit path, then bin/temporal
// beside the pacer binary (where make puts it), then PATH.
func findTemporal(explicit string) (string, error) {
	if explicit != "" {
		return explicit, nil
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "temporal")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath("temporal"); err == nil {
		return p, nil
	}
	return "", errors.New("temporal CLI not found: run make dev (it installs bin/temporal) or pass --temporal-bin")
}

func reachable(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

// ensureTemporal starts a dev server unless one already answers at addr. The
// returned stop function ends the server it started.
func ensureTemporal(ctx context.Context, addr, bin, stateDir string, uiPort int) (func(), error) {
	if reachable(addr) {
		return func() {}, nil
	}
	bin, err := findTemporal(bin)
	if err != nil {
		return nil, err
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, usagef("temporal address %q: %v", addr, err)
	}
	// Not tied to ctx, and in its own process group so that the terminal's
	// Ctrl-C does not reach it: the worker stops first (letting a run in
	// flight end and report), then stop() ends the server.
	//nolint:gosec // G204: bin is the Temporal CLI that pacer dev installed or was pointed at
	srv := exec.Command(bin, "server", "start-dev", "--ip", host, "--port", port,
		"--ui-port", strconv.Itoa(uiPort), "--db-filename", filepath.Join(stateDir, "temporal.db"), "--log-level", "error")
	srv.Stdout, srv.Stderr = os.Stderr, os.Stderr
	ownProcessGroup(srv)
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("start temporal dev server: %w", err)
	}
	stop := func() {
		_ = srv.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = srv.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = srv.Process.Kill()
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for !reachable(addr) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			stop()
			return nil, fmt.Errorf("temporal dev server did not come up at %s", addr)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return stop, nil
}
