// Command bench prints pacer's benchmarks (`make bench`) as Markdown on
// stdout: every scenario of internal/pacing/bench with its strategies side
// by side, then pacer's pacing goals, then the chain benchmark of
// internal/ingest/bench (how soon the sweep finds each swap, the tail
// beside the agents mode, per world, chain volume and Hiro budget) with its
// goals. Both run in virtual time and need nothing running; the output is
// the same on every run but for its time.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pacer-dev/pacer/internal/ingest"
	discovery "github.com/pacer-dev/pacer/internal/ingest/bench"
	"github.com/pacer-dev/pacer/internal/pacing/bench"
)

func main() {
	section := flag.String("section", "all", "which benchmark to run: all, pacing or chain")
	agents := flag.String("agents", "", "chain: the worlds' agent counts, comma-separated (default 1000,10000,100000)")
	volumes := flag.String("volumes", "", "chain: the chain volumes, contract calls a day, comma-separated (default 10000,40000,200000)")
	plans := flag.String("plans", "", "chain: the Hiro plans, comma-separated among keyless, keyed, month (default all three)")
	detailBatch := flag.Int("detail-batch", 0, "chain: a what-if: transactions per tx/multiple request (default hiro.MaxBatch, what the service asks)")
	perAgentUpTo := flag.Int("per-agent-up-to", 100_000, "chain: run the agents mode (tiers, optimal) in worlds of at most this many agents (0: none)")
	flag.Parse()
	switch *section {
	case "all", "pacing", "chain":
	default:
		fmt.Fprintf(os.Stderr, "bench: -section %q must be all, pacing or chain\n", *section)
		os.Exit(2)
	}
	if *section == "all" || *section == "pacing" {
		outcomes := bench.RunAll()
		bench.WriteTables(os.Stdout, outcomes)
		fmt.Print("### Goals\n\n")
		bench.WriteGoals(os.Stdout, bench.Goals(outcomes))
	}
	if *section == "all" || *section == "chain" {
		// Issue 18: the service's discovery engine reading the chain's
		// tail, beside per-agent optimal, at every size, volume and plan.
		o, err := chainOptions(*agents, *volumes, *plans, *perAgentUpTo)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(2)
		}
		for i := range o.Tails {
			o.Tails[i].Batch = *detailBatch
		}
		if *detailBatch > 0 {
			fmt.Printf("What-if: %d transactions per tx/multiple request (the service asks hiro.MaxBatch).\n\n", *detailBatch)
		}
		discovery.RunChain(o).WriteChain(os.Stdout)
	}
}

// chainOptions is the chain benchmark's matrix: every size, volume and
// plan unless the flags pick some (one world alone runs in seconds).
func chainOptions(agents, volumes, plans string, perAgentUpTo int) (discovery.ChainOptions, error) {
	o := discovery.ChainOptions{Sizes: discovery.ChainSizes, Volumes: discovery.ChainVolumes,
		Budgets: discovery.Budgets, Horizon: 48 * time.Hour, Tails: []discovery.Strategy{discovery.Tail, discovery.ServiceTail},
		PerAgentUpTo: perAgentUpTo, PerAgent: []ingest.Policy{ingest.PolicyTiers, ingest.PolicyOptimal}}
	var err error
	if o.Sizes, err = ints(agents, o.Sizes); err != nil {
		return o, fmt.Errorf("-agents: %w", err)
	}
	if o.Volumes, err = ints(volumes, o.Volumes); err != nil {
		return o, fmt.Errorf("-volumes: %w", err)
	}
	if plans != "" {
		byName := map[string]discovery.Budget{"keyless": discovery.Budgets[0], "keyed": discovery.Budgets[1], "month": discovery.Budgets[2]}
		o.Budgets = nil
		for _, p := range strings.Split(plans, ",") {
			b, ok := byName[strings.TrimSpace(p)]
			if !ok {
				return o, fmt.Errorf("-plans: %q is not keyless, keyed or month", p)
			}
			o.Budgets = append(o.Budgets, b)
		}
	}
	return o, nil
}

// ints reads a comma-separated list of positive integers ("" is def).
func ints(s string, def []int) ([]int, error) {
	if s == "" {
		return def, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(strings.ReplaceAll(f, "_", "")))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}
