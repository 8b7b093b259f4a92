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
	"github.com/pacer-dev/pacer/internal/store"
)

// simOptions shape the simulated world and its limits.
type simOptions struct {
	addr      string
	seed      int64
	agents    int
	arrivals  time.Duration
	writeDB   bool
	teneroMin int
	teneroMon int
	noisy     int
	activity  bool
	features  bool
	// push: the world's blocks POSTed as Chainhooks deliveries.
	pushURL                                    string
	pushDrop, pushDup, pushReorder, pushReplay float64
	reorgs                                     int
	// chainVolume is strangers' contract calls a day; 0 is none.
	chainVolume int
}

func (o *simOptions) bind(cmd *cobra.Command, writeDBDefault bool) {
	f := cmd.Flags()
	f.StringVar(&o.addr, "sim-addr", "127.0.0.1:8090", "simulator listen address")
	f.Int64Var(&o.seed, "seed", 1, "simulator world seed")
	f.IntVar(&o.agents, "sim-agents", sim.DefaultAgents, "registered agents in the simulated world")
	f.DurationVar(&o.arrivals, "sim-arrivals", 24*time.Hour, "how long new swaps keep arriving in the simulated world")
	f.BoolVar(&o.writeDB, "sim-write-agents", writeDBDefault, "write the world's agents and claims into Postgres (DATABASE_URL) so the sweep finds them")
	f.IntVar(&o.teneroMin, "sim-tenero-per-minute", 0, "simulated Tenero per-minute limit (0 = 100, the keyless plan)")
	f.IntVar(&o.teneroMon, "sim-tenero-per-month", 0, "simulated Tenero per-month limit (0 = 50,000)")
	f.IntVar(&o.noisy, "sim-noisy-neighbour", 0, "requests per minute a neighbour spends of the shared Tenero budget")
	f.BoolVar(&o.activity, "sim-activity", false, "agents of every activity level (5/15/80 hot/warm/cold) whose swaps keep arriving, and a busy agent's bursts")
	f.BoolVar(&o.features, "sim-sweep-features", false, "add the sweep test's transactions: a 200-swap burst after the start, a 30-event swap, a route through the agent, a fork")
	// dev pushes to its own API, with faults, so push and its
	// reconciliation show end to end; `pacer sim` pushes only when asked.
	pushHelp := "POST the world's blocks to this URL as Hiro Chainhooks deliveries, with PACER_CHAINHOOK_SECRET as the bearer secret"
	fault := 0.0
	if writeDBDefault {
		pushHelp += " (default: dev's own API; --sim-push-url off turns push off)"
		fault = 0.05
	}
	f.StringVar(&o.pushURL, "sim-push-url", "", pushHelp)
	f.Float64Var(&o.pushDrop, "sim-push-drop", 4*fault, "share of the simulator's deliveries it drops")
	f.Float64Var(&o.pushDup, "sim-push-duplicate", fault, "share of the simulator's deliveries it sends twice")
	f.Float64Var(&o.pushReorder, "sim-push-reorder", fault, "share of the simulator's deliveries it sends after the next one")
	f.Float64Var(&o.pushReplay, "sim-push-replay", fault, "share of the simulator's deliveries it sends again 5 s later")
	f.IntVar(&o.reorgs, "sim-reorgs", int(40*fault), "blocks of the arrivals the simulated chain rolls back, re-applying their transactions 10 s later")
	f.IntVar(&o.chainVolume, "sim-chain-volume", sim.DefaultChainVolume, "contract calls a day strangers make on the simulated chain, in the feed and the contracts' lists beside the agents' swaps (0 = none)")
}

// chain is the simulated chain's strangers' traffic.
func (o simOptions) chain() (sim.ChainConfig, error) {
	switch {
	case o.chainVolume < 0:
		return sim.ChainConfig{}, usagef("--sim-chain-volume %d: want calls a day, 0 or more", o.chainVolume)
	case o.chainVolume == 0:
		return sim.ChainConfig{Volume: -1}, nil
	}
	return sim.ChainConfig{Volume: o.chainVolume}, nil
}

// push is the simulator's push configuration, with secret as the bearer
// secret.
func (o simOptions) push(secret string) (sim.PushConfig, error) {
	if o.pushURL == "" || o.pushURL == "off" {
		return sim.PushConfig{}, nil
	}
	if secret == "" {
		return sim.PushConfig{}, usagef("--sim-push-url needs PACER_CHAINHOOK_SECRET (the bearer secret the deliveries carry)")
	}
	for name, v := range map[string]float64{"drop": o.pushDrop, "duplicate": o.pushDup, "reorder": o.pushReorder, "replay": o.pushReplay} {
		if v < 0 || v > 1 {
			return sim.PushConfig{}, usagef("--sim-push-%s %v: want a share between 0 and 1", name, v)
		}
	}
	return sim.PushConfig{URL: o.pushURL, Secret: secret, Drop: o.pushDrop, Duplicate: o.pushDup,
		Reorder: o.pushReorder, Replay: o.pushReplay}, nil
}

func newSimCmd(c *config) *cobra.Command {
	var o simOptions
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run the upstream simulator (Tenero + Hiro on one address)",
		Long: `sim serves Tenero's and Hiro's endpoints on one address, over a world generated
from --seed: agents, claims and swap transactions arriving over time,
strangers' contract calls in the same blocks (--sim-chain-volume a day, served
by the feed /extended/v1/tx, each contract's list and /extended/v1/tx/multiple),
rate limits with the real headers, and faults you can inject:

  curl -X PUT localhost:8090/_sim/faults -d '{"tooManyRequests":0.5,"pathPrefix":"/v1/"}'

GET /_sim/stats counts requests; GET /_sim/world shows the world; GET
/_sim/swaps tells when each swap the ledger must hold was mined.`,
		Args: wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := c.logger()
			if err != nil {
				return err
			}
			url, err := startSim(cmd.Context(), o, c, log)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "simulator on %s (TENERO_BASE_URL=HIRO_BASE_URL=%s); faults at %s/_sim/faults\n", url, url, url)
			<-cmd.Context().Done()
			return nil
		},
	}
	o.bind(cmd, false)
	return cmd
}

// startSim serves the simulator until ctx ends and returns its URL. With
// writeDB it first writes the world's agents and claims into Postgres.
func startSim(ctx context.Context, o simOptions, c *config, log *zap.Logger) (string, error) {
	push, err := o.push(c.chainhookSecret)
	if err != nil {
		return "", err
	}
	chain, err := o.chain()
	if err != nil {
		return "", err
	}
	srv := sim.New(sim.Config{
		Push: push,
		Seed: o.seed,
		Tenero: sim.TeneroConfig{Anonymous: sim.Limits{
			PerMinute: o.teneroMin, PerMonth: o.teneroMon, NoisyPerMinute: o.noisy,
		}},
		Hiro: sim.HiroConfig{
			Agents:           o.agents,
			CompetitionStart: time.Unix(c.competitionStart, 0),
			Arrivals:         o.arrivals,
			Activity:         o.activity,
			Features:         sweepFeatures(o.features),
			Reorgs:           sim.Reorgs{Count: o.reorgs},
			Chain:            chain,
		},
	})
	if o.writeDB {
		if err := seedWorld(ctx, c.databaseURL, srv.World()); err != nil {
			return "", err
		}
		log.Info("sim.agents_written", zap.Int("agents", len(srv.World().Agents())))
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return "", fmt.Errorf("simulator: %w", err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("sim.serve_failed", zap.Error(err))
		}
	}()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = hs.Shutdown(shutdown)
	}()
	url := "http://" + ln.Addr().String()
	log.Info("sim.listening", zap.String("url", url))
	if push.URL != "" {
		go func() { _ = srv.Push(ctx) }()
		log.Info("sim.pushing", zap.String("url", push.URL), zap.Float64("drop", push.Drop), zap.Int("reorgs", o.reorgs))
	}
	return url, nil
}

func sweepFeatures(on bool) sim.Features {
	if !on {
		return sim.Features{}
	}
	return sim.SweepFeatures()
}

func seedWorld(ctx context.Context, databaseURL string, w *sim.World) error {
	st, err := store.Open(ctx, databaseURL)
	if err != nil {
		return fmt.Errorf("simulator: postgres: %w", err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return fmt.Errorf("simulator: %w", err)
	}
	if err := w.Seed(ctx, st); err != nil {
		return fmt.Errorf("simulator: write agents: %w", err)
	}
	return nil
}
