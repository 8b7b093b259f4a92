package worker

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"

	"github.com/pacer-dev/pacer/workflows"
)

// Deploys (SPEC §3.5): every worker declares a Worker Deployment Version
// (a deployment name and its binary's build ID), and the scheduler is
// Pinned: a run's history is only ever written by one build, so a rolling
// deploy, a rollback or two builds side by side never hand a run to code
// that did not write it.
//
// A pinned run stays on its version, and so do the runs it continues as
// new into (server 1.29 ignores a continue-as-new's request to start the
// next run on the current version; upgrade-on-continue-as-new needs a
// newer server). So the move to a new current version is made by the
// workers, at a run boundary: a worker of the current version that finds
// the scheduler pinned to another version asks it to stop (the stop
// update: running tasks finish, the state is the result) and starts it
// again at once carrying that state, as a continue-as-new would; a new
// execution starts on the current version. Forward and back alike, no run
// ever replays on a build that did not write it.
//
// Who makes a version current: the first worker of a deployment that has
// none (a new namespace, make dev) makes itself current; after that only
// an operator does, with pacer deploy promote (or temporal worker
// deployment set-current-version). A deploy is: start the new build beside
// the old, promote it, wait for pacer deploy status to show the scheduler
// on it (one keep-alive check, at most a minute), stop the old build. A
// rollback is the same with the old build ID.

// DefaultDeploymentName is PACER_DEPLOYMENT_NAME's default.
const DefaultDeploymentName = "pacer"

// Deployment is a worker's Worker Deployment Version.
type Deployment struct {
	Name    string
	BuildID string
	// PromoteOnStart makes this version current as its workers start,
	// whatever is current: pacer dev, whose one build replaces the last
	// one's (its dev server keeps its state across restarts).
	PromoteOnStart bool
	waits          handoffWaits
}

// Version is the version's name as Temporal shows it: name.buildID.
func (d Deployment) Version() string { return d.Name + "." + d.BuildID }

// commit is the commit this binary was built from, baked in by make build
// and the Dockerfile (-ldflags "-X github.com/pacer-dev/pacer/worker.commit=…"):
// an image is built without .git, where the toolchain stamps no revision.
var commit string

// Commit is the commit this binary was built from: the one baked in, else
// the toolchain's VCS stamp (go build in a checkout, with "-dirty" when the
// tree had changes), else "".
func Commit() string {
	if commit != "" {
		return commit
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev string
	var dirty bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	switch {
	case rev != "" && dirty:
		return shortRev(rev) + "-dirty"
	case rev != "":
		return shortRev(rev)
	}
	return ""
}

// BuildID is this binary's build ID unless PACER_BUILD_ID (the CLI's
// --build-id) says otherwise: its commit, else its module version, else ""
// (which names no build).
func BuildID() string {
	if c := Commit(); c != "" {
		return c
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return ""
}

func shortRev(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// NamesBuild reports whether a build ID names a build. Workers of every
// build registered under one placeholder ("", "dev", "local") would be one
// version to Temporal, and a run pinned to it would replay on whichever
// build picked its task up (SPEC §3.5).
func NamesBuild(id string) bool {
	switch strings.ToLower(id) {
	case "", "dev", "local", "latest", "unknown":
		return false
	}
	return true
}

// ValidBuildID reports whether id can be a build ID: Temporal takes up to
// 255 characters; pacer keeps to a shape that is safe in logs and labels.
func ValidBuildID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.+", r)) {
			return false
		}
	}
	return true
}

// deploymentOptions are a worker's options for d (none when d is nil).
func deploymentOptions(d *Deployment) sdkworker.DeploymentOptions {
	if d == nil {
		return sdkworker.DeploymentOptions{}
	}
	return sdkworker.DeploymentOptions{
		UseVersioning: true,
		Version:       sdkworker.WorkerDeploymentVersion{DeploymentName: d.Name, BuildID: d.BuildID},
		// The scheduler never ends: each run stays on the build that
		// started it, and moves at a run boundary (above).
		DefaultVersioningBehavior: workflow.VersioningBehaviorPinned,
	}
}

// CurrentVersion returns the deployment's current version ("" when none).
func CurrentVersion(ctx context.Context, c client.Client, name string) (string, error) {
	d, err := c.WorkerDeploymentClient().GetHandle(name).Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("describe deployment %s: %w", name, err)
	}
	if v := d.Info.RoutingConfig.CurrentVersion; v != nil {
		return v.DeploymentName + "." + v.BuildID, nil
	}
	return "", nil
}

// Promote makes buildID the deployment's current version: new executions,
// and the scheduler at its next keep-alive check, run on it. The version
// must have polled (its workers started).
func Promote(ctx context.Context, c client.Client, name, buildID string) (previous string, err error) {
	res, err := c.WorkerDeploymentClient().GetHandle(name).SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{
		BuildID: buildID, Identity: "pacer deploy promote",
	})
	if err != nil {
		return "", fmt.Errorf("make %s.%s current: %w", name, buildID, err)
	}
	//nolint:staticcheck // SA1019: the server 1.29 this targets still fills PreviousVersion; a Describe first would race the change
	if v := res.PreviousVersion; v != nil {
		previous = v.DeploymentName + "." + v.BuildID
	}
	return previous, nil
}

// promoteIfNone makes d current when its deployment has no current
// version, retrying until the version is known to the server (its workers
// poll) or ctx ends. Later versions are promoted by an operator.
func promoteIfNone(ctx context.Context, c client.Client, d Deployment, log *zap.Logger) {
	for delay := 200 * time.Millisecond; ; delay = min(2*delay, 5*time.Second) {
		cur, err := CurrentVersion(ctx, c, d.Name)
		if err == nil && cur != "" && !(d.PromoteOnStart && cur != d.Version()) {
			if cur != d.Version() {
				log.Info("deploy.not_current", zap.String("version", d.Version()), zap.String("current", cur),
					zap.String("hint", "pacer deploy promote --build-id "+d.BuildID+" moves the scheduler to this build"))
			}
			return
		}
		if err == nil {
			if _, err = Promote(ctx, c, d.Name, d.BuildID); err == nil {
				log.Info("deploy.promoted_first_version", zap.String("version", d.Version()))
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		if delay >= 5*time.Second {
			log.Warn("deploy.promote_pending", zap.String("version", d.Version()), zap.Error(err))
		}
	}
}

// HandoffReason prefixes the stop reason of a handoff: workers start such
// a stopped scheduler again (it is not an operator's stop).
const HandoffReason = "handoff to "

// handoffTimeout bounds the stop of a handoff: running tasks finish first
// (a sweep run may take minutes). acceptWait is how long the old version's
// workers get to take the stop: past it, the run is ended instead, but only
// once no worker of the old version polls (pollerFresh), so that a slow
// worker's run is never cut short.
const (
	handoffTimeout = 10 * time.Minute
	acceptWait     = 30 * time.Second
	// pollerFresh is how recently a live worker has polled: an idle poll
	// lasts up to a minute on the server, and a stopped worker stays
	// listed for minutes with the time of its last poll.
	pollerFresh = 75 * time.Second
)

// handoffWaits are a handoff's waits (tests shorten them).
type handoffWaits struct {
	accept, pollerFresh time.Duration
}

func (w handoffWaits) withDefaults() handoffWaits {
	if w.accept == 0 {
		w.accept = acceptWait
	}
	if w.pollerFresh == 0 {
		w.pollerFresh = pollerFresh
	}
	return w
}

// VersionPolls reports whether workers of version (name.buildID) poll the
// task queue's workflow tasks: one listed with a poll within fresh.
// Describing a task queue is not a billed action.
func VersionPolls(ctx context.Context, c client.Client, taskQueue, version string, fresh time.Duration) (bool, error) {
	// The legacy description lists every version's pollers; the enhanced
	// one (server 1.29) leaves out a deployment version once another is
	// current.
	d, err := c.DescribeTaskQueue(ctx, taskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil {
		return false, fmt.Errorf("describe task queue %s: %w", taskQueue, err)
	}
	for _, p := range d.GetPollers() {
		o := p.GetDeploymentOptions()
		if o.GetDeploymentName()+"."+o.GetBuildId() == version && time.Since(p.GetLastAccessTime().AsTime()) < fresh {
			return true, nil
		}
	}
	return false, nil
}

// HandOff moves the scheduler to s.Deployment now if that version is
// current and the scheduler runs on another (what pacer deploy promote
// does right after the promote, rather than wait for a keep-alive check).
// moved says it did.
func HandOff(ctx context.Context, c client.Client, s Scheduler, log *zap.Logger) (moved bool, err error) {
	s = s.withDefaults()
	e, err := Ensure(ctx, c, s, Inspect)
	if err != nil || e.RunID == "" {
		return false, err
	}
	return handOff(ctx, c, s, e, log), nil
}

// handOff moves the scheduler to this worker's version when that version is
// current and the open run is pinned to another: stop at the next idle
// moment, carrying the state, then start again (a new execution starts on
// the current version).
func handOff(ctx context.Context, c client.Client, s Scheduler, e Ensured, log *zap.Logger) bool {
	d := s.Deployment
	if d == nil || e.Task.Version == "" || e.Task.Version == d.Version() {
		return false
	}
	cur, err := CurrentVersion(ctx, c, d.Name)
	if err != nil || cur != d.Version() {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, handoffTimeout)
	defer cancel()
	reason := HandoffReason + d.Version()
	why := ""
	if e.Task.Failing() {
		why = "its workflow tasks fail on " + e.Task.Version
	} else {
		waits := d.waits.withDefaults()
		var accepted bool
		accepted, err = stopForHandoff(ctx, c, s.WorkflowID, e.RunID, reason, waits.accept)
		if err == nil && !accepted {
			// Slow is not gone: while the old version polls, its workers
			// may yet take the stop (or finish a run in flight), and
			// ending the run would lose what it did since it started.
			var polls bool
			if polls, err = VersionPolls(ctx, c, s.TaskQueue, e.Task.Version, waits.pollerFresh); err == nil && polls {
				log.Warn("deploy.handoff_waits", zap.String("from", e.Task.Version), zap.String("to", d.Version()),
					zap.String("why", "no worker of "+e.Task.Version+" took the stop within "+waits.accept.String()+", but its workers poll"),
					zap.String("hint", "the next keep-alive check asks again; stop the old build's workers to end its run"))
				return false
			}
			why = "no worker of " + e.Task.Version + " took the stop within " + waits.accept.String() + ", and none polls"
		}
	}
	if why != "" {
		// A run that cannot take the stop update (its workflow tasks fail,
		// or its version's workers are gone) is ended instead; the start
		// below carries the state it began with and its memo's pause and
		// breakers, as for any run that ended without a result.
		log.Warn("deploy.handoff_terminates", zap.String("from", e.Task.Version), zap.String("to", d.Version()), zap.String("why", why))
		err = c.TerminateWorkflow(ctx, s.WorkflowID, e.RunID, reason+": "+why)
	}
	if err != nil {
		log.Warn("deploy.handoff_stop_failed", zap.String("from", e.Task.Version), zap.String("to", d.Version()), zap.Error(err))
		return false
	}
	started, err := Ensure(ctx, c, s, Start)
	if err != nil {
		// The next keep-alive check (any worker's) starts it: a handoff's
		// stop is not an operator's.
		log.Error("deploy.handoff_start_failed", zap.String("to", d.Version()), zap.Error(err))
		return true
	}
	log.Info("deploy.handed_off", zap.String("workflowId", s.WorkflowID), zap.String("from", e.Task.Version),
		zap.String("to", d.Version()), zap.String("runId", started.RunID))
	return true
}

// stopForHandoff asks the scheduler's run runID to stop; accepted is false
// when no worker took the request within wait. Naming the run keeps
// two handoffs at once (a worker's check and pacer deploy promote) from
// stopping the run the other just started.
func stopForHandoff(ctx context.Context, c client.Client, workflowID, runID, reason string, wait time.Duration) (accepted bool, err error) {
	actx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	h, err := c.UpdateWorkflow(actx, client.UpdateWorkflowOptions{WorkflowID: workflowID, RunID: runID, UpdateName: workflows.UpdateStop,
		Args: []any{workflows.StopInput{Reason: reason}}, WaitForStage: client.WorkflowUpdateStageAccepted})
	if err != nil {
		if actx.Err() != nil && ctx.Err() == nil {
			return false, nil
		}
		return false, fmt.Errorf("stop %s for a handoff: %w", workflowID, err)
	}
	var res *workflows.StopResult
	if err := h.Get(ctx, &res); err != nil {
		return true, fmt.Errorf("stop %s for a handoff: %w", workflowID, err)
	}
	return true, nil
}

// isHandoff says a stopped run was stopped by a handoff.
func isHandoff(res *workflows.StopResult) bool {
	return res != nil && strings.HasPrefix(res.Reason, HandoffReason)
}
