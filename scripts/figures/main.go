// Command figures collects the figure lines that pacer's checks print
// (internal/evidence) from `go test -json` output or plain text on stdin and
// prints one table: each figure, its value, the bound its check asserts,
// pass or FAIL, and the test or command that printed it. It exits 1 when a
// figure missed its bound, a test failed, or nothing was collected: `make
// evidence` is red exactly when the table has a FAIL in it.
//
// A plain line "== source: NAME" names the source of the plain lines after
// it (the Makefile prints one before each command that is not go test).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/pacer-dev/pacer/internal/evidence"
)

func main() {
	md := flag.Bool("md", false, "print the table as markdown (for docs/benchmarks.md)")
	flag.Parse()
	r, err := collect(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "figures:", err)
		os.Exit(2)
	}
	if *md {
		r.markdown(os.Stdout)
	} else {
		r.table(os.Stdout)
	}
	if !r.ok() {
		os.Exit(1)
	}
}

type row struct {
	evidence.Line
	source string
}

type report struct {
	rows     []row
	failed   []string // tests or packages that failed, in the order seen
	problems []string // lines that looked like figures and did not parse
}

func (r *report) ok() bool {
	if len(r.rows) == 0 || len(r.failed) > 0 || len(r.problems) > 0 {
		return false
	}
	for _, x := range r.rows {
		if !x.Passed {
			return false
		}
	}
	return true
}

// event is the part of a `go test -json` event (cmd/test2json) read here.
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

func collect(in io.Reader) (*report, error) {
	r := &report{}
	source := "-"
	seenFail := map[string]bool{}
	fail := func(name string) {
		if !seenFail[name] {
			seenFail[name] = true
			r.failed = append(r.failed, name)
		}
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		text, src := sc.Text(), source
		var ev event
		if strings.HasPrefix(text, "{") && json.Unmarshal([]byte(text), &ev) == nil && ev.Action != "" {
			src = shortPackage(ev.Package)
			if ev.Test != "" {
				src += " " + ev.Test
			}
			if ev.Action == "fail" {
				fail(src)
			}
			if ev.Action != "output" {
				continue
			}
			text = ev.Output
		} else if name, ok := strings.CutPrefix(text, "== source: "); ok {
			source = strings.TrimSpace(name)
			continue
		} else if t := strings.TrimSpace(text); strings.HasPrefix(t, "--- FAIL: ") || strings.HasPrefix(t, "FAIL\t") {
			fail(src + " " + strings.Fields(t)[2])
		}
		l, found, err := evidence.Parse(text)
		if err != nil {
			r.problems = append(r.problems, err.Error())
		}
		if found && err == nil {
			r.rows = append(r.rows, row{Line: l, source: src})
		}
	}
	return r, sc.Err()
}

// shortPackage drops the module path: worker, internal/sim, ….
func shortPackage(p string) string {
	const module = "github.com/pacer-dev/pacer"
	if p == module {
		return "pacer"
	}
	return strings.TrimPrefix(p, module+"/")
}

func verdict(pass bool) string {
	if pass {
		return "pass"
	}
	return "FAIL"
}

func value(f evidence.Figure, v float64) string {
	s := evidence.Number(v)
	if f.Unit != "" && f.Unit != "count" {
		s += " " + f.Unit
	}
	return s
}

func (r *report) table(w io.Writer) {
	width := len("figure")
	for _, x := range r.rows {
		width = max(width, len(x.Name))
	}
	fmt.Fprintf(w, "%-*s  %14s  %-16s  %-4s  %s\n", width, "figure", "value", "bound", "", "source")
	passed := 0
	for _, x := range r.rows {
		if x.Passed {
			passed++
		}
		fmt.Fprintf(w, "%-*s  %14s  %-16s  %-4s  %s\n", width, x.Name, value(x.Figure, x.Value),
			string(x.Op)+" "+value(x.Figure, x.Bound), verdict(x.Passed), x.source)
	}
	fmt.Fprintf(w, "%d figures: %d pass, %d FAIL\n", len(r.rows), passed, len(r.rows)-passed)
	r.trouble(w)
}

func (r *report) markdown(w io.Writer) {
	fmt.Fprintln(w, "| figure | value | bound | result | source |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, x := range r.rows {
		fmt.Fprintf(w, "| `%s` | %s | %s %s | %s | %s |\n", x.Name, value(x.Figure, x.Value), x.Op, value(x.Figure, x.Bound), verdict(x.Passed), x.source)
	}
	r.trouble(w)
}

func (r *report) trouble(w io.Writer) {
	if len(r.rows) == 0 {
		fmt.Fprintln(w, "no figures collected")
	}
	for _, f := range r.failed {
		fmt.Fprintln(w, "FAILED:", f)
	}
	sort.Strings(r.problems)
	for _, p := range r.problems {
		fmt.Fprintln(w, "UNREADABLE:", p)
	}
}
