package worker_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/workflows"
)

// TestWebSocketPush: a `pacer worker` with PACER_PUSH=ws against the
// simulator's Hiro WebSocket (SPEC §5.0 "Push"). While push is live the
// readers slow to their reconciling cadence, so new swaps reach the
// ledger with no request that finds transactions (only tx/multiple's
// details); the socket silenced, push is down, the tail reads again at
// PACER_TAIL_EVERY and records the swaps mined meanwhile; the silence
// over, pacer subscribes again; the socket refused, polling goes on and
// the log says so once a socket, not a storm.
func TestWebSocketPush(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bin := testenv.PacerBinary(t)
	s := newStack(t, workflows.Config{SweepEvery: pacer.Duration(2 * time.Second)})
	origin := time.Now().Truncate(time.Second)
	clk := &clock{}
	clk.Run(origin)
	unlimited := sim.Limits{PerMinute: 1 << 30, PerMonth: 1 << 30}
	s.sim = sim.New(sim.Config{Seed: 18, Now: clk.Now, Tenero: sim.TeneroConfig{Anonymous: unlimited},
		Hiro: sim.HiroConfig{Origin: origin, Agents: 200, History: time.Hour, Arrivals: time.Hour, Activity: true,
			Anonymous: unlimited, Chain: sim.ChainConfig{Volume: 40_000}}})
	w := serveWorld(t, s)
	_, out := s.startProcess(t, bin, "--hiro-base-url", s.simU, "--hiro-per-minute", "450",
		"--competition-start", strconv.FormatInt(w.CompetitionStart().Unix(), 10),
		"--discovery", "tail", "--tail-every", "2s", "--sweep-every", "2s", "--push", "ws")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("worker log:\n%s", out.String())
		}
	})
	finding := func() int { // the requests that find transactions: every Hiro list
		st := s.sim.Stats()
		return st.Routes[sim.HiroTxListRoute].Total + st.Routes[sim.HiroPrincipalTransactionsRoute].Total +
			st.Routes[sim.HiroAddressTransactionsRoute].Total
	}
	pushState := func() store.PushState {
		st, _, err := s.st.ReadPushState(ctx, 30*time.Second)
		require.NoError(t, err)
		return st
	}
	recordedSince := func(from time.Time) (mined, recorded int) {
		have, err := s.st.Swaps(ctx)
		require.NoError(t, err)
		rows := map[string]bool{}
		for _, sw := range have {
			rows[sw.TxID] = true
		}
		for _, sw := range w.SwapTimes(clk.Now()) {
			if sw.MinedAt.After(from) {
				mined++
				if rows[sw.TxID] {
					recorded++
				}
			}
		}
		return mined, recorded
	}

	began := time.Now()
	phase := func(what string) { t.Logf("phase %s after %s", what, time.Since(began).Round(time.Second)) }
	var left int
	var ps store.PushState
	if !assert.Eventually(t, func() bool {
		ps = pushState()
		return s.st.Pool().QueryRow(ctx, `select count(*) from agent_ingest where last_visit_at is null`).Scan(&left) == nil &&
			left == 0 && ps.Live
	}, 5*time.Minute, 100*time.Millisecond) {
		t.Fatalf("the first start's history visits are not done (%d agents left) or push is not live: %+v", left, ps)
	}
	phase("history read, push live")
	require.Equal(t, len(catalog.Default().Contracts()), pushState().Sockets, "a socket per allowlisted contract")
	// Let the readers' last reads before push went live settle.
	eventually(t, time.Minute, "the status shows push live", func() bool {
		st, err := statusOrErr(s)
		return err == nil && st.LastSweepResult != nil && st.LastSweepResult.Push != nil && st.LastSweepResult.Push.Live
	})
	phase("status shows push live")
	from, before := clk.Now(), finding()
	eventually(t, 3*time.Minute, "three new swaps recorded from pushes", func() bool {
		mined, recorded := recordedSince(from)
		return mined >= 3 && recorded == mined
	})
	require.Equal(t, before, finding(), "while push is live no list is read: the swaps came by push and tx/multiple")

	phase("three swaps by push")
	// The silent stop: nothing closes, nothing comes.
	require.NoError(t, s.sim.SetFaults(sim.Faults{WSSilent: true}))
	silenced := clk.Now()
	eventually(t, time.Minute, "push is down after the silence bound", func() bool { return !pushState().Live })
	phase("push down")
	polled := finding()
	eventually(t, 3*time.Minute, "the tail reads again and records the swaps mined in the silence", func() bool {
		mined, recorded := recordedSince(silenced)
		return finding() > polled && mined >= 2 && recorded == mined
	})
	phase("swaps of the silence recorded")
	reconnects := pushState().Reconnects
	require.NoError(t, s.sim.SetFaults(sim.Faults{}))
	eventually(t, 2*time.Minute, "subscribed again once the silence is over", func() bool {
		st := pushState()
		return st.Live && st.Reconnects > reconnects
	})

	phase("subscribed again")
	// Refused: polling as before, and one warning a socket.
	warned := strings.Count(out.String(), "push.socket_down")
	require.NoError(t, s.sim.SetFaults(sim.Faults{WSSilent: true, WSRefused: true}))
	refused := clk.Now()
	eventually(t, 3*time.Minute, "refused, the tail records the new swaps", func() bool {
		mined, recorded := recordedSince(refused)
		return s.sim.WSStats().Refused >= 2*pushState().Sockets && mined >= 2 && recorded == mined
	})
	phase("refused, swaps recorded")
	require.LessOrEqual(t, strings.Count(out.String(), "push.socket_down")-warned, pushState().Sockets,
		"a refused socket warns once, then retries quietly with back-off")
}
