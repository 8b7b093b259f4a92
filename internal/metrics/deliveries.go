package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/webhook"
)

// deliveryMetrics are the deliver task's own series (SPEC §10.3).
type deliveryMetrics struct {
	attempts *prometheus.CounterVec
	delay    prometheus.Histogram
}

func newDeliveryMetrics() *deliveryMetrics {
	m := &deliveryMetrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pacer_delivery_attempts_total",
			Help: "Webhook delivery attempts, by result (delivered, gone, http_error, timeout, network) and by whether the attempt was a retry.",
		}, []string{"result", "retry"}),
		delay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "pacer_delivery_delay_seconds",
			Help: "Time from the end of a delivered period to its successful delivery.",
			// An hourly rollup runs a few minutes past the hour; a day waits
			// for the sweep to catch up; retries climb the ladder to hours.
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 2 * 3600, 6 * 3600, 12 * 3600, 24 * 3600},
		}),
	}
	for _, r := range webhook.Results {
		for _, retry := range []string{"false", "true"} {
			m.attempts.WithLabelValues(string(r), retry)
		}
	}
	return m
}

func (m *deliveryMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.attempts, m.delay}
}

// ObserveRollup records one attempt of the rollup activity.
func (m *Metrics) ObserveRollup(took time.Duration, res pacer.RollupResult, err error) {
	if m == nil {
		return
	}
	m.observeRun(pacer.TaskRollup, took, res.Run, err)
}

// ObserveDeliver records one attempt of the deliver activity.
func (m *Metrics) ObserveDeliver(took time.Duration, res pacer.DeliverResult, err error) {
	if m == nil {
		return
	}
	m.observeRun(pacer.TaskDeliver, took, res.Run, err)
}

// ObserveDeliveryAttempt counts one webhook attempt by its result.
func (m *Metrics) ObserveDeliveryAttempt(result string, retry bool) {
	if m == nil {
		return
	}
	label := "false"
	if retry {
		label = "true"
	}
	m.deliveries.attempts.WithLabelValues(result, label).Inc()
}

// ObserveDeliveryDelay records how long after its period's end a delivery
// succeeded.
func (m *Metrics) ObserveDeliveryDelay(d time.Duration) {
	if m == nil {
		return
	}
	m.deliveries.delay.Observe(max(0, d.Seconds()))
}

// deliveryGauges read the deliveries table at each scrape, as part of the
// store collector: how many deliveries are in each status.
type deliveryGauges struct {
	status      *prometheus.Desc
	subscribers *prometheus.Desc
}

func newDeliveryGauges() deliveryGauges {
	return deliveryGauges{status: prometheus.NewDesc("pacer_deliveries",
		"Webhook deliveries by status (pending, retrying, delivered, exhausted), within their retention.",
		[]string{"status"}, nil),
		subscribers: prometheus.NewDesc("pacer_subscribers",
			"Webhook subscribers not removed, by state: active, failing (active, its endpoint failing every attempt so far), disabled (by an operator, a 410, or PACER_DISABLE_AFTER of failures).",
			[]string{"state"}, nil)}
}

func (g deliveryGauges) collect(ctx context.Context, st *store.Store, ch chan<- prometheus.Metric) error {
	counts, err := st.DeliveryCounts(ctx)
	if err != nil {
		return err
	}
	for _, s := range store.DeliveryStatuses {
		ch <- prometheus.MustNewConstMetric(g.status, prometheus.GaugeValue, float64(counts[s]), s)
	}
	h, err := st.SubscriberHealthCounts(ctx)
	if err != nil {
		return err
	}
	for state, n := range map[string]int{"active": h.Active, "failing": h.Failing, "disabled": h.Disabled} {
		ch <- prometheus.MustNewConstMetric(g.subscribers, prometheus.GaugeValue, float64(n), state)
	}
	return nil
}
