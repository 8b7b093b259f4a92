package cron_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/cron"
)

func TestParseSpecFillsDefaultsAndWritesCanonicalJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		give string
		want string
	}{
		{`{"every":"5m"}`, `{"every":"5m"}`},
		{`{"every":"90s"}`, `{"every":"1m30s"}`},
		{`{"every":"2h"}`, `{"every":"2h"}`},
		{`{"cron":"0 * * * *"}`, `{"cron":"0 * * * *","tz":"UTC","catchup":"latest","dst":{"gap":"shift","overlap":"first"}}`},
		{
			`{"cron":"0 * * * *","tz":"Europe/London","jitter":"30s","catchup":"backfill","maxCatchup":48,"dst":{"gap":"shift","overlap":"first"}}`,
			`{"cron":"0 * * * *","tz":"Europe/London","jitter":"30s","catchup":"backfill","maxCatchup":48,"dst":{"gap":"shift","overlap":"first"}}`,
		},
		{`{"cron":"5 * * * *","catchup":"all"}`, `{"cron":"5 * * * *","tz":"UTC","catchup":"all","maxCatchup":48,"dst":{"gap":"shift","overlap":"first"}}`},
		{`{"cron":"@daily","tz":"America/New_York","dst":{"overlap":"both"}}`, `{"cron":"@daily","tz":"America/New_York","catchup":"latest","dst":{"gap":"shift","overlap":"both"}}`},
		{`{"cron":"30 2 * * *","dst":{"gap":"skip"},"catchup":"coalesce","jitter":"1h30m"}`, `{"cron":"30 2 * * *","tz":"UTC","jitter":"1h30m","catchup":"coalesce","dst":{"gap":"skip","overlap":"first"}}`},
		{" {\"cron\":\"0 0 1 JAN *\",\"catchup\":\"skip\"} \n", `{"cron":"0 0 1 JAN *","tz":"UTC","catchup":"skip","dst":{"gap":"shift","overlap":"first"}}`},
	}
	for _, tt := range tests {
		s, err := cron.ParseSpec([]byte(tt.give))
		require.NoError(t, err, tt.give)
		got, err := json.Marshal(s)
		require.NoError(t, err)
		require.JSONEq(t, tt.want, string(got), tt.give)
		require.Equal(t, tt.want, s.String())

		// The canonical form reads back to the same spec.
		again, err := cron.ParseSpec(got)
		require.NoError(t, err)
		require.Equal(t, s, again)
	}
}

func TestParseSpecRejectsBadSpecsClearly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		give    string
		wantErr string
	}{
		{``, "empty document"},
		{`null`, "null"},
		{`[]`, "want a JSON object"},
		{`"5m"`, "want a JSON object"},
		{`{}`, `give "every"`},
		{`{"every":"5m"} {}`, "trailing data"},
		{`{"every":"5m","cron":"* * * * *"}`, "not both"},
		{`{"every":300}`, `"every": want a string, got a number`},
		{`{"every":"soon"}`, `"every" is not a Go duration`},
		{`{"every":"500ms"}`, "below 1s"},
		{`{"every":"-5m"}`, "below 1s"},
		{`{"every":"5m","tz":"UTC"}`, `"tz" applies to cron schedules only`},
		{`{"every":"5m","catchup":"all"}`, `"catchup" applies to cron schedules only`},
		{`{"cron":"0 * * * *","evry":"5m"}`, `unknown field "evry"`},
		{`{"cron":"0 * * * *","dst":{"gap":"shift","fold":"x"}}`, `unknown field "fold"`},
		{`{"cron":""}`, `"cron" is empty`},
		{`{"cron":"0 * * *"}`, "expected exactly 5 fields"},
		{`{"cron":"0 0 * * * *"}`, "expected exactly 5 fields"},
		{`{"cron":"61 * * * *"}`, "above maximum"},
		{`{"cron":"*/0 * * * *"}`, "step"},
		{`{"cron":"0 0 30 2 *"}`, "never fires"},
		{`{"cron":"@every 5m"}`, `use {"every":…}`},
		{`{"cron":"@fortnightly"}`, "unrecognized descriptor"},
		{`{"cron":"TZ=UTC"}`, `give the zone as "tz"`},
		{`{"cron":"CRON_TZ=Europe/London 0 * * * *"}`, `give the zone as "tz"`},
		{`{"cron":"0 * * * *","tz":""}`, `"tz" is empty`},
		{`{"cron":"0 * * * *","tz":"Local"}`, "unknown time zone"},
		{`{"cron":"0 * * * *","tz":"Europe/Londn"}`, `unknown time zone "Europe/Londn"`},
		{`{"cron":"0 * * * *","jitter":"-1s"}`, `"jitter" -1s is negative`},
		{`{"cron":"0 * * * *","jitter":"1h"}`, "shorter than the 1h"},
		{`{"cron":"*/5 * * * *","jitter":"5m"}`, "shorter than the 5m"},
		{`{"cron":"0 * * * *","catchup":"some"}`, `"catchup" "some" is not one of`},
		{`{"cron":"0 * * * *","catchup":"backfill","maxCatchup":0}`, "outside 1..1000"},
		{`{"cron":"0 * * * *","catchup":"backfill","maxCatchup":1001}`, "outside 1..1000"},
		{`{"cron":"0 * * * *","catchup":"all","maxCatchup":-3}`, "outside 1..1000"},
		{`{"cron":"0 * * * *","maxCatchup":5}`, `"maxCatchup" applies to catchup "all" and "backfill" only`},
		{`{"cron":"0 * * * *","catchup":"coalesce","maxCatchup":5}`, `applies to catchup "all" and "backfill" only`},
		{`{"cron":"0 * * * *","catchup":"all","maxCatchup":2.5}`, `"maxCatchup": want a whole number, got a number`},
		{`{"cron":"0 * * * *","dst":{"gap":"jump"}}`, `"dst.gap" "jump" is not shift or skip`},
		{`{"cron":"0 * * * *","dst":{"overlap":"second"}}`, `"dst.overlap" "second" is not first, last or both`},
		{`{"cron":"0 * * * *","dst":"shift"}`, `"dst": want a JSON object, got a string`},
	}
	for _, tt := range tests {
		_, err := cron.ParseSpec([]byte(tt.give))
		require.Error(t, err, tt.give)
		require.ErrorIs(t, err, cron.ErrSpec, tt.give)
		require.Contains(t, err.Error(), tt.wantErr, tt.give)
		require.NotContains(t, err.Error(), "\n")
	}
}

func TestUnmarshalIsStrictInsideOtherDocuments(t *testing.T) {
	t.Parallel()
	var doc struct {
		Schedules map[string]cron.Spec `json:"schedules"`
	}
	require.NoError(t, json.Unmarshal([]byte(`{"schedules":{"rollup":{"cron":"5 * * * *","catchup":"backfill"}}}`), &doc))
	require.Equal(t, cron.CatchupBackfill, doc.Schedules["rollup"].Catchup)
	require.Equal(t, cron.DefaultMaxCatchup, doc.Schedules["rollup"].MaxCatchup)
	err := json.Unmarshal([]byte(`{"schedules":{"rollup":{"cron":"5 * * * *","catchp":"backfill"}}}`), &doc)
	require.ErrorContains(t, err, `unknown field "catchp"`)
}

func TestNewValidatesSpecsBuiltInGo(t *testing.T) {
	t.Parallel()
	_, err := cron.New(cron.Spec{Every: time.Minute})
	require.ErrorIs(t, err, cron.ErrInterval)
	_, err = cron.New(cron.Spec{Cron: "0 * * * *", MaxCatchup: 3})
	require.ErrorIs(t, err, cron.ErrSpec)
	_, err = cron.New(cron.Spec{Cron: "0 * * * *", Catchup: "later"})
	require.ErrorIs(t, err, cron.ErrSpec)
	_, err = cron.New(cron.Spec{Cron: "0 * * * *", DST: cron.DST{Gap: "jump"}})
	require.ErrorIs(t, err, cron.ErrSpec)
	s, err := cron.New(cron.Spec{Cron: "0 * * * *", Catchup: cron.CatchupAll})
	require.NoError(t, err)
	require.Equal(t, cron.Spec{Cron: "0 * * * *", TZ: "UTC", Catchup: cron.CatchupAll, MaxCatchup: cron.DefaultMaxCatchup,
		DST: cron.DST{Gap: cron.GapShift, Overlap: cron.OverlapFirst}}, s.Spec())
}

func TestParseSchedules(t *testing.T) {
	t.Parallel()
	ss, err := cron.ParseSchedules([]byte(`{"rollup":{"cron":"5 * * * *","catchup":"backfill"},"tenero":{"every":"5m"}}`))
	require.NoError(t, err)
	require.Equal(t, []string{"rollup", "tenero"}, ss.Tasks())
	require.Equal(t, 5*time.Minute, ss["tenero"].Every)

	for give, wantErr := range map[string]string{
		`null`:                            "got null",
		`[]`:                              "want a JSON object",
		`{"rollup":{"cron":"5 * * *"}}`:   `"rollup": bad schedule: "cron"`,
		`{"rollup":{"every":"5m"}} x`:     "trailing data",
		`{"a":{"every":"1m"},"b":{}}`:     `"b": bad schedule`,
		`{"rollup":{"cron":"5 * * * *"}`:  "not JSON",
		`{"rollup":"5 * * * *"}`:          `"rollup": bad schedule: want a JSON object`,
		`{"rollup":{"every":"5m","x":1}}`: `unknown field "x"`,
	} {
		_, err := cron.ParseSchedules([]byte(give))
		require.ErrorContains(t, err, wantErr, give)
	}
}

func TestDefaultRollupSchedule(t *testing.T) {
	t.Parallel()
	s, ok := cron.Default("rollup")
	require.True(t, ok)
	require.Equal(t, `{"cron":"5 * * * *","tz":"UTC","catchup":"backfill","maxCatchup":48,"dst":{"gap":"shift","overlap":"first"}}`, s.String())
	_, ok = cron.Default("tenero")
	require.False(t, ok)
}
