package pacing

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
)

var t0 = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)

// testConfig is wide enough that no bound interferes unless a test wants it.
func testConfig() ControllerConfig {
	return ControllerConfig{
		MinBatch: 5, MaxBatch: 1000,
		MinInterval: pacer.Duration(10 * time.Second), MaxInterval: pacer.Duration(time.Hour),
		InitialBatch: 20, InitialInterval: pacer.Duration(100 * time.Second),
	}
}

func newTestController(t *testing.T, cfg ControllerConfig) *Controller {
	t.Helper()
	c, err := NewController(cfg)
	require.NoError(t, err)
	return c
}

func TestControllerZones(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                string
		giveSuccesses       int
		giveFailures        int
		wantZone            Zone
		wantBatch           int
		wantInterval        time.Duration
		wantCooldown        bool
		wantStepped         bool
		wantWindowKeptAfter bool
	}{
		{name: "warmup below min samples", giveSuccesses: 2, giveFailures: 2,
			wantZone: ZoneWarmup, wantBatch: 20, wantInterval: 100 * time.Second, wantWindowKeptAfter: true},
		{name: "cooldown below 20%", giveSuccesses: 1, giveFailures: 9,
			wantZone: ZoneCooldown, wantBatch: 5, wantInterval: time.Hour, wantCooldown: true, wantStepped: true},
		{name: "exactly 20% is backoff, not cooldown", giveSuccesses: 2, giveFailures: 8,
			wantZone: ZoneBackoff, wantBatch: 10, wantInterval: 150 * time.Second, wantStepped: true},
		{name: "backoff below 50%", giveSuccesses: 4, giveFailures: 6,
			wantZone: ZoneBackoff, wantBatch: 10, wantInterval: 150 * time.Second, wantStepped: true},
		{name: "exactly 50% is the dead zone", giveSuccesses: 5, giveFailures: 5,
			wantZone: ZoneSteady, wantBatch: 20, wantInterval: 100 * time.Second, wantWindowKeptAfter: true},
		{name: "dead zone holds", giveSuccesses: 7, giveFailures: 3,
			wantZone: ZoneSteady, wantBatch: 20, wantInterval: 100 * time.Second, wantWindowKeptAfter: true},
		{name: "exactly 80% is the dead zone", giveSuccesses: 8, giveFailures: 2,
			wantZone: ZoneSteady, wantBatch: 20, wantInterval: 100 * time.Second, wantWindowKeptAfter: true},
		{name: "grow above 80%", giveSuccesses: 17, giveFailures: 3,
			wantZone: ZoneGrow, wantBatch: 22, wantInterval: 95 * time.Second, wantStepped: true, wantWindowKeptAfter: true},
		{name: "exactly 95% grows, does not surge", giveSuccesses: 19, giveFailures: 1,
			wantZone: ZoneGrow, wantBatch: 22, wantInterval: 95 * time.Second, wantStepped: true, wantWindowKeptAfter: true},
		{name: "surge above 95%", giveSuccesses: 20,
			wantZone: ZoneSurge, wantBatch: 25, wantInterval: 80 * time.Second, wantStepped: true, wantWindowKeptAfter: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newTestController(t, testConfig())
			c.Observe(t0, tt.giveSuccesses, tt.giveFailures)
			d := c.Decide(t0.Add(time.Second))
			require.Equal(t, tt.wantZone, d.Zone)
			require.Equal(t, tt.wantBatch, d.Batch)
			require.Equal(t, tt.wantInterval, d.Interval)
			require.Equal(t, tt.wantStepped, d.Stepped)
			require.Equal(t, tt.wantCooldown, d.CooldownRemaining > 0)
			if tt.wantCooldown {
				require.Equal(t, 5*time.Minute, d.CooldownRemaining, "from the decision on")
			}
			// A decrease spends the evidence behind it; anything else keeps it.
			require.Equal(t, tt.wantWindowKeptAfter, len(c.Buckets) > 0)
		})
	}
}

func TestControllerSteps(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		giveCfg      func(*ControllerConfig)
		giveBatch    int
		giveInterval time.Duration
		giveFailures int // out of 20 outcomes
		wantBatch    int
		wantInterval time.Duration
	}{
		{name: "+10% of 3 is still +1", giveBatch: 3, giveInterval: time.Minute, giveFailures: 2,
			wantBatch: 4, wantInterval: 57 * time.Second},
		{name: "+25% of 1 is still +1", giveBatch: 1, giveInterval: time.Minute,
			wantBatch: 2, wantInterval: 48 * time.Second},
		{name: "+25% rounds up", giveBatch: 10, giveInterval: time.Minute,
			wantBatch: 13, wantInterval: 48 * time.Second},
		{name: "×0.95 of 10s is still −1s", giveBatch: 10, giveInterval: 11 * time.Second, giveFailures: 2,
			wantBatch: 11, wantInterval: 10 * time.Second},
		{name: "halving 3 gives 1", giveBatch: 3, giveInterval: time.Minute, giveFailures: 12,
			wantBatch: 1, wantInterval: 90 * time.Second},
		{name: "×1.5 of 1s is still +1s", giveCfg: func(c *ControllerConfig) { c.MinInterval = pacer.Duration(time.Second) },
			giveBatch: 8, giveInterval: time.Second, giveFailures: 12,
			wantBatch: 4, wantInterval: 2 * time.Second},
		{name: "batch stops at max", giveCfg: func(c *ControllerConfig) { c.MaxBatch = 24 },
			giveBatch: 22, giveInterval: time.Minute, wantBatch: 24, wantInterval: 48 * time.Second},
		{name: "interval stops at min", giveBatch: 10, giveInterval: 11 * time.Second,
			wantBatch: 13, wantInterval: 10 * time.Second},
		{name: "batch stops at min", giveCfg: func(c *ControllerConfig) { c.MinBatch = 5 },
			giveBatch: 6, giveInterval: time.Minute, giveFailures: 12, wantBatch: 5, wantInterval: 90 * time.Second},
		{name: "interval stops at max", giveCfg: func(c *ControllerConfig) { c.MaxInterval = pacer.Duration(80 * time.Second) },
			giveBatch: 6, giveInterval: time.Minute, giveFailures: 12, wantBatch: 3, wantInterval: 80 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// One outcome is enough to judge here, so that small batches
			// are valid and the rounding at the bottom shows.
			cfg := testConfig()
			cfg.MinBatch, cfg.MinSamples = 1, 1
			if tt.giveCfg != nil {
				tt.giveCfg(&cfg)
			}
			cfg.InitialBatch, cfg.InitialInterval = tt.giveBatch, pacer.Duration(tt.giveInterval)
			c := newTestController(t, cfg)
			c.Observe(t0, 20-tt.giveFailures, tt.giveFailures)
			d := c.Decide(t0)
			require.Equal(t, tt.wantBatch, d.Batch)
			require.Equal(t, tt.wantInterval, d.Interval)
		})
	}
}

func TestControllerNeedsFreshEvidence(t *testing.T) {
	t.Parallel()
	c := newTestController(t, testConfig())
	c.Observe(t0, 20, 0)
	require.True(t, c.Decide(t0).Stepped)
	// The same window asked again: no new outcomes, no second step.
	d := c.Decide(t0.Add(10 * time.Second))
	require.False(t, d.Stepped)
	require.Equal(t, 25, d.Batch)
	require.Equal(t, ZoneSurge, d.Zone)
	// Fewer than MinSamples new outcomes are not enough either.
	c.Observe(t0.Add(20*time.Second), 4, 0)
	require.False(t, c.Decide(t0.Add(20*time.Second)).Stepped)
	c.Observe(t0.Add(30*time.Second), 1, 0)
	d = c.Decide(t0.Add(30 * time.Second))
	require.True(t, d.Stepped)
	require.Equal(t, 32, d.Batch)
}

func TestControllerWindowRolls(t *testing.T) {
	t.Parallel()
	c := newTestController(t, testConfig())
	c.Observe(t0, 0, 10)
	c.Observe(t0.Add(4*time.Minute), 3, 0)
	// At 4m59s the failures of minute 0 are still in the 5-minute window.
	d := c.Snapshot(t0.Add(4*time.Minute + 59*time.Second))
	require.Equal(t, 13, d.Samples)
	// At 5m they have slid out, leaving too few samples to judge.
	d = c.Decide(t0.Add(5 * time.Minute))
	require.Equal(t, 3, d.Samples)
	require.Equal(t, ZoneWarmup, d.Zone)
	require.False(t, d.Stepped)
	require.Len(t, c.Buckets, 1)
}

func TestControllerCooldownAndRecovery(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.InitialBatch, cfg.InitialInterval = 100, pacer.Duration(20*time.Second)
	c := newTestController(t, cfg)

	c.Observe(t0, 1, 19)
	d := c.Decide(t0)
	require.Equal(t, ZoneCooldown, d.Zone)
	require.Equal(t, 5, d.Batch)
	require.Equal(t, time.Hour, d.Interval)
	require.Equal(t, 5*time.Minute, d.CooldownRemaining)
	require.Empty(t, c.Buckets, "the failures behind the cooldown are spent")

	// Perfect results during the cooldown move nothing.
	c.Observe(t0.Add(time.Minute), 10, 0)
	d = c.Decide(t0.Add(4 * time.Minute))
	require.Equal(t, ZoneCooldown, d.Zone)
	require.False(t, d.Stepped)
	require.Equal(t, 5, d.Batch)
	require.Equal(t, time.Minute, d.CooldownRemaining)

	// After it, recovery starts at the floor and climbs one zone step at a
	// time on fresh evidence, instead of jumping back to 100.
	d = c.Decide(t0.Add(5 * time.Minute))
	require.Equal(t, ZoneSurge, d.Zone)
	require.Nil(t, c.CooldownUntil)
	require.Zero(t, d.CooldownRemaining)
	require.Equal(t, 7, d.Batch)
	require.Equal(t, 48*time.Minute, d.Interval)
	var batches []int
	for i := range 6 {
		now := t0.Add(6*time.Minute + time.Duration(i)*time.Minute)
		c.Observe(now, 5, 0)
		batches = append(batches, c.Decide(now).Batch)
	}
	require.Equal(t, []int{9, 12, 15, 19, 24, 30}, batches)
}

func TestControllerCooldownAgain(t *testing.T) {
	t.Parallel()
	c := newTestController(t, testConfig())
	c.Observe(t0, 0, 10)
	c.Decide(t0)
	// Still failing when the cooldown ends: another cooldown.
	c.Observe(t0.Add(2*time.Minute), 0, 5)
	d := c.Decide(t0.Add(5 * time.Minute))
	require.Equal(t, ZoneCooldown, d.Zone)
	require.Equal(t, 5*time.Minute, d.CooldownRemaining)
}

func TestControllerRecord(t *testing.T) {
	t.Parallel()
	tests := []struct {
		give          pacer.ErrorClass
		wantSuccesses int
		wantFailures  int
	}{
		{give: "", wantSuccesses: 1},
		{give: pacer.ClassNotFound, wantSuccesses: 1},
		{give: pacer.ClassParseError, wantSuccesses: 1},
		{give: pacer.ClassRateLimit, wantFailures: 1},
		{give: pacer.ClassServerError, wantFailures: 1},
		{give: pacer.ClassTimeout, wantFailures: 1},
		{give: pacer.ClassTransport},
		{give: pacer.ClassPermanent},
	}
	for _, tt := range tests {
		t.Run(string(tt.give), func(t *testing.T) {
			t.Parallel()
			c := newTestController(t, testConfig())
			c.Record(t0, tt.give)
			s, f := c.window()
			require.Equal(t, tt.wantSuccesses, s)
			require.Equal(t, tt.wantFailures, f)
		})
	}
}

func TestControllerClamp(t *testing.T) {
	t.Parallel()
	c := newTestController(t, testConfig())
	c.Observe(t0, 3, 0)
	cfg := testConfig()
	cfg.MaxBatch, cfg.MinInterval = 10, pacer.Duration(5*time.Minute)
	require.NoError(t, c.Clamp(cfg))
	require.Equal(t, 10, c.Batch)
	require.Equal(t, pacer.Duration(5*time.Minute), c.Interval)
	require.Len(t, c.Buckets, 1, "evidence survives a bounds change")

	bad := testConfig()
	bad.MaxBatch = 0
	require.ErrorIs(t, c.Clamp(bad), ErrBadConfig)
	require.Equal(t, 10, c.Config.MaxBatch, "a bad config changes nothing")
}

func TestControllerConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		give func(*ControllerConfig)
	}{
		{name: "min batch 0", give: func(c *ControllerConfig) { c.MinBatch = 0 }},
		{name: "min batch below min samples", give: func(c *ControllerConfig) { c.MinBatch = 4 }},
		{name: "max below min", give: func(c *ControllerConfig) { c.MaxBatch = 4 }},
		{name: "sub-second interval", give: func(c *ControllerConfig) { c.MinInterval = pacer.Duration(time.Millisecond) }},
		{name: "max interval below min", give: func(c *ControllerConfig) { c.MaxInterval = pacer.Duration(time.Second) }},
		{name: "thresholds out of order", give: func(c *ControllerConfig) { c.GrowAbove = 40 }},
		{name: "threshold above 100", give: func(c *ControllerConfig) { c.SurgeAbove = 101 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig()
			tt.give(&cfg)
			_, err := NewController(cfg)
			require.ErrorIs(t, err, ErrBadConfig)
		})
	}
}

func TestControllerTuneAndReset(t *testing.T) {
	t.Parallel()
	c := newTestController(t, testConfig())
	c.Observe(t0, 0, 10)
	c.Decide(t0)
	require.NotNil(t, c.CooldownUntil)

	require.ErrorIs(t, c.Tune(-1, 0), ErrBadTune)
	require.NoError(t, c.Tune(5000, 0))
	require.Equal(t, 1000, c.Batch, "clamped to the bounds")
	require.Equal(t, pacer.Duration(time.Hour), c.Interval, "0 keeps the interval")
	require.Nil(t, c.CooldownUntil, "an operator's tune ends a cooldown")
	require.Equal(t, ZoneWarmup, c.Zone)
	require.NoError(t, c.Tune(0, time.Second))
	require.Equal(t, pacer.Duration(10*time.Second), c.Interval)
	require.Equal(t, 1000, c.Batch)

	c.Observe(t0, 10, 0)
	c.Reset()
	require.Equal(t, 20, c.Batch)
	require.Equal(t, pacer.Duration(100*time.Second), c.Interval)
	require.Empty(t, c.Buckets)
	require.Equal(t, ZoneWarmup, c.Zone)
}

func TestControllerCautiousDefaultStart(t *testing.T) {
	t.Parallel()
	c := newTestController(t, ControllerConfig{MinBatch: 5, MaxBatch: 9, MinInterval: pacer.Duration(time.Minute), MaxInterval: pacer.Duration(time.Hour)})
	require.Equal(t, 5, c.Batch)
	require.Equal(t, pacer.Duration(time.Hour), c.Interval)
	require.Equal(t, 5, c.Config.MinSamples)
	require.Equal(t, pacer.Duration(5*time.Minute), c.Config.Cooldown)
}

func TestControllerSurvivesJSON(t *testing.T) {
	t.Parallel()
	c := newTestController(t, testConfig())
	c.Observe(t0, 1, 19)
	c.Decide(t0)
	c.Observe(t0.Add(time.Minute), 3, 0)

	raw, err := json.Marshal(c)
	require.NoError(t, err)
	var back Controller
	require.NoError(t, json.Unmarshal(raw, &back))
	require.Equal(t, *c, back)

	now := t0.Add(6 * time.Minute)
	c.Observe(now, 9, 0)
	back.Observe(now, 9, 0)
	require.Equal(t, c.Decide(now), back.Decide(now))
}

func TestWilson(t *testing.T) {
	t.Parallel()
	tests := []struct {
		giveS, giveN   int
		wantLo, wantHi float64
	}{
		{giveS: 0, giveN: 0, wantLo: 0, wantHi: 1},
		{giveS: 5, giveN: 5, wantLo: 0.566, wantHi: 1},
		{giveS: 50, giveN: 100, wantLo: 0.404, wantHi: 0.596},
		{giveS: 0, giveN: 10, wantLo: 0, wantHi: 0.278},
	}
	for _, tt := range tests {
		lo, hi := wilson(tt.giveS, tt.giveN)
		require.InDelta(t, tt.wantLo, lo, 0.001)
		require.InDelta(t, tt.wantHi, hi, 0.001)
	}
}
