package workflows

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pacer-dev/pacer"
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
	Tenero *pacer.TeneroResult `json:"tenero,omitempty"`
	Sweep  *pacer.SweepResult  `json:"sweep,omitempty"`
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
