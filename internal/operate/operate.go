// Package operate is what an operator can do to pacer (SPEC §7, §10.2),
// each rule in one place: the CLI's commands and the admin API's handlers
// both call these operations and differ only in how they read their input
// and show the outcome. Every change is recorded in audit_log, in the
// transaction of a database change, or right after a Temporal update
// returns; the actor is read from the context (internal/actor).
package operate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/pacer-dev/pacer/internal/actor"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/rollup"
	"github.com/pacer-dev/pacer/internal/round"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/webhook"
)

// Errors the callers map to their own words: ErrInvalid to a usage error
// (exit 2) or a 400, store.ErrNotFound to a 404, ErrConflict to a 409.
var (
	ErrInvalid  = errors.New("invalid input")
	ErrConflict = errors.New("conflict")
	ErrNotFound = store.ErrNotFound
)

// Invalid is a rejected input: Field names what was wrong (as the API
// spells it), Msg why.
type Invalid struct {
	Field, Msg string
}

func (e *Invalid) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + ": " + e.Msg
}

func (e *Invalid) Unwrap() error { return ErrInvalid }

func invalid(field, format string, args ...any) error {
	return &Invalid{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Defaults of SPEC §10.2.
const (
	DefaultSecretOverlap = 24 * time.Hour
	// Bounds of a subscriber's filters.
	MaxFilterTokens = 100
	MaxFilterAgents = 1000
	// MaxReasonLength bounds an operator's reason.
	MaxReasonLength = 500
)

// Service runs the operations.
type Service struct {
	Store *store.Store
	// Temporal is the client of the schedule actions (nil: they fail).
	Temporal   client.Client
	WorkflowID string
	// SecretOverlap is PACER_SECRET_OVERLAP (0: DefaultSecretOverlap).
	SecretOverlap time.Duration
	// AllowPrivate is PACER_WEBHOOK_ALLOW_PRIVATE: subscriber URLs may
	// name loopback and private hosts (development).
	AllowPrivate bool
	// RoundGrace is PACER_ROUND_GRACE, a round's grace unless it says
	// (0: round.DefaultGrace).
	RoundGrace time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Logger logs what cannot be returned (nil: nothing).
	Logger *zap.Logger
}

func (s *Service) logger() *zap.Logger {
	if s.Logger == nil {
		return zap.NewNop()
	}
	return s.Logger
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

func (s *Service) change(ctx context.Context, action string) store.Change {
	return store.Change{At: s.now(), Actor: actor.From(ctx), Action: action}
}

// Audit actions.
const (
	ActionCreate      = "subscriber.create"
	ActionUpdate      = "subscriber.update"
	ActionDisable     = store.ActionDisable
	ActionEnable      = "subscriber.enable"
	ActionDelete      = "subscriber.delete"
	ActionRotate      = "subscriber.rotate_secret"
	ActionReissuePull = "subscriber.reissue_pull_token"
	ActionRecover     = "deliveries.recover"
	ActionRedeliver   = "delivery.redeliver"
)

// SubscriberInput is a new subscriber.
type SubscriberInput struct {
	URL    string   `json:"url"`
	Events []string `json:"events"`
	// Tokens and Agents filter what deliveries carry; empty means all.
	Tokens []string `json:"tokens"`
	Agents []string `json:"agents"`
}

// CreateSubscriber validates in and registers an active subscriber with a
// fresh id and secret; the result carries the secret, the one time it is
// ever shown. Events default to every event.
func (s *Service) CreateSubscriber(ctx context.Context, in SubscriberInput) (store.Subscriber, error) {
	u, err := s.validURL(in.URL)
	if err != nil {
		return store.Subscriber{}, err
	}
	if in.Events == nil {
		in.Events = rollup.Events
	}
	sub := store.Subscriber{ID: webhook.NewSubscriberID(), URL: u, Secret: webhook.NewSecret(),
		PullToken: webhook.NewPullToken(), Status: store.SubscriberActive, CreatedAt: s.now()}
	if sub.Events, err = validEvents(in.Events); err != nil {
		return store.Subscriber{}, err
	}
	if sub.Tokens, err = validTokens(in.Tokens); err != nil {
		return store.Subscriber{}, err
	}
	if sub.Agents, err = validAgents(in.Agents); err != nil {
		return store.Subscriber{}, err
	}
	if err := s.Store.CreateSubscriber(ctx, sub, s.change(ctx, ActionCreate)); err != nil {
		return store.Subscriber{}, err
	}
	return sub, nil
}

// validURL is the rule for a subscriber's URL, at creation and at every
// change: well formed, and not plainly private unless allowed (the dialer
// checks every connection again, SPEC §10.2).
func (s *Service) validURL(raw string) (string, error) {
	if raw == "" {
		return "", invalid("url", "required")
	}
	u, err := webhook.ValidateURL(raw)
	if err != nil {
		return "", invalid("url", "%v", err)
	}
	if err := webhook.CheckHost(u, s.AllowPrivate); err != nil {
		return "", invalid("url", "%v", err)
	}
	return u, nil
}

func validEvents(events []string) ([]string, error) {
	// round.finalized (SPEC §10.2) only when asked for: it is not a default.
	known := append(slices.Clone(rollup.Events), round.EventFinalized)
	out, err := validList("events", events, len(known), func(e string) bool { return slices.Contains(known, e) })
	if err == nil && len(out) == 0 {
		err = invalid("events", "give hourly, daily, round.finalized or several")
	}
	return out, err
}

func validTokens(tokens []string) ([]string, error) {
	return validList("tokens", tokens, MaxFilterTokens, catalog.ValidTokenID)
}

func validAgents(agents []string) ([]string, error) {
	return validList("agents", agents, MaxFilterAgents, catalog.ValidPrincipal)
}

// validList checks a list: each item valid, repeats dropped, at most limit
// items. Empty is nil (no filter).
func validList(field string, items []string, limit int, valid func(string) bool) ([]string, error) {
	var out []string
	for _, item := range items {
		if !valid(item) {
			return nil, invalid(field, "%q is not valid", clip(item))
		}
		if !slices.Contains(out, item) {
			out = append(out, item)
		}
	}
	if len(out) > limit {
		return nil, invalid(field, "%d items, at most %d", len(out), limit)
	}
	return out, nil
}

func clip(s string) string {
	if r := []rune(s); len(r) > 80 {
		return string(r[:80]) + "…"
	}
	return s
}

// validID checks the shape of a subscriber id before any query.
func validID(id string) error {
	if !webhook.ValidSubscriberID(id) {
		return invalid("id", "%q is not a subscriber id (sub_ and 16 characters)", clip(id))
	}
	return nil
}

// SubscriberPatch changes what a subscriber receives; nil fields are left
// as they are. A pointer to an empty or nil list clears a filter (all).
type SubscriberPatch struct {
	URL    *string
	Events *[]string
	Tokens *[]string
	Agents *[]string
}

// UpdateSubscriber changes a subscriber's URL, events or filters. A
// removed subscriber cannot be changed.
func (s *Service) UpdateSubscriber(ctx context.Context, id string, p SubscriberPatch) (store.Subscriber, error) {
	if err := validID(id); err != nil {
		return store.Subscriber{}, err
	}
	var next store.Subscriber
	var err error
	if p.URL != nil {
		if next.URL, err = s.validURL(*p.URL); err != nil {
			return store.Subscriber{}, err
		}
	}
	if p.Events != nil {
		if next.Events, err = validEvents(*p.Events); err != nil {
			return store.Subscriber{}, err
		}
	}
	if p.Tokens != nil {
		if next.Tokens, err = validTokens(*p.Tokens); err != nil {
			return store.Subscriber{}, err
		}
	}
	if p.Agents != nil {
		if next.Agents, err = validAgents(*p.Agents); err != nil {
			return store.Subscriber{}, err
		}
	}
	if p == (SubscriberPatch{}) {
		return store.Subscriber{}, invalid("", "nothing to change: give url, events, tokens or agents")
	}
	_, after, err := s.Store.ChangeSubscriber(ctx, id, s.change(ctx, ActionUpdate), func(sub *store.Subscriber) error {
		if sub.DeletedAt != nil {
			return removed(id)
		}
		if p.URL != nil {
			sub.URL = next.URL
		}
		if p.Events != nil {
			sub.Events = next.Events
		}
		if p.Tokens != nil {
			sub.Tokens = next.Tokens
		}
		if p.Agents != nil {
			sub.Agents = next.Agents
		}
		return nil
	})
	return after, err
}

func removed(id string) error {
	return fmt.Errorf("%w: subscriber %s was removed", ErrConflict, id)
}

// DisableSubscriber stops deliveries to a subscriber; its undelivered ones
// are exhausted (recover brings them back once it is enabled). Disabling
// a disabled subscriber changes nothing.
func (s *Service) DisableSubscriber(ctx context.Context, id, reason string) (store.Subscriber, error) {
	if err := validID(id); err != nil {
		return store.Subscriber{}, err
	}
	if len(reason) > MaxReasonLength {
		return store.Subscriber{}, invalid("reason", "at most %d bytes", MaxReasonLength)
	}
	if reason == "" {
		reason = "disabled by " + actor.From(ctx)
	}
	return s.changeOrRead(ctx, id, ActionDisable, func(sub *store.Subscriber) error {
		if sub.DeletedAt != nil {
			return removed(id)
		}
		if sub.Status != store.SubscriberActive {
			return store.ErrNoChange
		}
		at := s.now()
		sub.Status, sub.DisabledAt, sub.DisabledReason = store.SubscriberDisabled, &at, reason
		return nil
	})
}

// EnableSubscriber makes a disabled subscriber active again, healthy (its
// failure streak cleared). What it missed meanwhile: new periods are
// emitted again within their lookback, and Recover sends what was
// exhausted.
func (s *Service) EnableSubscriber(ctx context.Context, id string) (store.Subscriber, error) {
	if err := validID(id); err != nil {
		return store.Subscriber{}, err
	}
	return s.changeOrRead(ctx, id, ActionEnable, func(sub *store.Subscriber) error {
		if sub.DeletedAt != nil {
			return removed(id)
		}
		if sub.Status == store.SubscriberActive {
			return store.ErrNoChange
		}
		sub.Status, sub.DisabledAt, sub.DisabledReason = store.SubscriberActive, nil, ""
		sub.FailingSince, sub.FailureStreak = nil, 0
		return nil
	})
}

// DeleteSubscriber removes a subscriber: it is disabled and left out of
// lists, and its row and deliveries are kept, readable.
func (s *Service) DeleteSubscriber(ctx context.Context, id string) (store.Subscriber, error) {
	if err := validID(id); err != nil {
		return store.Subscriber{}, err
	}
	return s.changeOrRead(ctx, id, ActionDelete, func(sub *store.Subscriber) error {
		if sub.DeletedAt != nil {
			return store.ErrNoChange
		}
		at := s.now()
		sub.DeletedAt = &at
		if sub.Status == store.SubscriberActive {
			sub.Status, sub.DisabledAt, sub.DisabledReason = store.SubscriberDisabled, &at, "removed"
		}
		sub.PreviousSecret, sub.PreviousSecretUntil = "", nil
		return nil
	})
}

// changeOrRead applies a change; one that changes nothing returns the
// subscriber as it is.
func (s *Service) changeOrRead(ctx context.Context, id, action string, apply func(*store.Subscriber) error) (store.Subscriber, error) {
	before, after, err := s.Store.ChangeSubscriber(ctx, id, s.change(ctx, action), apply)
	if errors.Is(err, store.ErrNoChange) {
		return before, nil
	}
	return after, err
}

// Rotated is a new secret: shown this once.
type Rotated struct {
	Subscriber store.Subscriber `json:"subscriber"`
	Secret     string           `json:"secret"`
	// PreviousSecretUntil is when the old secret stops being signed with.
	PreviousSecretUntil time.Time `json:"previousSecretUntil"`
}

// RotateSecret gives a subscriber a new signing secret; the current one
// stays valid for the overlap (SPEC §10.2): until then every delivery
// carries a signature by each. A rotation during an overlap drops the
// oldest secret.
func (s *Service) RotateSecret(ctx context.Context, id string) (Rotated, error) {
	if err := validID(id); err != nil {
		return Rotated{}, err
	}
	overlap := s.SecretOverlap
	if overlap <= 0 {
		overlap = DefaultSecretOverlap
	}
	secret := webhook.NewSecret()
	until := s.now().Add(overlap)
	_, after, err := s.Store.ChangeSubscriber(ctx, id, s.change(ctx, ActionRotate), func(sub *store.Subscriber) error {
		if sub.DeletedAt != nil {
			return removed(id)
		}
		sub.PreviousSecret, sub.PreviousSecretUntil, sub.Secret = sub.Secret, &until, secret
		return nil
	})
	if err != nil {
		return Rotated{}, err
	}
	return Rotated{Subscriber: after, Secret: secret, PreviousSecretUntil: until}, nil
}

// Reissued is a subscriber with the pull token it was just given: shown
// this once, stored only as a hash.
type Reissued struct {
	Subscriber store.Subscriber `json:"subscriber"`
	PullToken  string           `json:"pullToken"`
}

// ReissuePullToken gives a subscriber a new pull token (SPEC §10.2); the
// old one stops working at once. For a token that leaked, and for
// subscribers made before pull tokens. Audited like every change.
func (s *Service) ReissuePullToken(ctx context.Context, id string) (Reissued, error) {
	if err := validID(id); err != nil {
		return Reissued{}, err
	}
	token := webhook.NewPullToken()
	_, after, err := s.Store.ChangeSubscriber(ctx, id, s.change(ctx, ActionReissuePull), func(sub *store.Subscriber) error {
		if sub.DeletedAt != nil {
			return removed(id)
		}
		sub.PullToken = token
		return nil
	})
	if err != nil {
		return Reissued{}, err
	}
	return Reissued{Subscriber: after, PullToken: token}, nil
}

// Subscriber reads one subscriber, a removed one too.
func (s *Service) Subscriber(ctx context.Context, id string) (store.Subscriber, error) {
	if err := validID(id); err != nil {
		return store.Subscriber{}, err
	}
	sub, found, err := s.Store.Subscriber(ctx, id)
	if err == nil && !found {
		err = fmt.Errorf("subscriber %s: %w", id, ErrNotFound)
	}
	return sub, err
}

// Subscribers lists the subscribers not removed.
func (s *Service) Subscribers(ctx context.Context) ([]store.Subscriber, error) {
	subs, err := s.Store.Subscribers(ctx)
	if subs == nil {
		subs = []store.Subscriber{}
	}
	return subs, err
}

// MaxList bounds a listing.
const MaxList = 10000

// Deliveries lists a subscriber's deliveries (a removed one's too),
// newest period first.
func (s *Service) Deliveries(ctx context.Context, id, status string, limit int) ([]store.Delivery, error) {
	if err := validID(id); err != nil {
		return nil, err
	}
	if err := validStatus(status); err != nil {
		return nil, err
	}
	if limit < 1 || limit > MaxList {
		return nil, invalid("limit", "between 1 and %d", MaxList)
	}
	if _, err := s.Subscriber(ctx, id); err != nil {
		return nil, err
	}
	ds, err := s.Store.SubscriberDeliveries(ctx, id, status, limit)
	if ds == nil {
		ds = []store.Delivery{}
	}
	return ds, err
}

func validStatus(status string) error {
	if status != "" && !slices.Contains(store.DeliveryStatuses, status) {
		return invalid("status", "%q: want one of %v", clip(status), store.DeliveryStatuses)
	}
	return nil
}

// RecoverInput selects what to send again: a subscriber's deliveries in
// Statuses (default exhausted) whose period ended in (From, To] (To
// zero: now), and those of the range never created.
type RecoverInput struct {
	Subscriber string    `json:"subscriber"`
	Statuses   []string  `json:"statuses"`
	From       time.Time `json:"from"`
	To         time.Time `json:"to"`
}

// MaxRecoverRange bounds a recovery's range: deliveries older than their
// retention are gone anyway.
const MaxRecoverRange = store.DeliveryRetention

// Recover puts a subscriber's selected deliveries back in the due set,
// under the same ids, on a fresh ladder (Svix's recover). The subscriber
// must be active; a disabled one is enabled first.
func (s *Service) Recover(ctx context.Context, in RecoverInput) (store.Recovered, error) {
	if err := validID(in.Subscriber); err != nil {
		return store.Recovered{}, &Invalid{Field: "subscriber", Msg: err.(*Invalid).Msg}
	}
	if len(in.Statuses) == 0 {
		in.Statuses = []string{store.DeliveryExhausted}
	}
	for _, st := range in.Statuses {
		if st == "" {
			return store.Recovered{}, invalid("statuses", "empty status")
		}
		if err := validStatus(st); err != nil {
			return store.Recovered{}, &Invalid{Field: "statuses", Msg: err.(*Invalid).Msg}
		}
	}
	if in.To.IsZero() {
		in.To = s.now()
	}
	switch {
	case in.From.IsZero():
		return store.Recovered{}, invalid("from", "required (RFC3339)")
	case !in.From.Before(in.To):
		return store.Recovered{}, invalid("from", "must be before to")
	case in.To.Sub(in.From) > MaxRecoverRange:
		return store.Recovered{}, invalid("from", "the range is longer than %s (deliveries are kept that long)", MaxRecoverRange)
	}
	out, err := s.Store.Recover(ctx, store.RecoverQuery{SubscriberID: in.Subscriber, Statuses: in.Statuses,
		From: in.From.UTC(), To: in.To.UTC()}, s.change(ctx, ActionRecover))
	if errors.Is(err, store.ErrSubscriberDisabled) {
		err = fmt.Errorf("%w: subscriber %s is disabled: enable it first", ErrConflict, in.Subscriber)
	}
	return out, err
}

// Redeliver sends one delivery again, under the same id, on a fresh
// ladder.
func (s *Service) Redeliver(ctx context.Context, id string) error {
	if !webhook.ValidDeliveryID(id) {
		return invalid("id", "%q is not a delivery id (SUBSCRIBER-hourly|daily-YYYYMMDDTHHMMZ)", clip(id))
	}
	found, err := s.Store.Redeliver(ctx, id, s.change(ctx, ActionRedeliver))
	switch {
	case errors.Is(err, store.ErrSubscriberDisabled):
		return fmt.Errorf("%w: delivery %s: its subscriber is disabled", ErrConflict, id)
	case err != nil:
		return err
	case !found:
		return fmt.Errorf("delivery %s: %w", id, ErrNotFound)
	}
	return nil
}

// Delivery reads one delivery with its payload.
func (s *Service) Delivery(ctx context.Context, id string) (store.Delivery, error) {
	if !webhook.ValidDeliveryID(id) {
		return store.Delivery{}, invalid("id", "%q is not a delivery id", clip(id))
	}
	d, _, found, err := s.Store.DeliveryWithSecret(ctx, id)
	if err == nil && !found {
		err = fmt.Errorf("delivery %s: %w", id, ErrNotFound)
	}
	return d, err
}

// AuditQuery pages the audit log (newest first).
type AuditQuery = store.AuditQuery

// MaxAuditPage bounds a page of the audit log.
const MaxAuditPage = 1000

// Audit reads a page of the audit log.
func (s *Service) Audit(ctx context.Context, q AuditQuery) ([]store.AuditEntry, error) {
	if q.Limit < 1 || q.Limit > MaxAuditPage {
		return nil, invalid("limit", "between 1 and %d", MaxAuditPage)
	}
	if q.Before < 0 {
		return nil, invalid("before", "an entry id, at least 1")
	}
	out, err := s.Store.AuditLog(ctx, q)
	if out == nil {
		out = []store.AuditEntry{}
	}
	return out, err
}

// ActionRefused is the audit action of an operator's request refused
// before it changed anything: its input, a target that does not exist, a
// conflict (issue 41.13: refused attempts stay on record).
const ActionRefused = "refused"

// Refusal is what the audit log keeps of a refused request: where it came
// in (an admin route, a CLI command) and why it was refused. Never the
// request's body or arguments, which may carry a secret.
type Refusal struct {
	// Via is the admin route ("POST /api/admin/subscribers") or the
	// command ("pacer subscribers create").
	Via    string `json:"via"`
	Path   string `json:"path,omitempty"`
	Status int    `json:"status,omitempty"`
	Error  string `json:"error"`
}

// RecordRefusal audits a refused request as the context's actor.
func (s *Service) RecordRefusal(ctx context.Context, r Refusal) error {
	after, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("audit %s: %w", ActionRefused, err)
	}
	return s.Store.RecordAudit(ctx, store.AuditEntry{At: s.now(), Actor: actor.From(ctx), Action: ActionRefused,
		Target: r.Via, After: after})
}

// Refused says whether err refuses the request (its input, its target, a
// conflict) rather than failing it, and the audit log does not hold the
// refusal yet.
func Refused(err error) bool {
	var r recorded
	if errors.As(err, &r) {
		return false
	}
	return errors.Is(err, ErrInvalid) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict)
}

// recorded is a refusal the audit log holds already (Audited's).
type recorded struct{ error }

func (r recorded) Unwrap() error { return r.error }
