package push_test

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/push"
	"github.com/pacer-dev/pacer/internal/sim"
)

// TestReaderStopsOnSilenceAndSubscribesAgain runs the reader against the
// simulator's WebSocket on a running clock (blocks every 4 s): live once
// every socket heard a block; the silent stop (nothing closes) is a stop
// after the silence bound, and the silence over, the sockets subscribe
// again; a refused socket retries with back-off.
func TestReaderStopsOnSilenceAndSubscribesAgain(t *testing.T) {
	t.Parallel()
	start := time.Now()
	origin := time.Date(2026, 5, 14, 12, 0, 0, 0, time.UTC)
	s := sim.New(sim.Config{Seed: 3, Now: func() time.Time { return origin.Add(time.Since(start)) },
		Hiro: sim.HiroConfig{Origin: origin, Agents: 4}})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)

	var mu sync.Mutex
	var states []push.State
	r := push.NewReader(push.Config{BaseURL: srv.URL, Contracts: catalog.Default().Contracts()[:2],
		Silence: 6 * time.Second, MinBackoff: 100 * time.Millisecond, MaxBackoff: 400 * time.Millisecond,
		OnChange: func(st push.State) { mu.Lock(); states = append(states, st); mu.Unlock() }})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	waitFor := func(what string, cond func(push.State) bool) {
		t.Helper()
		require.Eventually(t, func() bool { return cond(r.State()) }, time.Minute, 50*time.Millisecond, what)
	}

	waitFor("live", func(st push.State) bool { return st.Live && st.LiveSockets == 2 })
	require.NoError(t, s.SetFaults(sim.Faults{WSSilent: true}))
	waitFor("down after the silence bound", func(st push.State) bool { return !st.Live })
	require.Greater(t, s.WSStats().Dropped, 0)
	require.NoError(t, s.SetFaults(sim.Faults{}))
	waitFor("live again, subscribed anew", func(st push.State) bool { return st.Live && st.Reconnects >= 2 })

	require.NoError(t, s.SetFaults(sim.Faults{WSSilent: true, WSRefused: true}))
	waitFor("refused sockets retried", func(st push.State) bool { return !st.Live && s.WSStats().Refused >= 4 })

	mu.Lock()
	defer mu.Unlock()
	flips := []bool{false}
	for _, st := range states {
		if flips[len(flips)-1] != st.Live {
			flips = append(flips, st.Live)
		}
	}
	require.Equal(t, []bool{false, true, false, true, false}, flips, "OnChange heard each turn, in order")
}
