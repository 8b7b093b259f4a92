// Command bench prints pacer's pacing benchmark (`make bench`): every
// scenario of internal/pacing/bench with its strategies side by side, then
// pacer's goals, as Markdown on stdout. It runs in virtual time and needs
// nothing running; the output is the same on every run.
package main

import (
	"fmt"
	"os"

	"github.com/pacer-dev/pacer/internal/pacing/bench"
)

func main() {
	outcomes := bench.RunAll()
	bench.WriteTables(os.Stdout, outcomes)
	fmt.Println("### Goals")
	fmt.Println()
	bench.WriteGoals(os.Stdout, bench.Goals(outcomes))
}
