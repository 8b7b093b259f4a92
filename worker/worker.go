// Package worker wires pacer to Temporal: it dials the frontend with the SDK's
// environment configuration, runs the worker for the scheduler workflow and
// its activities, and keeps the singleton scheduler running.
package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.uber.org/zap"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/activities"
	"github.com/pacer-dev/pacer/internal/logging"
	"github.com/pacer-dev/pacer/workflows"
)

// DefaultAddress is where a local dev server listens (SPEC §2).
const DefaultAddress = "127.0.0.1:7233"

// DialOptions say where Temporal is. Empty fields fall back to the SDK's
// environment configuration (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
// TEMPORAL_API_KEY, TLS settings, TEMPORAL_PROFILE and the config file), the
// same sources the temporal CLI reads, and then to a local dev server.
type DialOptions struct {
	Address   string
	Namespace string
	Logger    *zap.Logger
	// MetricsHandler receives the SDK's metrics (client requests, and the
	// workers built on this client: polls, task and activity latencies,
	// failures); nil drops them.
	MetricsHandler client.MetricsHandler
}

// Dial connects a Temporal client.
func Dial(ctx context.Context, o DialOptions) (client.Client, error) {
	opts, err := clientOptions(o, nil)
	if err != nil {
		return nil, err
	}
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("dial temporal at %s: %w", opts.HostPort, err)
	}
	return c, nil
}

// clientOptions resolves where and how to connect: the SDK's environment
// configuration (env read through env, the process environment when nil),
// then o's non-empty fields over it, then the local dev server's address.
func clientOptions(o DialOptions, env envconfig.EnvLookup) (client.Options, error) {
	opts, err := envconfig.LoadClientOptions(envconfig.LoadClientOptionsRequest{EnvLookup: env})
	if err != nil {
		return client.Options{}, fmt.Errorf("temporal config: %w", err)
	}
	if o.Address != "" {
		opts.HostPort = o.Address
	}
	if opts.HostPort == "" {
		opts.HostPort = DefaultAddress
	}
	if o.Namespace != "" {
		opts.Namespace = o.Namespace
	}
	if o.Logger != nil {
		opts.Logger = logging.Temporal(o.Logger)
	}
	if o.MetricsHandler != nil {
		opts.MetricsHandler = o.MetricsHandler
	}
	return opts, nil
}

// Scheduler names the singleton and how to start it.
type Scheduler struct {
	WorkflowID string
	TaskQueue  string
	Config     workflows.Config
}

func (s Scheduler) withDefaults() Scheduler {
	if s.WorkflowID == "" {
		s.WorkflowID = workflows.DefaultWorkflowID
	}
	if s.TaskQueue == "" {
		s.TaskQueue = workflows.DefaultTaskQueue
	}
	return s
}

// EnsureRunning starts the scheduler unless a run with its ID is already
// open; either way it returns the open run's ID. Any number of callers at
// once still make one run: the server resolves the race (conflict policy
// USE_EXISTING).
func EnsureRunning(ctx context.Context, c client.Client, s Scheduler) (string, error) {
	s = s.withDefaults()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       s.WorkflowID,
		TaskQueue:                s.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		StaticSummary:            "pacer scheduler " + s.WorkflowID,
		// The Web UI shows this on the workflow page; the current state is in
		// the workflow's current details (temporal workflow metadata).
		StaticDetails: "Keeps rate-limited upstream data fresh: task tenero refreshes USD prices from Tenero, " +
			"task sweep records the competition's swaps found through Hiro, each on its own cadence. " +
			`Operate with query status; signals pause {"for":"30m"}, resume, refresh {"task":"sweep"}; ` +
			`update refreshNow {"task":"tenero"|"sweep"|"all"}.`,
	}, workflows.WorkflowType, workflows.SchedulerInput{Config: s.Config})
	if err != nil {
		return "", fmt.Errorf("start scheduler %s: %w", s.WorkflowID, err)
	}
	return run.GetRunID(), nil
}

// isOpen reports whether the scheduler has an open run. Describe is a read,
// not a billed action, so the keep-alive loop uses it before starting.
func isOpen(ctx context.Context, c client.Client, id string) (bool, error) {
	d, err := c.DescribeWorkflowExecution(ctx, id, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, nil
}

// KeepRunning ensures the scheduler runs now and again every interval until
// ctx ends, so a terminated or failed run is replaced without anyone having
// to notice first.
func KeepRunning(ctx context.Context, c client.Client, s Scheduler, every time.Duration, log *zap.Logger) {
	s = s.withDefaults()
	ensure := func() {
		open, err := isOpen(ctx, c, s.WorkflowID)
		if err == nil && open {
			return
		}
		runID, err := EnsureRunning(ctx, c, s)
		if err != nil {
			if ctx.Err() == nil {
				log.Error("scheduler.ensure_failed", zap.String("workflowId", s.WorkflowID), zap.Error(err))
			}
			return
		}
		log.Info("scheduler.ensured", zap.String("workflowId", s.WorkflowID), zap.String("runId", runID))
	}
	ensure()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			ensure()
		}
	}
}

// New builds a worker for the scheduler's task queue with every workflow and
// activity registered.
func New(c client.Client, taskQueue string, acts *activities.Activities) sdkworker.Worker {
	if taskQueue == "" {
		taskQueue = workflows.DefaultTaskQueue
	}
	w := sdkworker.New(c, taskQueue, sdkworker.Options{
		// On SIGTERM give in-flight activities time to finish; what does not
		// finish is retried elsewhere by Temporal.
		WorkerStopTimeout: StopTimeout,
		Interceptors:      []interceptor.WorkerInterceptor{&retryOnStop{}},
	})
	Register(w, acts)
	return w
}

// StopTimeout is how long a stopping worker waits for its in-flight
// activities. A process manager must wait longer than this between SIGTERM
// and SIGKILL (docker compose's stop_grace_period, Kubernetes'
// terminationGracePeriodSeconds).
const StopTimeout = 30 * time.Second

// stopGrace is how long an activity may go on once its worker is stopping
// before retryOnStop hands it back: long enough for a tenero run to end, and
// short of StopTimeout so that the hand-back is reported while the worker
// still stands.
const stopGrace = StopTimeout - 5*time.Second

// errHandedBack is the cancellation cause of an activity that retryOnStop cut
// short.
var errHandedBack = errors.New("worker stopping: activity handed back")

// retryOnStop hands an activity that outlasts its worker's stop back to
// Temporal for another worker. Left alone, the SDK would cancel the
// activity's context at StopTimeout and the activity would fail with
// whatever class a cancellation looks like (a non-retryable timeout),
// recording a failed run for a task that did not fail, and the worker
// might exit before even reporting that. Instead, stopGrace after the stop
// began, the activity's context is cancelled and its failure replaced by a
// retryable transport error: Temporal retries it on another worker (the
// workflow's retry policy) and a sweep resumes there from its last
// heartbeat.
type retryOnStop struct {
	interceptor.WorkerInterceptorBase
	grace time.Duration // zero: stopGrace
}

func (r *retryOnStop) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	i := &retryOnStopActivity{grace: r.grace}
	if i.grace <= 0 {
		i.grace = stopGrace
	}
	i.Next = next
	return i
}

type retryOnStopActivity struct {
	interceptor.ActivityInboundInterceptorBase
	grace time.Duration
}

func (a *retryOnStopActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stopping := activity.GetWorkerStopChannel(ctx)
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		select {
		case <-finished:
			return
		case <-stopping:
		}
		t := time.NewTimer(a.grace)
		defer t.Stop()
		select {
		case <-finished:
		case <-t.C:
			cancel(errHandedBack)
		}
	}()

	out, err := a.Next.ExecuteActivity(ctx, in)
	if err != nil && ctx.Err() != nil &&
		(errors.Is(context.Cause(ctx), errHandedBack) || errors.Is(context.Cause(ctx), sdkworker.ErrWorkerShutdown)) {
		// A new error, not a wrap: Temporal reads the outermost error only.
		return out, temporal.NewApplicationErrorWithOptions("worker stopped mid-run; retried on another worker",
			string(pacer.ClassTransport), temporal.ApplicationErrorOptions{})
	}
	return out, err
}

// Register registers pacer's workflows and activities on r.
func Register(r sdkworker.Registry, acts *activities.Activities) {
	workflows.Register(r)
	activities.Register(r, acts)
}

// Run runs a worker and the keep-alive loop until ctx ends, then stops the
// worker gracefully.
func Run(ctx context.Context, c client.Client, s Scheduler, acts *activities.Activities, log *zap.Logger) error {
	s = s.withDefaults()
	w := New(c, s.TaskQueue, acts)
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	defer w.Stop()
	log.Info("worker.started", zap.String("taskQueue", s.TaskQueue), zap.String("workflowId", s.WorkflowID))
	KeepRunning(ctx, c, s, time.Minute, log)
	log.Info("worker.stopping")
	return nil
}
