package metrics_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/metrics"
)

func TestDiscoveryReadersAreReported(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	res := pacer.SweepResult{Discovery: "tail", OpenGaps: 1, Readers: map[string]pacer.ReaderReport{
		"tail":             {Requests: 7, Pages: 5, Candidates: 2, LagSeconds: 12.5, Gaps: 1, Source: "contracts"},
		"contract:SP1.dex": {Requests: 1, Pages: 1},
	}}
	m.ObserveSweep(time.Second, res, nil)
	m.ObserveSweep(time.Second, res, nil)
	body := scrape(t, m)
	require.Contains(t, body, `pacer_discovery_requests_total{reader="tail"} 14`)
	require.Contains(t, body, `pacer_discovery_pages_total{reader="tail"} 10`)
	require.Contains(t, body, `pacer_discovery_candidates_total{reader="tail"} 4`)
	require.Contains(t, body, `pacer_discovery_lag_seconds{reader="tail"} 12.5`)
	require.Contains(t, body, `pacer_discovery_gaps{reader="tail"} 1`)
	require.Contains(t, body, `pacer_discovery_pages_total{reader="contract:SP1.dex"} 2`)
	require.Contains(t, body, `pacer_discovery_open_gaps 1`)
	require.Contains(t, body, `pacer_discovery_tail_source{source="contracts"} 1`)
	require.Contains(t, body, `pacer_discovery_tail_source{source="feed"} 0`)
}
