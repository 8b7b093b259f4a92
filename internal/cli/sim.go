package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/pacer-dev/pacer/internal/sim"
)

func newSimCmd(c *config) *cobra.Command {
	var addr string
	var seed int64
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run the upstream simulator (Tenero + Hiro on one address)",
		Args:  wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := c.logger()
			if err != nil {
				return err
			}
			url, err := startSim(cmd.Context(), addr, seed, c.databaseURL)
			if err != nil {
				return err
			}
			log.Info("sim.listening", zap.String("url", url))
			fmt.Fprintf(cmd.OutOrStdout(), "simulator on %s (TENERO_BASE_URL=HIRO_BASE_URL=%s); faults: %s/_sim/faults\n", url, url, url)
			<-cmd.Context().Done()
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8090", "listen address")
	cmd.Flags().Int64Var(&seed, "seed", 1, "world seed")
	return cmd
}

// startSim serves the simulator on addr until ctx ends and returns its URL.
func startSim(ctx context.Context, addr string, seed int64, _ string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("simulator: %w", err)
	}
	srv := &http.Server{Handler: sim.New(sim.Config{Seed: seed}), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the listener closed under us; the stack is stopping
		}
	}()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	return "http://" + ln.Addr().String(), nil
}
