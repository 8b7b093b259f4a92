package workflows

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/schedule"
)

// FuzzParsePause feeds arbitrary payloads to the pause signal's parser at
// arbitrary moments. An accepted pause always ends in the future and within
// MaxPause, and says the same thing when written back in its canonical
// form; a refused one yields no time at all.
func FuzzParsePause(f *testing.F) {
	now := t0.Unix()
	for _, s := range []string{
		`{"for":"30m"}`, `{"until":"2026-05-14T13:00:00Z"}`, `{"for":5}`, `{"for":"-3m"}`, `{"for":"0s"}`,
		`{"until":"2001-01-01T00:00:00Z"}`, `{"until":"2999-01-01T00:00:00Z"}`, `{"for":"9999999h"}`,
		`{"for":"1m","until":"2026-05-14T13:00:00Z"}`, `{"fro":"1m"}`, `{"FOR":"1m"}`, `{"for":"1m"}{}`,
		`{"for":"1m","for":"2m"}`, `"1m"`, `[]`, `null`, ``, `{"until":"2026-05-14T13:00:00+14:00"}`,
		`{"for":"１０m"}`, `{"for":"720h0m0.000000001s"}`, `{"until":"2026-06-13T12:00:00Z"}`,
	} {
		f.Add(s, now)
	}
	f.Fuzz(func(t *testing.T, raw string, unix int64) {
		// Any moment between 1970 and 2200, where workflow time lives.
		now := time.Unix(0, 0).UTC().Add(time.Duration(uint64(unix)%uint64(230*365*24*time.Hour/time.Second)) * time.Second)
		end, _, err := ParsePauseTask(json.RawMessage(raw), now, []string{})
		if err != nil {
			require.True(t, end.IsZero())
			require.NotEmpty(t, err.Error())
			return
		}
		require.True(t, end.After(now), "pause end %v is not after %v", end, now)
		require.LessOrEqual(t, end.Sub(now), schedule.MaxPause)

		var in PauseInput
		require.NoError(t, json.Unmarshal([]byte(raw), &in))
		canonical, err := json.Marshal(in)
		require.NoError(t, err)
		again, _, err := ParsePauseTask(canonical, now, []string{})
		require.NoError(t, err, "canonical form %s", canonical)
		require.True(t, end.Equal(again))
	})
}

// FuzzParseRefresh feeds arbitrary payloads to the refresh parser. An
// accepted payload is an object naming one registered task or "all", and
// selects registered tasks only, each once, in registration order.
func FuzzParseRefresh(f *testing.F) {
	for _, s := range []string{
		`{"task":"tenero"}`, `{"task":"sweep"}`, `{"task":"all"}`, `{"task":"nope"}`, `{"task":""}`, `{}`,
		`{"task":7}`, `{"task":["tenero"]}`, `{"task":"tenero","x":1}`, `{"task":"TENERO"}`, `{"Task":"sweep"}`,
		`{"task":"tenero "}`, `{"task":"tenero"}{"task":"sweep"}`, `null`, ``, `"all"`, `{"task":"tener\u006f"}`,
	} {
		f.Add(s)
	}
	registered := []string{pacer.TaskTenero, pacer.TaskSweep}
	f.Fuzz(func(t *testing.T, raw string) {
		names, err := ParseRefresh(json.RawMessage(raw), registered)
		if err != nil {
			require.Nil(t, names)
			return
		}
		require.NotEmpty(t, names)
		var in RefreshInput
		require.NoError(t, json.Unmarshal([]byte(raw), &in))
		if in.Task == pacer.TaskAll {
			require.Equal(t, registered, names)
			return
		}
		require.Equal(t, []string{in.Task}, names)
		require.True(t, slices.Contains(registered, in.Task), "selected an unregistered task %q", in.Task)
		require.False(t, strings.ContainsAny(in.Task, " \t\n"))
	})
}

// FuzzParseTune feeds arbitrary payloads to the tune signal's parser. An
// accepted payload selects registered tasks only and is either a reset or a
// positive batch and/or a positive interval, never both kinds.
func FuzzParseTune(f *testing.F) {
	for _, s := range []string{
		`{"task":"tenero","batch":20,"interval":"10m"}`, `{"task":"all","reset":true}`, `{"task":"sweep","batch":0}`,
		`{"task":"sweep","batch":-5}`, `{"task":"tenero","interval":"-1m"}`, `{"task":"tenero","interval":"soon"}`,
		`{"task":"nope","batch":5}`, `{"task":"all","reset":true,"batch":3}`, `{"task":"tenero"}`,
		`{"task":"tenero","batch":1e99}`, `{"task":"tenero","batch":"5"}`, `{"task":"tenero","reset":false}`,
		`{"task":"tenero","batch":9223372036854775807,"interval":"2562047h"}`, `null`, ``,
	} {
		f.Add(s)
	}
	registered := []string{pacer.TaskTenero, pacer.TaskSweep}
	f.Fuzz(func(t *testing.T, raw string) {
		in, names, err := ParseTune(json.RawMessage(raw), registered)
		if err != nil {
			require.Nil(t, names)
			return
		}
		require.NotEmpty(t, names)
		for _, n := range names {
			require.True(t, slices.Contains(registered, n), "selected an unregistered task %q", n)
		}
		if in.Reset {
			require.Nil(t, in.Batch)
			require.Empty(t, in.Interval)
			return
		}
		require.True(t, in.Batch != nil || in.Interval != "", "accepted a tune that changes nothing")
		if in.Batch != nil {
			require.Positive(t, *in.Batch)
		}
		if in.Interval != "" {
			d, err := time.ParseDuration(in.Interval)
			require.NoError(t, err)
			require.Positive(t, d)
		}
	})
}

// FuzzParseReconfigure: any payload either changes nothing and says why, or
// gives a config that validates.
func FuzzParseReconfigure(f *testing.F) {
	for _, seed := range []string{
		`{"teneroEvery":"2m"}`, `{"sweepEvery":"30s"}`,
		`{"schedules":{"rollup":{"cron":"5 * * * *","tz":"Europe/London","catchup":"backfill","maxCatchup":24}}}`,
		`{"schedules":{"rollup":{"every":"1h"},"tenero":{"every":"10m"}}}`,
		`{"schedules":{"deliver":{"every":"1m"}}}`, `{"schedules":{"rollup":{"cron":"61 * * * *"}}}`,
		`{"schedules":null}`, `{"schedules":[]}`, `{}`, `null`, `{"teneroEvery":"2m"} {}`,
	} {
		f.Add([]byte(seed))
	}
	in := Config{SweepEvery: pacer.Duration(time.Hour)}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := ParseReconfigure(raw, in)
		if err != nil {
			if !reflect.DeepEqual(got, in) {
				t.Fatalf("a rejected reconfigure changed the config: %+v", got)
			}
			return
		}
		if err := got.Validate(); err != nil {
			t.Fatalf("accepted %q into a config that does not validate: %v", raw, err)
		}
	})
}
