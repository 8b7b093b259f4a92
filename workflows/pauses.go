package workflows

import (
	"time"

	"github.com/pacer-dev/pacer/internal/cron"
	"github.com/pacer-dev/pacer/internal/schedule"
)

// maxPauses bounds the pause windows the state carries: the oldest go
// first (they only name the reason of occurrences long decided).
const maxPauses = 64

// adoptPauses makes the state's pause windows the one record of what is
// paused: a state that knows only the global PausedUntil (a memo that
// carried no windows) gets its window.
func (s *scheduler) adoptPauses() {
	if len(s.state.Pauses) == 0 && s.state.PausedUntil != nil {
		s.state.Pauses = []schedule.Pause{{Until: s.state.PausedUntil.UTC()}}
	}
}

// addPause records a pause of task ("" for all) from now until `until`. A
// pause of the same scope in force is replaced, as the pause message
// promises.
func (s *scheduler) addPause(task string, now, until time.Time) {
	for i := range s.state.Pauses {
		p := &s.state.Pauses[i]
		if p.Task == task && p.Until.After(now) && !p.From.After(now) {
			p.Until = until
			s.syncPausedUntil(now)
			return
		}
	}
	s.state.Pauses = append(s.state.Pauses, schedule.Pause{Task: task, From: now.UTC(), Until: until.UTC()})
	if n := len(s.state.Pauses); n > maxPauses {
		s.state.Pauses = append([]schedule.Pause(nil), s.state.Pauses[n-maxPauses:]...)
	}
	s.syncPausedUntil(now)
}

// endPauses ends every pause in force at now (resume), or with a task only
// that task's own: a window that began earlier ends now, one that had not
// begun goes.
func (s *scheduler) endPauses(now time.Time, task string) (was bool) {
	kept := s.state.Pauses[:0:0]
	for _, p := range s.state.Pauses {
		switch {
		case task != "" && p.Task != task:
		case !p.Until.After(now):
		case p.From.Before(now):
			was = true
			p.Until = now.UTC()
		default:
			was = true
			continue
		}
		kept = append(kept, p)
	}
	s.state.Pauses = kept
	s.syncPausedUntil(now)
	return was
}

// expirePauses forgets windows no occurrence still to decide can fall in
// (ended before every cron task's last decided occurrence, or before the
// ledger's horizon), and logs a global pause that ended.
func (s *scheduler) expirePauses(now time.Time) {
	if s.state.PausedUntil != nil && !s.state.PausedUntil.After(now) {
		s.logger.Info("scheduler.resumed", "reason", "pause expired", "pausedUntil", *s.state.PausedUntil)
	}
	oldest := now
	for _, t := range s.state.Tasks {
		if t.Cron != nil && !t.Cron.Last.IsZero() && t.Cron.Last.Before(oldest) {
			oldest = t.Cron.Last
		}
	}
	if floor := now.Add(-cron.Horizon); oldest.Before(floor) {
		oldest = floor
	}
	kept := s.state.Pauses[:0:0]
	for _, p := range s.state.Pauses {
		if p.Until.After(oldest) {
			kept = append(kept, p)
		}
	}
	s.state.Pauses = kept
	s.syncPausedUntil(now)
}

// syncPausedUntil keeps PausedUntil, which the status document, the memo
// and older readers show, at the end of the global pause in force at now
// (or to come) latest to end.
func (s *scheduler) syncPausedUntil(now time.Time) {
	s.state.PausedUntil = nil
	for _, p := range s.state.Pauses {
		if p.Task == "" && p.Until.After(now) && (s.state.PausedUntil == nil || p.Until.After(*s.state.PausedUntil)) {
			until := p.Until
			s.state.PausedUntil = &until
		}
	}
}

// pausedFunc is whether the task is paused at an instant, for the cron
// planner.
func (s *scheduler) pausedFunc(task string) func(time.Time) bool {
	v := s.view()
	return func(at time.Time) bool {
		_, ok := v.PausedUntil(task, at)
		return ok
	}
}
