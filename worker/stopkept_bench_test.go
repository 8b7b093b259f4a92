//go:build benchstack

package worker_test

import (
	"testing"
	"time"
)

// TestStopOutlivesDeletedHistoryMinuteCheck is TestStopOutlivesDeletedHistory
// with the workers' real check, every minute: 4 checks, so at least 3
// minutes with no run of the scheduler left in Temporal
// (PACER_STOPCHECK_EVERY, PACER_STOPCHECK_CHECKS):
// go test -tags benchstack -run TestStopOutlivesDeletedHistoryMinuteCheck -v ./worker
func TestStopOutlivesDeletedHistoryMinuteCheck(t *testing.T) {
	stopOutlivesDeletedHistory(t, true, envDuration(t, "PACER_STOPCHECK_EVERY", time.Minute), envInt(t, "PACER_STOPCHECK_CHECKS", 4))
}
