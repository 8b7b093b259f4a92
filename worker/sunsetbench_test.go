//go:build benchstack

package worker_test

import "testing"

// TestSunsetThousandAgents is TestSunsetFromTheStart with 1,000 agents
// (docs/reliability.md): go test -tags benchstack -run TestSunsetThousandAgents -v ./worker/
func TestSunsetThousandAgents(t *testing.T) { runSunset(t, 1000) }
