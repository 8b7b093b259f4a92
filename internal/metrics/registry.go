package metrics

import "github.com/prometheus/client_golang/prometheus"

// newRegistryHeld is the gauge of a registry read held for an operator's
// confirmation (SPEC §12, issue 41.6).
func newRegistryHeld() prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "pacer_registry_held_agents",
		Help: "Agents the last registry read would have deregistered when it was held for an operator's confirmation (it dropped more than PACER_REGISTRY_MAX_DROP of them, or listed nobody); 0 when the last read was applied. pacer registry confirm applies a held read.",
	})
}

// RegistryHeld records that the last registry read was held because it
// would deregister n agents, or (n = 0) that it was applied.
func (m *Metrics) RegistryHeld(n int) {
	if m == nil {
		return
	}
	m.registryHeld.Set(float64(n))
}
