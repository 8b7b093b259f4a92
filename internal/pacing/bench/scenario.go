// Package bench replays pacing strategies against an upstream's hidden
// limits in virtual time: a deterministic discrete-event simulation, with no
// Temporal server and no clock, that drives the same pacing.Controller and
// budget.State (internal/budget) the activities run. It is what `make
// bench` prints.
//
// The upstream is internal/sim's Quota: fixed minute windows starting on
// the minute, a calendar-month quota, a noisy neighbour who spends at the
// start of each minute, refused requests that cost nothing, and truthful
// rate-limit headers. A request takes a fixed
// latency; a run makes its requests one after another, as the activities do.
package bench

import (
	"time"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/pacing"
)

// WorkKind is what a task's runs work through.
type WorkKind int

const (
	// Crawl is a queue of Items (0: endless) worked off once; a refused
	// item stays in the queue.
	Crawl WorkKind = iota
	// Walk goes round Items again and again (the sweep's agents).
	Walk
	// Prices keeps Items tokens fresh, the first Static of them the static
	// base, the rest traded tokens from most to least traded.
	Prices
)

// Work is what one task works through.
type Work struct {
	Kind   WorkKind
	Items  int
	Static int
}

// Task is one periodic task against one upstream.
type Task struct {
	Name   string
	Hidden Hidden
	// Documented is the plan's per-minute limit as documented: what the
	// token bucket and the fixed spacing are set to, and pacer's first guess.
	Documented int
	Work       Work
	// CronEvery and CronPage are the old behaviour: every CronEvery, CronPage
	// items (0: all of them) at a fixed spacing.
	CronEvery time.Duration
	CronPage  int
	// Pacing configures the controller of the seed and of pacer.
	Pacing pacing.ControllerConfig
}

// Scenario is one bench run: tasks over a horizon, each strategy on its own
// copy of the upstreams.
type Scenario struct {
	Name  string
	About string
	// Duration is the horizon; a finite crawl ends sooner when done.
	Duration time.Duration
	Tasks    []Task
	// Strategies default to the fixed cron, the token bucket, the seed
	// and pacer; the first is the baseline the others are compared with
	// (a fixed cron).
	Strategies []Strategy
	// Crawl marks the scenarios the crawl goals apply to.
	Crawl bool
	// Blip marks the scenario of one bad run: the goal is the runs it
	// costs at a reduced pace.
	Blip bool
}

// start is a Monday at midnight on the first of a 30-day month, so that the
// month scenario's horizon is exactly its month.
var start = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)

// hiroCrawl is a crawl against Hiro's keyless plan: 50 requests a minute
// documented, no month quota, 300 ms a request.
func hiroCrawl(items int, phases ...Phase) Task {
	return Task{
		Name:       "crawl",
		Hidden:     Hidden{Phases: phases},
		Documented: 50,
		Work:       Work{Kind: Crawl, Items: items},
		CronEvery:  5 * time.Minute,
		CronPage:   100,
		Pacing:     controller(200, 50, time.Minute, 10*time.Minute),
	}
}

// controller is a task's pacing: batches of 5 to most, the first of
// first; intervals from every, where it starts, to longest.
func controller(most, first int, every, longest time.Duration) pacing.ControllerConfig {
	return pacing.ControllerConfig{MinBatch: 5, MaxBatch: most, InitialBatch: first,
		MinInterval: pacer.Duration(every), MaxInterval: pacer.Duration(longest), InitialInterval: pacer.Duration(every)}
}

// teneroPrices refreshes 3 static and 50 traded tokens (pacer's 53) on a
// Tenero plan, starting as today's workflow does: every token, every
// `every`.
func teneroPrices(hidden Hidden, documented int, every time.Duration) Task {
	return Task{
		Name:       "tenero",
		Hidden:     hidden,
		Documented: documented,
		Work:       Work{Kind: Prices, Items: 53, Static: 3},
		CronEvery:  every,
		Pacing:     controller(53, 53, every, 6*time.Hour),
	}
}

// Scenarios are the bench's scenarios, in the order of the report.
func Scenarios() []Scenario {
	// An hour's crawl at a hidden 50/min, but for change from 20 min
	// until back (0: no change).
	crawl := func(name, about string, change Phase, back time.Duration) Scenario {
		phases := []Phase{{PerMinute: 50}}
		if back > 0 {
			change.At = 20 * time.Minute
			phases = append(phases, change, Phase{At: back, PerMinute: 50})
		}
		return Scenario{Name: name, About: about, Duration: time.Hour, Tasks: []Task{hiroCrawl(0, phases...)}, Crawl: true}
	}
	storm := crawl("storm", "crawl at 50/min; from 20 to 30 min 60% of requests fail with a 503 (not one of the issue's scenarios: it shows the controller at work)",
		Phase{PerMinute: 50, Failing: 60}, 30*time.Minute)
	storm.Crawl = false
	return []Scenario{
		crawl("steady", "crawl at a steady hidden 50/min (documented 50/min), 1 hour", Phase{}, 0),
		crawl("step", "crawl; the hidden limit halves to 25/min at 20 min and recovers to 50/min at 40 min", Phase{PerMinute: 25}, 40*time.Minute),
		crawl("noisy", "crawl at 50/min; a neighbour spends 20 of every minute from 20 to 40 min", Phase{PerMinute: 50, Noisy: 20}, 40*time.Minute),
		storm,
		{
			Name: "blip",
			About: "tenero every 5 min on a plan without a month quota (hidden 100/min); at 30 min one run meets " +
				"nothing but 503s (the upstream fails for 30 s); 2 hours",
			Duration: 2 * time.Hour,
			Tasks: []Task{teneroPrices(Hidden{Phases: []Phase{
				{PerMinute: 100}, {At: 30 * time.Minute, PerMinute: 100, Failing: 100}, {At: 30*time.Minute + 30*time.Second, PerMinute: 100},
			}}, 100, 5*time.Minute)},
			Strategies: []Strategy{FixedCron(0), Seed(), Pacer()},
			Blip:       true,
		},
		{
			Name:     "crawl-10k",
			About:    "a crawl of 10,000 items at a hidden 50/min (ideal: 200 min); horizon 1 day",
			Duration: 24 * time.Hour,
			Tasks:    []Task{hiroCrawl(10_000, Phase{PerMinute: 50})},
			// The four, and nothing else: the ideal is the capacity.
			Crawl: true,
		},
		{
			Name:     "tenero-starter",
			About:    "Tenero Starter plan, hidden 10/min and 10,000/month, 53 tokens, 30 days (June)",
			Duration: 30 * 24 * time.Hour,
			Tasks:    []Task{teneroPrices(Hidden{Phases: []Phase{{PerMinute: 10}}, PerMonth: 10_000}, 10, 5*time.Minute)},
			// The team ran the hourly refresh on this plan: it is the baseline.
			Strategies: []Strategy{FixedCron(time.Hour), FixedCron(5 * time.Minute), TokenBucket(), Seed(), Pacer()},
		},
		{
			Name:     "default",
			About:    "the default cadence for 30 days (June): tenero every 5 min on the keyless plan (hidden 100/min, 50,000/month) + a sweep of 30 agents every minute on Hiro (50/min)",
			Duration: 30 * 24 * time.Hour,
			Tasks: []Task{
				teneroPrices(Hidden{Phases: []Phase{{PerMinute: 100}}, PerMonth: 50_000}, 100, 5*time.Minute),
				{
					Name:       "sweep",
					Hidden:     Hidden{Phases: []Phase{{PerMinute: 50}}},
					Documented: 50,
					Work:       Work{Kind: Walk, Items: 30},
					CronEvery:  time.Minute,
					Pacing:     controller(100, 100, time.Minute, 2*time.Hour),
				},
			},
			Strategies: []Strategy{FixedCron(0), Pacer()},
		},
	}
}
