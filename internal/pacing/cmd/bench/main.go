// Command bench prints pacer's benchmarks (`make bench`) as Markdown on
// stdout: every scenario of internal/pacing/bench with its strategies side
// by side, then pacer's pacing goals, then the chain benchmark of
// internal/ingest/bench (how soon the sweep finds each swap, the tail
// beside the agents mode, per world, chain volume and Hiro budget) with its
// goals. Both run in virtual time and need nothing running; the output is
// the same on every run but for its time. It exits 1 when a goal is
// missed (each one said on stderr), 2 on bad flags.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pacer-dev/pacer/internal/evidence"
	"github.com/pacer-dev/pacer/internal/ingest"
	discovery "github.com/pacer-dev/pacer/internal/ingest/bench"
	"github.com/pacer-dev/pacer/internal/pacing/bench"
)

func main() {
	// The chain: the tail (both allowlists; on the service's, polling alone
	// and with push, its default) beside the agents mode, at every size,
	// volume and plan unless the flags pick some.
	o := discovery.ChainOptions{Sizes: discovery.ChainSizes, Volumes: discovery.ChainVolumes,
		Budgets: discovery.Budgets, Horizon: 48 * time.Hour, Tails: []discovery.Strategy{discovery.Tail, discovery.ServiceTail, discovery.ServicePush},
		PerAgent: []ingest.Policy{ingest.PolicyTiers, ingest.PolicyOptimal}, LossVolumes: discovery.LossVolumes}
	section := flag.String("section", "all", "which benchmark to run: all, pacing or chain")
	flag.Func("agents", "chain: the worlds' agent counts, comma-separated (default 1000,10000,100000)", ints(&o.Sizes))
	flag.Func("volumes", "chain: the chain volumes, contract calls a day, comma-separated (default 10000,40000,200000, and 100000,150000 on the month plan in the smallest world)", func(s string) error {
		o.LossVolumes = nil // the volumes given are the ones run
		return ints(&o.Volumes)(s)
	})
	flag.Func("plans", "chain: the Hiro plans, comma-separated among keyless, keyed, month (default all three)", func(s string) error {
		o.Budgets = nil
		for _, p := range strings.Split(s, ",") {
			i := map[string]int{"keyless": 1, "keyed": 2, "month": 3}[strings.TrimSpace(p)]
			if i == 0 {
				return fmt.Errorf("%q is not keyless, keyed or month", p)
			}
			o.Budgets = append(o.Budgets, discovery.Budgets[i-1])
		}
		return nil
	})
	flag.IntVar(&o.PerAgentUpTo, "per-agent-up-to", 100_000, "chain: run the agents mode (tiers, optimal) in worlds of at most this many agents (0: none)")
	pushDelay := flag.Duration("push-delay", discovery.PushDelay, "chain: how long after its block Hiro's WebSocket pushes a call, in the rows with push (a what-if: a later push shows in their goals)")
	flag.Parse()
	for i := range o.Tails {
		if o.Tails[i].Push {
			o.Tails[i].PushDelay = *pushDelay
		}
	}
	switch *section {
	case "all", "pacing", "chain":
	default:
		fmt.Fprintf(os.Stderr, "bench: -section %q must be all, pacing or chain\n", *section)
		os.Exit(2)
	}
	var goals []bench.Goal
	if *section == "all" || *section == "pacing" {
		outcomes := bench.RunAll()
		bench.WriteTables(os.Stdout, outcomes)
		fmt.Print("### Goals\n\n")
		g := bench.Goals(outcomes)
		bench.WriteGoals(os.Stdout, g)
		goals = append(goals, g...)
	}
	if *section == "all" || *section == "chain" {
		rep := discovery.RunChain(o)
		rep.WriteChain(os.Stdout)
		goals = append(goals, rep.Goals()...)
		fmt.Println()
		for _, f := range rep.Figures() {
			if _, err := evidence.Print(os.Stdout, f); err != nil {
				fmt.Fprintln(os.Stderr, "bench:", err)
				os.Exit(2)
			}
		}
	}
	if missed := bench.Missed(goals); len(missed) > 0 {
		for _, g := range missed {
			fmt.Fprintf(os.Stderr, "bench: goal missed: %s: %s: got %s\n", g.Scenario, g.Goal, g.Got)
		}
		os.Exit(1)
	}
}

// ints sets *out to a comma-separated list of positive integers.
func ints(out *[]int) func(string) error {
	return func(s string) error {
		*out = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(strings.ReplaceAll(f, "_", "")))
			if err != nil || n <= 0 {
				return fmt.Errorf("%q is not a positive integer", f)
			}
			*out = append(*out, n)
		}
		return nil
	}
}
