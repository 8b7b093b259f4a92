package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/pacer-dev/pacer/internal/webhook"
)

// DeliveryForPull reads one delivery, its payload as it is sent, and the
// hash of its subscriber's pull token (nil when the subscriber has none),
// to authenticate GET /api/deliveries/{id}.
func (s *Store) DeliveryForPull(ctx context.Context, id string) (d Delivery, pullHash []byte, found bool, err error) {
	var payload string
	err = s.pool.QueryRow(ctx, `select `+deliveryColumns+`, d.payload::text, s.pull_token_hash
from deliveries d join subscribers s on s.id = d.subscriber_id
where d.id = $1`, id).Scan(&d.ID, &d.SubscriberID, &d.Event, &d.PeriodStart, &d.PeriodEnd, &d.Status, &d.Attempts,
		&d.NextAttemptAt, &d.LastAttemptAt, &d.LastStatus, &d.LastError, &d.CreatedAt, &d.DeliveredAt, &d.Replaces, &payload, &pullHash)
	if errors.Is(err, pgx.ErrNoRows) {
		return Delivery{}, nil, false, nil
	}
	if err != nil {
		return Delivery{}, nil, false, fmt.Errorf("read delivery %s: %w", id, err)
	}
	d.Payload = json.RawMessage(payload)
	return d, pullHash, true, nil
}

// SetPullToken replaces a subscriber's pull token (its hash is stored); the
// old one stops working at once. found is false when there is no such
// subscriber. For subscribers made before pull tokens, and for an
// operator who suspects one leaked.
func (s *Store) SetPullToken(ctx context.Context, subscriberID, token string) (found bool, err error) {
	tag, err := s.pool.Exec(ctx, `update subscribers set pull_token_hash = $2 where id = $1`,
		subscriberID, webhook.HashPullToken(token))
	if err != nil {
		return false, fmt.Errorf("set pull token of %s: %w", subscriberID, err)
	}
	return tag.RowsAffected() == 1, nil
}
