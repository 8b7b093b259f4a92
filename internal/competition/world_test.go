package competition_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/hiro"
	"github.com/pacer-dev/pacer/internal/sim"
)

// worldLedger is an in-memory Ledger holding a simulated world's agents.
type worldLedger struct {
	mu         sync.Mutex
	agents     map[string]competition.Agent
	rows       map[string]competition.Swap
	rejections map[string]competition.Rejection
}

func newWorldLedger(w *sim.World) *worldLedger {
	l := &worldLedger{agents: map[string]competition.Agent{}, rows: map[string]competition.Swap{},
		rejections: map[string]competition.Rejection{}}
	for _, a := range w.Agents() {
		l.agents[a.STXAddress] = a.Competition()
	}
	return l
}

func (l *worldLedger) SwapExists(_ context.Context, txid string) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.rows[txid]
	return ok, nil
}

func (l *worldLedger) KnownRejection(_ context.Context, txid string) (competition.Rejection, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.rejections[txid]
	return r, ok, nil
}

func (l *worldLedger) Agent(_ context.Context, stx string) (competition.Agent, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a, ok := l.agents[stx]
	return a, ok, nil
}

func (l *worldLedger) InsertSwap(_ context.Context, sw competition.Swap) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.rows[sw.TxID]; ok {
		return false, nil
	}
	l.rows[sw.TxID] = sw
	return true, nil
}

func (l *worldLedger) RecordRejection(_ context.Context, r competition.Rejection) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.rejections[r.TxID]; !ok {
		l.rejections[r.TxID] = r
	}
	return nil
}

func (l *worldLedger) RecordPending(context.Context, string, string) error { return nil }

func (l *worldLedger) swaps() []competition.Swap {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]competition.Swap, 0, len(l.rows))
	for _, sw := range l.rows {
		out = append(out, sw)
	}
	slices.SortFunc(out, func(a, b competition.Swap) int { return strings.Compare(a.TxID, b.TxID) })
	return out
}

// TestVerifierAgreesWithTheWorld sweeps every agent of simulated worlds
// through pacer's Hiro client (every page, v3 and v1) and the real
// verifier, as the per-agent sweep does (a listing entry first, the detail
// when it must), at several moments, and holds the ledger and every verdict
// against the simulator's expectations, which the simulator computes from
// what it generated, never from this package: the two must agree.
func TestVerifierAgreesWithTheWorld(t *testing.T) {
	t.Parallel()
	origin := time.Date(2026, 5, 14, 12, 0, 0, 0, time.UTC)
	unlimited := sim.Limits{PerMinute: 1 << 30, PerMonth: 1 << 30}
	tests := []struct {
		name    string
		giveCfg sim.HiroConfig
		giveAt  []time.Duration
	}{
		{name: "every outcome, v3", giveCfg: sim.HiroConfig{}, giveAt: []time.Duration{0, 40 * time.Minute, 3 * time.Hour}},
		{name: "every outcome, v1 only", giveCfg: sim.HiroConfig{NoV3: true}, giveAt: []time.Duration{0, 3 * time.Hour}},
		{
			name:    "busy agent, long events, a route through the agent, a fork, activity",
			giveCfg: sim.HiroConfig{Agents: 12, Activity: true, Features: sim.SweepFeatures()},
			giveAt:  []time.Duration{0, 10*time.Minute + time.Second, 26 * time.Hour},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			now := origin
			var mu sync.Mutex
			cfg := tt.giveCfg
			cfg.Origin, cfg.Anonymous = origin, unlimited
			s := sim.New(sim.Config{Seed: 38, Hiro: cfg, Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }})
			w := s.World()
			srv := httptest.NewServer(s)
			t.Cleanup(srv.Close)
			c := hiro.New(hiro.Config{BaseURL: srv.URL, HTTPClient: srv.Client(),
				Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
			ledger := newWorldLedger(w)
			v := &competition.Verifier{Ledger: ledger, Txs: c, Allowlist: catalog.Default(), CompetitionStart: w.CompetitionStart()}
			ctx := t.Context()

			for _, d := range tt.giveAt {
				mu.Lock()
				now = origin.Add(d)
				at := now
				mu.Unlock()
				rowsBefore := map[string]bool{}
				for _, sw := range ledger.swaps() {
					rowsBefore[sw.TxID] = true
				}

				got := map[string]sim.Outcome{}
				for _, a := range w.Agents() {
					for tok := hiro.PageToken(""); ; {
						page, err := c.ListTransactions(ctx, a.STXAddress, tok)
						require.NoError(t, err)
						for _, e := range page.Entries {
							if !competition.Found(e, catalog.Default()) {
								continue
							}
							require.NotContains(t, got, e.TxID, "found under one agent only")
							o, decided := v.RejectListed(ctx, e)
							if !decided {
								o = v.Verify(ctx, e.TxID, competition.SourceSweep)
							}
							got[e.TxID] = sim.Outcome{TxID: o.TxID, Found: true, Status: o.Status, Reason: o.Reason}
						}
						if tok = page.Next; tok == "" {
							break
						}
					}
				}

				for id, o := range w.ExpectedOutcomes(at) {
					g, listed := got[id]
					if !o.Found || !listed {
						// v3 lists mined, canonical transactions only.
						require.False(t, listed && !o.Found, "%s listed but not a found tx", id)
						continue
					}
					if rowsBefore[id] {
						o.Status = competition.StatusAlreadyKnown // the ledger answers first
					}
					require.Equal(t, o, g, "at +%v", d)
				}
				require.Equal(t, w.ExpectedSwaps(at), ledger.swaps(), "at +%v", d)
			}
		})
	}
}
