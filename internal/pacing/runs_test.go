package pacing

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
)

// runsConfig is testConfig judged by runs, starting at its fastest pace as
// the workflow's controllers do.
func runsConfig() ControllerConfig {
	c := testConfig()
	c.Judge = JudgeRuns
	c.MaxBatch, c.InitialBatch, c.InitialInterval = 40, 40, c.MinInterval
	return c
}

// run is one run's outcome, as the workflow reports it when the run ends.
type run struct{ ok, failed int }

// pace feeds runs one by one and returns the pace decided after each.
func pace(c *Controller, runs ...run) []Pace {
	var out []Pace
	at := t0
	for _, r := range runs {
		at = at.Add(time.Duration(c.Interval))
		c.Observe(at, r.ok, r.failed)
		d := c.Decide(at)
		out = append(out, Pace{Batch: d.Batch, Interval: pacer.Duration(d.Interval)})
	}
	return out
}

func TestJudgeRunsDoesNotOverReact(t *testing.T) {
	t.Parallel()
	full := Pace{Batch: 40, Interval: pacer.Duration(10 * time.Second)}
	backedOff := Pace{Batch: 20, Interval: pacer.Duration(15 * time.Second)}
	tests := []struct {
		name string
		give []run
		want []Pace
	}{
		{name: "one bad run costs one run at a reduced pace",
			give: []run{{ok: 40}, {failed: 5}, {ok: 20}, {ok: 40}},
			want: []Pace{full, backedOff, full, full}},
		{name: "two very bad runs cool down; the way back is two good runs",
			give: []run{{failed: 5}, {failed: 5}, {ok: 5}, {ok: 22}, {ok: 40}},
			want: []Pace{backedOff, {Batch: 5, Interval: pacer.Duration(time.Hour)},
				{Batch: 23, Interval: pacer.Duration(1805 * time.Second)}, full, full}},
		{name: "a storm halves the batch run after run, stretching the interval once",
			give: []run{{ok: 16, failed: 24}, {ok: 8, failed: 12}, {ok: 4, failed: 6}, {ok: 5}},
			want: []Pace{backedOff, {Batch: 10, Interval: backedOff.Interval}, {Batch: 5, Interval: backedOff.Interval}, full}},
		{name: "the dead zone neither backs off nor recovers",
			give: []run{{failed: 5}, {ok: 7, failed: 3}, {ok: 20}},
			want: []Pace{backedOff, backedOff, full}},
		{name: "small runs are judged with the runs before them",
			// 0 of 3, then 3 of 3: together 50%, the dead zone; the second
			// good run alone would be too few, with the first it is 6 of 6.
			give: []run{{ok: 3}, {ok: 3}, {failed: 3}, {ok: 3}, {ok: 3}},
			want: []Pace{full, full, full, full, full}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newTestController(t, runsConfig())
			require.Equal(t, tt.want, pace(c, tt.give...))
		})
	}
}

// A cooldown with a CooledInterval probes at that interval, not at
// MaxInterval: after an outage the task is back within the cooldown, and
// the way back to its full pace is the same two good runs. It never makes
// a slower task faster, and a failing probe cools the task again.
func TestJudgeRunsCooledIntervalProbes(t *testing.T) {
	t.Parallel()
	full := Pace{Batch: 40, Interval: pacer.Duration(10 * time.Second)}
	backedOff := Pace{Batch: 20, Interval: pacer.Duration(15 * time.Second)}
	cooled := Pace{Batch: 5, Interval: pacer.Duration(5 * time.Minute)}
	cfg := runsConfig()
	cfg.CooledInterval = pacer.Duration(5 * time.Minute)
	c := newTestController(t, cfg)
	require.Equal(t, []Pace{backedOff, cooled, {Batch: 23, Interval: pacer.Duration(155 * time.Second)}, full},
		pace(c, run{failed: 5}, run{failed: 5}, run{ok: 5}, run{ok: 22}))

	c = newTestController(t, cfg)
	require.Equal(t, []Pace{backedOff, cooled, cooled, cooled, cooled},
		pace(c, run{failed: 5}, run{failed: 5}, run{failed: 2}, run{failed: 2}, run{failed: 2}),
		"an outage: a probe every cooled interval, however long it lasts")

	slow := cfg
	slow.InitialInterval = pacer.Duration(20 * time.Minute)
	c = newTestController(t, slow)
	got := pace(c, run{failed: 5}, run{failed: 5})
	require.Equal(t, pacer.Duration(30*time.Minute), got[1].Interval, "a cooldown never runs a task faster than it ran")

	cfg.CooledInterval = -1
	require.ErrorIs(t, cfg.WithDefaults().Validate(), ErrBadConfig)
}

func TestJudgeRunsGrowsToItsBounds(t *testing.T) {
	t.Parallel()
	cfg := runsConfig()
	cfg.InitialBatch, cfg.InitialInterval = 10, pacer.Duration(20*time.Second)
	c := newTestController(t, cfg)
	got := pace(c, run{ok: 10}, run{ok: 9, failed: 1}, run{ok: 8, failed: 2})
	require.Equal(t, []Pace{
		{Batch: 13, Interval: pacer.Duration(16 * time.Second)}, // surge: 100%
		{Batch: 15, Interval: pacer.Duration(15 * time.Second)}, // grow: 19 of 20 is 95%
		{Batch: 15, Interval: pacer.Duration(15 * time.Second)}, // the dead zone: 17 of 20
	}, got)
}

func TestJudgeRunsJudgesEachRunOnce(t *testing.T) {
	t.Parallel()
	c := newTestController(t, runsConfig())
	c.Observe(t0, 0, 5)
	first := c.Decide(t0)
	require.True(t, first.Stepped)
	for i := range 3 {
		d := c.Decide(t0.Add(time.Duration(i+1) * time.Minute))
		require.False(t, d.Stepped, "no new run, no new step")
		require.Equal(t, first.Batch, d.Batch)
	}
}

func TestJudgeRunsCooldownEndsOnEvidence(t *testing.T) {
	t.Parallel()
	c := newTestController(t, runsConfig())
	pace(c, run{failed: 5}, run{failed: 5})
	require.NotNil(t, c.CooldownUntil)
	at := *c.CooldownUntil
	require.Equal(t, ZoneCooldown, c.Decide(at.Add(-time.Second)).Zone)
	require.Equal(t, ZoneCooldown, c.Snapshot(at.Add(-time.Second)).Zone)
	// A clean run while the cooldown still holds ends it: the evidence wins.
	c.Observe(at.Add(-time.Second), 5, 0)
	d := c.Decide(at.Add(-time.Second))
	require.Nil(t, c.CooldownUntil)
	require.Equal(t, ZoneSurge, d.Zone)
	require.Equal(t, 23, d.Batch)
}

func TestJudgeRunsConfig(t *testing.T) {
	t.Parallel()
	cfg := runsConfig().WithDefaults()
	require.Equal(t, 3, cfg.Buckets, "three runs")
	cfg.MinBatch, cfg.Buckets = 1, 3
	require.ErrorIs(t, cfg.Validate(), ErrBadConfig, "runs at the floor cannot fill the window")
	cfg.MinBatch = 2
	require.NoError(t, cfg.Validate())
	cfg.Judge = "hours"
	require.ErrorContains(t, cfg.Validate(), "judge must be")
}

// A task without a batch (the sweep) is paced by its interval alone: its
// batch stays 0 through every zone and tune, and a state saved with a
// batch loses it when clamped to the batchless bounds.
func TestJudgeRunsWithoutBatch(t *testing.T) {
	t.Parallel()
	cfg := runsConfig()
	cfg.MinBatch, cfg.MaxBatch, cfg.InitialBatch = 0, 0, 0
	cfg.MaxInterval = pacer.Duration(time.Hour)
	c := newTestController(t, cfg)
	got := pace(c, run{failed: 5}, run{failed: 5}, run{ok: 5}, run{ok: 5}, run{ok: 5})
	for _, p := range got {
		require.Zero(t, p.Batch)
	}
	require.Greater(t, got[0].Interval, cfg.MinInterval, "failures slow it down")
	require.Less(t, got[4].Interval, got[1].Interval, "successes speed it up again")
	require.NoError(t, c.Tune(20, time.Hour))
	require.Zero(t, c.Batch)
	require.Equal(t, pacer.Duration(time.Hour), c.Interval)

	old := newTestController(t, runsConfig())
	require.Equal(t, 40, old.Batch)
	require.NoError(t, old.Clamp(cfg))
	require.Zero(t, old.Batch)
	cfg.MinBatch = -1
	require.ErrorIs(t, cfg.Validate(), ErrBadConfig)
}

func TestClampToRunsForgetsMinutes(t *testing.T) {
	t.Parallel()
	c := newTestController(t, testConfig())
	c.Observe(t0, 1, 9)
	require.NotEmpty(t, c.Buckets)
	require.NoError(t, c.Clamp(runsConfig()))
	require.Empty(t, c.Buckets, "minutes of evidence do not carry over to runs")
	require.Zero(t, c.Fresh)
	require.Equal(t, JudgeRuns, c.Config.Judge)
}

func TestControllerJSONKeepsDurationsReadable(t *testing.T) {
	t.Parallel()
	c := newTestController(t, runsConfig())
	pace(c, run{failed: 5})
	b, err := json.Marshal(c)
	require.NoError(t, err)
	require.Contains(t, string(b), `"interval":"15s"`)
	require.Contains(t, string(b), `"minInterval":"10s"`)
	require.Contains(t, string(b), `"before":{"batch":40,"interval":"10s"}`)
	var back Controller
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, *c, back)

	// A controller carried before durations were text still decodes.
	old := `{"config":{"minBatch":5,"maxBatch":9,"minInterval":60000000000,"maxInterval":3600000000000,` +
		`"bucket":60000000000,"buckets":5,"minSamples":5,"cooldown":300000000000,` +
		`"cooldownBelow":20,"backoffBelow":50,"growAbove":80,"surgeAbove":95},` +
		`"batch":9,"interval":120000000000,"zone":"steady","fresh":0,"buckets":null}`
	var legacy Controller
	require.NoError(t, json.Unmarshal([]byte(old), &legacy))
	require.Equal(t, pacer.Duration(2*time.Minute), legacy.Interval)
	require.Equal(t, pacer.Duration(time.Hour), legacy.Config.MaxInterval)
	require.Equal(t, JudgeMinutes, legacy.Config.Judge)
}
