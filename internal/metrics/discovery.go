package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pacer-dev/pacer"
)

// discoveryMetrics are the readers' of SPEC §5.0: the tail, each
// allowlisted contract's reconciler ("contract:<contract_id>") and the
// agents' visits ("agents"). The reader label is bounded by the allowlist.
type discoveryMetrics struct {
	requests, pages, candidates *prometheus.CounterVec
	lag, gaps, tailSource       *prometheus.GaugeVec
	source                      *prometheus.GaugeVec
	openGaps                    prometheus.Gauge
}

func newDiscoveryMetrics() discoveryMetrics {
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"reader"})
	}
	return discoveryMetrics{
		requests:   counter("pacer_discovery_requests_total", "Hiro requests of discovery's readers (list pages and details), by reader."),
		pages:      counter("pacer_discovery_pages_total", "List pages discovery's readers read, by reader (for agents: agents listed)."),
		candidates: counter("pacer_discovery_candidates_total", "Allowlisted calls of registered agents discovery's readers found, by reader."),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pacer_discovery_lag_seconds",
			Help: "How far a reader's position is behind the chain's head, in seconds of block time, as of the last sweep run."}, []string{"reader"}),
		gaps: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pacer_discovery_gaps",
			Help: "Ranges a reader gave up on (it fell further behind than PACER_TAIL_MAX_PAGES), ever."}, []string{"reader"}),
		tailSource: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pacer_discovery_tail_source",
			Help: "Where the tail reads, as of the last sweep run: 1 for the source in use (feed, or contracts: the allowlisted contracts' own lists while the month cannot pay the feed), 0 for the other."}, []string{"source"}),
		source: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pacer_discovery_source",
			Help: "Where each reader reads, as of the last sweep run it read in: 1 for its source (tail: feed or contracts; a contract's reader and agents: v3 or v1, the deprecated list)."}, []string{"reader", "source"}),
		openGaps: prometheus.NewGauge(prometheus.GaugeOpts{Name: "pacer_discovery_open_gaps",
			Help: "Gaps the reconciler has not filled yet, as of the last sweep run."}),
	}
}

func (d discoveryMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{d.requests, d.pages, d.candidates, d.lag, d.gaps, d.tailSource, d.source, d.openGaps}
}

// observe records a sweep run's readers.
func (d discoveryMetrics) observe(res pacer.SweepResult) {
	if res.Discovery == "" && len(res.Readers) == 0 {
		return
	}
	for name, r := range res.Readers {
		d.requests.WithLabelValues(name).Add(float64(r.Requests))
		d.pages.WithLabelValues(name).Add(float64(r.Pages))
		d.candidates.WithLabelValues(name).Add(float64(r.Candidates))
		d.lag.WithLabelValues(name).Set(r.LagSeconds)
		d.gaps.WithLabelValues(name).Set(float64(r.Gaps))
		if r.Source != "" {
			d.source.DeletePartialMatch(prometheus.Labels{"reader": name})
			d.source.WithLabelValues(name, r.Source).Set(1)
		}
		if r.Source != "" && name == "tail" {
			for _, src := range []string{"feed", "contracts"} {
				in := 0.0
				if src == r.Source {
					in = 1
				}
				d.tailSource.WithLabelValues(src).Set(in)
			}
		}
	}
	d.openGaps.Set(float64(res.OpenGaps))
}
