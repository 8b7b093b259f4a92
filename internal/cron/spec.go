package cron

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	robfig "github.com/robfig/cron/v3"

	"github.com/pacer-dev/pacer"
)

// Catchup says what a late wake-up does with the occurrences it missed.
type Catchup string

const (
	// CatchupSkip runs none of them.
	CatchupSkip Catchup = "skip"
	// CatchupLatest runs the latest missed occurrence and skips the others.
	CatchupLatest Catchup = "latest"
	// CatchupAll runs each missed occurrence, oldest first, at most
	// MaxCatchup of them (the most recent); each run is keyed by its own
	// nominal time but does the task's work as of the moment it runs.
	CatchupAll Catchup = "all"
	// CatchupCoalesce runs once for all of them: the run carries the first
	// and last missed nominal times and their count.
	CatchupCoalesce Catchup = "coalesce"
	// CatchupBackfill runs each missed occurrence like CatchupAll, and the
	// run works on its own nominal time (the rollup of that hour), as if it
	// had run on time.
	CatchupBackfill Catchup = "backfill"
)

// Catchups lists the policies in the order the documentation gives them.
var Catchups = []Catchup{CatchupSkip, CatchupLatest, CatchupAll, CatchupCoalesce, CatchupBackfill}

// Gap says what happens to a nominal time the clock skips (spring forward).
type Gap string

const (
	// GapShift runs at the first instant after the gap.
	GapShift Gap = "shift"
	// GapSkip does not run; the ledger records the occurrence as skipped
	// (dst_gap) at the first instant after the gap.
	GapSkip Gap = "skip"
)

// Overlap says which of the instants of a nominal time the clock shows
// twice (fall back) run.
type Overlap string

// The overlap policies.
const (
	OverlapFirst Overlap = "first"
	OverlapLast  Overlap = "last"
	OverlapBoth  Overlap = "both"
)

// Limits and defaults of a schedule (SPEC §3.4).
const (
	// MinEvery is the shortest interval schedule.
	MinEvery = time.Second
	// DefaultCatchup is the catch-up policy of a cron schedule that names
	// none: one run brings the task up to date, as a Kubernetes CronJob does.
	DefaultCatchup = CatchupLatest
	// DefaultMaxCatchup bounds `all` and `backfill` when maxCatchup is not
	// given: two days of an hourly schedule.
	DefaultMaxCatchup = 48
	// MaxMaxCatchup is the largest maxCatchup: each catch-up run is an
	// activity, a billed Temporal action.
	MaxMaxCatchup = 1000
	// maxCronLen bounds the cron text; real specs are a few dozen bytes.
	maxCronLen = 200
)

// DST is a cron schedule's daylight-saving policy.
type DST struct {
	Gap     Gap     `json:"gap"`
	Overlap Overlap `json:"overlap"`
}

// Spec is a task's schedule (SPEC §3.4): an interval, {"every":"5m"}, or a
// cron spec in a time zone with its jitter, catch-up and DST policies. The
// zero values of the optional fields mean their defaults; ParseSpec and New
// fill them in.
type Spec struct {
	Every      time.Duration
	Cron       string
	TZ         string
	Jitter     time.Duration
	Catchup    Catchup
	MaxCatchup int
	DST        DST
}

// Errors of a bad spec; each is wrapped with the detail.
var (
	ErrSpec     = errors.New("bad schedule")
	ErrInterval = errors.New("an interval schedule has no fire times of its own")
)

func specErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrSpec}, args...)...)
}

// IsCron reports whether s is a cron schedule (else an interval).
func (s Spec) IsCron() bool { return s.Cron != "" }

// wireSpec is the JSON form. Pointers tell "absent" from "zero", so that a
// field given where it does not apply is an error rather than ignored.
type wireSpec struct {
	Every      *string  `json:"every,omitempty"`
	Cron       *string  `json:"cron,omitempty"`
	TZ         *string  `json:"tz,omitempty"`
	Jitter     *string  `json:"jitter,omitempty"`
	Catchup    *string  `json:"catchup,omitempty"`
	MaxCatchup *int     `json:"maxCatchup,omitempty"`
	DST        *wireDST `json:"dst,omitempty"`
}

type wireDST struct {
	Gap     *string `json:"gap,omitempty"`
	Overlap *string `json:"overlap,omitempty"`
}

// ParseSpec reads one schedule strictly: unknown fields, wrong types,
// trailing data and fields that do not apply are errors. The result is
// validated and its defaults filled in.
func ParseSpec(data []byte) (Spec, error) {
	var w wireSpec
	if err := decodeStrict(data, &w); err != nil {
		return Spec{}, err
	}
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		return Spec{}, specErr("null; give {\"every\":…} or {\"cron\":…}")
	}
	s, err := w.spec()
	if err != nil {
		return Spec{}, err
	}
	return s.normalize()
}

func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return specErr("%s", jsonProblem(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return specErr("trailing data after the JSON object")
	}
	return nil
}

// jsonProblem says what is wrong with a document in a user's words.
func jsonProblem(err error) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		if typeErr.Field == "" {
			return fmt.Sprintf("want a JSON object, got a %s", typeErr.Value)
		}
		return fmt.Sprintf("%q: want %s, got a %s", typeErr.Field, kindName(typeErr.Type), typeErr.Value)
	}
	if msg, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return "unknown field " + msg
	}
	if errors.Is(err, io.EOF) {
		return "empty document"
	}
	return "not JSON: " + err.Error()
}

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64:
		return "a whole number"
	}
	return "a JSON object"
}

func parseDuration(field, v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, specErr("%q is not a Go duration (like \"5m\"): %.80q", field, v)
	}
	return d, nil
}

func (w wireSpec) spec() (Spec, error) {
	var s Spec
	var err error
	switch {
	case w.Every != nil && w.Cron != nil:
		return Spec{}, specErr(`give "every" or "cron", not both`)
	case w.Every != nil:
		if s.Every, err = parseDuration("every", *w.Every); err != nil {
			return Spec{}, err
		}
		for _, f := range []struct {
			name  string
			given bool
		}{
			{"tz", w.TZ != nil}, {"jitter", w.Jitter != nil}, {"catchup", w.Catchup != nil},
			{"maxCatchup", w.MaxCatchup != nil}, {"dst", w.DST != nil},
		} {
			if f.given {
				return Spec{}, specErr("%q applies to cron schedules only", f.name)
			}
		}
		return s, nil
	case w.Cron == nil:
		return Spec{}, specErr(`give "every" (like "5m") or "cron" (like "0 * * * *")`)
	}
	s.Cron = *w.Cron
	if s.Cron == "" {
		return Spec{}, specErr(`"cron" is empty`)
	}
	if w.TZ != nil {
		if s.TZ = *w.TZ; s.TZ == "" {
			return Spec{}, specErr(`"tz" is empty; leave it out for UTC`)
		}
	}
	if w.Jitter != nil {
		if s.Jitter, err = parseDuration("jitter", *w.Jitter); err != nil {
			return Spec{}, err
		}
	}
	if w.Catchup != nil {
		s.Catchup = Catchup(*w.Catchup)
		if !slices.Contains(Catchups, s.Catchup) {
			return Spec{}, specErr(`"catchup" %.40q is not one of skip, latest, all, coalesce, backfill`, *w.Catchup)
		}
	}
	if w.MaxCatchup != nil {
		if *w.MaxCatchup < 1 || *w.MaxCatchup > MaxMaxCatchup {
			return Spec{}, specErr(`"maxCatchup" %d is outside 1..%d`, *w.MaxCatchup, MaxMaxCatchup)
		}
		if s.Catchup != CatchupAll && s.Catchup != CatchupBackfill {
			return Spec{}, specErr(`"maxCatchup" applies to catchup "all" and "backfill" only`)
		}
		s.MaxCatchup = *w.MaxCatchup
	}
	if d := w.DST; d != nil {
		if d.Gap != nil {
			s.DST.Gap = Gap(*d.Gap)
			if s.DST.Gap != GapShift && s.DST.Gap != GapSkip {
				return Spec{}, specErr(`"dst.gap" %.40q is not shift or skip`, *d.Gap)
			}
		}
		if d.Overlap != nil {
			s.DST.Overlap = Overlap(*d.Overlap)
			if !slices.Contains([]Overlap{OverlapFirst, OverlapLast, OverlapBoth}, s.DST.Overlap) {
				return Spec{}, specErr(`"dst.overlap" %.40q is not first, last or both`, *d.Overlap)
			}
		}
	}
	return s, nil
}

// normalize validates s and fills in the defaults of a cron schedule.
func (s Spec) normalize() (Spec, error) {
	if !s.IsCron() {
		if s.Every < MinEvery {
			return Spec{}, specErr(`"every" %s is below %s`, s.Every, MinEvery)
		}
		if s != (Spec{Every: s.Every}) {
			return Spec{}, specErr("an interval schedule takes no cron settings")
		}
		return s, nil
	}
	if s.Every != 0 {
		return Spec{}, specErr(`give "every" or "cron", not both`)
	}
	if s.TZ == "" {
		s.TZ = "UTC"
	}
	if s.Catchup == "" {
		s.Catchup = DefaultCatchup
	}
	switch {
	case s.Catchup != CatchupAll && s.Catchup != CatchupBackfill:
		if s.MaxCatchup != 0 {
			return Spec{}, specErr(`"maxCatchup" applies to catchup "all" and "backfill" only`)
		}
	case s.MaxCatchup == 0:
		s.MaxCatchup = DefaultMaxCatchup
	case s.MaxCatchup < 1 || s.MaxCatchup > MaxMaxCatchup:
		return Spec{}, specErr(`"maxCatchup" %d is outside 1..%d`, s.MaxCatchup, MaxMaxCatchup)
	}
	if !slices.Contains(Catchups, s.Catchup) {
		return Spec{}, specErr("catch-up policy %.40q is not one of skip, latest, all, coalesce, backfill", s.Catchup)
	}
	if s.DST.Gap == "" {
		s.DST.Gap = GapShift
	}
	if s.DST.Overlap == "" {
		s.DST.Overlap = OverlapFirst
	}
	if s.DST.Gap != GapShift && s.DST.Gap != GapSkip {
		return Spec{}, specErr("DST gap policy %.40q is not shift or skip", s.DST.Gap)
	}
	if !slices.Contains([]Overlap{OverlapFirst, OverlapLast, OverlapBoth}, s.DST.Overlap) {
		return Spec{}, specErr("DST overlap policy %.40q is not first, last or both", s.DST.Overlap)
	}
	if _, err := LoadZone(s.TZ); err != nil {
		return Spec{}, specErr(`"tz": %w`, err)
	}
	sched, err := parseCron(s.Cron)
	if err != nil {
		return Spec{}, err
	}
	if s.Jitter < 0 {
		return Spec{}, specErr(`"jitter" %s is negative`, s.Jitter)
	}
	if s.Jitter > 0 {
		if gap := shortestSpacing(sched); s.Jitter >= gap {
			return Spec{}, specErr(`"jitter" %s must be shorter than the %s between fire times, or runs would pile up`, s.Jitter, gap)
		}
	}
	return s, nil
}

// cronParser reads the five standard fields and the @hourly-style aliases.
// Day of month and day of week combine as in Vixie cron: when both are
// restricted, either matching is enough.
var cronParser = robfig.NewParser(robfig.Minute | robfig.Hour | robfig.Dom | robfig.Month | robfig.Dow | robfig.Descriptor)

// parseCron parses spec into the library's field sets, matched against the
// wall clock encoded as UTC (see Schedule). The zone is never part of the
// text: it is the spec's "tz".
func parseCron(spec string) (*robfig.SpecSchedule, error) {
	switch {
	case len(spec) > maxCronLen:
		return nil, specErr(`"cron" is longer than %d bytes`, maxCronLen)
	case strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ="):
		// robfig/cron panics on some of these (robfig/cron#554); the zone
		// belongs in "tz" anyway.
		return nil, specErr(`"cron" %.80q: give the zone as "tz", not in the spec`, spec)
	case strings.HasPrefix(spec, "@every"):
		return nil, specErr(`"cron" %.80q: use {"every":…} for an interval`, spec)
	}
	parsed, err := cronParser.Parse(spec)
	if err != nil {
		return nil, specErr(`"cron" %.80q: %w`, spec, err)
	}
	sched, ok := parsed.(*robfig.SpecSchedule)
	if !ok {
		return nil, specErr(`"cron" %.80q is not a calendar spec`, spec)
	}
	sched.Location = time.UTC
	if next := nextCivil(sched, neverBefore); next.IsZero() {
		return nil, specErr(`"cron" %.80q never fires (no such day)`, spec)
	}
	return sched, nil
}

// neverBefore is where validation looks for fire times: a spec that matches
// no day from 2000 on (30 February) never fires.
var neverBefore = time.Date(1999, 12, 31, 23, 59, 0, 0, time.UTC)

// shortestSpacing is the shortest wall-clock time between two fire times of
// sched over its first few hundred fire times: enough to see an hourly,
// daily or weekly pattern repeat.
func shortestSpacing(sched *robfig.SpecSchedule) time.Duration {
	shortest := time.Duration(1<<63 - 1)
	prev := nextCivil(sched, neverBefore)
	for range 500 {
		next := nextCivil(sched, prev)
		if next.IsZero() {
			break
		}
		shortest = min(shortest, next.Sub(prev))
		prev = next
	}
	return shortest
}

// MarshalJSON writes the canonical form: every default spelled out, so that
// a status document shows exactly what a task runs on.
func (s Spec) MarshalJSON() ([]byte, error) {
	var w wireSpec
	str := func(v string) *string { return &v }
	if !s.IsCron() {
		w.Every = str(formatDuration(s.Every))
		return json.Marshal(w)
	}
	w.Cron, w.TZ, w.Catchup = str(s.Cron), str(s.TZ), str(string(s.Catchup))
	if s.Jitter != 0 {
		w.Jitter = str(formatDuration(s.Jitter))
	}
	if s.MaxCatchup != 0 {
		w.MaxCatchup = &s.MaxCatchup
	}
	if s.DST != (DST{}) {
		w.DST = &wireDST{Gap: str(string(s.DST.Gap)), Overlap: str(string(s.DST.Overlap))}
	}
	return json.Marshal(w)
}

// UnmarshalJSON is ParseSpec: strict, validated, defaults filled in.
func (s *Spec) UnmarshalJSON(data []byte) error {
	parsed, err := ParseSpec(data)
	if err != nil {
		return err
	}
	*s = parsed
	return nil
}

// String is the spec's canonical JSON.
func (s Spec) String() string {
	b, err := s.MarshalJSON()
	if err != nil {
		return fmt.Sprintf("invalid schedule (%v)", err)
	}
	return string(b)
}

// formatDuration drops the zero units time.Duration.String keeps ("5m0s" is
// "5m"); the result still parses with time.ParseDuration.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Schedules maps task names to their schedules, as PACER_SCHEDULES gives
// them.
type Schedules map[string]Spec

// ParseSchedules reads a JSON object of task name → schedule strictly. It
// does not know which task names exist; the caller checks them.
func ParseSchedules(data []byte) (Schedules, error) {
	var raw map[string]json.RawMessage
	if err := decodeStrict(data, &raw); err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, specErr("want a JSON object of task → schedule, got null")
	}
	out := make(Schedules, len(raw))
	for _, task := range slices.Sorted(maps.Keys(raw)) {
		s, err := ParseSpec(raw[task])
		if err != nil {
			return nil, fmt.Errorf("%.40q: %w", task, err)
		}
		out[task] = s
	}
	return out, nil
}

// Tasks lists the scheduled tasks in name order.
func (ss Schedules) Tasks() []string { return slices.Sorted(maps.Keys(ss)) }

// Default is the schedule a task has when configuration names none, for the
// tasks whose default is a cron schedule (SPEC §3): `rollup` runs at five
// past every hour, UTC, backfilling what it missed.
func Default(task string) (Spec, bool) {
	if task != pacer.TaskRollup {
		return Spec{}, false
	}
	s, err := Spec{Cron: "5 * * * *", Catchup: CatchupBackfill}.normalize()
	if err != nil {
		return Spec{}, false
	}
	return s, true
}
