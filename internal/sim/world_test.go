package sim

import (
	"context"
	"encoding/json"
	"math/big"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/competition"
)

// settled is a moment when every transaction of a world built at epoch
// exists and every pending one that will be mined is.
var settled = epoch.Add(defaultArrivals + time.Hour)

var stxPrincipal = regexp.MustCompile(`^S[PMTN][0-9A-HJKMNP-TV-Z]{38,40}$`)

func TestHiroWorldIsDeterministic(t *testing.T) {
	t.Parallel()
	a, _ := newSim(t, Config{Seed: 3})
	b, _ := newSim(t, Config{Seed: 3})
	other, _ := newSim(t, Config{Seed: 4})

	wa, wb := a.World(), b.World()
	require.Equal(t, wa.Agents(), wb.Agents())
	require.Equal(t, wa.claims, wb.claims)
	require.Equal(t, wa.Transactions(), wb.Transactions())
	require.Equal(t, wa.ExpectedSwaps(settled), wb.ExpectedSwaps(settled))
	require.Equal(t, wa.ExpectedOutcomes(settled), wb.ExpectedOutcomes(settled))
	require.NotEqual(t, wa.Agents(), other.World().Agents())

	// What the two serve agrees byte for byte, as a restarted simulator must.
	for _, agent := range wa.Agents()[:5] {
		path := listPath(agent.STXAddress, "?limit=50")
		require.Equal(t, get(t, a, path).Body.String(), get(t, b, path).Body.String())
	}
	for _, tx := range wa.Transactions()[:10] {
		require.Equal(t, get(t, a, txPath(tx.TxID)).Body.String(), get(t, b, txPath(tx.TxID)).Body.String())
	}
}

func TestHiroWorldCoversEveryOutcome(t *testing.T) {
	t.Parallel()
	for _, seed := range []int64{1, 2, 99} {
		for _, agents := range []int{0, 1} { // the default, and the smallest world
			s, _ := newSim(t, Config{Seed: seed, Hiro: HiroConfig{Agents: agents}})
			w := s.World()

			cases := map[TxCase]bool{}
			for _, tx := range w.Transactions() {
				cases[tx.Case] = true
			}
			for _, c := range []TxCase{
				CaseSwap, CaseMultiHop, CaseProvider, CaseHuge, CaseAtStart, CaseThroughAgent, CaseManyEvents, CaseConfirmsLater,
				CasePending, CaseFailed, CaseDropped, CaseBeforeStart, CaseNotGenesis, CaseNoERC8004,
				CaseOutsider, CaseOneWay, CaseNoTransfers, CaseBadAmount, CaseNotFound, CaseFetchFails,
				CaseUnknownStatus, CaseFork, CaseOffList, CaseTransfer, CaseDeploy,
			} {
				require.True(t, cases[c], "seed %d, %d agents: no %s", seed, agents, c)
			}

			// Every verdict a sweep can reach from the world, the database
			// and panics aside, is reached by a found transaction; the
			// fast path's contract_not_allowlisted by one the sweep skips.
			found := map[competition.Reason]int{}
			statuses := map[competition.Status]int{}
			skipped := map[competition.Reason]int{}
			for _, o := range w.ExpectedOutcomes(settled) {
				if o.Found {
					statuses[o.Status]++
					found[o.Reason]++
				} else {
					skipped[o.Reason]++
				}
			}
			for _, r := range competition.AllReasons() {
				switch r {
				case competition.ReasonDBUnavailable, competition.ReasonVerifyThrew:
					require.Zero(t, found[r], r)
				case competition.ReasonContractNotAllowlisted:
					require.Positive(t, skipped[r], r)
				default:
					require.Positive(t, found[r], "seed %d, %d agents: no found tx rejected as %s", seed, agents, r)
				}
			}
			require.Positive(t, statuses[competition.StatusInserted])
			require.Positive(t, statuses[competition.StatusPending])
			require.Positive(t, skipped[competition.ReasonMalformedTx], "non-contract calls")
		}
	}
}

func TestHiroWorldOutcomesByCase(t *testing.T) {
	t.Parallel()
	s, _ := newSim(t, Config{Seed: 8})
	w := s.World()
	outcomes := w.ExpectedOutcomes(settled)

	want := map[TxCase]Outcome{
		CaseSwap:          {Found: true, Status: competition.StatusInserted},
		CaseMultiHop:      {Found: true, Status: competition.StatusInserted},
		CaseProvider:      {Found: true, Status: competition.StatusInserted},
		CaseHuge:          {Found: true, Status: competition.StatusInserted},
		CaseAtStart:       {Found: true, Status: competition.StatusInserted},
		CaseThroughAgent:  {Found: true, Status: competition.StatusInserted},
		CaseManyEvents:    {Found: true, Status: competition.StatusInserted},
		CaseConfirmsLater: {Found: true, Status: competition.StatusInserted},
		CasePending:       {Found: true, Status: competition.StatusPending},
		CaseFailed:        {Found: true, Status: competition.StatusRejected, Reason: competition.ReasonTxFailed},
		CaseDropped:       {Found: true, Status: competition.StatusRejected, Reason: competition.ReasonTxFailed},
		CaseBeforeStart:   {Found: true, Status: competition.StatusRejected, Reason: competition.ReasonBeforeCompStart},
		CaseNotGenesis:    {Found: true, Status: competition.StatusRejected, Reason: competition.ReasonSenderNotGenesis},
		CaseNoERC8004:     {Found: true, Status: competition.StatusRejected, Reason: competition.ReasonSenderNotRegistered},
		CaseOutsider:      {Found: true, Status: competition.StatusRejected, Reason: competition.ReasonSenderNotRegistered},
		CaseOneWay:        {Found: true, Status: competition.StatusRejected, Reason: competition.ReasonIncompleteEvents},
		CaseNoTransfers:   {Found: true, Status: competition.StatusRejected, Reason: competition.ReasonIncompleteEvents},
		CaseBadAmount:     {Found: true, Status: competition.StatusRejected, Reason: competition.ReasonInvalidAmount},
		CaseNotFound:      {Found: true, Status: competition.StatusRejected, Reason: competition.ReasonTxNotFound},
		CaseFetchFails:    {Found: true, Status: competition.StatusRejected, Reason: competition.ReasonTxFetchFailed},
		CaseUnknownStatus: {Found: true, Status: competition.StatusRejected, Reason: competition.ReasonMalformedTx},
		CaseFork:          {Found: true, Status: competition.StatusRejected, Reason: competition.ReasonNotCanonical},
		CaseTransfer:      {Found: false, Status: competition.StatusRejected, Reason: competition.ReasonMalformedTx},
		CaseDeploy:        {Found: false, Status: competition.StatusRejected, Reason: competition.ReasonMalformedTx},
	}
	genesis := map[string]bool{}
	for _, a := range w.Agents() {
		genesis[a.STXAddress] = a.ERC8004AgentID != nil &&
			(a.ClaimStatus == competition.ClaimVerified || a.ClaimStatus == competition.ClaimRewarded)
	}
	for _, tx := range w.Transactions() {
		got, ok := outcomes[tx.TxID]
		require.True(t, ok, "%s exists by now", tx.TxID)
		got.TxID = ""
		if tx.Case == CaseOffList {
			// The sender's claim gate comes before the allowlist.
			require.False(t, got.Found)
			if genesis[tx.Sender] {
				require.Equal(t, competition.ReasonContractNotAllowlisted, got.Reason)
			}
			continue
		}
		require.Equal(t, want[tx.Case], got, "%s %s", tx.Case, tx.TxID)
	}
}

func TestHiroWorldAgentsAndClaims(t *testing.T) {
	t.Parallel()
	s, _ := newSim(t, Config{Seed: 12})
	w := s.World()
	agents := w.Agents()
	require.Len(t, agents, DefaultAgents)
	// Go compares strings by bytes, as Postgres's "C" collation does.
	require.True(t, slices.IsSortedFunc(agents, func(a, b Agent) int {
		return strings.Compare(a.STXAddress, b.STXAddress)
	}), "agents in byte order, as the sweep pages them")

	claims := map[string]string{}
	for _, c := range w.claims {
		claims[c.BTCAddress] = c.Status
	}
	seen := map[string]bool{}
	withoutID, statuses := 0, map[string]int{}
	for _, a := range agents {
		require.Regexp(t, stxPrincipal, a.STXAddress)
		require.Regexp(t, `^bc1q[02-9ac-hj-np-z]{38}$`, a.BTCAddress)
		require.NotEmpty(t, a.DisplayName)
		require.False(t, seen[a.STXAddress] || seen[a.BTCAddress], "unique addresses")
		seen[a.STXAddress], seen[a.BTCAddress] = true, true
		require.Equal(t, claims[a.BTCAddress], a.ClaimStatus, "ClaimStatus is the claim filed under the BTC address")
		delete(claims, a.BTCAddress)
		if a.ERC8004AgentID == nil {
			withoutID++
		}
		statuses[a.ClaimStatus]++
	}
	require.Positive(t, withoutID)
	for _, status := range []string{"verified", "rewarded", "pending", "failed", ""} {
		require.Positive(t, statuses[status], "an agent with claim %q", status)
	}
	require.NotEmpty(t, claims, "claims nobody registered for")
}

func TestHiroWorldTransactions(t *testing.T) {
	t.Parallel()
	s, _ := newSim(t, Config{Seed: 21})
	w := s.World()
	cat := catalog.Default()
	tokens := map[string]bool{}
	for _, tok := range s.Tokens() {
		tokens[tok.ID] = true
	}
	agents := map[string]bool{}
	for _, a := range w.Agents() {
		agents[a.STXAddress] = true
	}

	listed := map[string]int{}
	for _, tx := range w.Transactions() {
		require.Regexp(t, `^0x[0-9a-f]{64}$`, tx.TxID)
		require.NotEmpty(t, tx.ListedUnder)
		for _, a := range tx.ListedUnder {
			require.True(t, agents[a], "listed under registered agents only")
			listed[a]++
		}
		allowed := tx.ContractID != "" && cat.Allowed(tx.ContractID, tx.FunctionName)
		switch tx.Case {
		case CaseOffList, CaseTransfer, CaseDeploy:
			require.False(t, allowed, tx.Case)
		default:
			require.True(t, allowed, "%s %s::%s", tx.Case, tx.ContractID, tx.FunctionName)
			require.Len(t, tx.ListedUnder, 1, "a found tx is found once per sweep")
		}
		if tx.Case == CaseOutsider {
			require.False(t, agents[tx.Sender])
		}
	}
	busiest := 0
	for _, n := range listed {
		require.LessOrEqual(t, n, maxListed, "one sweep page holds every list")
		busiest = max(busiest, n)
	}
	require.Greater(t, busiest, hiroDefaultLimit, "some list needs a second page at Hiro's default limit")

	// The rows a sweep would write: real tokens, exact huge amounts, routes
	// with more legs than the two that count, a provider, the first second.
	swaps := w.ExpectedSwaps(settled)
	require.NotEmpty(t, swaps)
	require.True(t, slices.IsSortedFunc(swaps, func(a, b competition.Swap) int { return strings.Compare(a.TxID, b.TxID) }))
	twoTo64 := new(big.Int).Lsh(big.NewInt(1), 64)
	var huge, multiLeg, provider, atStart int
	for _, sw := range swaps {
		require.Equal(t, competition.SourceSweep, sw.Source)
		require.Equal(t, "success", sw.TxStatus)
		require.GreaterOrEqual(t, sw.BlockTime, w.CompetitionStart().Unix(), "the swap's own block time counts")
		for _, id := range []string{sw.TokenIn, sw.TokenOut} {
			require.True(t, tokens[id], "%s is a Tenero token", id)
			require.True(t, catalog.ValidTokenID(id), id)
		}
		require.NotEqual(t, sw.TokenIn, sw.TokenOut)
		in, _ := new(big.Int).SetString(sw.AmountIn, 10)
		out, _ := new(big.Int).SetString(sw.AmountOut, 10)
		if in.Cmp(twoTo64) > 0 || out.Cmp(twoTo64) > 0 {
			huge++
		}
		var legs competition.Legs
		require.NoError(t, json.Unmarshal(sw.RawEventJSON, &legs))
		if len(legs.LegsIn)+len(legs.LegsOut) > 2 {
			multiLeg++
		}
		if legs.Provider == cat.ProviderAddress() {
			provider++
		}
		if sw.BlockTime == w.CompetitionStart().Unix() {
			atStart++
			require.Less(t, sw.BurnBlockTime, sw.BlockTime, "its tenure's burn block is before the start: recorded all the same")
		}
	}
	require.GreaterOrEqual(t, huge, 2)
	require.Positive(t, multiLeg)
	require.Positive(t, provider)
	require.Equal(t, 1, atStart)
	// The swap of the block before (Stacks blocks are 4 s apart), in the
	// same tenure, is rejected.
	blockBefore := w.CompetitionStart().Add(-stacksBlockPeriod * time.Second)
	require.Equal(t, BurnBlockOf(w.CompetitionStart()), BurnBlockOf(blockBefore), "one tenure")
	var before int
	outcomes := w.ExpectedOutcomes(settled)
	for _, tx := range w.Transactions() {
		if outcomes[tx.TxID].Reason == competition.ReasonBeforeCompStart && tx.AppearsAt.Equal(blockBefore) {
			before++
		}
	}
	require.Equal(t, 1, before)
}

func TestHiroWorldTimeline(t *testing.T) {
	t.Parallel()

	t.Run("origin after the start", func(t *testing.T) {
		t.Parallel()
		s, _ := newSim(t, Config{Seed: 5})
		w := s.World()
		require.Equal(t, epoch, w.Origin(), "the clock at New")
		require.Equal(t, DefaultCompetitionStart, w.CompetitionStart())

		var history, arrivals int
		for _, tx := range w.Transactions() {
			if tx.AppearsAt.Before(epoch) {
				history++
			} else {
				arrivals++
			}
			require.True(t, tx.AppearsAt.Before(epoch.Add(defaultArrivals)), "nothing after the arrivals window")
		}
		require.Positive(t, history)
		require.Positive(t, arrivals)

		// Swaps only accumulate.
		now, later := w.ExpectedSwaps(epoch), w.ExpectedSwaps(settled)
		require.NotEmpty(t, now)
		require.Greater(t, len(later), len(now))
		for _, sw := range now {
			require.Contains(t, later, sw)
		}
	})

	t.Run("origin before the start", func(t *testing.T) {
		t.Parallel()
		start := epoch.Add(6 * time.Hour)
		s, _ := newSim(t, Config{Seed: 5, Hiro: HiroConfig{CompetitionStart: start}})
		w := s.World()
		require.Empty(t, w.ExpectedSwaps(epoch), "nothing counts before the start")
		require.NotEmpty(t, w.ExpectedSwaps(start.Add(defaultArrivals)))
		for _, tx := range w.Transactions() {
			if tx.Case != CaseBeforeStart && tx.Case != CaseConfirmsLater {
				require.False(t, tx.AppearsAt.Before(start), "%s at %v", tx.Case, tx.AppearsAt)
			}
		}
	})

	t.Run("a fixed origin ignores the clock", func(t *testing.T) {
		t.Parallel()
		origin := epoch.Add(-48 * time.Hour)
		a, _ := newSim(t, Config{Seed: 5, Hiro: HiroConfig{Origin: origin}})
		b := New(Config{Seed: 5, Hiro: HiroConfig{Origin: origin}}) // the real clock
		require.Equal(t, origin, a.World().Origin())
		require.Equal(t, a.World().Transactions(), b.World().Transactions())
	})
}

// fakeAgentWriter records what Seed writes.
type fakeAgentWriter struct {
	mu     sync.Mutex
	agents map[string]competition.Agent
	names  map[string]string
	claims map[string]string
	calls  int
}

func (f *fakeAgentWriter) UpsertAgent(_ context.Context, a competition.Agent, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	// Claims live in their own table; the agent row has no status.
	a.ClaimStatus = ""
	f.agents[a.STXAddress], f.names[a.STXAddress] = a, name
	return nil
}

func (f *fakeAgentWriter) UpsertClaim(_ context.Context, btc, status string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.claims[btc] = status
	return nil
}

func TestHiroWorldSeed(t *testing.T) {
	t.Parallel()
	s, _ := newSim(t, Config{Seed: 9})
	w := s.World()
	dst := &fakeAgentWriter{agents: map[string]competition.Agent{}, names: map[string]string{}, claims: map[string]string{}}

	require.NoError(t, w.Seed(t.Context(), dst))
	require.NoError(t, w.Seed(t.Context(), dst), "seeding again is harmless")
	require.Equal(t, 2*(len(w.Agents())+len(w.claims)), dst.calls)

	require.Len(t, dst.agents, len(w.Agents()))
	for _, a := range w.Agents() {
		want := a.Competition()
		want.ClaimStatus = ""
		require.Equal(t, want, dst.agents[a.STXAddress])
		require.Equal(t, a.DisplayName, dst.names[a.STXAddress])
		// What the ledger will join back is what the world says.
		require.Equal(t, a.ClaimStatus, dst.claims[a.BTCAddress])
	}
	require.Len(t, dst.claims, len(w.claims))
}
