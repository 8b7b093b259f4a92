package metrics

import "github.com/prometheus/client_golang/prometheus"

func newHoldsLapsed() prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{
		Name: "pacer_complete_through_holds_lapsed_total",
		Help: "Pending transactions a reader saw in a block whose hold on completeThrough lapsed after store.HoldBound unsettled (SPEC §7).",
	})
}

// ObserveHoldsLapsed counts holds on completeThrough that lapsed.
func (m *Metrics) ObserveHoldsLapsed(n int) {
	if m == nil || n <= 0 {
		return
	}
	m.holdsLapsed.Add(float64(n))
}
