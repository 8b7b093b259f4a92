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
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
	sdkworker "go.temporal.io/sdk/worker"
	"go.uber.org/zap"

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
}

// Dial connects a Temporal client.
func Dial(ctx context.Context, o DialOptions) (client.Client, error) {
	opts, err := envconfig.LoadClientOptions(envconfig.LoadClientOptionsRequest{})
	if err != nil {
		return nil, fmt.Errorf("temporal config: %w", err)
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
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("dial temporal at %s: %w", opts.HostPort, err)
	}
	return c, nil
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
		StaticDetails: "Keeps rate-limited upstream data fresh: runs the tenero price refresh on its cadence. " +
			"Operate with signals pause/resume/refresh, update refreshNow, query status.",
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
		WorkerStopTimeout: 30 * time.Second,
	})
	Register(w, acts)
	return w
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
