package cli

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// An operator listener reachable from the network needs a token.
func TestCheckAdminAddr(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"127.0.0.1:8081", "[::1]:8081", "localhost:8081", "127.0.0.9:1"} {
		require.NoError(t, checkAdminAddr(addr, false), addr)
	}
	for _, addr := range []string{"0.0.0.0:8081", ":8081", "10.0.0.5:8081", "[::]:8081", "admin.example:8081"} {
		err := checkAdminAddr(addr, false)
		require.Error(t, err, addr)
		require.Contains(t, err.Error(), "PACER_OPERATOR_TOKEN")
		require.NoError(t, checkAdminAddr(addr, true), "with a token: %s", addr)
	}
	require.Error(t, checkAdminAddr("nonsense", true))
}
