package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"

	"github.com/pacer-dev/pacer/internal/logging"
	"github.com/pacer-dev/pacer/internal/operate"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

func newDeployCmd(c *config) *cobra.Command {
	return groupCmd("deploy", "Worker Deployment Versions: which build runs the scheduler, and promoting another",
		newDeployStatusCmd(c), newDeployPromoteCmd(c), newDeployCheckCmd(c))
}

func newDeployStatusCmd(c *config) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [--json]",
		Short: "Show the deployment's current version and the version the scheduler runs on",
		Args:  wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.withClient(cmd.Context(), func(tc client.Client) error {
				cur, err := worker.CurrentVersion(cmd.Context(), tc, c.operating.deploymentName)
				if err != nil {
					return err
				}
				e, err := worker.Ensure(cmd.Context(), tc, c.scheduler(), worker.Inspect)
				if err != nil {
					return err
				}
				out := struct {
					Current             string `json:"currentVersion"`
					This                string `json:"thisBuild"`
					Scheduler           string `json:"schedulerVersion"`
					Behavior            string `json:"schedulerBehavior"`
					WorkflowTaskAttempt int32  `json:"workflowTaskAttempt"`
					WorkflowTaskFailing bool   `json:"workflowTaskFailing"`
				}{cur, c.operating.deploymentName + "." + c.operating.buildID, e.Task.Version, e.Task.Behavior,
					e.Task.Attempt, e.Task.Failing()}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), out)
				}
				w := cmd.OutOrStdout()
				fmt.Fprintf(w, "current version:   %s\n", orDash(out.Current))
				fmt.Fprintf(w, "this build:        %s\n", out.This)
				fmt.Fprintf(w, "scheduler runs on: %s (%s)\n", orDash(out.Scheduler), orDash(out.Behavior))
				if out.WorkflowTaskFailing {
					fmt.Fprintf(w, "its workflow tasks FAIL (attempt %d)\n", out.WorkflowTaskAttempt)
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func newDeployPromoteCmd(c *config) *cobra.Command {
	return &cobra.Command{
		Use:   "promote",
		Short: "Make --build-id (default: this build) the current version and move the scheduler to it",
		Long: `promote makes a build the deployment's current version and moves the
scheduler to it: the run stops at an idle moment and a new one starts on the
new build carrying its state, so no run ever replays on a build that did not
write it (should this command fail to, the new build's workers do it at their
next keep-alive check, within a minute). Roll back by promoting the previous
build ID; its workers must be running.`,
		Args: wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !worker.NamesBuild(c.operating.buildID) {
				return usagef("--build-id %q names no build: give the build ID its workers registered under (pacer deploy status)", c.operating.buildID)
			}
			return c.withService(cmd, true, func(ctx context.Context, svc *operate.Service) error {
				p, err := svc.Promote(ctx, c.operating.deploymentName, c.operating.buildID)
				if err != nil {
					return err
				}
				tc, to := svc.Temporal, p.To
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "current version: %s (was %s)\n", to, orDash(p.From))
				// Move the scheduler now rather than at the new build's next
				// keep-alive check (which does the same if this fails).
				s := c.scheduler()
				s.Deployment = &worker.Deployment{Name: c.operating.deploymentName, BuildID: c.operating.buildID}
				// Why a move waits (or ends a run) goes to stderr.
				log, lerr := logging.New(logging.Options{Level: "warn", Format: "console"})
				if lerr != nil {
					log = zap.NewNop()
				}
				moved, err := worker.HandOff(cmd.Context(), tc, s, log)
				switch {
				case err != nil:
					fmt.Fprintf(out, "the scheduler moves at the new build's next keep-alive check (%v)\n", err)
				case moved:
					fmt.Fprintf(out, "the scheduler now runs on %s\n", to)
				default:
					fmt.Fprintf(out, "the scheduler already runs on %s, or is not running\n", to)
				}
				return nil
			})
		},
	}
}

func newDeployCheckCmd(c *config) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check [--json]",
		Short: "Read the revision of the scheduler's open run; fail when it is below this build's floor",
		Long: `check reads the revision the scheduler's open run recorded (the version
marker of change ID scheduler in its history) and compares it with what this
build replays: from its floor to its current revision. It exits 1 when the
running revision is below the floor: raise a floor only once check passes on
the build that raises it (SPEC §3.7).`,
		Args: wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.withClient(cmd.Context(), func(tc client.Client) error {
				r, err := worker.RunningRevision(cmd.Context(), tc, c.scheduler())
				if err != nil {
					return err
				}
				out := struct {
					WorkflowID string `json:"workflowId"`
					Open       bool   `json:"open"`
					RunID      string `json:"runId,omitempty"`
					ChangeID   string `json:"changeId"`
					Revision   *int   `json:"revision"`
					Floor      int    `json:"floor"`
					Current    int    `json:"current"`
				}{WorkflowID: c.workflowID, Open: r.Open, ChangeID: workflows.ChangeID,
					Floor: int(workflows.RevisionFloor), Current: int(workflows.RevisionCurrent)}
				if r.Open {
					out.RunID = r.RunID
					rev := int(r.Revision)
					out.Revision = &rev
				}
				w := cmd.OutOrStdout()
				if asJSON {
					if err := printJSON(w, out); err != nil {
						return err
					}
				} else {
					fmt.Fprintf(w, "this build:  revisions %d to %d of change ID %s\n", out.Floor, out.Current, out.ChangeID)
					switch {
					case !r.Open:
						fmt.Fprintf(w, "scheduler %s: no open run\n", c.workflowID)
					case r.Revision == workflow.DefaultVersion:
						fmt.Fprintf(w, "scheduler %s: run %s recorded no revision (older than change ID %s)\n", c.workflowID, r.RunID, out.ChangeID)
					default:
						fmt.Fprintf(w, "scheduler %s: run %s at revision %d\n", c.workflowID, r.RunID, r.Revision)
					}
				}
				switch {
				case r.Open && r.Revision < workflows.RevisionFloor:
					return fmt.Errorf("the open run's revision %d is below this build's floor %d: this build cannot replay it; "+
						"let it continue as new on a build that runs revision %d or later before raising the floor", r.Revision, workflows.RevisionFloor, workflows.RevisionFloor)
				case r.Open && r.Revision > workflows.RevisionCurrent && !asJSON:
					fmt.Fprintf(w, "note: the open run is newer than this build (revision %d > %d): only its own build replays it\n", r.Revision, workflows.RevisionCurrent)
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}
