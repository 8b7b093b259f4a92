package activities

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/fault"
	"github.com/pacer-dev/pacer/internal/registry"
	"github.com/pacer-dev/pacer/internal/store"
)

// errNoRegistry: the task runs only with PACER_REGISTRY_URL set.
var errNoRegistry = errors.New("PACER_REGISTRY_URL is not set")

// RegistryReadKey holds the last complete read's time and counts
// (competition_state), which the operator's page shows.
const RegistryReadKey = "registry_last_read"

// ActorRegistry is the audit log's actor of what a registry read changed.
const ActorRegistry = "registry"

// Registry reads the competition's registry (SPEC §12) and makes the
// agents table what it lists: new and changed agents and claims written,
// agents it no longer lists deregistered, those listed again restored, in
// one transaction with its audit entry; a registration or a claim change
// makes the agent due for a visit at once (the tables' triggers). Every
// page is asked with its own ETag; a read whose every page answered 304
// changes nothing. A read that would deregister more than
// PACER_REGISTRY_MAX_DROP of the registered agents, or lists nobody, is
// held: nothing written, the run failed as permanent with the reason,
// pacer_registry_held_agents set, until an operator confirms it (pacer
// registry confirm).
func (a *Activities) Registry(ctx context.Context, in pacer.RegistryInput) (pacer.RegistryResult, error) {
	return ledgered(ctx, a, in.Occurrence, func(ctx context.Context) (pacer.RegistryResult, error) {
		return a.registry(ctx)
	})
}

func (a *Activities) registry(ctx context.Context) (pacer.RegistryResult, error) {
	started := time.Now()
	res := pacer.RegistryResult{Run: pacer.Run{StartedAt: started.UTC()}}
	log := a.Logger.With(zap.String("task", pacer.TaskRegistry))
	fail := func(err error) (pacer.RegistryResult, error) {
		class := fault.ClassOf(err)
		res.DurationMs = time.Since(started).Milliseconds()
		res.ErrorClass, res.Error = class, err.Error()
		res.RateLimited = class == pacer.ClassRateLimit
		if res.RateLimited {
			res.RateLimitBackoffMs = fault.MinuteQuotaBackoff.Milliseconds()
		}
		log.Warn("registry.failed", zap.String("class", string(class)), zap.Error(err))
		return res, runError(class, err.Error(), res)
	}
	if a.RegistryClient == nil {
		return fail(&fault.Error{Class: pacer.ClassPermanent, Op: "registry", Err: errNoRegistry})
	}
	prev, err := a.Store.RegistryPages(ctx)
	if err != nil {
		return fail(err)
	}
	// A page at a time: a read of many pages, or of a slow registry,
	// outlasts the heartbeat timeout and is alive as long as pages come.
	read, err := a.RegistryClient.Read(ctx, prev, func(pages int) { recordProgress(ctx, pages) })
	res.Pages, res.Requests = len(read.Pages), read.Requests
	if err != nil {
		return fail(err)
	}
	res.NotModified, res.Agents = read.NotModified, len(read.Agents)
	if read.NotModified {
		// What was applied last is what the registry lists: a read held
		// since is no longer proposed.
		if err := a.Store.ClearRegistryHold(ctx); err != nil {
			return fail(err)
		}
	} else {
		change, err := a.Store.ApplyAgents(ctx, store.ApplyAgents{Agents: read.Agents, Replace: true, Pages: read.Pages,
			Guard:  &store.DropGuard{MaxShare: a.RegistryMaxDrop},
			Change: store.Change{At: time.Now().UTC(), Actor: ActorRegistry, Action: store.ActionRegistryRead}})
		var bad *registry.RecordError
		var held *store.DropHeld
		switch {
		case errors.As(err, &held):
			return a.registryHeld(ctx, log, held, fail)
		case errors.As(err, &bad):
			return fail(&fault.Error{Class: pacer.ClassParseError, Op: "registry apply", Err: err})
		case err != nil:
			return fail(err)
		}
		res.Added, res.Updated, res.Restored, res.Deregistered = len(change.Added), len(change.Updated),
			len(change.Restored), len(change.Deregistered)
		res.Claims = len(change.ClaimsAdded) + len(change.ClaimsUpdated)
		if change.Confirmed != "" {
			log.Warn("registry.confirmed_read_applied", zap.String("digest", change.Confirmed),
				zap.Int("deregistered", res.Deregistered))
		}
	}
	a.Metrics.RegistryHeld(0)
	res.DurationMs = time.Since(started).Milliseconds()
	doc, err := json.Marshal(res)
	if err != nil {
		return fail(err)
	}
	if err := a.Store.SetState(ctx, RegistryReadKey, string(doc)); err != nil {
		return fail(err)
	}
	log.Info("registry.read", zap.Bool("notModified", res.NotModified), zap.Int("agents", res.Agents),
		zap.Int("added", res.Added), zap.Int("deregistered", res.Deregistered))
	return res, nil
}

// registryHeld ends a run whose read was held: the hold recorded for the
// operator, the gauge set, a log line with the reason, and the run failed
// as permanent (it keeps failing until someone acts) with that reason,
// which the status shows as the task's last error.
func (a *Activities) registryHeld(ctx context.Context, log *zap.Logger, held *store.DropHeld,
	fail func(error) (pacer.RegistryResult, error)) (pacer.RegistryResult, error) {
	a.Metrics.RegistryHeld(held.Deregister)
	log.Error("registry.read_held", zap.Int("listed", held.Listed), zap.Int("registered", held.Registered),
		zap.Int("wouldDeregister", held.Deregister), zap.Float64("maxShare", held.MaxShare),
		zap.String("digest", held.Digest), zap.Strings("sample", held.Sample),
		zap.String("hint", "pacer registry shows the held read; pacer registry confirm "+held.Digest+" applies it"))
	if err := a.Store.RecordRegistryHold(ctx, *held); err != nil {
		return fail(err)
	}
	return fail(&fault.Error{Class: pacer.ClassPermanent, Op: "registry apply", Err: held})
}
