//go:build benchstack

package worker_test

import "testing"

// TestSunsetFromTheStartAtScale is TestSunsetFromTheStart at 1,000 agents
// (make evidence, check "sunset").
func TestSunsetFromTheStartAtScale(t *testing.T) {
	runSunset(t, 1000)
}
