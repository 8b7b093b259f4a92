package cron_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/cron"
)

// FuzzParseSpec: any input is a schedule or an error, never a panic (the
// cron library panics on some TZ= prefixes); a schedule reads back from its
// canonical form, and a cron schedule fires.
func FuzzParseSpec(f *testing.F) {
	for _, seed := range []string{
		`{"every":"5m"}`,
		`{"cron":"0 * * * *","tz":"Europe/London","jitter":"30s","catchup":"backfill","maxCatchup":48,"dst":{"gap":"shift","overlap":"first"}}`,
		`{"cron":"@hourly"}`, `{"cron":"TZ=UTC"}`, `{"cron":"CRON_TZ= 0"}`, `{"cron":"0-70/0 * * * *"}`,
		`{"cron":"*/5 1-3 1,15 JAN-MAR MON-FRI","tz":"America/New_York","dst":{"gap":"skip","overlap":"both"}}`,
		`{"cron":"0 0 29 2 *","catchup":"coalesce"}`, `{"cron":"? * * * *"}`, `{"cron":"1-2-3 * * * *"}`, `{}`, `null`, `[`,
	} {
		f.Add([]byte(seed))
	}
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := cron.ParseSpec(data)
		if err != nil {
			return
		}
		body, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("marshal %+v: %v", s, err)
		}
		again, err := cron.ParseSpec(body)
		if err != nil || again != s {
			t.Fatalf("%s does not read back: %+v, %v", body, again, err)
		}
		if !s.IsCron() {
			return
		}
		sched, err := cron.New(s)
		if err != nil {
			t.Fatalf("New(%s): %v", body, err)
		}
		next, ok := sched.Next(from)
		if !ok || !next.At.After(from) {
			t.Fatalf("%s: no fire after %s", body, from)
		}
	})
}
