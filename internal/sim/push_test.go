package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/chainhook"
	"github.com/pacer-dev/pacer/internal/competition"
)

// receiver is a Chainhooks consumer that keeps what it was sent.
type receiver struct {
	mu     sync.Mutex
	bodies [][]byte
	auths  []string
	status int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.bodies = append(rc.bodies, body)
	rc.auths = append(rc.auths, r.Header.Get("Authorization"))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(max(rc.status, http.StatusOK))
	_, _ = w.Write([]byte(`{"accepted":true}`))
}

// pushWorld is a simulator whose arrivals (ten minutes of them) are pushed
// to a receiver, stepped a second at a time on a fake clock.
type pushWorld struct {
	s     *Server
	clock *fakeClock
	rc    *receiver
}

func newPushWorld(t *testing.T, push PushConfig) *pushWorld {
	t.Helper()
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	push.URL, push.Secret = srv.URL, "s3cret"
	unlimited := Limits{PerMinute: 1 << 30, PerMonth: 1 << 30}
	s, clock := newSim(t, Config{Seed: 21, Push: push, Hiro: HiroConfig{Origin: epoch, Arrivals: 10 * time.Minute,
		Agents: 24, Anonymous: unlimited, Reorgs: Reorgs{Count: 2, RollbackAfter: 3 * time.Second, ReapplyAfter: 7 * time.Second}}})
	s.push.last = clock.Now()
	return &pushWorld{s: s, clock: clock, rc: rc}
}

// run steps the pusher through d of simulated time.
func (pw *pushWorld) run(t *testing.T, d time.Duration) {
	t.Helper()
	for range int(d / time.Second) {
		pw.clock.Add(time.Second)
		pw.s.push.step(t.Context())
	}
}

// parsed reads every delivery the receiver got with pacer's own parser:
// the simulator's payloads must be ones pacer reads.
func (pw *pushWorld) parsed(t *testing.T) []chainhook.Payload {
	t.Helper()
	pw.rc.mu.Lock()
	defer pw.rc.mu.Unlock()
	var out []chainhook.Payload
	for i, b := range pw.rc.bodies {
		require.Equal(t, "Bearer s3cret", pw.rc.auths[i])
		p, err := chainhook.Parse(bytes.NewReader(b))
		require.NoError(t, err, "delivery %d: %s", i, b)
		out = append(out, p)
	}
	return out
}

// hiroTx is what the simulated Hiro answers about a transaction now.
func (pw *pushWorld) hiroTx(t *testing.T, txid string) map[string]any {
	t.Helper()
	rec := do(t, pw.s, http.MethodGet, "/extended/v1/tx/"+txid, "")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var m map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &m))
	return m
}

// matching are the world's transactions a contract_call predicate per
// allowlisted pair matches, mined in (from, at], worked out from the
// world's description of them.
func matching(t *testing.T, w *World, from, at time.Time) map[string]bool {
	t.Helper()
	allow := catalog.Default()
	out := map[string]bool{}
	for _, tx := range w.Transactions() {
		mined := tx.AppearsAt
		if !tx.SettlesAt.IsZero() {
			mined = tx.SettlesAt
		}
		if tx.ContractID == "" || !allow.Allowed(tx.ContractID, tx.FunctionName) || tx.Case == CaseFork ||
			tx.Case == CasePending || tx.Case == CaseDropped || !mined.After(from) || mined.After(at) {
			continue
		}
		out[tx.TxID] = true
	}
	return out
}

func TestPushDeliversEachBlockAndFollowsReorgs(t *testing.T) {
	t.Parallel()
	pw := newPushWorld(t, PushConfig{})
	w := pw.s.World()
	reorgs := w.Reorgs()
	require.Len(t, reorgs, 2)
	r := reorgs[0]
	before := w.ExpectedSwaps(r.RollbackAt.Add(-time.Second))
	var rolled []competition.Swap
	for _, sw := range before {
		if slices.Contains(r.TxIDs, sw.TxID) {
			rolled = append(rolled, sw)
		}
	}
	require.NotEmpty(t, rolled, "a rolled-back block carries a swap")

	// Up to inside the first rollback's window.
	pw.run(t, r.RollbackAt.Sub(epoch)+time.Second)
	during := w.ExpectedSwaps(pw.clock.Now())
	for _, sw := range rolled {
		require.NotContains(t, during, sw, "rolled back: no row")
		tx := pw.hiroTx(t, sw.TxID)
		require.Equal(t, "pending", tx["tx_status"], "back in the mempool while rolled back")
		require.Nil(t, tx["block_hash"])
	}
	pw.run(t, r.ReapplyAt.Sub(pw.clock.Now())+time.Second)
	after := w.ExpectedSwaps(pw.clock.Now())
	for _, sw := range rolled {
		require.Contains(t, after, sw, "re-applied: the same row")
		tx := pw.hiroTx(t, sw.TxID)
		require.Equal(t, "success", tx["tx_status"])
		require.Equal(t, true, tx["canonical"])
		require.Equal(t, r.NewHash, tx["block_hash"])
		require.EqualValues(t, r.NewHeight, tx["block_height"])
		require.EqualValues(t, sw.BurnBlockTime, tx["burn_block_time"], "same Bitcoin block")
	}
	pw.run(t, 10*time.Minute-pw.clock.Now().Sub(epoch)+20*time.Second)

	// Every matching transaction mined in the run came in its block; the
	// rollbacks named the blocks the transactions had come in.
	end := pw.clock.Now()
	want := matching(t, w, epoch, end)
	applied := map[string][]string{} // txid → block hashes, in delivery order
	var rollbacks []chainhook.Block
	allow := catalog.Default()
	for _, p := range pw.parsed(t) {
		ex, err := chainhook.Extract(p, allow)
		require.NoError(t, err)
		cands, rb := ex.Applied, ex.RolledBack
		for _, b := range p.Event.Apply {
			for _, tx := range b.Transactions {
				applied[tx.TransactionIdentifier.Hash] = append(applied[tx.TransactionIdentifier.Hash], b.BlockIdentifier.Hash)
			}
		}
		for _, b := range p.Event.Rollback {
			if !slices.ContainsFunc(rollbacks, func(o chainhook.Block) bool { return o.BlockIdentifier == b.BlockIdentifier }) {
				rollbacks = append(rollbacks, b) // a replay repeats one
			}
		}
		for _, c := range cands {
			require.True(t, want[c.TxID], "a candidate is a matching transaction: %s", c.TxID)
		}
		require.Len(t, rb, len(p.Event.Rollback))
	}
	for id := range want {
		require.NotEmpty(t, applied[id], "transaction %s never delivered", id)
	}
	require.Len(t, applied, len(want), "nothing else delivered")
	require.Len(t, rollbacks, 2)
	for i, rb := range rollbacks {
		require.Equal(t, reorgs[i].Hash, rb.BlockIdentifier.Hash)
		require.Equal(t, reorgs[i].Height, rb.BlockIdentifier.Index)
		for _, tx := range rb.Transactions {
			id := tx.TransactionIdentifier.Hash
			require.Contains(t, reorgs[i].TxIDs, id)
			require.Equal(t, []string{reorgs[i].Hash, reorgs[i].NewHash}, applied[id], "applied, rolled back, applied anew")
		}
	}
	st := pw.s.PushStats()
	require.Equal(t, 2, st.Rollbacks)
	require.Equal(t, 2, st.Replayed, "each rollback replayed once after its re-apply")
	require.Zero(t, st.Dropped+st.Failed+st.Duplicated+st.Reordered)
	require.Equal(t, st.Deliveries+st.Replayed, st.Sent)
	require.Equal(t, st.Sent, st.ByStatus[http.StatusOK])
}

func TestPushFaults(t *testing.T) {
	t.Parallel()
	pw := newPushWorld(t, PushConfig{Drop: 0.2, Duplicate: 0.2, Reorder: 0.2, Replay: 0.2})
	pw.run(t, 10*time.Minute+20*time.Second)
	st := pw.s.PushStats()
	recs := pw.s.PushRecords()
	require.Greater(t, st.Applies, 30, "enough deliveries to see the faults")
	for _, n := range []int{st.Dropped, st.Duplicated, st.Reordered, st.Replayed} {
		require.Positive(t, n)
	}
	require.InDelta(t, 0.2, float64(st.Dropped)/float64(st.Deliveries), 0.12)
	require.Equal(t, len(pw.parsed(t)), st.Sent, "every send reached the receiver")
	// A reordered delivery is sent once, late; copies add sends.
	require.Equal(t, st.Deliveries-st.Dropped+st.Duplicated+st.Replayed, st.Sent)

	// A delivery's transactions reach the receiver unless it was dropped;
	// reorg deliveries never are.
	reorged := map[string]bool{}
	for _, r := range pw.s.World().Reorgs() {
		for _, id := range r.TxIDs {
			reorged[id] = true
		}
	}
	received := map[string]bool{}
	for _, p := range pw.parsed(t) {
		for _, b := range p.Event.Apply {
			for _, tx := range b.Transactions {
				received[tx.TransactionIdentifier.Hash] = true
			}
		}
	}
	dropped, sentSeqs := map[string]bool{}, map[int]bool{}
	for _, rec := range recs {
		if !rec.Dropped {
			sentSeqs[rec.Seq] = true
			continue
		}
		for _, id := range rec.TxIDs {
			dropped[id] = true
			require.False(t, reorged[id] && rec.Kind == PushRollback, "a reorg delivery dropped")
		}
	}
	for id := range matching(t, pw.s.World(), epoch, pw.clock.Now()) {
		require.True(t, received[id] || dropped[id], "%s neither sent nor dropped", id)
	}
	for _, rec := range recs {
		require.False(t, rec.Dropped && sentSeqs[rec.Seq], "a dropped delivery was sent")
	}

	// The same seed gives the same deliveries and faults.
	again := newPushWorld(t, PushConfig{Drop: 0.2, Duplicate: 0.2, Reorder: 0.2, Replay: 0.2})
	again.run(t, 10*time.Minute+20*time.Second)
	strip := func(rs []PushRecord) []PushRecord {
		out := slices.Clone(rs)
		for i := range out {
			out[i].SentAt, out[i].AnsweredAt = time.Time{}, time.Time{}
		}
		return out
	}
	require.Equal(t, strip(recs), strip(again.s.PushRecords()))
}

func TestPushRetriesThenCountsAFailure(t *testing.T) {
	t.Parallel()
	pw := newPushWorld(t, PushConfig{})
	pw.s.push.sleep = func(context.Context, time.Duration) error { return nil }
	pw.rc.status = http.StatusServiceUnavailable
	pw.run(t, 10*time.Minute)
	st := pw.s.PushStats()
	require.Positive(t, st.Deliveries)
	require.Equal(t, st.Sent, st.Failed)
	require.Len(t, pw.parsed(t), pushAttempts*st.Sent, "each send tried pushAttempts times")

	require.ErrorIs(t, New(Config{}).Push(t.Context()), ErrNoPushURL)
}
