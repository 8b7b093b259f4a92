package store_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/sim"
)

// maxUint128 is past what any Go integer holds: only text keeps it exact.
const maxUint128 = "340282366920938463463374607431768211455"

func testSwap(txid string) competition.Swap {
	return competition.Swap{
		TxID:          txid,
		Sender:        "SP4DXVEC16FS6QR7RBKGWZYJKTXPC81W49W0ATJE",
		ContractID:    "SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.stableswap-stx-ststx-v-1-2",
		FunctionName:  "swap-x-for-y",
		TokenIn:       "stx",
		AmountIn:      "1000000",
		TokenOut:      "SP4SZE494VC2YC5JYG7AYFQ44F5Q4PYV7DVMDPBG.ststx-token::ststx",
		AmountOut:     "859839",
		BurnBlockTime: 1778787000,
		TxStatus:      "success",
		Source:        competition.SourceSweep,
		RawEventJSON:  json.RawMessage(`{"legsOut":[{"asset_id":"stx","amount":"1000000","counterparty":"SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.stableswap-stx-ststx-v-1-2"}],"legsIn":[{"asset_id":"SP4SZE494VC2YC5JYG7AYFQ44F5Q4PYV7DVMDPBG.ststx-token::ststx","amount":"859839","counterparty":"SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.stableswap-stx-ststx-v-1-2"}]}`),
	}
}

// requireSameSwap compares two rows, the event document as JSON because
// jsonb does not keep the bytes it was given.
func requireSameSwap(t *testing.T, want, got competition.Swap) {
	t.Helper()
	require.JSONEq(t, string(want.RawEventJSON), string(got.RawEventJSON))
	want.RawEventJSON, got.RawEventJSON = nil, nil
	require.Equal(t, want, got)
}

func TestInsertSwap(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	sw := testSwap("0x01")

	exists, err := s.SwapExists(ctx, sw.TxID)
	require.NoError(t, err)
	require.False(t, exists)
	_, found, err := s.Swap(ctx, sw.TxID)
	require.NoError(t, err)
	require.False(t, found)

	inserted, err := s.InsertSwap(ctx, sw)
	require.NoError(t, err)
	require.True(t, inserted)

	exists, err = s.SwapExists(ctx, sw.TxID)
	require.NoError(t, err)
	require.True(t, exists)
	got, found, err := s.Swap(ctx, sw.TxID)
	require.NoError(t, err)
	require.True(t, found)
	requireSameSwap(t, sw, got)

	// A second writer with a different row loses and changes nothing.
	other := sw
	other.Source, other.AmountIn = competition.SourceAgent, "1"
	inserted, err = s.InsertSwap(ctx, other)
	require.NoError(t, err)
	require.False(t, inserted)
	got, _, err = s.Swap(ctx, sw.TxID)
	require.NoError(t, err)
	requireSameSwap(t, sw, got)
}

func TestInsertSwapKeepsAmountsExact(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()

	tests := []struct {
		name          string
		giveIn        string
		giveOut       string
		wantIn        string
		wantOut       string
		wantRejection bool
	}{
		{name: "past 2^128", giveIn: maxUint128, giveOut: maxUint128 + "000", wantIn: maxUint128, wantOut: maxUint128 + "000"},
		{name: "2^64", giveIn: "18446744073709551616", giveOut: "18446744073709551615", wantIn: "18446744073709551616", wantOut: "18446744073709551615"},
		{name: "zero", giveIn: "0", giveOut: "7", wantIn: "0", wantOut: "7"},
		{name: "negative refused", giveIn: "-1", giveOut: "7", wantRejection: true},
		{name: "not a number refused", giveIn: "abc", giveOut: "7", wantRejection: true},
	}
	for i, tt := range tests {
		sw := testSwap("0x" + string(rune('a'+i)))
		sw.AmountIn, sw.AmountOut = tt.giveIn, tt.giveOut
		inserted, err := s.InsertSwap(ctx, sw)
		if tt.wantRejection {
			require.Error(t, err, tt.name)
			require.False(t, inserted, tt.name)
			continue
		}
		require.NoError(t, err, tt.name)
		require.True(t, inserted, tt.name)
		got, found, err := s.Swap(ctx, sw.TxID)
		require.NoError(t, err, tt.name)
		require.True(t, found, tt.name)
		require.Equal(t, tt.wantIn, got.AmountIn, tt.name)
		require.Equal(t, tt.wantOut, got.AmountOut, tt.name)
	}

	// The amounts are numbers to Postgres, not text: sums stay exact too.
	var sum string
	require.NoError(t, s.Pool().QueryRow(ctx, `select sum(amount_in)::text from swaps`).Scan(&sum))
	require.Equal(t, "340282366920938463481821351505477763071", sum)
}

func TestInsertSwapWithoutEvents(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	sw := testSwap("0x02")
	sw.RawEventJSON = nil
	inserted, err := s.InsertSwap(t.Context(), sw)
	require.NoError(t, err)
	require.True(t, inserted)
	got, _, err := s.Swap(t.Context(), sw.TxID)
	require.NoError(t, err)
	require.Nil(t, got.RawEventJSON)
}

func TestSwaps(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()

	got, err := s.Swaps(ctx)
	require.NoError(t, err)
	require.Empty(t, got)

	want := []competition.Swap{testSwap("0x0a"), testSwap("0x0b"), testSwap("0xff")}
	want[2].AmountOut = maxUint128
	for _, i := range []int{2, 0, 1} {
		inserted, err := s.InsertSwap(ctx, want[i])
		require.NoError(t, err)
		require.True(t, inserted)
	}
	got, err = s.Swaps(ctx)
	require.NoError(t, err)
	require.Len(t, got, len(want))
	for i := range want {
		requireSameSwap(t, want[i], got[i])
	}
}

func TestAgentLookup(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	id := int64(42)

	tests := []struct {
		name      string
		giveAgent competition.Agent
		giveClaim string // "" files no claim
		want      competition.Agent
	}{
		{
			name:      "genesis",
			giveAgent: competition.Agent{STXAddress: "SP1", BTCAddress: "bc1q1", ERC8004AgentID: &id},
			giveClaim: competition.ClaimVerified,
			want:      competition.Agent{STXAddress: "SP1", BTCAddress: "bc1q1", ERC8004AgentID: &id, ClaimStatus: "verified"},
		},
		{
			name:      "no claim",
			giveAgent: competition.Agent{STXAddress: "SP2", BTCAddress: "bc1q2"},
			want:      competition.Agent{STXAddress: "SP2", BTCAddress: "bc1q2"},
		},
		{
			name:      "no btc address",
			giveAgent: competition.Agent{STXAddress: "SP3"},
			want:      competition.Agent{STXAddress: "SP3"},
		},
		{
			name:      "pending claim",
			giveAgent: competition.Agent{STXAddress: "SP4", BTCAddress: "bc1q4", ERC8004AgentID: &id},
			giveClaim: "pending",
			want:      competition.Agent{STXAddress: "SP4", BTCAddress: "bc1q4", ERC8004AgentID: &id, ClaimStatus: "pending"},
		},
	}
	for _, tt := range tests {
		require.NoError(t, s.UpsertAgent(ctx, tt.giveAgent, "Agent "+tt.name), tt.name)
		if tt.giveClaim != "" {
			require.NoError(t, s.UpsertClaim(ctx, tt.giveAgent.BTCAddress, tt.giveClaim), tt.name)
		}
	}
	// A claim nobody registered for joins nothing.
	require.NoError(t, s.UpsertClaim(ctx, "bc1qorphan", competition.ClaimRewarded))

	for _, tt := range tests {
		got, found, err := s.Agent(ctx, tt.giveAgent.STXAddress)
		require.NoError(t, err, tt.name)
		require.True(t, found, tt.name)
		require.Equal(t, tt.want, got, tt.name)
	}
	_, found, err := s.Agent(ctx, "SPNOBODY")
	require.NoError(t, err)
	require.False(t, found)
}

func TestUpsertAgentAndClaimUpdate(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	id := int64(7)

	a := competition.Agent{STXAddress: "SP1", BTCAddress: "bc1q1"}
	require.NoError(t, s.UpsertAgent(ctx, a, "First"))
	require.NoError(t, s.UpsertAgent(ctx, a, "First"), "idempotent")
	require.NoError(t, s.UpsertClaim(ctx, "bc1q1", "pending"))
	require.NoError(t, s.UpsertClaim(ctx, "bc1q1", "pending"), "idempotent")

	a.ERC8004AgentID = &id
	require.NoError(t, s.UpsertAgent(ctx, a, "Renamed"))
	require.NoError(t, s.UpsertClaim(ctx, "bc1q1", competition.ClaimRewarded))

	got, found, err := s.Agent(ctx, "SP1")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, competition.Agent{STXAddress: "SP1", BTCAddress: "bc1q1", ERC8004AgentID: &id, ClaimStatus: "rewarded"}, got)

	var name string
	require.NoError(t, s.Pool().QueryRow(ctx, `select display_name from agents where stx_address = 'SP1'`).Scan(&name))
	require.Equal(t, "Renamed", name)

	require.Error(t, s.UpsertClaim(ctx, "bc1q1", "approved"), "not a claim status")
	// btc_address is unique: a second agent cannot take the first one's.
	require.Error(t, s.UpsertAgent(ctx, competition.Agent{STXAddress: "SP2", BTCAddress: "bc1q1"}, ""))
}

// TestSeedSimulatorWorld writes a simulated world the way `pacer sim` does
// and reads it back through the ledger: every agent as the world describes
// it and due for its first visit, and every swap a sweep would write stored
// exactly.
func TestSeedSimulatorWorld(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	at := time.Date(2026, 5, 14, 12, 0, 0, 0, time.UTC)
	w := sim.New(sim.Config{Seed: 1, Now: func() time.Time { return at }}).World()

	require.NoError(t, w.Seed(ctx, s))
	require.NoError(t, w.Seed(ctx, s), "seeding again is harmless")

	rows, err := s.ListAgentIngest(ctx, "")
	require.NoError(t, err)
	var walked []string
	for _, r := range rows {
		walked = append(walked, r.Address)
	}
	slices.Sort(walked)
	var want []string
	for _, a := range w.Agents() {
		want = append(want, a.STXAddress)
		got, found, err := s.Agent(ctx, a.STXAddress)
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, a.Competition(), got)
	}
	slices.Sort(want)
	require.Equal(t, want, walked, "every agent has its ingestion row")

	swaps := w.ExpectedSwaps(at.Add(24 * time.Hour))
	for _, sw := range swaps {
		inserted, err := s.InsertSwap(ctx, sw)
		require.NoError(t, err)
		require.True(t, inserted)
	}
	got, err := s.Swaps(ctx)
	require.NoError(t, err)
	require.Len(t, got, len(swaps))
	for i := range swaps {
		requireSameSwap(t, swaps[i], got[i])
	}
}
