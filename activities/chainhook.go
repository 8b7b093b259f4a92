package activities

import (
	"context"
	"errors"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/chainhook"
	"github.com/pacer-dev/pacer/internal/fault"
	"github.com/pacer-dev/pacer/internal/hiro"
)

// ChainhookConfig is what the chainhook task keeps pacer's hook with
// (SPEC §11).
type ChainhookConfig struct {
	// APIURL is PACER_CHAINHOOK_API_URL; APIKey is HIRO_API_KEY.
	APIURL, APIKey string
	// PublicURL is PACER_PUBLIC_URL: where Hiro reaches pacer's API
	// (/api/chainhook is added).
	PublicURL string
	// Network is mainnet or testnet.
	Network string
	// ReplayMax is PACER_CHAINHOOK_REPLAY_MAX (0 = 30).
	ReplayMax int64
}

// DefaultChainhookReplayMax is PACER_CHAINHOOK_REPLAY_MAX's default.
const DefaultChainhookReplayMax = 30

// ChainhookPath is where pacer's API takes deliveries.
const ChainhookPath = "/api/chainhook"

// errNoPublicURL ends a run that has nowhere to point the hook.
var errNoPublicURL = errors.New("PACER_PUBLIC_URL is not set: the hook needs pacer's address as Hiro reaches it")

// EnsureChainhook keeps the hook once (the task's run and `pacer chainhook
// ensure` alike): tip is the chain's height (0: unknown, nothing
// replayed).
func (c ChainhookConfig) EnsureChainhook(ctx context.Context, cat chainhookPairs, tip int64, dryRun bool) (chainhook.EnsureResult, error) {
	if c.PublicURL == "" {
		return chainhook.EnsureResult{}, errNoPublicURL
	}
	replay := c.ReplayMax
	if replay <= 0 {
		replay = DefaultChainhookReplayMax
	}
	base := c.APIURL
	if base == "" {
		base = chainhook.DefaultPlatformURL
	}
	network := c.Network
	if network == "" {
		network = "mainnet"
	}
	p := &chainhook.Platform{BaseURL: base, APIKey: c.APIKey}
	return chainhook.Ensure(ctx, p, chainhook.EnsureOptions{Network: network, Endpoint: trimSlash(c.PublicURL) + ChainhookPath,
		Pairs: cat.Pairs(), Tip: tip, ReplayMax: replay, DryRun: dryRun})
}

func trimSlash(s string) string {
	for len(s) > 0 && s[len(s)-1] == '/' {
		s = s[:len(s)-1]
	}
	return s
}

// ChainTip is the chain's height as Hiro's feed shows it: its newest mined
// contract call's block (one request). 0 when the feed shows none.
func ChainTip(ctx context.Context, h *hiro.Client) (int64, error) {
	page, err := h.Feed(ctx, hiro.TxTypeContractCall, 0)
	if err != nil {
		return 0, err
	}
	var tip int64
	for _, e := range page.Entries {
		tip = max(tip, e.BlockHeight)
	}
	return tip, nil
}

// Chainhook is the chainhook task (SPEC §11): one hook on Hiro's platform
// in step with the allowlist, enabled, its short gaps replayed.
func (a *Activities) Chainhook(ctx context.Context, in pacer.ChainhookInput) (pacer.ChainhookResult, error) {
	return ledgered(ctx, a, in.Occurrence, a.chainhook)
}

func (a *Activities) chainhook(ctx context.Context) (pacer.ChainhookResult, error) {
	started := time.Now()
	res := pacer.ChainhookResult{Run: pacer.Run{StartedAt: started.UTC()}, Action: chainhook.ActionNone}
	log := a.Logger.With(zap.String("task", pacer.TaskChainhook))
	if last, _, found, err := a.Store.ChainhookState(ctx); err == nil && found {
		at := last.UTC()
		res.LastDeliveryAt = &at
	}
	tip, err := ChainTip(ctx, a.Hiro)
	if err != nil {
		// Without the tip the hook is still kept; nothing is replayed.
		log.Warn("chainhook.tip_failed", zap.Error(err))
	}
	er, err := a.Hook.EnsureChainhook(ctx, a.Catalog, tip, false)
	res.Action, res.HookUUID, res.HookStatus, res.LagBlocks, res.Replayed = er.Action, er.UUID, er.Status, er.Lag, er.Replayed
	res.DurationMs = time.Since(started).Milliseconds()
	if err != nil {
		class := platformClass(err)
		res.ErrorClass, res.Error = class, err.Error()
		res.RateLimited = class == pacer.ClassRateLimit
		if res.RateLimited {
			res.RateLimitBackoffMs = fault.MinuteQuotaBackoff.Milliseconds()
		}
		log.Warn("chainhook.failed", zap.String("class", string(class)), zap.Error(err))
		return res, runError(class, err.Error(), res)
	}
	log.Info("chainhook.kept", zap.String("action", er.Action), zap.String("uuid", er.UUID), zap.String("status", er.Status),
		zap.Int64("lag", er.Lag), zap.Int("replayed", er.Replayed), zap.Strings("steps", er.Steps))
	return res, nil
}

// platformClass is the error class of a platform failure.
func platformClass(err error) pacer.ErrorClass {
	var pe *chainhook.PlatformError
	switch {
	case errors.Is(err, errNoPublicURL):
		return pacer.ClassPermanent
	case !errors.As(err, &pe):
		return pacer.ClassTransport
	case pe.Status == http.StatusTooManyRequests:
		return pacer.ClassRateLimit
	case pe.Status == http.StatusUnauthorized || pe.Status == http.StatusForbidden:
		return pacer.ClassPermanent
	case pe.Status >= 500:
		return pacer.ClassServerError
	}
	return pacer.ClassParseError
}

// chainhookPairs is the allowlist the hook filters on (*catalog.Catalog).
type chainhookPairs interface {
	Pairs() []catalog.Pair
}
