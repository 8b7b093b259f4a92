package cli

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConfigDocIsCurrent fails when a flag changed and docs/configuration.md
// was not regenerated (`make docs`).
func TestConfigDocIsCurrent(t *testing.T) {
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		for _, p := range []string{"PACER_", "TEMPORAL_", "HIRO_", "TENERO_", "DATABASE_URL", "COMPETITION_START"} {
			if strings.HasPrefix(k, p) {
				t.Setenv(k, "")
			}
		}
	}
	want, err := os.ReadFile("../../docs/configuration.md")
	require.NoError(t, err)
	var got strings.Builder
	require.NoError(t, writeConfigDoc(&got, newRoot()))
	require.Equal(t, string(want), got.String(), "docs/configuration.md is stale: run make docs")
}
