package workflows

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
)

// A registered agent's address may be shorter than the hint's check (a
// valid c32check address whose hash begins with a byte below 8: 37
// characters after SP): HintName leaves it out, so a wake is never a
// rejected hint (make bench-tail: one push's wake refused, its swap 4.1 s
// late); pacer.ValidPrincipal, which no run's history depends on, takes it.
func TestHintNameIsNeverARejectedHint(t *testing.T) {
	t.Parallel()
	for _, agent := range []string{
		"SPR6QK62ZPVPX5N4R5BTMD2SKEXX2MDF6R5KWKN",  // 37 after SP
		"SP4DXVEC16FS6QR7RBKGWZYJKTXPC81W49W0ATJE", // 38
		"SP000000000000000000002Q6VF78",            // the boot address, 27
		"not an address",
	} {
		raw, err := json.Marshal(HintInput{Agent: HintName(agent)})
		require.NoError(t, err)
		_, err = ParseHint(raw)
		require.NoError(t, err, agent)
	}
	require.Equal(t, "SP4DXVEC16FS6QR7RBKGWZYJKTXPC81W49W0ATJE", HintName("SP4DXVEC16FS6QR7RBKGWZYJKTXPC81W49W0ATJE"))
	require.Empty(t, HintName("SPR6QK62ZPVPX5N4R5BTMD2SKEXX2MDF6R5KWKN"))
	for _, a := range []string{"SPR6QK62ZPVPX5N4R5BTMD2SKEXX2MDF6R5KWKN", "SP000000000000000000002Q6VF78", "SP4DXVEC16FS6QR7RBKGWZYJKTXPC81W49W0ATJE"} {
		require.True(t, pacer.ValidPrincipal(a), a)
	}
	for _, a := range []string{"SP", "SP0000000000000000000002Q6VF", "SX4DXVEC16FS6QR7RBKGWZYJKTXPC81W49W0ATJE", "SP4DXVEC16FS6QR7RBKGWZYJKTXPC81W49W0ATJEIIIIII"} {
		require.False(t, pacer.ValidPrincipal(a), a)
	}
}
