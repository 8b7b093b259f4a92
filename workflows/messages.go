package workflows

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/cron"
	"github.com/pacer-dev/pacer/internal/schedule"
)

// PauseInput is the payload of the pause signal: exactly one of Until
// (RFC3339) and For (a Go duration such as "30m").
type PauseInput struct {
	Until string `json:"until,omitempty"`
	For   string `json:"for,omitempty"`
}

// RefreshInput is the payload of the refresh signal and the refreshNow update.
type RefreshInput struct {
	Task string `json:"task"`
}

// RefreshNowResult answers refreshNow with the result of each run it asked
// for; tasks not asked for are absent.
type RefreshNowResult struct {
	Tenero  *pacer.TeneroResult  `json:"tenero,omitempty"`
	Sweep   *pacer.SweepResult   `json:"sweep,omitempty"`
	Rollup  *pacer.RollupResult  `json:"rollup,omitempty"`
	Deliver *pacer.DeliverResult `json:"deliver,omitempty"`
}

// ErrEmptyInput is returned for a message that needs a payload and has none.
var ErrEmptyInput = errors.New("empty input")

// decodeStrict decodes one JSON object into v, rejecting unknown fields and
// trailing data so that a typo ("fro") is an error rather than a no-op.
func decodeStrict(raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return ErrEmptyInput
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	if dec.More() {
		return errors.New("invalid JSON: trailing data after the object")
	}
	return nil
}

// ParsePause validates a pause payload received at now and returns when the
// pause ends.
func ParsePause(raw json.RawMessage, now time.Time) (time.Time, error) {
	var in PauseInput
	if err := decodeStrict(raw, &in); err != nil {
		return time.Time{}, err
	}
	return schedule.PauseUntil(now, in.Until, in.For)
}

// ParseRefresh validates a refresh payload against the registered tasks and
// returns the task names it selects, in registration order.
func ParseRefresh(raw json.RawMessage, registered []string) ([]string, error) {
	var in RefreshInput
	if err := decodeStrict(raw, &in); err != nil {
		return nil, err
	}
	return selectTasks(in.Task, registered)
}

// selectTasks resolves a task name ("all" for every registered task).
func selectTasks(task string, registered []string) ([]string, error) {
	if task == pacer.TaskAll {
		return registered, nil
	}
	if slices.Contains(registered, task) {
		return []string{task}, nil
	}
	return nil, fmt.Errorf("unknown task %.80q (want one of %s, %s)", task, strings.Join(registered, ", "), pacer.TaskAll)
}

// TuneInput is the payload of the tune signal: a batch size and/or an
// interval for a task's pacing (clamped to its bounds), or a reset to the
// defaults. For example {"task":"tenero","batch":20,"interval":"10m"} or
// {"task":"all","reset":true}.
type TuneInput struct {
	Task     string `json:"task"`
	Batch    *int   `json:"batch,omitempty"`
	Interval string `json:"interval,omitempty"`
	Reset    bool   `json:"reset,omitempty"`

	batch    int
	interval time.Duration
}

// ParseTune validates a tune payload and returns it with the tasks it
// selects.
func ParseTune(raw json.RawMessage, registered []string) (TuneInput, []string, error) {
	var in TuneInput
	if err := decodeStrict(raw, &in); err != nil {
		return in, nil, err
	}
	names, err := selectTasks(in.Task, registered)
	if err != nil {
		return in, nil, err
	}
	switch {
	case in.Reset && (in.Batch != nil || in.Interval != ""):
		return in, nil, errors.New(`"reset" cannot be combined with "batch" or "interval"`)
	case in.Reset:
		return in, names, nil
	case in.Batch == nil && in.Interval == "":
		return in, nil, errors.New(`give "batch" and/or "interval", or "reset": true`)
	}
	if in.Batch != nil {
		if *in.Batch <= 0 {
			return in, nil, fmt.Errorf(`"batch" must be positive, got %d`, *in.Batch)
		}
		in.batch = *in.Batch
	}
	if in.Interval != "" {
		d, err := time.ParseDuration(in.Interval)
		if err != nil || d <= 0 {
			return in, nil, fmt.Errorf(`"interval" must be a positive Go duration (like "10m"), got %.80q`, in.Interval)
		}
		in.interval = d
	}
	return in, names, nil
}

// PauseResult answers the pause update.
type PauseResult struct {
	PausedUntil time.Time `json:"pausedUntil"`
}

// ResumeResult answers the resume update: whether a pause was lifted and
// which open breakers closed.
type ResumeResult struct {
	WasPaused      bool     `json:"wasPaused"`
	BreakersClosed []string `json:"breakersClosed"`
}

// TuneResult answers the tune update with each tuned task's pace.
type TuneResult struct {
	Tasks map[string]Pace `json:"tasks"`
}

// Pace is a task's batch and interval.
type Pace struct {
	Batch    int            `json:"batch"`
	Interval pacer.Duration `json:"interval"`
}

// StopInput is the payload of the stop update; the reason is optional.
type StopInput struct {
	Reason string `json:"reason,omitempty"`
}

// maxReason bounds a stop reason: it is kept in the result and logged.
const maxReason = 500

// ParseStop validates a stop payload. An empty payload is a stop without a
// reason.
func ParseStop(raw json.RawMessage) (StopInput, error) {
	var in StopInput
	if err := decodeStrict(raw, &in); err != nil && !errors.Is(err, ErrEmptyInput) {
		return in, err
	}
	if len(in.Reason) > maxReason {
		return in, fmt.Errorf(`"reason" is %d bytes long; at most %d`, len(in.Reason), maxReason)
	}
	return in, nil
}

// StopResult is what a stopped scheduler completes with, and what the stop
// update answers: the config and the state a later start carries on with
// (SPEC §3.5).
type StopResult struct {
	Reason    string    `json:"reason"`
	StoppedAt time.Time `json:"stoppedAt"`
	Config    Config    `json:"config"`
	State     *State    `json:"state"`
}

// ReconfigureInput is the payload of the reconfigure update: any subset of
// the cadences (Go durations) and the task schedules.
type ReconfigureInput struct {
	TeneroEvery string          `json:"teneroEvery,omitempty"`
	SweepEvery  string          `json:"sweepEvery,omitempty"`
	Schedules   json.RawMessage `json:"schedules,omitempty"`
}

// ParseReconfigure validates a reconfigure payload against the config in
// force and returns the new config. A schedule given for a task replaces
// that task's schedule; teneroEvery and sweepEvery replace those tasks'
// schedules too. The whole update is checked before any of it applies.
func ParseReconfigure(raw json.RawMessage, cfg Config) (Config, error) {
	var in ReconfigureInput
	if err := decodeStrict(raw, &in); err != nil {
		return cfg, err
	}
	var schedules cron.Schedules
	if s := bytes.TrimSpace(in.Schedules); len(s) > 0 && !bytes.Equal(s, []byte("null")) {
		var err error
		if schedules, err = cron.ParseSchedules(s); err != nil {
			return cfg, fmt.Errorf(`"schedules": %w`, err)
		}
	}
	if in.TeneroEvery == "" && in.SweepEvery == "" && len(schedules) == 0 {
		return cfg, errors.New(`give "teneroEvery", "sweepEvery" (Go durations like "5m") or "schedules"`)
	}
	next := cfg
	next.Schedules = maps.Clone(cfg.Schedules)
	for _, f := range []struct {
		name, task, give string
		to               *pacer.Duration
	}{{"teneroEvery", pacer.TaskTenero, in.TeneroEvery, &next.TeneroEvery}, {"sweepEvery", pacer.TaskSweep, in.SweepEvery, &next.SweepEvery}} {
		if f.give == "" {
			continue
		}
		d, err := time.ParseDuration(f.give)
		if err != nil || d <= 0 {
			return cfg, fmt.Errorf(`%q must be a positive Go duration (like "5m"), got %.80q`, f.name, f.give)
		}
		*f.to = pacer.Duration(d)
		delete(next.Schedules, f.task)
	}
	for task, spec := range schedules {
		if next.Schedules == nil {
			next.Schedules = cron.Schedules{}
		}
		next.Schedules[task] = spec
	}
	if err := next.Validate(); err != nil {
		return cfg, err
	}
	return next, nil
}

// ReconfigureResult answers the reconfigure update with the config now in
// force and, for cadences under a minute, what they cost.
type ReconfigureResult struct {
	Config   Config `json:"config"`
	CostNote string `json:"costNote,omitempty"`
}

// errStopping rejects a message that would change a scheduler that is
// stopping: its state is being handed over.
var errStopping = errors.New("the scheduler is stopping: start it again (pacer start) to change it")
