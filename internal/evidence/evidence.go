// Package evidence prints the figures pacer publishes, each beside the bound
// its check asserts, in the one line format that `make evidence` collects
// into a table (scripts/figures). A figure printed through Check is the
// figure asserted: the bound on the line is the bound the check fails on, so
// a document that quotes the line quotes what a command holds.
package evidence

import (
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Op compares a figure with its bound.
type Op string

// The comparisons a bound can make.
const (
	AtMost  Op = "<="
	AtLeast Op = ">="
	Below   Op = "<"
	Above   Op = ">"
	Exactly Op = "=="
)

// Figure is one published figure and the bound it is held to.
type Figure struct {
	Name  string // dotted, lower case: area.what (e.g. tail.p99); unique across the repo
	Value float64
	Unit  string // s, ms, pct, count, ratio, …; empty for a plain number
	Op    Op
	Bound float64
}

// Pass reports whether the figure meets its bound.
func (f Figure) Pass() bool {
	switch f.Op {
	case AtMost:
		return f.Value <= f.Bound
	case AtLeast:
		return f.Value >= f.Bound
	case Below:
		return f.Value < f.Bound
	case Above:
		return f.Value > f.Bound
	case Exactly:
		return f.Value == f.Bound
	}
	return false
}

// Prefix starts every figure line; the collector looks for it anywhere in a
// line, so t.Logf's file:line prefix and go test -json framing do not matter.
const Prefix = "figure: "

// String is the figure's line:
//
//	figure: name=tail.p99 value=12.3 unit=s bound=<=30 pass=true
func (f Figure) String() string {
	unit := f.Unit
	if unit == "" {
		unit = "-"
	}
	return fmt.Sprintf("%sname=%s value=%s unit=%s bound=%s%s pass=%t",
		Prefix, f.Name, Number(f.Value), unit, f.Op, Number(f.Bound), f.Pass())
}

// Number prints v with four significant digits at most, never in exponent
// form, so the table reads as the documents quote it.
func Number(v float64) string {
	if v == math.Trunc(v) || math.Abs(v) >= 1000 {
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	}
	digits := 3
	if a := math.Abs(v); a > 0 {
		digits = max(0, 3-int(math.Floor(math.Log10(a))))
	}
	scale := math.Pow(10, float64(digits))
	return strconv.FormatFloat(math.Round(v*scale)/scale, 'f', -1, 64)
}

// Print writes the figure's line to w (for commands, whose exit status
// carries the verdict) and returns whether it passed.
func Print(w io.Writer, f Figure) (bool, error) {
	if err := f.valid(); err != nil {
		return false, fmt.Errorf("evidence: %w", err)
	}
	_, err := fmt.Fprintln(w, f)
	return f.Pass(), err
}

// T is what Check needs of a test (testing.TB has it), so a command can use
// Print instead without importing package testing.
type T interface {
	Helper()
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
}

// Check logs the figure on t and fails t when it misses its bound. It
// returns whether the figure passed.
func Check(t T, name string, value float64, op Op, bound float64, unit string) bool {
	t.Helper()
	f := Figure{Name: name, Value: value, Unit: unit, Op: op, Bound: bound}
	if err := f.valid(); err != nil {
		t.Errorf("evidence: %v", err)
		return false
	}
	t.Logf("%s", f)
	if !f.Pass() {
		t.Errorf("%s = %s %s misses its bound %s %s", name, Number(value), unit, op, Number(bound))
	}
	return f.Pass()
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)

func (f Figure) valid() error {
	if !nameRE.MatchString(f.Name) {
		return fmt.Errorf("figure name %q: want lower case, digits, '.', '_' or '-'", f.Name)
	}
	if strings.ContainsAny(f.Unit, " \t=") {
		return fmt.Errorf("figure %s: unit %q has a space or '='", f.Name, f.Unit)
	}
	switch f.Op {
	case AtMost, AtLeast, Below, Above, Exactly:
	default:
		return fmt.Errorf("figure %s: unknown comparison %q", f.Name, f.Op)
	}
	if math.IsNaN(f.Value) || math.IsNaN(f.Bound) {
		return fmt.Errorf("figure %s: NaN", f.Name)
	}
	return nil
}

var lineRE = regexp.MustCompile(`figure: name=(\S+) value=(\S+) unit=(\S+) bound=(<=|>=|==|<|>)(\S+) pass=(true|false)`)

// Line is a figure as a check printed it. Passed is the check's verdict,
// made on the unrounded value (the printed value is rounded).
type Line struct {
	Figure
	Passed bool
}

// Parse finds a figure line in s (anywhere in it); ok is false when s holds
// none.
func Parse(s string) (l Line, ok bool, err error) {
	m := lineRE.FindStringSubmatch(s)
	if m == nil {
		return Line{}, false, nil
	}
	f := &l.Figure
	l.Passed = m[6] == "true"
	f.Name, f.Op = m[1], Op(m[4])
	if m[3] != "-" {
		f.Unit = m[3]
	}
	if f.Value, err = strconv.ParseFloat(m[2], 64); err != nil {
		return l, true, fmt.Errorf("figure %s: value: %w", f.Name, err)
	}
	if f.Bound, err = strconv.ParseFloat(m[5], 64); err != nil {
		return l, true, fmt.Errorf("figure %s: bound: %w", f.Name, err)
	}
	return l, true, nil
}
