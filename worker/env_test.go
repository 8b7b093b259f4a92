//go:build cost || benchstack

package worker_test

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// envDuration is a benchmark's knob: the environment's value, else def.
func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	return envKnob(t, name, def, time.ParseDuration)
}

// envInt is envDuration for a count.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	return envKnob(t, name, def, strconv.Atoi)
}

// envKnob reads name with parse, else def; a set value must be positive.
func envKnob[T int | time.Duration](t *testing.T, name string, def T, parse func(string) (T, error)) T {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := parse(v)
	require.NoError(t, err, name)
	require.Positive(t, n, name)
	return n
}
