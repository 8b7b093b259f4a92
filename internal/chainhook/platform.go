package chainhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/pacer-dev/pacer/internal/catalog"
)

// DefaultPlatformURL is PACER_CHAINHOOK_API_URL's default (SPEC §11): the
// Chainhooks platform API, whose routes live under /me/.
const DefaultPlatformURL = "https://api.hiro.so/chainhooks"

// Hook statuses the platform reports (status.status).
const (
	HookNew         = "new"
	HookStreaming   = "streaming"
	HookInterrupted = "interrupted"
	HookExpired     = "expired"
)

// Platform is a client of Hiro's Chainhooks platform API, the routes
// Hiro documents for the hosted Chainhooks 2.0: GET and POST /me/, GET and
// PATCH /me/{uuid}, PATCH /me/{uuid}/enabled, POST /me/{uuid}/evaluate,
// each with the account's key in x-api-key.
type Platform struct {
	BaseURL string
	APIKey  string
	// HTTP is the client; nil means one with a 30-second timeout.
	HTTP *http.Client
}

// Definition is a hook's definition as the platform keeps it.
type Definition struct {
	Name    string    `json:"name"`
	Version string    `json:"version"`
	Chain   string    `json:"chain"`
	Network string    `json:"network"`
	Filters v2Filters `json:"filters"`
	Action  v2Action  `json:"action"`
	Options v2Options `json:"options"`
}

// HookStatus is a hook's state on the platform.
type HookStatus struct {
	Status                   string `json:"status"`
	Enabled                  bool   `json:"enabled"`
	LastEvaluatedBlockHeight *int64 `json:"last_evaluated_block_height"`
	LastEvaluatedAt          *int64 `json:"last_evaluated_at"`
	LastOccurrenceAt         *int64 `json:"last_occurrence_at"`
}

// Hook is one hook on the platform.
type Hook struct {
	UUID       string     `json:"uuid"`
	Definition Definition `json:"definition"`
	Status     HookStatus `json:"status"`
}

// PlatformError is an answer of the platform other than a success.
type PlatformError struct {
	Op     string
	Status int
	Body   string
}

func (e *PlatformError) Error() string {
	return fmt.Sprintf("chainhooks platform %s: HTTP %d: %s", e.Op, e.Status, e.Body)
}

func (p *Platform) do(ctx context.Context, method, path string, body, out any) error {
	op := method + " " + path
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("chainhooks platform %s: %w", op, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(p.BaseURL, "/")+path, rd)
	if err != nil {
		return fmt.Errorf("chainhooks platform %s: %w", op, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if p.APIKey != "" {
		req.Header.Set("x-api-key", p.APIKey)
	}
	client := p.HTTP
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("chainhooks platform %s: %w", op, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("chainhooks platform %s: %w", op, err)
	}
	if resp.StatusCode >= 300 {
		return &PlatformError{Op: op, Status: resp.StatusCode, Body: string(raw[:min(len(raw), 300)])}
	}
	if out == nil || resp.StatusCode == http.StatusNoContent || len(raw) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("chainhooks platform %s: %w", op, err)
	}
	return nil
}

// Hooks lists the account's hooks, every page.
func (p *Platform) Hooks(ctx context.Context) ([]Hook, error) {
	const limit = 60
	var all []Hook
	for offset := 0; ; offset += limit {
		var page struct {
			Total   int    `json:"total"`
			Results []Hook `json:"results"`
		}
		q := url.Values{"limit": {fmt.Sprint(limit)}, "offset": {fmt.Sprint(offset)}}
		if err := p.do(ctx, http.MethodGet, "/me/?"+q.Encode(), nil, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Results...)
		if len(page.Results) < limit || len(all) >= page.Total {
			return all, nil
		}
	}
}

// Create registers a hook.
func (p *Platform) Create(ctx context.Context, d Definition) (Hook, error) {
	var h Hook
	err := p.do(ctx, http.MethodPost, "/me/", d, &h)
	return h, err
}

// Update replaces a hook's name, filters, action and options.
func (p *Platform) Update(ctx context.Context, uuid string, d Definition) error {
	return p.do(ctx, http.MethodPatch, "/me/"+url.PathEscape(uuid), d, nil)
}

// Enable enables a hook.
func (p *Platform) Enable(ctx context.Context, uuid string) error {
	return p.do(ctx, http.MethodPatch, "/me/"+url.PathEscape(uuid)+"/enabled", map[string]bool{"enabled": true}, nil)
}

// Evaluate asks the platform to evaluate one block against a hook; what
// matches is delivered as any block is.
func (p *Platform) Evaluate(ctx context.Context, uuid string, height int64) error {
	return p.do(ctx, http.MethodPost, "/me/"+url.PathEscape(uuid)+"/evaluate", map[string]int64{"block_height": height}, nil)
}

// HookName is the one hook pacer keeps on a network.
func HookName(network string) string { return "pacer-" + network + "-swaps" }

// HookDefinition is the hook pacer keeps: a contract_call filter for every
// allowlisted pair, delivered to endpoint.
func HookDefinition(network, endpoint string, pairs []catalog.Pair) (Definition, error) {
	if _, err := Spec(SpecOptions{Endpoint: endpoint, Pairs: pairs, Network: network}); err != nil {
		return Definition{}, err
	}
	d := specV2(SpecOptions{Endpoint: endpoint, Pairs: pairs, Network: network})
	return Definition{Name: HookName(network), Version: d.Version, Chain: d.Chain, Network: d.Network,
		Filters: d.Filters, Action: d.Action, Options: d.Options}, nil
}

// EnsureOptions are what keeping the hook needs.
type EnsureOptions struct {
	Network  string
	Endpoint string
	Pairs    []catalog.Pair
	// Tip is the chain's height now (0: unknown, nothing replayed);
	// ReplayMax the longest gap replayed with evaluate.
	Tip       int64
	ReplayMax int64
	// DryRun says what would be done and does nothing.
	DryRun bool
}

// Actions of Ensure, the first that applied.
const (
	ActionCreated = "created"
	ActionUpdated = "updated"
	ActionEnabled = "enabled"
	ActionNone    = "none"
)

// EnsureResult is what Ensure found and did.
type EnsureResult struct {
	Action string
	UUID   string
	// Status and Enabled are the hook's as found (before any change).
	Status  string
	Enabled bool
	// LastEvaluated is the hook's last evaluated block, 0 when unknown;
	// Lag how far it is behind Tip.
	LastEvaluated int64
	Lag           int64
	// Replayed counts the blocks evaluated again; Steps says what was
	// (or, dry, would be) done, for people.
	Replayed int
	Steps    []string
}

// Ensure keeps one hook named HookName(network) in step with the
// allowlist (SPEC §11): created when missing, updated when its filters or
// action differ, enabled when paused or interrupted, and its missed
// blocks replayed with evaluate, one call a block, when the gap is at
// most ReplayMax (a longer one is the readers'). A gap is certain when
// the hook was found paused or interrupted; a streaming hook is replayed
// only past two blocks behind, the time a delivery takes. Run twice, it
// changes nothing the second time.
func Ensure(ctx context.Context, p *Platform, o EnsureOptions) (EnsureResult, error) {
	want, err := HookDefinition(o.Network, o.Endpoint, o.Pairs)
	if err != nil {
		return EnsureResult{}, err
	}
	hooks, err := p.Hooks(ctx)
	if err != nil {
		return EnsureResult{}, err
	}
	res := EnsureResult{Action: ActionNone}
	i := slices.IndexFunc(hooks, func(h Hook) bool { return h.Definition.Name == want.Name })
	if i < 0 {
		res.Action = ActionCreated
		res.Steps = append(res.Steps, "create "+want.Name)
		if o.DryRun {
			return res, nil
		}
		h, err := p.Create(ctx, want)
		if err != nil {
			return res, err
		}
		res.UUID, res.Status, res.Enabled = h.UUID, h.Status.Status, h.Status.Enabled
		return res, nil
	}
	h := hooks[i]
	res.UUID, res.Status, res.Enabled = h.UUID, h.Status.Status, h.Status.Enabled
	if !sameHook(h.Definition, want) {
		res.Action = ActionUpdated
		res.Steps = append(res.Steps, "update "+h.UUID+": filters or action differ from the allowlist's")
		if !o.DryRun {
			if err := p.Update(ctx, h.UUID, want); err != nil {
				return res, err
			}
		}
	}
	paused := !h.Status.Enabled || h.Status.Status == HookInterrupted
	if paused {
		if res.Action == ActionNone {
			res.Action = ActionEnabled
		}
		res.Steps = append(res.Steps, fmt.Sprintf("enable %s (status %s, enabled %t)", h.UUID, h.Status.Status, h.Status.Enabled))
		if !o.DryRun {
			if err := p.Enable(ctx, h.UUID); err != nil {
				return res, err
			}
		}
	}
	if last := h.Status.LastEvaluatedBlockHeight; last != nil && o.Tip > 0 {
		res.LastEvaluated = *last
		res.Lag = max(0, o.Tip-*last)
	}
	switch {
	case res.Lag == 0 || (!paused && res.Lag <= 2):
	case res.Lag > o.ReplayMax:
		res.Steps = append(res.Steps, fmt.Sprintf("leave %d missed blocks to the readers (more than %d)", res.Lag, o.ReplayMax))
	default:
		res.Steps = append(res.Steps, fmt.Sprintf("evaluate blocks %d to %d", res.LastEvaluated+1, o.Tip))
		if o.DryRun {
			break
		}
		for height := res.LastEvaluated + 1; height <= o.Tip; height++ {
			if err := p.Evaluate(ctx, h.UUID, height); err != nil {
				return res, err
			}
			res.Replayed++
		}
	}
	return res, nil
}

// sameHook says whether the platform's definition does what want asks:
// the same filters (in any order) and the same action.
func sameHook(got, want Definition) bool {
	if got.Action != want.Action || got.Network != want.Network || len(got.Filters.Events) != len(want.Filters.Events) {
		return false
	}
	key := func(e v2Event) string { return e.Type + " " + e.ContractIdentifier + " " + e.FunctionName }
	a, b := make([]string, 0, len(got.Filters.Events)), make([]string, 0, len(want.Filters.Events))
	for i := range got.Filters.Events {
		a, b = append(a, key(got.Filters.Events[i])), append(b, key(want.Filters.Events[i]))
	}
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// IsNotFound says the platform answered 404.
func IsNotFound(err error) bool {
	var pe *PlatformError
	return errors.As(err, &pe) && pe.Status == http.StatusNotFound
}
