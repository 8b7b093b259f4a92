// Package worker wires pacer to Temporal: it dials the frontend with the SDK's
// environment configuration, runs the worker for the scheduler workflow and
// its activities, and keeps the singleton scheduler running.
package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
	"go.temporal.io/sdk/converter"
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

// DialLazy builds a Temporal client that connects on its first call, and
// again on each call while the frontend does not answer: a process that can
// do useful work without Temporal (the API, which reads Postgres) starts and
// serves while Temporal is down or hanging.
func DialLazy(o DialOptions) (client.Client, error) {
	opts, err := clientOptions(o, nil)
	if err != nil {
		return nil, err
	}
	c, err := client.NewLazyClient(opts)
	if err != nil {
		return nil, fmt.Errorf("temporal client for %s: %w", opts.HostPort, err)
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
	if opts.PayloadLimits.MemoSizeWarning == 0 {
		opts.PayloadLimits.MemoSizeWarning = MemoSizeWarning
	}
	return opts, nil
}

// Scheduler names the singleton and how to start it.
type Scheduler struct {
	WorkflowID string
	TaskQueue  string
	// Config is the config of a first start; a restart carries its last
	// run's config instead (reconfigure changes it).
	Config workflows.Config
	// KeepAliveEvery is how often a worker makes sure the scheduler runs
	// (0 = every minute).
	KeepAliveEvery time.Duration
	// DataConverter decodes the carried state as the client encoded it (nil:
	// the SDK's default, what Dial's clients use).
	DataConverter converter.DataConverter
	// OnCheck, when set, is told what each keep-alive check found (the
	// worker's metrics; tests).
	OnCheck func(Ensured, error)
	// Stops keeps a deliberate stop where Temporal's retention cannot
	// remove it (nil: only while Temporal holds the stopped run, as in
	// tests without Postgres). See Ensure.
	Stops StopRecord
	// Deployment is the workers' Worker Deployment Version (nil:
	// unversioned workers, as in most tests). See deploy.go.
	Deployment *Deployment
}

func (s Scheduler) withDefaults() Scheduler {
	if s.WorkflowID == "" {
		s.WorkflowID = workflows.DefaultWorkflowID
	}
	if s.TaskQueue == "" {
		s.TaskQueue = workflows.DefaultTaskQueue
	}
	if s.KeepAliveEvery <= 0 {
		s.KeepAliveEvery = time.Minute
	}
	if s.DataConverter == nil {
		s.DataConverter = converter.GetDefaultDataConverter()
	}
	return s
}

// KeepRunning ensures the scheduler runs now and again every
// s.KeepAliveEvery until ctx ends (SPEC §3.5): a missing scheduler is
// created, one that closed without being stopped (terminated, failed, timed
// out) is started again carrying its last state, and one stopped on purpose
// is left stopped until an operator starts it.
func KeepRunning(ctx context.Context, c client.Client, s Scheduler, log *zap.Logger) {
	s = s.withDefaults()
	var leftStopped string // the stopped run already logged
	ensure := func() {
		e, err := Ensure(ctx, c, s, KeepAlive)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				log.Error("scheduler.ensure_failed", zap.String("workflowId", s.WorkflowID), zap.Error(err))
			}
		case e.Stopped != nil && leftStopped != e.RunID:
			leftStopped = e.RunID
			log.Info("scheduler.left_stopped", zap.String("workflowId", s.WorkflowID), zap.String("runId", e.RunID),
				zap.String("reason", e.Stopped.Reason), zap.Time("stoppedAt", e.Stopped.StoppedAt),
				zap.String("hint", "stopped on purpose: workers leave it stopped; pacer start starts it with its state"))
		case e.Restart != nil:
			logRestart(log, s.WorkflowID, e)
		case e.Started:
			log.Info("scheduler.ensured", zap.String("workflowId", s.WorkflowID), zap.String("runId", e.RunID))
		case e.Task.Failing():
			// The run is open but makes no progress: the keep-alive's
			// description is the one place that sees it (the status query
			// needs a workflow task too).
			log.Error("scheduler.workflow_task_failing", zap.String("workflowId", s.WorkflowID), zap.String("runId", e.RunID),
				zap.Int32("attempt", e.Task.Attempt), zap.Timep("since", e.Task.Since), zap.String("version", e.Task.Version),
				zap.String("hint", "a workflow task that keeps failing is a nondeterminism error or a panic: see the worker logs and "+
					"the Web UI; roll back with pacer deploy promote --build-id <previous>"))
		}
		if err == nil && e.Stopped == nil {
			handOff(ctx, c, s, e, log)
		}
		if s.OnCheck != nil {
			s.OnCheck(e, err)
		}
	}
	ensure()
	t := time.NewTicker(s.KeepAliveEvery)
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

// logRestart says that a closed scheduler was started again and from when
// its state dates.
func logRestart(log *zap.Logger, id string, e Ensured) {
	fields := []zap.Field{zap.String("workflowId", id), zap.String("runId", e.RunID),
		zap.String("after", e.Restart.After), zap.String("previousRunId", e.Restart.RunID),
		zap.Time("stateFrom", e.Restart.StateFrom)}
	if e.Restart.OperatorStateFrom != nil {
		fields = append(fields, zap.Time("pauseAndBreakersFrom", *e.Restart.OperatorStateFrom))
	}
	log.Warn("scheduler.restarted", fields...)
}

// New builds a worker for the scheduler's task queue with every workflow and
// activity registered.
func New(c client.Client, taskQueue string, acts *activities.Activities) sdkworker.Worker {
	return NewVersioned(c, taskQueue, acts, nil)
}

// NewVersioned is New for workers of Worker Deployment Version d (nil:
// unversioned).
func NewVersioned(c client.Client, taskQueue string, acts *activities.Activities, d *Deployment) sdkworker.Worker {
	if taskQueue == "" {
		taskQueue = workflows.DefaultTaskQueue
	}
	w := sdkworker.New(c, taskQueue, sdkworker.Options{
		DeploymentOptions: deploymentOptions(d),
		// On SIGTERM retryOnStop hands in-flight activities back at once;
		// StopTimeout bounds how long their reports and the workflow tasks
		// in flight may take.
		WorkerStopTimeout: StopTimeout,
		Interceptors:      []interceptor.WorkerInterceptor{&retryOnStop{}},
	})
	Register(w, acts)
	return w
}

// StopTimeout is how long a stopping worker waits for its in-flight tasks
// (its activities are handed back as the stop begins, retryOnStop). A
// process manager must wait longer than this between SIGTERM and SIGKILL
// (docker compose's stop_grace_period, Kubernetes'
// terminationGracePeriodSeconds).
const StopTimeout = 30 * time.Second

// handBackRetryDelay is how long Temporal waits before it retries an
// attempt a stopping worker handed back (the error's NextRetryDelay, in
// place of the retry policy's 5 s and more): the attempt did not fail, and
// another worker is there to take it.
const handBackRetryDelay = time.Second

// errHandedBack is the cancellation cause of an activity that retryOnStop cut
// short.
var errHandedBack = errors.New("worker stopping: activity handed back")

// retryOnStop hands an activity running when its worker begins to stop back
// to Temporal, at once, for another worker. Left alone, the SDK would let it
// run for StopTimeout and then cancel its context: the deploy would stall
// what the activity does for that long, the activity would fail with
// whatever class a cancellation looks like (a non-retryable timeout),
// recording a failed run for a task that did not fail, and a process
// manager that does not wait so long kills the worker before it reports,
// leaving the attempt to its heartbeat timeout (issue 41.4: 105 s from
// SIGTERM to the next sweep). Instead the activity's context is cancelled as
// the stop begins, and whatever error the activity ends with while its
// worker stops, whichever cancellation reached it first (this one, the
// SDK's, a heartbeat's), becomes a retryable transport error retried after
// handBackRetryDelay: Temporal retries it on another worker and a sweep
// resumes there from the heartbeat it recorded on its way out.
type retryOnStop struct {
	interceptor.WorkerInterceptorBase
}

func (r *retryOnStop) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	i := &retryOnStopActivity{}
	i.Next = next
	return i
}

type retryOnStopActivity struct {
	interceptor.ActivityInboundInterceptorBase
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
		case <-stopping:
			cancel(errHandedBack)
		}
	}()

	out, err := a.Next.ExecuteActivity(ctx, in)
	if err != nil && closed(stopping) {
		// A new error, not a wrap: Temporal reads the outermost error only.
		// Benign: a worker stopping on purpose is normal operation, so the
		// SDK logs it at debug rather than as an error with a stack trace.
		return out, temporal.NewApplicationErrorWithOptions("worker stopped mid-run; retried on another worker",
			string(pacer.ClassTransport), temporal.ApplicationErrorOptions{Category: temporal.ApplicationErrorCategoryBenign,
				NextRetryDelay: handBackRetryDelay})
	}
	return out, err
}

// closed says whether c is closed, without waiting.
func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Register registers pacer's workflows and activities on r.
func Register(r sdkworker.Registry, acts *activities.Activities) {
	registerScheduler(r)
	activities.Register(r, acts)
}

// Run runs a worker and the keep-alive loop until ctx ends, then stops the
// worker gracefully.
func Run(ctx context.Context, c client.Client, s Scheduler, acts *activities.Activities, log *zap.Logger) error {
	s = s.withDefaults()
	w := NewVersioned(c, s.TaskQueue, acts, s.Deployment)
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	defer w.Stop()
	fields := []zap.Field{zap.String("taskQueue", s.TaskQueue), zap.String("workflowId", s.WorkflowID)}
	if s.Deployment != nil {
		fields = append(fields, zap.String("version", s.Deployment.Version()))
		go promoteIfNone(ctx, c, *s.Deployment, log)
	}
	log.Info("worker.started", fields...)
	if note := CostNote(s.Config); note != "" {
		log.Warn("scheduler.short_cadence", zap.String("cost", note),
			zap.String("hint", "fine for staging or adaptive tasks; every run is billed on Temporal Cloud"))
	}
	KeepRunning(ctx, c, s, log)
	log.Info("worker.stopping")
	return nil
}

// MemoSizeWarning is the memo size past which pacer's Temporal clients
// log the SDK's TMPRL1103 warning (Dial). The SDK's default, 2 KiB, is the
// server's own warning level; the scheduler's status memo alone weighs
// about 3.5 KiB gzipped, so every status change would log one. The server
// refuses a memo only past limit.memoSize.error (2 MiB by default), so
// 16 KiB still warns of a document that grows out of hand.
const MemoSizeWarning = 16 << 10

// MemoSize is a memo's size as the SDK and the server weigh it: each
// field's name and its payload's data.
func MemoSize(fields map[string]*commonpb.Payload) int {
	n := 0
	for k, p := range fields {
		n += len(k) + len(p.GetData())
	}
	return n
}

// CostNote says what the cadences under a minute of cfg (over this
// build's defaults) cost in Temporal actions a day (a timer and an
// activity a run, at the least); empty when none is that short. The worker
// logs it at start and pacer reconfigure prints it: short cadences are
// legitimate (staging, adaptive tasks) but every run is billed on Temporal
// Cloud.
func CostNote(cfg workflows.Config) string {
	d := workflows.CodeDefaults()
	every := map[string]pacer.Duration{pacer.TaskTenero: cmp.Or(cfg.TeneroEvery, d.TeneroEvery), pacer.TaskSweep: cmp.Or(cfg.SweepEvery, d.SweepEvery)}
	var notes []string
	for _, task := range []string{pacer.TaskTenero, pacer.TaskSweep, pacer.TaskRollup} {
		e := time.Duration(every[task])
		if spec, ok := cfg.Schedules[task]; ok {
			e = spec.Every // a cron spec: 0
		}
		if e > 0 && e < time.Minute {
			runs := float64(24*time.Hour) / float64(e)
			notes = append(notes, fmt.Sprintf("%s every %s: up to %.0f runs and %.0f Temporal actions a day", task, e, runs, 2*runs))
		}
	}
	return strings.Join(notes, "; ")
}
