package operate

import (
	"context"
	"errors"
	"time"

	"github.com/pacer-dev/pacer/internal/registry"
	"github.com/pacer-dev/pacer/internal/store"
)

// ImportAgents registers agents from a file or a request (SPEC §12): all
// or nothing, the first bad record named by its line or index and field.
// Dry, it says what would change and writes nothing.
func (s *Service) ImportAgents(ctx context.Context, agents []registry.Agent, lines []int, dryRun bool) (store.RegistryChange, error) {
	out, err := s.Store.ApplyAgents(ctx, store.ApplyAgents{Agents: agents, Lines: lines, DryRun: dryRun,
		Change: s.change(ctx, store.ActionAgentsImport)})
	return out, recordInvalid(err)
}

// ImportClaims files claims from a file or a request, all or nothing.
func (s *Service) ImportClaims(ctx context.Context, claims []registry.Claim, lines []int, dryRun bool) (store.RegistryChange, error) {
	out, err := s.Store.ApplyClaims(ctx, claims, lines, dryRun, s.change(ctx, store.ActionClaimsImport))
	return out, recordInvalid(err)
}

// DeregisterAgent marks an agent deregistered: kept with its swaps, no
// longer visited nor ranked.
func (s *Service) DeregisterAgent(ctx context.Context, stx string) (time.Time, error) {
	if err := registry.CheckAgent(registry.Agent{STXAddress: stx}); err != nil {
		return time.Time{}, &Invalid{Msg: err.Error()}
	}
	return s.Store.DeregisterAgent(ctx, stx, s.change(ctx, store.ActionAgentDeregister))
}

// recordInvalid makes a bad record the caller's error (exit 2, a 400),
// its text naming the record and field.
func recordInvalid(err error) error {
	var re *registry.RecordError
	if errors.As(err, &re) {
		return &Invalid{Msg: re.Error()}
	}
	return err
}

// RegistryHold is the registry read held for an operator's confirmation
// (it would deregister more than PACER_REGISTRY_MAX_DROP of the agents, or
// lists nobody); nil when none is.
func (s *Service) RegistryHold(ctx context.Context) (*store.DropHeld, error) {
	return s.Store.RegistryHold(ctx)
}

// ConfirmRegistryDrop confirms the held registry read, audited: the next
// read that would deregister the same agents is applied (SPEC §12).
// digest, when given, must be the held read's: a registry that answered
// differently since is confirmed only once its new answer is seen.
func (s *Service) ConfirmRegistryDrop(ctx context.Context, digest string) (store.DropHeld, error) {
	h, err := s.Store.ConfirmRegistryDrop(ctx, digest, s.change(ctx, store.ActionRegistryConfirm))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return h, &Invalid{Msg: "no registry read is held for confirmation"}
	case errors.Is(err, store.ErrStaleConfirm):
		return h, &Invalid{Msg: "digest " + digest + " is not the held read's (" + h.Digest + "): pacer registry shows it"}
	}
	return h, err
}
