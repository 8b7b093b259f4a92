package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pacer-dev/pacer/internal/store"
)

// WatchPush serves where Hiro's WebSocket stands (SPEC §5.0 "Push"), read
// from Postgres at each scrape (push_state, written by the worker holding
// the subscriptions): whether push is live, since when, the notifications
// read and the reconnects. read is store.ReadPushState's shape.
func (m *Metrics) WatchPush(read func(ctx context.Context) (store.PushState, bool, error)) error {
	return m.reg.Register(&pushCollector{read: read,
		live: prometheus.NewDesc("pacer_push_live",
			"1 while Hiro's WebSocket delivers (every socket had a block within 30 s): the tail then reads at PACER_RECONCILE_EVERY; 0 while it does not (the tail reads at PACER_TAIL_EVERY).", nil, nil),
		since: prometheus.NewDesc("pacer_push_state_since_seconds",
			"Unix time at which push last turned live or down.", nil, nil),
		messages: prometheus.NewDesc("pacer_push_messages_total",
			"Notifications read from Hiro's WebSocket by the current holder (blocks and contract calls).", nil, nil),
		reconnects: prometheus.NewDesc("pacer_push_reconnects_total",
			"Sockets dialled again after they stopped (silent 30 s, closed or refused), by the current holder.", nil, nil),
		sockets: prometheus.NewDesc("pacer_push_sockets",
			"Sockets held (one per allowlisted contract), by state.", []string{"state"}, nil),
	})
}

type pushCollector struct {
	read                                       func(ctx context.Context) (store.PushState, bool, error)
	live, since, messages, reconnects, sockets *prometheus.Desc
}

func (c *pushCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.live, c.since, c.messages, c.reconnects, c.sockets} {
		ch <- d
	}
}

// pushScrapeTimeout bounds the scrape's read.
const pushScrapeTimeout = 5 * time.Second

func (c *pushCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), pushScrapeTimeout)
	defer cancel()
	st, found, err := c.read(ctx)
	if err != nil || !found {
		return // no holder yet (or push off), or Postgres away: left out of this scrape
	}
	live := 0.0
	if st.Live {
		live = 1
	}
	ch <- prometheus.MustNewConstMetric(c.live, prometheus.GaugeValue, live)
	ch <- prometheus.MustNewConstMetric(c.since, prometheus.GaugeValue, float64(st.Since.Unix()))
	ch <- prometheus.MustNewConstMetric(c.messages, prometheus.CounterValue, float64(st.Messages))
	ch <- prometheus.MustNewConstMetric(c.reconnects, prometheus.CounterValue, float64(st.Reconnects))
	ch <- prometheus.MustNewConstMetric(c.sockets, prometheus.GaugeValue, float64(st.LiveSockets), "live")
	ch <- prometheus.MustNewConstMetric(c.sockets, prometheus.GaugeValue, float64(st.Sockets-st.LiveSockets), "down")
}
