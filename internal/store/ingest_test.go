package store_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/hiro"
	"github.com/pacer-dev/pacer/internal/ingest"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
)

func register(t *testing.T, s *store.Store, stx string) {
	t.Helper()
	require.NoError(t, s.UpsertAgent(t.Context(), competition.Agent{STXAddress: stx}, ""))
}

func TestNewAgentIsDueAtOnce(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	before := time.Now().Add(-time.Second)
	register(t, s, "SP1NEW")
	a, found, err := s.AgentIngestRow(ctx, "SP1NEW")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, ingest.Cold, a.Tier)
	require.Nil(t, a.Cursor)
	require.Nil(t, a.LastVisitAt)
	require.Equal(t, store.IngestOK, a.Status)
	due, err := s.DueAgents(ctx, ingest.DefaultConfig(), time.Now().Add(time.Second), 10, nil)
	require.NoError(t, err)
	require.Len(t, due, 1)
	require.Equal(t, "SP1NEW", due[0].Address)
	require.False(t, due[0].NextRunAt.Before(before.Truncate(time.Second)))

	// Updating an agent keeps its row; deleting the agent drops it.
	register(t, s, "SP1NEW")
	_, err = s.Pool().Exec(ctx, `delete from agents where stx_address = 'SP1NEW'`)
	require.NoError(t, err)
	_, found, err = s.AgentIngestRow(ctx, "SP1NEW")
	require.NoError(t, err)
	require.False(t, found)
}

// TestMigrationTakesOverFromTheRoundRobinCursor puts agents, swaps and the
// old sweep cursor in the schema before agent_ingest existed, then migrates.
func TestMigrationTakesOverFromTheRoundRobinCursor(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openStore(t, testenv.PostgresURL(t))
	migrateBefore(t, s, "agent_ingest")

	now := time.Now()
	for _, stx := range []string{"SPHOT", "SPWARM", "SPCOLD", "SPNONE"} {
		register(t, s, stx)
	}
	for i, sw := range []struct {
		sender string
		at     time.Time
	}{
		{"SPHOT", now.Add(-time.Hour)}, {"SPHOT", now.Add(-30 * time.Hour)},
		{"SPWARM", now.Add(-3 * 24 * time.Hour)}, {"SPCOLD", now.Add(-30 * 24 * time.Hour)},
	} {
		// The schema of then: the columns swaps had.
		_, err := s.Pool().Exec(ctx, `insert into swaps (txid, sender, contract_id, function_name, token_in, amount_in,
token_out, amount_out, burn_block_time, tx_status, source) values ($1, $2, 'SP2.c', 'f', 'stx', 1, 'x', 1, $3, 'success', 'sweep')`,
			fmt.Sprintf("0x%02d", i), sw.sender, sw.at.Unix())
		require.NoError(t, err)
	}
	require.NoError(t, s.SetState(ctx, store.StateSweepCursor, "SPHOT"))
	require.NoError(t, s.Migrate(ctx))

	list, err := s.ListAgentIngest(ctx, "")
	require.NoError(t, err)
	got := map[string]store.AgentIngest{}
	for _, a := range list {
		got[a.Address] = a
		require.Nil(t, a.Cursor, "%s pages back to the competition start", a.Address)
		require.Nil(t, a.LastVisitAt)
		require.False(t, a.NextRunAt.After(time.Now()), "%s is due", a.Address)
	}
	require.Len(t, got, 4)
	require.Equal(t, ingest.Hot, got["SPHOT"].Tier)
	require.Equal(t, ingest.Warm, got["SPWARM"].Tier)
	require.Equal(t, ingest.Cold, got["SPCOLD"].Tier)
	require.Equal(t, ingest.Cold, got["SPNONE"].Tier)
	require.Nil(t, got["SPNONE"].LastSwapAt)
	require.WithinDuration(t, now.Add(-time.Hour), *got["SPHOT"].LastSwapAt, time.Second)
	// The seeded rate is the smoothed rate of ingest: each swap weighs
	// exp(-age / RateWindow) / RateWindow.
	want := (math.Exp(-1.0/72) + math.Exp(-30.0/72)) / 3
	require.InEpsilon(t, want, got["SPHOT"].SwapRate, 1e-3)
	require.Zero(t, got["SPNONE"].SwapRate)
	_, ok, err := s.GetState(ctx, store.StateSweepCursor)
	require.NoError(t, err)
	require.False(t, ok, "the round-robin cursor is gone")
}

// TestDueOrderIsTheIngestOrder holds the due-set query to ingest.Less.
func TestDueOrderIsTheIngestOrder(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Millisecond)
	cfg := ingest.DefaultConfig()
	rng := rand.New(rand.NewPCG(5, 6))
	tiers := []ingest.Tier{ingest.Hot, ingest.Warm, ingest.Cold}
	var want []ingest.Agent
	for i := range 120 {
		a := ingest.Agent{Address: fmt.Sprintf("SP%03d", 119-i), Tier: tiers[rng.IntN(3)],
			NextRunAt: now.Add(-time.Duration(rng.IntN(20)) * time.Minute)}
		if rng.IntN(4) > 0 {
			v := now.Add(-time.Duration(rng.IntN(8*60)) * time.Minute)
			a.LastVisitAt = &v
		}
		register(t, s, a.Address)
		_, err := s.Pool().Exec(ctx, `update agent_ingest set tier = $2, next_run_at = $3, last_visit_at = $4 where stx_address = $1`,
			a.Address, string(a.Tier), a.NextRunAt, a.LastVisitAt)
		require.NoError(t, err)
		want = append(want, a)
	}
	// One not due, one skipped.
	_, err := s.Pool().Exec(ctx, `update agent_ingest set next_run_at = $2 where stx_address = $1`, "SP000", now.Add(time.Minute))
	require.NoError(t, err)
	want = slices.DeleteFunc(want, func(a ingest.Agent) bool { return a.Address == "SP000" || a.Address == "SP001" })

	for _, policy := range []ingest.Policy{ingest.PolicyOptimal, ingest.PolicyTiers} {
		cfg.Policy = policy
		sorted := slices.Clone(want)
		slices.SortStableFunc(sorted, func(a, b ingest.Agent) int {
			switch {
			case cfg.Less(a, b, now):
				return -1
			case cfg.Less(b, a, now):
				return 1
			}
			return 0
		})
		due, err := s.DueAgents(ctx, cfg, now, 500, []string{"SP001"})
		require.NoError(t, err)
		var got, wantOrder []string
		for i := range due {
			got = append(got, due[i].Address)
			wantOrder = append(wantOrder, sorted[i].Address)
		}
		require.Equal(t, wantOrder, got, "policy %s", policy)
		first, err := s.DueAgents(ctx, cfg, now, 7, []string{"SP001"})
		require.NoError(t, err)
		require.Len(t, first, 7)
		require.Equal(t, due[:7], first)
	}
}

func TestSaveVisit(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	register(t, s, "SPV")
	a, _, err := s.AgentIngestRow(ctx, "SPV")
	require.NoError(t, err)

	started := time.Now().UTC().Truncate(time.Microsecond)
	at := started.Add(2 * time.Second)
	visited := a
	visited.Cursor = &hiro.Position{BlockHeight: 120, TxIndex: 3}
	visited.LastVisitAt, visited.LastSuccessAt, visited.LastSwapAt = &at, &at, &started
	visited.Tier, visited.SwapRate, visited.NextRunAt = ingest.Hot, 4.5, at.Add(10*time.Minute)
	saved, err := s.SaveVisit(ctx, visited, 3, started)
	require.NoError(t, err)
	require.True(t, saved)

	// A second write over the old version is refused.
	saved, err = s.SaveVisit(ctx, visited, 3, started)
	require.NoError(t, err)
	require.False(t, saved)

	got, _, err := s.AgentIngestRow(ctx, "SPV")
	require.NoError(t, err)
	require.Equal(t, visited.Cursor, got.Cursor)
	require.Equal(t, ingest.Hot, got.Tier)
	require.Equal(t, 4.5, got.SwapRate)
	require.Equal(t, int64(1), got.Visits)
	require.Equal(t, int64(3), got.SwapsFound)
	require.True(t, at.Add(10*time.Minute).Equal(got.NextRunAt))
	var raw string
	require.NoError(t, s.Pool().QueryRow(ctx, `select cursor::text from agent_ingest where stx_address = 'SPV'`).Scan(&raw))
	require.JSONEq(t, `{"block_height": 120, "tx_index": 3}`, raw)

	// A visit cut short keeps where it goes on; a hint during a visit
	// leaves the agent due whatever the visit decided.
	next := got
	next.VisitFrom, next.VisitTop = "v1:50", &hiro.Position{BlockHeight: 130}
	next.NextRunAt = at.Add(time.Hour)
	found, err := s.HintAgent(ctx, "SPV")
	require.NoError(t, err)
	require.True(t, found)
	saved, err = s.SaveVisit(ctx, next, 0, started)
	require.NoError(t, err)
	require.True(t, saved, "a hint does not make the visit's write fail")
	got, _, err = s.AgentIngestRow(ctx, "SPV")
	require.NoError(t, err)
	require.Equal(t, hiro.PageToken("v1:50"), got.VisitFrom)
	require.Equal(t, int64(130), got.VisitTop.BlockHeight)
	require.WithinDuration(t, time.Now(), got.NextRunAt, 5*time.Second, "the hint keeps it due")

	found, err = s.HintAgent(ctx, "SPNOBODY")
	require.NoError(t, err)
	require.False(t, found)
}

func TestIngestSummaryAndRates(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Microsecond)
	rows := []struct {
		stx     string
		tier    ingest.Tier
		overdue time.Duration
		rate    float64
	}{
		{"SPA", ingest.Hot, 30 * time.Second, 10},
		{"SPB", ingest.Hot, -time.Minute, 20},
		{"SPC", ingest.Cold, 2 * time.Hour, 0.1},
	}
	for _, r := range rows {
		register(t, s, r.stx)
		_, err := s.Pool().Exec(ctx, `update agent_ingest set tier = $2, next_run_at = $3, swap_rate = $4, last_visit_at = $5 where stx_address = $1`,
			r.stx, string(r.tier), now.Add(-r.overdue), r.rate, now.Add(-ingest.RateWindow))
		require.NoError(t, err)
	}
	sum, err := s.IngestSummary(ctx, now)
	require.NoError(t, err)
	require.Len(t, sum, 2)
	require.Equal(t, 2, sum[ingest.Hot].Agents)
	require.Equal(t, 1, sum[ingest.Hot].Due)
	require.InDelta(t, 30, sum[ingest.Hot].MaxOverdue, 0.01)
	require.InDelta(t, 30*0.99, sum[ingest.Hot].OverdueP99, 0.5)
	require.True(t, now.Add(-30*time.Second).Equal(sum[ingest.Hot].NextRunAt))
	require.InDelta(t, 7200, sum[ingest.Cold].MaxOverdue, 0.01)

	rates, err := s.SwapRates(ctx, now)
	require.NoError(t, err)
	slices.Sort(rates)
	require.InDeltaSlice(t, []float64{0.1 / math.E, 10 / math.E, 20 / math.E}, rates, 1e-6)

	hot, err := s.ListAgentIngest(ctx, ingest.Hot)
	require.NoError(t, err)
	require.Len(t, hot, 2)
	require.Equal(t, "SPA", hot[0].Address, "the earliest due first")
}

// migrateBefore migrates s to the version before the migration named name
// (migrations/NNN_name.sql), whatever number it has.
func migrateBefore(t *testing.T, s *store.Store, name string) {
	t.Helper()
	files, err := filepath.Glob("migrations/*_" + name + ".sql")
	require.NoError(t, err)
	require.Len(t, files, 1)
	n, err := strconv.Atoi(strings.SplitN(filepath.Base(files[0]), "_", 2)[0])
	require.NoError(t, err)
	require.NoError(t, s.MigrateTo(t.Context(), int32(n-1)))
}
