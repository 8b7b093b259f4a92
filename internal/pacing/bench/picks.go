package bench

import (
	"slices"
	"time"
)

// PricePick is one run's choice of tokens in the benchmark: the state it
// chose from and what it chose, for a test to hand the same state to the
// tenero activity.
type PricePick struct {
	At time.Time
	// Checked is each token's last successful check (nil: never), the
	// first Static of them the static base, then the traded tokens from
	// most to least traded.
	Checked []*time.Time
	Static  int
	// N is the run's allowance; Picked the indexes into Checked it chose,
	// in the order of its requests.
	N      int
	Picked []int
}

// StarterPicks runs pacer's strategy on the tenero-starter scenario for the
// horizon and returns every run's choice, as the benchmark made it.
func StarterPicks(horizon time.Duration) []PricePick {
	scenarios := Scenarios()
	task := scenarios[slices.IndexFunc(scenarios, func(s Scenario) bool { return s.Name == "tenero-starter" })].Tasks[0]
	s := newTaskSim(task, start, horizon)
	var picks []PricePick
	s.onPick = func(at time.Time, checked []*time.Time, n int, picked []int) {
		picks = append(picks, PricePick{At: at, Checked: checked, Static: task.Work.Static, N: n, Picked: slices.Clone(picked)})
	}
	s.simulate(Pacer().build(task, start))
	return picks
}
