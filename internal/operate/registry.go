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
