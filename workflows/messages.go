package workflows

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
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
	// Task pauses one task only (SPEC §3.1); empty pauses them all.
	Task string `json:"task,omitempty"`
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
	// Revision 3's tasks (SPEC §13, §11).
	Finalize  *pacer.FinalizeResult  `json:"finalize,omitempty"`
	Chainhook *pacer.ChainhookResult `json:"chainhook,omitempty"`
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
	// More is false before a stray '}' or ']': only the end of the input
	// ends the message. (A payload that reached the workflow through
	// Temporal's JSON converter is one whole value already; the CLI and
	// the validators call this on what they were given.)
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("invalid JSON: trailing data after the object")
	}
	return nil
}

// ParsePauseTask validates a pause payload that may name one of the
// registered tasks, and returns when the pause ends and the task ("" for
// all).
func ParsePauseTask(raw json.RawMessage, now time.Time, registered []string) (time.Time, string, error) {
	var in PauseInput
	if err := decodeStrict(raw, &in); err != nil {
		return time.Time{}, "", err
	}
	if in.Task != "" && in.Task != pacer.TaskAll && registered != nil && !slices.Contains(registered, in.Task) {
		return time.Time{}, "", fmt.Errorf("unknown task %.80q (want one of %s, or none for all)", in.Task, strings.Join(registered, ", "))
	}
	if in.Task == pacer.TaskAll {
		in.Task = ""
	}
	until, err := schedule.PauseUntil(now, in.Until, in.For)
	return until, in.Task, err
}

// ResumeInput is the resume payload: none (resume everything), or one task.
type ResumeInput struct {
	Task string `json:"task,omitempty"`
}

// ParseResume validates a resume payload: none or {} resumes every task;
// {"task":…} resumes that task alone (its own pauses, breaker and
// back-offs; a pause of every task stays).
func ParseResume(raw json.RawMessage, registered []string) (string, error) {
	var in ResumeInput
	if err := decodeStrict(raw, &in); err != nil {
		if errors.Is(err, ErrEmptyInput) {
			return "", nil
		}
		return "", err
	}
	if in.Task == pacer.TaskAll {
		return "", nil
	}
	if in.Task != "" && registered != nil && !slices.Contains(registered, in.Task) {
		return "", fmt.Errorf("unknown task %.80q (want one of %s, or none for all)", in.Task, strings.Join(registered, ", "))
	}
	return in.Task, nil
}

// HintInput is the payload of the hint signal: the agent that has a new
// transaction, optional.
type HintInput struct {
	Agent string `json:"agent,omitempty"`
}

// hintAgent is the check a hint's agent has passed since revision 1: 38 to
// 40 characters after the version, narrower than pacer.PrincipalPattern
// (which also takes the 27 to 37 that valid addresses may have). Which
// hints a run accepts is part of its history, so widening this is a new
// revision of change ID scheduler; until then the senders name an agent
// only when it passes (HintName). The agent is only logged: the store has
// made it due before the hint is sent.
var hintAgent = regexp.MustCompile(`^S[PMTN][0-9A-HJKMNP-TV-Z]{38,40}$`)

// HintName is the agent a hint may name: agent, or none when the hint's
// check would refuse it (the wake still goes through).
func HintName(agent string) string {
	if !hintAgent.MatchString(agent) {
		return ""
	}
	return agent
}

// ParseHint validates a hint payload: none, or an agent that is a Stacks
// principal (hintAgent).
func ParseHint(raw json.RawMessage) (string, error) {
	var in HintInput
	if err := decodeStrict(raw, &in); err != nil {
		if errors.Is(err, ErrEmptyInput) {
			return "", nil
		}
		return "", err
	}
	if in.Agent != "" && !hintAgent.MatchString(in.Agent) {
		return "", fmt.Errorf(`"agent" is not a Stacks principal: %.80q`, in.Agent)
	}
	return in.Agent, nil
}

// BackfillInput is the payload of the backfill update: run a cron task's
// occurrences with a nominal time in [From, To], each as of its own
// nominal time (SPEC §3.4).
type BackfillInput struct {
	Task string `json:"task"`
	From string `json:"from"`
	To   string `json:"to"`
}

// BackfillResult answers the backfill update with the occurrences queued.
type BackfillResult struct {
	Task   string      `json:"task"`
	Queued int         `json:"queued"`
	Times  []time.Time `json:"times"`
}

// MaxBackfill bounds the occurrences one backfill queues: a minutely
// schedule over a month would be 43,200 runs.
const MaxBackfill = 1000

// ParseBackfill validates a backfill payload at now against the compiled
// cron schedules and returns the task and the nominal times to run.
func ParseBackfill(raw json.RawMessage, now time.Time, crons map[string]*cron.Schedule, registered []string) (string, []time.Time, error) {
	var in BackfillInput
	if err := decodeStrict(raw, &in); err != nil {
		return "", nil, err
	}
	if !slices.Contains(registered, in.Task) {
		return "", nil, fmt.Errorf("unknown task %.80q (want one of %s)", in.Task, strings.Join(registered, ", "))
	}
	sched := crons[in.Task]
	if sched == nil {
		return "", nil, fmt.Errorf("%s has no cron schedule: only a cron task has occurrences to backfill", in.Task)
	}
	from, err := time.Parse(time.RFC3339, in.From)
	if err != nil {
		return "", nil, fmt.Errorf(`"from" is not an RFC3339 time: %.80q`, in.From)
	}
	to, err := time.Parse(time.RFC3339, in.To)
	if err != nil {
		return "", nil, fmt.Errorf(`"to" is not an RFC3339 time: %.80q`, in.To)
	}
	switch {
	case !from.Before(to):
		return "", nil, fmt.Errorf(`"from" %s must be before "to" %s`, in.From, in.To)
	case to.After(now):
		return "", nil, fmt.Errorf(`"to" %s is in the future: a backfill runs past occurrences`, in.To)
	case now.Sub(from) > cron.Horizon:
		return "", nil, fmt.Errorf(`"from" %s is older than the ledger keeps (%s)`, in.From, cron.Horizon)
	}
	var times []time.Time
	for _, f := range sched.Between(from.Add(-time.Nanosecond), to) {
		if f.Skip {
			continue
		}
		if len(times) == MaxBackfill {
			return "", nil, fmt.Errorf("the range holds more than %d occurrences: backfill a shorter one", MaxBackfill)
		}
		times = append(times, f.At.UTC())
	}
	if len(times) == 0 {
		return "", nil, fmt.Errorf("no occurrence of %s between %s and %s", in.Task, in.From, in.To)
	}
	return in.Task, times, nil
}

// SkipInput is the payload of the skip update: an operator gives up on
// one owed occurrence of a cron task, named by its nominal time (SPEC
// §3.4): it is not run again, and task_runs shows it skipped with reason
// operator.
type SkipInput struct {
	Task      string `json:"task"`
	NominalAt string `json:"nominalAt"`
}

// SkipResult answers the skip update: the occurrence passed, and the
// occurrences of the task still owed or queued.
type SkipResult struct {
	Task      string      `json:"task"`
	NominalAt time.Time   `json:"nominalAt"`
	Owed      []time.Time `json:"owed"`
}

// ParseSkip validates a skip payload against the registered tasks and the
// task's owed and queued occurrences (oldest first), and returns the task
// and the nominal time. Only an occurrence the scheduler still owes can be
// skipped: one that ran ok, or one a run is attempting right now, cannot.
func ParseSkip(raw json.RawMessage, registered []string, owed func(task string) ([]time.Time, bool)) (string, time.Time, error) {
	var in SkipInput
	if err := decodeStrict(raw, &in); err != nil {
		return "", time.Time{}, err
	}
	if !slices.Contains(registered, in.Task) {
		return "", time.Time{}, fmt.Errorf("unknown task %.80q (want one of %s)", in.Task, strings.Join(registered, ", "))
	}
	at, err := time.Parse(time.RFC3339, in.NominalAt)
	if err != nil {
		return "", time.Time{}, fmt.Errorf(`"nominalAt" is not an RFC3339 time: %.80q`, in.NominalAt)
	}
	list, isCron := owed(in.Task)
	if !isCron {
		return "", time.Time{}, fmt.Errorf("%s has no cron schedule: only a cron task has occurrences to skip", in.Task)
	}
	if slices.ContainsFunc(list, at.Equal) {
		return in.Task, at.UTC(), nil
	}
	if len(list) == 0 {
		return "", time.Time{}, fmt.Errorf("%s owes no occurrence: nothing to skip (an occurrence being run now can be skipped once it failed)", in.Task)
	}
	shown := make([]string, 0, 5)
	for _, t := range list[:min(len(list), 5)] {
		shown = append(shown, t.UTC().Format(time.RFC3339))
	}
	more := ""
	if len(list) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(list)-len(shown))
	}
	return "", time.Time{}, fmt.Errorf("%s owes no occurrence at %s (owed: %s%s)", in.Task, at.UTC().Format(time.RFC3339),
		strings.Join(shown, ", "), more)
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

// ErrSweepBatch refuses a batch for the sweep alone: its plan sizes each
// step, so it has no batch to tune. (A signal's batch, or one for "all",
// leaves the sweep's pace as it is.)
var ErrSweepBatch = errors.New(`the sweep has no batch (its plan sizes each step): give "interval" or "reset"`)

// CheckTune is the tune update's validator: ParseTune's checks, and no
// batch for the sweep alone.
func CheckTune(raw json.RawMessage, registered []string) error {
	in, _, err := ParseTune(raw, registered)
	if err == nil && in.Task == pacer.TaskSweep && in.Batch != nil {
		return ErrSweepBatch
	}
	return err
}

// PauseResult answers the pause update.
type PauseResult struct {
	PausedUntil time.Time `json:"pausedUntil"`
	// Task is the task paused; empty when all are.
	Task string `json:"task,omitempty"`
}

// ResumeResult answers the resume update: whether a pause was lifted and
// which open breakers closed.
type ResumeResult struct {
	WasPaused      bool     `json:"wasPaused"`
	BreakersClosed []string `json:"breakersClosed"`
	// BackoffsCleared are the tasks whose back-off or budget wait resume
	// cleared (the 24-hour month back-off included).
	BackoffsCleared []string `json:"backoffsCleared,omitempty"`
	// Repaired are the broken tasks resume gave another try.
	Repaired []string `json:"repaired,omitempty"`
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
	if len(schedules) > 0 && next.Schedules == nil {
		next.Schedules = cron.Schedules{}
	}
	maps.Copy(next.Schedules, schedules)
	if err := next.Validate(); err != nil {
		return cfg, err
	}
	return next, nil
}

// ReconfigureResult answers the reconfigure update with the config now in
// force (worker.CostNote says what its cadences under a minute cost).
type ReconfigureResult struct {
	Config Config `json:"config"`
}

// errStopping rejects a message that would change a scheduler that is
// stopping: its state is being handed over.
var errStopping = errors.New("the scheduler is stopping: start it again (pacer start) to change it")
