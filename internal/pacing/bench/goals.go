package bench

import (
	"fmt"
	"time"
)

// Goals checks pacer's figures against the goals: in the crawl scenarios at
// least 95% of the hidden capacity, at most 1% rejected, re-converged within
// 2 minutes of a step; on the Starter plan the month quota never exhausted
// early and the hourly refresh's staleness p99 beaten at least 2×; at the
// default cadence at most 1.1× the actions liveness needs; one bad run
// costs at most two runs of reduced pace; a storm recovers within 2 minutes.
func Goals(outcomes []Outcome) []Goal {
	var goals []Goal
	for _, o := range outcomes {
		p := find(o.Results, "pacer")
		if p == nil {
			continue
		}
		name := o.Scenario.Name
		if o.Scenario.Crawl {
			goals = append(goals,
				Goal{Scenario: name, Goal: "capacity used ≥ 95%", Got: Pct(p.CapacityUsed), Met: p.CapacityUsed >= 0.95},
				Goal{Scenario: name, Goal: "rejected ≤ 1%", Got: Pct(p.Rejected), Met: p.Rejected <= 0.01})
			for _, s := range p.Steps {
				goals = append(goals, s.goal(name, "re-converges ≤ 2m after the step at %s"))
			}
		}
		if o.Scenario.Blip {
			goals = append(goals, Goal{Scenario: name, Goal: "one bad run costs ≤ 2 runs at a reduced pace (SPEC §3.3)",
				Got: fmt.Sprintf("%d", p.ReducedRuns), Met: p.ReducedRuns <= 2})
		}
		if name == "storm" { // the storm's end is its last step
			goals = append(goals, p.Steps[len(p.Steps)-1].goal(name, "recovers ≤ 2m after the storm ends at %s"))
		}
		if p.HasMonth && name != "default" {
			g := Goal{Scenario: name, Goal: "month quota never exhausted early", Got: fmt.Sprintf("%d left at the month's end, never refused", p.MonthLeft), Met: true}
			if p.DryAfter != nil {
				g.Got, g.Met = "dry after "+Human(*p.DryAfter), false
			}
			goals = append(goals, g)
		}
		if hourly := find(o.Results, "fixed cron 1h"); hourly != nil && p.HasStaleness {
			x := float64(hourly.StaleP99) / float64(max(p.StaleP99, time.Minute))
			goals = append(goals, Goal{Scenario: name, Goal: "staleness p99 ≥ 2× better than the hourly refresh",
				Got: fmt.Sprintf("%s vs %s (÷%s)", Human(p.StaleP99), Human(hourly.StaleP99), plain(x)), Met: x >= 2})
		}
		if name == "default" {
			x := p.ActionsPerDay / p.FloorPerDay
			goals = append(goals, Goal{Scenario: name,
				Goal: "Temporal actions a day ≤ 1.1× the schedule's floor (a timer per instant a task is due, an activity per task due)",
				Got:  fmt.Sprintf("%s vs %s (×%.3f)", Count(p.ActionsPerDay), Count(p.FloorPerDay), x), Met: x <= 1.1})
		}
	}
	return goals
}

// goal is a step's re-convergence within 2 minutes, as goal (its format
// takes the step's time) says.
func (s Step) goal(scenario, goal string) Goal {
	g := Goal{Scenario: scenario, Goal: fmt.Sprintf(goal, Human(s.At)), Got: "never"}
	if s.Converged {
		g.Got, g.Met = Human(s.After), s.After <= 2*time.Minute
	}
	return g
}

func find(rs []Result, strategy string) *Result {
	for i := range rs {
		if rs[i].Strategy == strategy {
			return &rs[i]
		}
	}
	return nil
}
