// Command pacer is the single binary: worker, HTTP API, simulator, local dev
// stack and operator CLI. See `pacer --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	// The zone database in the binary, for hosts without one (the
	// distroless image). Schedules read their own pinned copy
	// (internal/cron), so that every worker computes the same fire times.
	_ "time/tzdata"

	"github.com/pacer-dev/pacer/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
