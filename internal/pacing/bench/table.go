package bench

import (
	"fmt"
	"io"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
)

// The one writer of the benchmarks' tables and goals: the pacing bench's
// and the discovery benches' (internal/ingest/bench) alike.

// WriteTable writes a Markdown table; a column whose name starts with ">"
// is right-aligned.
func WriteTable(w io.Writer, cols []string, rows [][]string) {
	head, rule := make([]string, len(cols)), make([]string, len(cols))
	for i, c := range cols {
		head[i], rule[i] = strings.TrimPrefix(c, ">"), "---"
		if c != head[i] {
			rule[i] = "--:"
		}
	}
	fmt.Fprintf(w, "| %s |\n|%s|\n", strings.Join(head, " | "), strings.Join(rule, "|"))
	for _, r := range rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
	}
	fmt.Fprintln(w)
}

// Goal is one of an issue's "done when" goals, checked against a run.
type Goal struct {
	Scenario string
	Goal     string
	Got      string
	Met      bool
}

// Missed are the goals not met.
func Missed(goals []Goal) []Goal {
	var out []Goal
	for _, g := range goals {
		if !g.Met {
			out = append(out, g)
		}
	}
	return out
}

// WriteGoals writes the goals as a Markdown table.
func WriteGoals(w io.Writer, goals []Goal) {
	rows := make([][]string, len(goals))
	for i, g := range goals {
		rows[i] = []string{g.Scenario, g.Goal, g.Got, map[bool]string{true: "yes", false: "**no**"}[g.Met]}
	}
	WriteTable(w, []string{"scenario", "goal", "got", "met"}, rows)
}

// Human prints a duration to the precision a reader needs.
func Human(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%.1fd", d.Hours()/24)
	case d >= time.Hour:
		return fmt.Sprintf("%.1fh", d.Hours())
	case d == 0:
		return "0m"
	case d >= time.Minute:
		return fmt.Sprintf("%.1fm", d.Minutes())
	}
	return fmt.Sprintf("%.0fs", d.Seconds())
}

// Pct prints a share as a percentage.
func Pct(v float64) string {
	switch {
	case v == 0:
		return "0%"
	case v < 0.001:
		return "<0.1%"
	}
	return fmt.Sprintf("%.1f%%", v*100)
}

// Count prints a count a day: whole above 100.
func Count(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

func plain(v float64) string {
	if v >= 10 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// TwoAtATime runs f(0) … f(n-1), two at a time (the box has two cores),
// and returns when all are done.
func TwoAtATime(n int, f func(i int)) {
	var g errgroup.Group
	g.SetLimit(2)
	for i := range n {
		g.Go(func() error { f(i); return nil })
	}
	_ = g.Wait() // f returns no error
}
