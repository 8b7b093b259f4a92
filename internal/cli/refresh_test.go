package cli

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
)

// The sweep's line says what the run spent and why it stopped (SPEC §3.1).
func TestSweepLineSaysWhatItSpentAndWhy(t *testing.T) {
	t.Parallel()
	r := &pacer.SweepResult{Run: pacer.Run{Requests: 12}, Scanned: 3, StoppedBy: "month"}
	require.Contains(t, sweepLine(r), "; 12 Hiro requests, stopped by month; ")
	r.StoppedBy = "" // a result recorded before runs said why
	require.Contains(t, sweepLine(r), "; 12 Hiro requests; ")
}
