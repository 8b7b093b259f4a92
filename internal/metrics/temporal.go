package metrics

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
)

// sdkLatencyBuckets suit the SDK's timers, which run from milliseconds (a
// workflow task, a request) to the minute-long polls and the minutes a
// sweep activity may take. OpenTelemetry's default buckets are meant for
// milliseconds and would put all of them in the first few.
var sdkLatencyBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// TemporalHandler returns the metrics handler to give the Temporal client
// (client.Options.MetricsHandler): the SDK's series (temporal_request_total,
// temporal_workflow_task_execution_latency_seconds,
// temporal_activity_execution_latency_seconds, temporal_num_pollers, …) then
// land in this registry. The Temporal SDK's own contrib package adapts it to
// OpenTelemetry, and OpenTelemetry's Prometheus exporter reads it into the
// registry at each scrape: the route the SDK maintains, with nothing of
// pacer's own between the SDK and the registry. It may be called once.
func (m *Metrics) TemporalHandler() (client.MetricsHandler, error) {
	exporter, err := otelprom.New(
		otelprom.WithRegisterer(m.reg),
		// One target, one process: the resource and scope labels would only
		// repeat the job and instance labels Prometheus adds.
		otelprom.WithoutTargetInfo(),
		otelprom.WithoutScopeInfo(),
	)
	if err != nil {
		return nil, fmt.Errorf("temporal metrics: %w", err)
	}
	provider := sdkmetric.NewMeterProvider(
		sdkmetric.WithReader(exporter),
		sdkmetric.WithView(sdkmetric.NewView(
			sdkmetric.Instrument{Kind: sdkmetric.InstrumentKindHistogram, Unit: "s"},
			sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{Boundaries: sdkLatencyBuckets}},
		)),
	)
	errs := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "pacer_temporal_metrics_errors_total",
		Help: "Temporal SDK metrics that could not be recorded.",
	})
	if err := m.reg.Register(errs); err != nil {
		return nil, fmt.Errorf("temporal metrics: %w", err)
	}
	return temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter: provider.Meter("temporal-sdk-go"),
		// The SDK's counters only grow; monotonic counters make them
		// Prometheus counters (…_total) that rate() understands.
		UseMonotonicCounters: true,
		// The default panics; a metric is never worth a worker.
		OnError: func(error) { errs.Inc() },
	}), nil
}
