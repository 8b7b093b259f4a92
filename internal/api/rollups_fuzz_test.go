package api_test

import (
	"testing"

	"github.com/pacer-dev/pacer/internal/api"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/rollup"
)

// Whatever the query string, ParseRollupQuery either refuses it or returns
// a bounded, well-formed query.
func FuzzParseRollupQuery(f *testing.F) {
	for _, s := range []string{
		"period=hour&from=2026-11-01T00:00:00Z&to=2026-11-02T00:00:00Z",
		"period=day&from=2026-01-01T00:00:00%2B05:30&to=2026-12-31T00:00:00Z&token=stx",
		"period=hour&from=2026-11-01T00:00:00Z&to=2026-11-01T01:00:00Z&agent=SP000000000000000000002Q6VF78",
		"period=hour&period=day", "%zz", "from=9999-12-31T23:59:59Z&to=0000-01-01T00:00:00Z&period=day",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := api.ParseRollupQuery(raw)
		if err != nil {
			return
		}
		max := api.MaxHourRange
		if q.Period == rollup.Day {
			max = api.MaxDayRange
		} else if q.Period != rollup.Hour {
			t.Fatalf("period %q", q.Period)
		}
		if !q.From.Before(q.To) || q.To.Sub(q.From) > max {
			t.Fatalf("range %s..%s", q.From, q.To)
		}
		switch q.SubjectKind {
		case "":
		case rollup.KindToken:
			if !catalog.ValidTokenID(q.Subject) {
				t.Fatalf("token %q", q.Subject)
			}
		case rollup.KindAgent:
			if !catalog.ValidPrincipal(q.Subject) {
				t.Fatalf("agent %q", q.Subject)
			}
		default:
			t.Fatalf("kind %q", q.SubjectKind)
		}
	})
}
