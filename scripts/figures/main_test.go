package main

import (
	"strings"
	"testing"
)

func TestTheTableIsRedWhenAnythingMissed(t *testing.T) {
	const pass = `{"Action":"output","Package":"github.com/pacer-dev/pacer/worker","Test":"TestTail","Output":"    tail_test.go:9: figure: name=tail.p99 value=12.35 unit=s bound=<=30 pass=true\n"}`
	for _, tc := range []struct {
		name, in string
		ok       bool
		rows     int
	}{
		{"every figure passed", pass + "\n== source: bench\nfigure: name=chain.p99 value=3 unit=s bound=<=30 pass=true\n", true, 2},
		{"a figure missed", pass + "\nfigure: name=chain.p99 value=31 unit=s bound=<=30 pass=false\n", false, 2},
		{"a test failed", pass + "\n" + `{"Action":"fail","Package":"github.com/pacer-dev/pacer/worker","Test":"TestOther"}`, false, 1},
		{"a plain test failed", "--- FAIL: TestOther (1.00s)\n" + pass, false, 1},
		{"nothing collected", "ok  \tgithub.com/pacer-dev/pacer/worker\t1s\n", false, 0},
		{"an unreadable line", pass + "\nfigure: name=x value=NaNa unit=s bound=<=1 pass=true\n", false, 1},
	} {
		r, err := collect(strings.NewReader(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		if r.ok() != tc.ok || len(r.rows) != tc.rows {
			t.Errorf("%s: ok %t with %d rows, want %t with %d", tc.name, r.ok(), len(r.rows), tc.ok, tc.rows)
		}
	}
	r, _ := collect(strings.NewReader(pass))
	var b strings.Builder
	r.table(&b)
	if !strings.Contains(b.String(), "worker TestTail") || !strings.Contains(b.String(), "<= 30 s") {
		t.Errorf("the table names neither the source nor the bound:\n%s", b.String())
	}
}
