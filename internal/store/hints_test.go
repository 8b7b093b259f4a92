package store_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHintIsDebouncedPerAgent: of many concurrent hints for one agent, one
// goes through; the next goes through once the interval has passed.
func TestHintIsDebouncedPerAgent(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	register(t, s, "SPHINT")
	register(t, s, "SPOTHER")
	var through atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			ok, err := s.HintAgentAtMost(ctx, "SPHINT", time.Minute)
			require.NoError(t, err)
			if ok {
				through.Add(1)
			}
		})
	}
	wg.Wait()
	require.Equal(t, int32(1), through.Load(), "one hint per agent per interval")
	ok, err := s.HintAgentAtMost(ctx, "SPOTHER", time.Minute)
	require.NoError(t, err)
	require.True(t, ok, "the debounce is per agent")

	_, err = s.Pool().Exec(ctx, `update agent_ingest set last_hint_at = now() - interval '61 seconds' where stx_address = 'SPHINT'`)
	require.NoError(t, err)
	ok, err = s.HintAgentAtMost(ctx, "SPHINT", time.Minute)
	require.NoError(t, err)
	require.True(t, ok, "past the interval a hint goes through again")

	ok, err = s.HintAgentAtMost(ctx, "SPNOBODY", time.Minute)
	require.NoError(t, err)
	require.False(t, ok, "not an agent")
}
