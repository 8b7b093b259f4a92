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

// Where the registry task keeps what it last read (competition_state).
const (
	registryETagKey = "registry_etag"
	// RegistryReadKey holds the last complete read's time and counts,
	// which the operator's page shows.
	RegistryReadKey = "registry_last_read"
)

// ActorRegistry is the audit log's actor of what a registry read changed.
const ActorRegistry = "registry"

// Registry reads the competition's registry (SPEC §12) and makes the
// agents table what it lists: new and changed agents and claims written,
// agents it no longer lists deregistered, those listed again restored, in
// one transaction with its audit entry; a registration or a claim change
// makes the agent due for a visit at once (the tables' triggers). A read
// answered 304 to the last ETag changes nothing.
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
	etag, _, err := a.Store.GetState(ctx, registryETagKey)
	if err != nil {
		return fail(err)
	}
	read, err := a.RegistryClient.Read(ctx, etag)
	res.Pages = read.Pages
	res.Requests = read.Pages
	if err != nil {
		return fail(err)
	}
	res.NotModified = read.NotModified
	if !read.NotModified {
		change, err := a.Store.ApplyAgents(ctx, store.ApplyAgents{Agents: read.Agents, Replace: true,
			Change: store.Change{At: time.Now().UTC(), Actor: ActorRegistry, Action: store.ActionRegistryRead}})
		var bad *registry.RecordError
		if errors.As(err, &bad) {
			return fail(&fault.Error{Class: pacer.ClassParseError, Op: "registry apply", Err: err})
		}
		if err != nil {
			return fail(err)
		}
		res.Agents = len(read.Agents)
		res.Added, res.Updated, res.Restored, res.Deregistered = len(change.Added), len(change.Updated),
			len(change.Restored), len(change.Deregistered)
		res.Claims = len(change.ClaimsAdded) + len(change.ClaimsUpdated)
		if err := a.Store.SetState(ctx, registryETagKey, read.ETag); err != nil {
			return fail(err)
		}
	}
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
