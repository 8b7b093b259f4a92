// Command bench prints pacer's benchmarks (`make bench`) as Markdown on
// stdout: every scenario of internal/pacing/bench with its strategies side
// by side, then pacer's pacing goals, then the discovery benchmark of
// internal/ingest/bench (how soon the sweep finds each swap, per policy,
// world and Hiro budget) with its goals. Both run in virtual time and need
// nothing running; the output is the same on every run.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	discovery "github.com/pacer-dev/pacer/internal/ingest/bench"
	"github.com/pacer-dev/pacer/internal/pacing/bench"
)

func main() {
	section := flag.String("section", "all", "which benchmark to run: all, pacing, discovery or chain")
	flag.Parse()
	switch *section {
	case "all", "pacing", "discovery", "chain":
	default:
		fmt.Fprintf(os.Stderr, "bench: -section %q must be all, pacing, discovery or chain\n", *section)
		os.Exit(2)
	}
	if *section == "all" || *section == "pacing" {
		outcomes := bench.RunAll()
		bench.WriteTables(os.Stdout, outcomes)
		fmt.Println("### Goals")
		fmt.Println()
		bench.WriteGoals(os.Stdout, bench.Goals(outcomes))
		fmt.Println()
	}
	if *section == "all" || *section == "discovery" {
		discovery.RunAll().Write(os.Stdout)
	}
	if *section == "all" || *section == "chain" {
		// Issue 18: the service's discovery engine reading the chain's
		// tail, beside per-agent optimal, at every size, volume and plan.
		discovery.RunChain(discovery.DiscoveryEngine, discovery.ChainOptions{Sizes: discovery.ChainSizes,
			Volumes: discovery.ChainVolumes, Budgets: discovery.Budgets, Horizon: 48 * time.Hour,
			PerAgent: true, PerAgentUpTo: 10_000}).Write(os.Stdout, discovery.Budgets)
	}
}
