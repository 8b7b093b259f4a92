package metrics

import (
	"errors"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pacer-dev/pacer/internal/competition"
)

// Outcomes of a chainhook delivery, the values of the outcome label.
const (
	PushAccepted     = "accepted"
	PushUnauthorized = "unauthorized"
	PushDisabled     = "disabled"
	PushTooLarge     = "too_large"
	PushBadRequest   = "bad_request"
	PushBusy         = "busy"
	PushFailed       = "failed"
)

// PushOutcomes are every value of the outcome label.
var PushOutcomes = []string{PushAccepted, PushUnauthorized, PushDisabled, PushTooLarge, PushBadRequest, PushBusy, PushFailed}

// FirstPush is the value of the first label for a swap the push inserted;
// the others are the swaps.source of a row another writer inserted first.
const FirstPush = "push"

// Chainhook records the chainhook endpoint's series (SPEC §11). A nil
// *Chainhook records nothing.
type Chainhook struct {
	pushes    *prometheus.CounterVec
	swaps     *prometheus.CounterVec
	latency   prometheus.Histogram
	rollbacks *prometheus.CounterVec
}

// NewChainhook builds the series and registers them with reg (nil keeps
// them unregistered); a second call on one registry shares the first's.
func NewChainhook(reg prometheus.Registerer) *Chainhook {
	m := &Chainhook{
		pushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pacer_chainhook_pushes_total",
			Help: "Chainhook deliveries received, by outcome (accepted, unauthorized, disabled, too_large, bad_request, busy, failed).",
		}, []string{"outcome"}),
		swaps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pacer_chainhook_swaps_total",
			Help: "Swaps chainhook deliveries named that are in the ledger, each counted once, by who recorded it first: push, or the swaps.source of the row already there when the first delivery named it (sweep: polling was first; agent: the fast path).",
		}, []string{"first"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "pacer_chainhook_push_to_row_seconds",
			Help: "Time from a pushed swap's block timestamp to its row in swaps.",
			// Chainhooks delivers seconds after a block; Stacks blocks come
			// every few seconds, with Bitcoin anchors every ten minutes.
			Buckets: []float64{0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800},
		}),
		rollbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pacer_chainhook_rollbacks_total",
			Help: "Rollbacks applied: rolled-back blocks received (what=blocks) and swaps they moved out of swaps (what=swaps).",
		}, []string{"what"}),
	}
	for _, o := range PushOutcomes {
		m.pushes.WithLabelValues(o)
	}
	for _, f := range []string{FirstPush, competition.SourceSweep, competition.SourceAgent} {
		m.swaps.WithLabelValues(f)
	}
	m.rollbacks.WithLabelValues("blocks")
	m.rollbacks.WithLabelValues("swaps")
	if reg != nil {
		m.pushes = shared(reg, m.pushes)
		m.swaps = shared(reg, m.swaps)
		m.latency = shared(reg, m.latency)
		m.rollbacks = shared(reg, m.rollbacks)
	}
	return m
}

// shared registers c, or returns the collector already registered under
// its name.
func shared[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(err)
	}
	return c
}

// ObservePush counts one delivery by its outcome.
func (m *Chainhook) ObservePush(outcome string) {
	if m == nil {
		return
	}
	if !slices.Contains(PushOutcomes, outcome) {
		outcome = PushFailed
	}
	m.pushes.WithLabelValues(outcome).Inc()
}

// ObserveSwap counts a pushed swap found in the ledger: inserted by the
// push (latency from its block's time to the row), or by another writer
// first (source, its swaps.source).
func (m *Chainhook) ObserveSwap(inserted bool, source string, latency time.Duration) {
	if m == nil {
		return
	}
	if inserted {
		m.swaps.WithLabelValues(FirstPush).Inc()
		m.latency.Observe(max(0, latency.Seconds()))
		return
	}
	if source != competition.SourceSweep && source != competition.SourceAgent {
		// A chainhook row another delivery inserted: still the push first.
		source = FirstPush
	}
	m.swaps.WithLabelValues(source).Inc()
}

// ObserveRollback counts a rolled-back block and the swaps it moved.
func (m *Chainhook) ObserveRollback(swaps int) {
	if m == nil {
		return
	}
	m.rollbacks.WithLabelValues("blocks").Inc()
	m.rollbacks.WithLabelValues("swaps").Add(float64(swaps))
}
