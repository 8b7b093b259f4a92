package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pacer-dev/pacer/internal/webhook"
)

// Subscriber statuses (SPEC §6).
const (
	SubscriberActive   = "active"
	SubscriberDisabled = "disabled"
)

// Subscriber is one row of subscribers. Secret is never serialised: it is
// shown once, by the command that creates it.
type Subscriber struct {
	ID     string `json:"id"`
	URL    string `json:"url"`
	Secret string `json:"-"`
	// PullToken is the pull credential, set only on the way in
	// (AddSubscriber stores its hash, never the token) and shown once.
	PullToken string   `json:"-"`
	Events    []string `json:"events"`
	// Tokens and Agents filter what the deliveries carry; nil means all.
	Tokens         []string   `json:"tokens"`
	Agents         []string   `json:"agents"`
	Status         string     `json:"status"`
	CreatedAt      time.Time  `json:"createdAt"`
	DisabledAt     *time.Time `json:"disabledAt,omitempty"`
	DisabledReason string     `json:"disabledReason,omitempty"`
	// FailingSince is when the endpoint began failing, nil while healthy.
	FailingSince *time.Time `json:"failingSince,omitempty"`
	// FailureStreak counts the failed attempts since FailingSince.
	FailureStreak int `json:"failureStreak"`
	// PreviousSecret stays valid until PreviousSecretUntil after a
	// rotation (SPEC §10.2).
	PreviousSecret      string     `json:"-"`
	PreviousSecretUntil *time.Time `json:"previousSecretUntil,omitempty"`
	// DeletedAt is set once the subscriber is removed; its row and its
	// deliveries are kept.
	DeletedAt *time.Time `json:"deletedAt,omitempty"`
}

// AddSubscriber stores a new, active subscriber. CreatedAt is when its
// deliveries start: only periods that end after it are delivered.
func (s *Store) AddSubscriber(ctx context.Context, sub Subscriber) error {
	var pullHash []byte
	if sub.PullToken != "" {
		pullHash = webhook.HashPullToken(sub.PullToken)
	}
	_, err := s.pool.Exec(ctx, `
insert into subscribers (id, url, secret, events, tokens, agents, status, created_at, pull_token_hash)
values ($1, $2, $3, $4, $5, $6, 'active', $7, $8)`,
		sub.ID, sub.URL, sub.Secret, sub.Events, sub.Tokens, sub.Agents, sub.CreatedAt, pullHash)
	if err != nil {
		// A Postgres error's text names the constraint, never the row's
		// values (those are in its Detail), so the secret stays out of it.
		return fmt.Errorf("add subscriber %s: %w", sub.ID, err)
	}
	return nil
}

const subscriberColumns = `id, url, secret, events, tokens, agents, status, created_at, disabled_at,
    coalesce(disabled_reason, ''), failing_since, failure_streak, coalesce(previous_secret, ''),
    previous_secret_until, deleted_at`

func scanSubscriber(row pgx.CollectableRow) (Subscriber, error) {
	var sub Subscriber
	err := row.Scan(&sub.ID, &sub.URL, &sub.Secret, &sub.Events, &sub.Tokens, &sub.Agents, &sub.Status,
		&sub.CreatedAt, &sub.DisabledAt, &sub.DisabledReason, &sub.FailingSince, &sub.FailureStreak,
		&sub.PreviousSecret, &sub.PreviousSecretUntil, &sub.DeletedAt)
	return sub, err
}

// Subscribers lists every subscriber not removed, oldest first.
func (s *Store) Subscribers(ctx context.Context) ([]Subscriber, error) {
	return collect(ctx, s.pool, "list subscribers", scanSubscriber, `select `+subscriberColumns+` from subscribers where deleted_at is null order by created_at, id`)
}

// Subscriber reads one subscriber; found is false when there is none.
func (s *Store) Subscriber(ctx context.Context, id string) (Subscriber, bool, error) {
	rows, _ := s.pool.Query(ctx, `select `+subscriberColumns+` from subscribers where id = $1`, id)
	sub, err := pgx.CollectExactlyOneRow(rows, scanSubscriber)
	if errors.Is(err, pgx.ErrNoRows) {
		return Subscriber{}, false, nil
	}
	if err != nil {
		return Subscriber{}, false, fmt.Errorf("read subscriber %s: %w", id, err)
	}
	return sub, true, nil
}
