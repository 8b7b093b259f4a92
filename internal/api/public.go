package api

import (
	"context"
	"errors"
	"maps"

	"github.com/jackc/pgx/v5/pgconn"
	"go.temporal.io/api/serviceerror"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/schedule"
	"github.com/pacer-dev/pacer/workflows"
)

// StatusDocument is the answer of GET /api/scheduler/status: the
// scheduler's status document as the public may see it (PublicStatus) and
// how old it is.
type StatusDocument struct {
	workflows.Status
	// Stale says the scheduler did not answer in time, or failed to, and
	// this is its last good answer; StaleReason is why, as an error class.
	Stale       bool             `json:"stale"`
	StaleReason pacer.ErrorClass `json:"staleReason,omitempty"`
	// AgeSeconds is how long ago the scheduler gave this answer.
	AgeSeconds float64 `json:"ageSeconds"`
}

// classText is what the public reads of a failure of each class. The raw
// error (a pgx message names the database host, user and database; an
// upstream error quotes its body) stays in the worker's logs, in the
// scheduler.task_failed line.
var classText = map[pacer.ErrorClass]string{
	pacer.ClassRateLimit:   "an upstream quota was spent",
	pacer.ClassServerError: "an upstream answered with a server error",
	pacer.ClassTimeout:     "a call timed out",
	pacer.ClassNotFound:    "an upstream did not know what was asked for",
	pacer.ClassParseError:  "an upstream answer could not be read",
	pacer.ClassTransport:   "a dependency (the database, the network) failed",
	pacer.ClassPermanent:   "an upstream refused the request (key, plan or endpoint)",
}

// classOther stands for a class pacer does not know: a class is shown only
// when it is one of SPEC §3.3's.
const classOther pacer.ErrorClass = "other"

// publicError is a failure's class and the fixed text for it.
func publicError(class pacer.ErrorClass) (pacer.ErrorClass, string) {
	text, ok := classText[class]
	if !ok {
		return classOther, "the run failed"
	}
	return class, text + " (details in the worker logs)"
}

// PublicStatus is the status document as anyone outside the operators may
// read it: every error message replaced by its class's fixed text, the stop
// reason and the upstream budgets left out (SPEC §7). The HTTP API and
// `pacer status` show it. st is not changed.
func PublicStatus(st workflows.Status) workflows.Status {
	if r := st.LastTeneroResult; r != nil {
		c := *r
		c.Run = publicRun(c.Run)
		st.LastTeneroResult = &c
	}
	if r := st.LastSweepResult; r != nil {
		c := *r
		c.Run = publicRun(c.Run)
		c.RejectionReasons = maps.Clone(c.RejectionReasons)
		st.LastSweepResult = &c
	}
	if r := st.LastRollupResult; r != nil {
		c := *r
		c.Run = publicRun(c.Run)
		st.LastRollupResult = &c
	}
	if r := st.LastDeliverResult; r != nil {
		c := *r
		c.Run = publicRun(c.Run)
		st.LastDeliverResult = &c
	}
	if st.Stopping != nil {
		// An operator's reason is theirs (it may name a person, an
		// incident, a host); the public learns only that it is stopping.
		st.Stopping = &workflows.StopInput{}
	}
	tasks := make(map[string]workflows.TaskStatus, len(st.Tasks))
	for name, t := range st.Tasks {
		if e := t.LastError; e != nil {
			class, text := publicError(pacer.ErrorClass(e.Class))
			t.LastError = &schedule.RunError{Class: string(class), Message: text, At: e.At}
		}
		tasks[name] = t
	}
	if st.Tasks != nil {
		st.Tasks = tasks
	}
	return st
}

// listenerStatus is the status document the public listener serves:
// PublicStatus, less what is the operators' though `pacer status` shows
// it to them: the delivery counts and the last deliver run's result
// (subscribers' traffic), and the tasks' pacing, whose intervals, batches
// and projections stand in for the upstream budgets.
func listenerStatus(st workflows.Status) workflows.Status {
	st = PublicStatus(st)
	st.Deliveries, st.LastDeliverResult = nil, nil
	for name, t := range st.Tasks {
		t.Pacing = nil
		st.Tasks[name] = t
	}
	return st
}

func publicRun(r pacer.Run) pacer.Run {
	r.MinuteRemaining, r.MonthRemaining = nil, nil
	if r.ErrorClass != "" || r.Error != "" {
		r.ErrorClass, r.Error = publicError(r.ErrorClass)
	}
	return r
}

// errorClass is the class of an error met at the HTTP boundary: a
// deadline (the request's, the statement timeout's, Temporal's) is a
// timeout, an unknown workflow not_found, anything else transport.
func errorClass(err error) pacer.ErrorClass {
	var pgErr *pgconn.PgError
	var deadline *serviceerror.DeadlineExceeded
	var notFound *serviceerror.NotFound
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &deadline),
		errors.As(err, &pgErr) && pgErr.Code == "57014": // query_canceled: statement_timeout
		return pacer.ClassTimeout
	case errors.As(err, &notFound):
		return pacer.ClassNotFound
	}
	return pacer.ClassTransport
}

// readingClass is why a cell's reading is not fresh.
func readingClass[T any](rd reading[T]) pacer.ErrorClass {
	if rd.Err == nil && rd.Waiting {
		return pacer.ClassTimeout
	}
	return errorClass(rd.Err)
}
