package worker_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/activities"
	"github.com/pacer-dev/pacer/internal/api"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/sim"
	"github.com/pacer-dev/pacer/worker"
	"github.com/pacer-dev/pacer/workflows"
)

// testRegistry serves the world's agents as a registry, two to a page,
// less those removed, with an ETag and 304.
type testRegistry struct {
	world   *sim.World
	mu      sync.Mutex
	removed map[string]bool
	reads   int
}

func (g *testRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.reads++
	type rec struct {
		STX   string  `json:"stxAddress"`
		BTC   string  `json:"btcAddress,omitempty"`
		Name  string  `json:"displayName,omitempty"`
		ID    *int64  `json:"erc8004AgentId"`
		Claim *string `json:"claimStatus"`
	}
	var all []rec
	for _, a := range g.world.Agents() {
		if g.removed[a.STXAddress] {
			continue
		}
		x := rec{STX: a.STXAddress, BTC: a.BTCAddress, Name: a.DisplayName, ID: a.ERC8004AgentID}
		if a.ClaimStatus != "" {
			st := a.ClaimStatus
			x.Claim = &st
		}
		all = append(all, x)
	}
	etag := `"` + strconv.Itoa(len(all)) + `"`
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	if page == 0 && r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	out := map[string]any{"agents": all[min(page*2, len(all)):min(page*2+2, len(all))], "next": nil}
	if page*2+2 < len(all) {
		out["next"] = "http://" + r.Host + "/agents?page=" + strconv.Itoa(page+1)
	}
	w.Header().Set("ETag", etag)
	_ = json.NewEncoder(w).Encode(out)
}

// Agents and claims registered only through the registry URL are swept
// and their swaps recorded, exactly the world's; an agent the registry
// stops listing is deregistered: kept with its swaps, no longer due for a
// visit, not on the leaderboard.
func TestAgentsArriveThroughTheRegistry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStack(t, workflows.Config{TeneroEvery: pacer.Duration(time.Hour), SweepEvery: pacer.Duration(time.Hour),
		RegistryEvery: pacer.Duration(time.Hour)})
	unlimited := sim.Limits{PerMinute: 1 << 30, PerMonth: 1 << 30}
	s.sim = sim.New(sim.Config{Seed: 11, Now: func() time.Time { return worldAt },
		Tenero: sim.TeneroConfig{Anonymous: unlimited},
		Hiro:   sim.HiroConfig{Origin: worldAt, Agents: 24, Anonymous: unlimited}})
	hs := httptest.NewServer(s.sim)
	t.Cleanup(hs.Close)
	s.simU = hs.URL
	reg := &testRegistry{world: s.sim.World(), removed: map[string]bool{}}
	rs := httptest.NewServer(reg)
	t.Cleanup(rs.Close)

	acts := activities.New(activities.Options{Discovery: discovery.Config{Mode: "agents"}, Store: s.st, Logger: s.log, TeneroBaseURL: s.simU, HiroBaseURL: s.simU,
		HiroPerMinute: 10000, CompetitionStart: time.Unix(1778700600, 0), RegistryURL: rs.URL + "/agents"})
	w := worker.New(s.tc, s.sched.TaskQueue, acts)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	_, err := worker.EnsureRunning(ctx, s.tc, s.sched)
	require.NoError(t, err)

	count := func(sql string) (n int) {
		require.NoError(t, s.st.Pool().QueryRow(ctx, sql).Scan(&n))
		return n
	}
	agents := s.sim.World().Agents()
	eventually(t, time.Minute, "the registry's agents registered", func() bool {
		return count(`select count(*) from agents where deregistered_at is null`) == len(agents)
	})
	var claimed int
	for _, a := range agents {
		if a.ClaimStatus != "" {
			claimed++
		}
	}
	require.Equal(t, claimed, count(`select count(*) from claims`), "claims came with the agents")

	sweepUntilIdle(t, s)
	requireLedgerIsWorld(t, s.st, s.sim.World(), worldAt)
	require.NotZero(t, count(`select count(*) from swaps`))

	// The registry stops listing an agent with swaps.
	var gone string
	require.NoError(t, s.st.Pool().QueryRow(ctx, `select sender from swaps group by sender order by count(*) desc limit 1`).Scan(&gone))
	reg.mu.Lock()
	reg.removed[gone] = true
	reg.mu.Unlock()
	_, err = worker.RefreshNow(ctx, s.tc, s.sched.WorkflowID, pacer.TaskRegistry)
	require.NoError(t, err)
	require.Equal(t, 1, count(`select count(*) from agents where deregistered_at is not null and stx_address = '`+gone+`'`))
	require.Zero(t, count(`select count(*) from agent_ingest where stx_address = '`+gone+`'`), "no longer visited")
	require.NotZero(t, count(`select count(*) from swaps where sender = '`+gone+`'`), "kept with its swaps")
	_, err = s.st.Pool().Exec(ctx, `update agent_ingest set next_run_at = now()`)
	require.NoError(t, err)
	due, err := s.st.DueAgents(ctx, acts.Ingest, time.Now().Add(time.Second), 1000, nil)
	require.NoError(t, err)
	for _, a := range due {
		require.NotEqual(t, gone, a.Address)
	}
	require.Len(t, due, len(agents)-1)

	board := httptest.NewServer(api.New(api.Options{Store: s.st, Catalog: catalog.Default()}))
	t.Cleanup(board.Close)
	resp, err := http.Get(board.URL + "/api/competition/leaderboard?limit=200")
	require.NoError(t, err)
	var lb api.LeaderboardResponse
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&lb))
	resp.Body.Close()
	require.NotEmpty(t, lb.Rows)
	for _, r := range lb.Rows {
		require.NotEqual(t, gone, r.STXAddress, "not ranked")
	}

	// The next read, unchanged, is a 304 and changes nothing.
	before := count(`select count(*) from audit_log where action = 'registry.read'`)
	_, err = worker.RefreshNow(ctx, s.tc, s.sched.WorkflowID, pacer.TaskRegistry)
	require.NoError(t, err)
	require.Equal(t, before, count(`select count(*) from audit_log where action = 'registry.read'`))
}
