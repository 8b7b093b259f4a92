package worker

import "time"

// WithHandoffWaits is d with a handoff's waits shortened: accept for the
// old version's workers to take the stop, fresh for a poll to count.
func WithHandoffWaits(d Deployment, accept, fresh time.Duration) *Deployment {
	d.waits = handoffWaits{accept: accept, pollerFresh: fresh}
	return &d
}
