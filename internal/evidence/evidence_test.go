package evidence

import (
	"fmt"
	"strings"
	"testing"
)

// recorder is a T that keeps what a check logged and whether it failed.
type recorder struct {
	logs   []string
	failed bool
}

func (r *recorder) Helper() {}
func (r *recorder) Logf(format string, args ...any) {
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}
func (r *recorder) Errorf(string, ...any) { r.failed = true }

func TestCheckFailsExactlyWhenTheBoundIsMissed(t *testing.T) {
	for _, tc := range []struct {
		value, bound float64
		op           Op
		pass         bool
	}{
		{29.9, 30, AtMost, true}, {30, 30, AtMost, true}, {30.01, 30, AtMost, false},
		{90, 90, AtLeast, true}, {89.99, 90, AtLeast, false},
		{5.9, 6, Below, true}, {6, 6, Below, false},
		{1, 0, Above, true}, {0, 0, Above, false},
		{0, 0, Exactly, true}, {1, 0, Exactly, false},
	} {
		var r recorder
		got := Check(&r, "x.y", tc.value, tc.op, tc.bound, "s")
		if got != tc.pass || r.failed == tc.pass {
			t.Errorf("%v %s %v: Check = %t, failed the test = %t; want pass %t", tc.value, tc.op, tc.bound, got, r.failed, tc.pass)
		}
		if len(r.logs) != 1 {
			t.Fatalf("%v %s %v: logged %q, want one figure line", tc.value, tc.op, tc.bound, r.logs)
		}
		l, ok, err := Parse("    x_test.go:12: " + r.logs[0])
		if !ok || err != nil || l.Passed != tc.pass || l.Name != "x.y" || l.Op != tc.op || l.Unit != "s" {
			t.Errorf("Parse(%q) = %+v, %t, %v", r.logs[0], l, ok, err)
		}
	}
}

func TestCheckRefusesAFigureTheTableCannotRead(t *testing.T) {
	for _, f := range []Figure{
		{Name: "Tail P99", Op: AtMost}, {Name: "x", Unit: "per min", Op: AtMost}, {Name: "x", Op: "~"},
	} {
		var r recorder
		if Check(&r, f.Name, 0, f.Op, 1, f.Unit) || !r.failed || len(r.logs) != 0 {
			t.Errorf("%+v: want refused (failed, nothing logged), got logs %q failed %t", f, r.logs, r.failed)
		}
	}
}

func TestNumberPrintsWhatTheDocumentsQuote(t *testing.T) {
	for give, want := range map[float64]string{
		0: "0", 30: "30", 2327: "2327", 12.345: "12.35", 0.0055: "0.0055", 1.0056: "1.006", 99.5: "99.5", 15234.7: "15235", -0.34: "-0.34",
	} {
		if got := Number(give); got != want {
			t.Errorf("Number(%v) = %q, want %q", give, got, want)
		}
	}
}

func TestParseIgnoresOtherLines(t *testing.T) {
	for _, s := range []string{"figures: 130 agents", "ok  \tgithub.com/pacer-dev/pacer/worker\t1.2s", ""} {
		if _, ok, _ := Parse(s); ok {
			t.Errorf("Parse(%q) found a figure", s)
		}
	}
	if _, ok, err := Parse("figure: name=a value=x unit=s bound=<=1 pass=true"); !ok || err == nil || !strings.Contains(err.Error(), "value") {
		t.Errorf("an unreadable value: ok %t err %v, want an error naming the value", ok, err)
	}
}
