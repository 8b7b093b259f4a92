package cli

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/pacer-dev/pacer/internal/rollup"
	"github.com/pacer-dev/pacer/internal/webhook"
)

// rollupConfig is the rollup and deliver tasks' configuration (SPEC §2):
// PACER_DAY_TZ and PACER_DELIVERY_LADDER, each also a flag.
type rollupConfig struct {
	dayTZ  string
	ladder string

	// Parsed by validate.
	zone  *time.Location
	steps webhook.Ladder
}

func (r *rollupConfig) bind(fs *pflag.FlagSet) {
	fs.StringVar(&r.dayTZ, "day-tz", env("PACER_DAY_TZ", "UTC"),
		"IANA time zone whose midnight ends a daily rollup [PACER_DAY_TZ]")
	fs.StringVar(&r.ladder, "delivery-ladder", env("PACER_DELIVERY_LADDER", webhook.DefaultLadder),
		"delays between webhook delivery attempts, ±10% jitter; exhausted after the last [PACER_DELIVERY_LADDER]")
}

func (r *rollupConfig) validate() error {
	zone, err := rollup.LoadZone(r.dayTZ)
	if err != nil {
		return usagef("--day-tz / PACER_DAY_TZ: %v", err)
	}
	steps, err := webhook.ParseLadder(r.ladder)
	if err != nil {
		return usagef("--delivery-ladder / PACER_DELIVERY_LADDER: %v", err)
	}
	r.zone, r.steps = zone, steps
	return nil
}
