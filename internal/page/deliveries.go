package page

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// maxSubscribers bounds the deliveries table; the most troubled come first.
const maxSubscribers = 200

// DeliveriesSection is the webhook deliveries not yet delivered, per
// subscriber.
type DeliveriesSection struct {
	Section
	Subscribers                  []SubscriberRow
	Pending, Retrying, Exhausted string
	Level                        Level
}

// SubscriberRow is one subscriber. It shows the host its deliveries go to,
// never the whole URL (a path or query may carry a token) nor its secret.
type SubscriberRow struct {
	ID, Host, Status, Events     string
	Pending, Retrying, Exhausted string
	NextAttempt                  Moment
	// StatusLevel colours the subscriber's status (disabled is bad), Level
	// its deliveries (exhausted is bad, retrying a warning).
	StatusLevel, Level Level
}

type subscriberData struct {
	id, status, rawURL, events   string
	pending, retrying, exhausted int64
	next                         *time.Time
}

type deliveriesData struct {
	absent      string
	subscribers []subscriberData
}

// deliveriesSQL counts each subscriber's deliveries that are not
// delivered, by status, beside every subscriber (one without any shows
// zeros), through deliveries_status_idx.
const deliveriesSQL = `
select s.id, s.status, s.url, array_to_string(s.events, ', '),
       coalesce(c.pending, 0), coalesce(c.retrying, 0), coalesce(c.exhausted, 0), c.next_attempt
from subscribers s
left join (
    select subscriber_id,
           count(*) filter (where status = 'pending') as pending,
           count(*) filter (where status = 'retrying') as retrying,
           count(*) filter (where status = 'exhausted') as exhausted,
           min(next_attempt_at) filter (where status in ('pending', 'retrying')) as next_attempt
    from deliveries
    where status in ('pending', 'retrying', 'exhausted')
    group by subscriber_id
) c on c.subscriber_id = s.id
where s.deleted_at is null
order by 7 desc, 6 desc, 5 desc, 1
limit $1`

func (p *Page) loadDeliveries(ctx context.Context, pool *pgxpool.Pool) (deliveriesData, error) {
	for _, table := range []string{"subscribers", "deliveries"} {
		ok, err := p.tables.has(ctx, pool, table)
		if err != nil {
			return deliveriesData{}, fmt.Errorf("%s: %w", table, err)
		}
		if !ok {
			return deliveriesData{absent: table}, nil
		}
	}
	rows, _ := pool.Query(ctx, deliveriesSQL, maxSubscribers)
	subs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (subscriberData, error) {
		var x subscriberData
		return x, r.Scan(&x.id, &x.status, &x.rawURL, &x.events, &x.pending, &x.retrying, &x.exhausted, &x.next)
	})
	if err != nil {
		return deliveriesData{}, fmt.Errorf("deliveries: %w", err)
	}
	return deliveriesData{subscribers: subs}, nil
}

// hostOf is the host a subscriber's URL names, without credentials, port,
// path or query.
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return "—"
	}
	return u.Hostname()
}

func buildDeliveries(d deliveriesData, now time.Time) DeliveriesSection {
	var s DeliveriesSection
	if d.absent != "" {
		s.absent(d.absent)
		return s
	}
	var pending, retrying, exhausted int64
	s.Level = LevelOK
	for _, x := range d.subscribers {
		row := SubscriberRow{ID: x.id, Host: hostOf(x.rawURL), Status: x.status, Events: x.events,
			Pending: count(x.pending), Retrying: count(x.retrying), Exhausted: count(x.exhausted),
			NextAttempt: moment(x.next, now), StatusLevel: LevelOK, Level: LevelOK}
		if x.status != "active" {
			row.StatusLevel = LevelBad
		}
		switch {
		case x.exhausted > 0:
			row.Level = LevelBad
		case x.retrying > 0:
			row.Level = LevelWarn
		}
		pending, retrying, exhausted = pending+x.pending, retrying+x.retrying, exhausted+x.exhausted
		s.Subscribers = append(s.Subscribers, row)
	}
	s.Pending, s.Retrying, s.Exhausted = count(pending), count(retrying), count(exhausted)
	switch {
	case exhausted > 0:
		s.Level = LevelBad
	case retrying > 0:
		s.Level = LevelWarn
	}
	return s
}
