package sim

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/competition"
)

// handGenerator is a generator with fixed tokens and prices, for routes
// whose rows are written out by hand below.
func handGenerator() *generator {
	return &generator{
		making: &making{w: &World{start: epoch, allow: catalog.Default()}, price: func(Token, time.Time) float64 { return 1 }},
		rng:    rand.New(rand.NewPCG(1, 2)),
		taken:  map[string]bool{},
	}
}

const (
	handAgent = "SP4DXVEC16FS6QR7RBKGWZYJKTXPC81W49W0ATJE"
	handPoolA = "SP1Y5YSTAHZ88XYK1VPDH24GY0HPX5J4JECTMY4A1.pool-a"
	handPoolB = "SP1Y5YSTAHZ88XYK1VPDH24GY0HPX5J4JECTMY4A1.pool-b"
	handWelsh = "SP3NE50GEXFG9SZGTT51P40X2CKYSZ5CC4ZTZ7A2G.welshcorgicoin-token::welshcorgicoin"
	handSBTC  = "SM3VDXK3WZZSA84XXFKAFAF15NNZX32CTSG82JFQ4.sbtc-token::sbtc-token"
	handSTSTX = "SP4SZE494VC2YC5JYG7AYFQ44F5Q4PYV7DVMDPBG.ststx-token::ststx"
)

// TestSwapRowsByHand holds the rows the world computes for a few fixed
// routes against rows written out by hand, with no parser anywhere.
func TestSwapRowsByHand(t *testing.T) {
	t.Parallel()
	stx := Token{ID: "stx", Decimals: 6}
	welsh := Token{ID: handWelsh, Decimals: 6}
	sbtc := Token{ID: handSBTC, Decimals: 8}
	ststx := Token{ID: handSTSTX, Decimals: 6}

	tests := []struct {
		name      string
		giveRoute route
		wantRow   func(mid string) (tokenIn, amountIn, tokenOut, amountOut, raw string)
	}{
		{
			name: "one hop with a protocol fee in the input token",
			giveRoute: route{contract: xykCore, function: "swap-x-for-y", path: []Token{stx, welsh},
				pools: []string{handPoolA}, fee: true, bigIn: "1000000", bigOut: "859839"},
			wantRow: func(string) (string, string, string, string, string) {
				return "stx", "1001000", handWelsh, "859839", `{
					"legsOut":[{"asset_id":"stx","amount":"1000000","counterparty":"` + handPoolA + `"},
					           {"asset_id":"stx","amount":"1000","counterparty":"` + bitflowCore + `"}],
					"legsIn":[{"asset_id":"` + handWelsh + `","amount":"859839","counterparty":"` + handPoolA + `"}],
					"netFlows":[{"asset_id":"stx","net":"-1001000"},{"asset_id":"` + handWelsh + `","net":"859839"}]}`
			},
		},
		{
			name: "STX → WELSH → sBTC, WELSH passing through the agent",
			giveRoute: route{contract: velarMultihop, function: "swap-3", path: []Token{stx, welsh, sbtc},
				pools: []string{handPoolA, handPoolB}, through: true, bigIn: "5000000", bigOut: "2300"},
			wantRow: func(mid string) (string, string, string, string, string) {
				return "stx", "5000000", handSBTC, "2300", `{
					"legsOut":[{"asset_id":"stx","amount":"5000000","counterparty":"` + handPoolA + `"},
					           {"asset_id":"` + handWelsh + `","amount":"` + mid + `","counterparty":"` + handPoolB + `"}],
					"legsIn":[{"asset_id":"` + handWelsh + `","amount":"` + mid + `","counterparty":"` + handPoolA + `"},
					          {"asset_id":"` + handSBTC + `","amount":"2300","counterparty":"` + handPoolB + `"}],
					"netFlows":[{"asset_id":"stx","net":"-5000000"},{"asset_id":"` + handWelsh + `","net":"0"},
					            {"asset_id":"` + handSBTC + `","net":"2300"}]}`
			},
		},
		{
			name: "stSTX → STX → WELSH with 1-unit dust of STX both ways",
			giveRoute: route{contract: multihopRouter, function: "swap-helper-b", path: []Token{ststx, stx, welsh},
				pools: []string{handPoolA, handPoolB}, dust: true, bigIn: "777", bigOut: "999"},
			wantRow: func(string) (string, string, string, string, string) {
				return handSTSTX, "777", handWelsh, "999", `{
					"legsOut":[{"asset_id":"` + handSTSTX + `","amount":"777","counterparty":"` + handPoolA + `"},
					           {"asset_id":"stx","amount":"1","counterparty":"` + handPoolB + `"}],
					"legsIn":[{"asset_id":"stx","amount":"1","counterparty":"` + handPoolA + `"},
					          {"asset_id":"` + handWelsh + `","amount":"999","counterparty":"` + handPoolB + `"}],
					"netFlows":[{"asset_id":"` + handSTSTX + `","net":"-777"},{"asset_id":"stx","net":"0"},
					            {"asset_id":"` + handWelsh + `","net":"999"}]}`
			},
		},
		{
			name: "a provider on the attribution helper",
			giveRoute: route{contract: xykHelper, function: "swap-helper-a", path: []Token{stx, welsh},
				pools: []string{handPoolA}, provider: "SP1M8KHCJXB3SBRQRDBCG3J3859AA1CN0AWDHN17B", bigIn: "10", bigOut: "20"},
			wantRow: func(string) (string, string, string, string, string) {
				return "stx", "10", handWelsh, "20", `{
					"legsOut":[{"asset_id":"stx","amount":"10","counterparty":"` + handPoolA + `"}],
					"legsIn":[{"asset_id":"` + handWelsh + `","amount":"20","counterparty":"` + handPoolA + `"}],
					"netFlows":[{"asset_id":"stx","net":"-10"},{"asset_id":"` + handWelsh + `","net":"20"}],
					"provider":"SP1M8KHCJXB3SBRQRDBCG3J3859AA1CN0AWDHN17B"}`
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			at := epoch.Add(time.Hour)
			tx := handGenerator().swapTx(CaseSwap, handAgent, tt.giveRoute, at)
			// The only number the route drew: what passed through the agent.
			mid := ""
			for _, e := range tx.events {
				if e.Asset != nil && e.Asset.AssetID == handWelsh && e.Asset.Recipient == handAgent {
					mid = e.Asset.Amount
				}
			}
			tokenIn, amountIn, tokenOut, amountOut, raw := tt.wantRow(mid)
			row := tx.row()
			require.JSONEq(t, raw, string(row.RawEventJSON))
			row.RawEventJSON = nil
			require.Equal(t, competition.Swap{
				TxID: tx.TxID, Sender: handAgent, ContractID: tt.giveRoute.contract, FunctionName: tt.giveRoute.function,
				TokenIn: tokenIn, AmountIn: amountIn, TokenOut: tokenOut, AmountOut: amountOut,
				BurnBlockTime: BurnBlockOf(at).Unix(), BlockTime: at.Unix(), TxStatus: "success", Source: competition.SourceSweep,
			}, row)
			// The agent's last leg is the last event.
			last := tx.events[len(tx.events)-1].Asset
			require.Equal(t, handAgent, last.Recipient)
			require.Equal(t, amountOut, last.Amount)
		})
	}
}

// A swap padded to n events keeps its agent's last leg at the end, past
// the 20 events Hiro serves by default.
func TestManyEventsRoute(t *testing.T) {
	t.Parallel()
	g := handGenerator()
	g.tokens = worldTokens{stx: Token{ID: "stx"}, ststx: Token{ID: handSTSTX}, sbtc: Token{ID: handSBTC},
		traded: []Token{{ID: handWelsh, Symbol: "WELSH"}}}
	for _, n := range []int{21, 30, 100} {
		tx := g.swapTx(CaseManyEvents, handAgent, g.manyEventsRoute(n), epoch)
		require.Len(t, tx.events, n)
		rendered := tx.render(epoch, eventWindow{limit: n})
		require.Equal(t, n, rendered.EventCount, "n=%d", n)
		require.Equal(t, handAgent, tx.events[n-1].Asset.Recipient, "n=%d: the agent's last leg is the last event", n)
		for i, e := range rendered.Events {
			require.Equal(t, i, e.EventIndex)
		}
	}
}

// eventPage is the part of /tx/ answers the paging tests read.
type eventPage struct {
	EventCount int `json:"event_count"`
	Events     []struct {
		EventIndex int `json:"event_index"`
	} `json:"events"`
}

func TestHiroTxEventPaging(t *testing.T) {
	t.Parallel()
	s, _ := newSim(t, Config{Seed: 40, Hiro: HiroConfig{Features: Features{ManyEvents: []int{57}}}})
	var id string
	for _, tx := range s.World().Transactions() {
		if tx.Case == CaseManyEvents && tx.Events == 57 {
			id = tx.TxID
		}
	}
	require.NotEmpty(t, id)

	tests := []struct {
		give      string
		wantFirst int
		wantLen   int
	}{
		{give: "", wantFirst: 0, wantLen: 20},
		{give: "?event_limit=100", wantFirst: 0, wantLen: 57},
		{give: "?event_limit=5&event_offset=20", wantFirst: 20, wantLen: 5},
		{give: "?event_limit=100&event_offset=50", wantFirst: 50, wantLen: 7},
		{give: "?event_offset=57", wantLen: 0},
		{give: "?event_offset=1000", wantLen: 0},
	}
	for _, tt := range tests {
		rec := get(t, s, txPath(id)+tt.give)
		require.Equal(t, http.StatusOK, rec.Code, tt.give)
		var page eventPage
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &page))
		require.Equal(t, 57, page.EventCount, "event_count is the total: %s", tt.give)
		require.Len(t, page.Events, tt.wantLen, tt.give)
		for i, e := range page.Events {
			require.Equal(t, tt.wantFirst+i, e.EventIndex, tt.give)
		}
	}
	for _, bad := range []string{"?event_limit=101", "?event_limit=-1", "?event_offset=x"} {
		require.Equal(t, http.StatusBadRequest, get(t, s, txPath(id)+bad).Code, bad)
	}
}

// v3Page is the part of the v3 answers the listing tests read.
type v3Page struct {
	Limit  int `json:"limit"`
	Total  int `json:"total"`
	Cursor struct {
		Next    *string `json:"next"`
		Current *string `json:"current"`
	} `json:"cursor"`
	Results []struct {
		Transaction struct {
			TxID  string `json:"tx_id"`
			Block struct {
				Height  int64 `json:"height"`
				Time    int64 `json:"time"`
				TxIndex int64 `json:"tx_index"`
			} `json:"block"`
			BitcoinBlock struct {
				Time int64 `json:"time"`
			} `json:"bitcoin_block"`
			Status       string          `json:"status"`
			Type         string          `json:"type"`
			ContractCall json.RawMessage `json:"contract_call"`
		} `json:"transaction"`
		Involvement string `json:"involvement"`
	} `json:"results"`
}

func TestHiroPrincipalTransactions(t *testing.T) {
	t.Parallel()
	s, clock := newSim(t, Config{Seed: 41, Hiro: HiroConfig{Features: SweepFeatures()}})
	clock.Add(settled.Sub(epoch))
	w := s.World()
	outcomes := w.ExpectedOutcomes(clock.Now())
	busy := txOf(t, w, CaseBusy).Sender

	// Every mined, canonical transaction once, newest first, page by page.
	var got []string
	prev := position{height: 1 << 62}
	cursor := ""
	for pages := 0; ; pages++ {
		q := "?limit=50"
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		rec := get(t, s, v3Path(busy, q))
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		require.Empty(t, rec.Header().Get("Warning"), "the current endpoint is not deprecated")
		var page v3Page
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &page))
		require.Equal(t, 50, page.Limit)
		for _, r := range page.Results {
			tx := r.Transaction
			p := position{tx.Block.Height, tx.Block.TxIndex}
			require.Equal(t, -1, p.compare(prev), "strictly older than the one before")
			prev = p
			require.Equal(t, heightAt(time.Unix(tx.Block.Time, 0)), tx.Block.Height, "a block a second")
			require.Equal(t, BurnBlockOf(time.Unix(tx.Block.Time, 0)).Unix(), tx.BitcoinBlock.Time, "in its tenure's burn block")
			require.NotEqual(t, "pending", tx.Status)
			require.NotEqual(t, competition.ReasonNotCanonical, outcomes[tx.TxID].Reason, "no fork")
			require.Equal(t, "sender", r.Involvement)
			got = append(got, tx.TxID)
		}
		if page.Cursor.Next == nil {
			break
		}
		require.Regexp(t, `^[0-9]+:2147483647:[0-9]+$`, *page.Cursor.Next)
		cursor = *page.Cursor.Next
		require.Less(t, pages, 20)
	}
	var want []string
	for _, tx := range w.principalList(busy, clock.Now()).agents {
		if !tx.fork {
			want = append(want, tx.TxID)
		}
	}
	require.Greater(t, len(want), 200, "the busy agent's burst and its everyday swaps")
	require.Equal(t, want, got)

	for _, bad := range []string{"?limit=51", "?limit=0", "?cursor=12:x", "?cursor=1:2"} {
		rec := get(t, s, v3Path(busy, bad))
		require.Equal(t, http.StatusBadRequest, rec.Code, bad)
	}
	require.Equal(t, http.StatusBadRequest, get(t, s, v3Path("not-an-address", "")).Code)
	require.JSONEq(t, `{"limit":20,"total":0,"cursor":{"next":null,"previous":null,"current":null},"results":[]}`,
		get(t, s, v3Path("SP000000000000000000002Q6VF78", "")).Body.String())

	old, _ := newSim(t, Config{Seed: 41, Hiro: HiroConfig{NoV3: true}})
	require.Equal(t, http.StatusNotFound, get(t, old, v3Path(busy, "")).Code)
	require.Equal(t, 1, old.Stats().Count(HiroPrincipalTransactionsRoute, http.StatusNotFound))
}

// The v1 list shows mempool transactions on top, then every mined one by
// position, forks included with canonical false.
func TestHiroAddressTransactionsOrder(t *testing.T) {
	t.Parallel()
	s, _ := newSim(t, Config{Seed: 42, Hiro: HiroConfig{Features: Features{Forks: 3}}})
	w := s.World()
	seenFork := 0
	for _, a := range w.Agents() {
		var body struct {
			Results []struct {
				TxID        string `json:"tx_id"`
				TxStatus    string `json:"tx_status"`
				BlockHeight *int64 `json:"block_height"`
				TxIndex     *int64 `json:"tx_index"`
				Canonical   *bool  `json:"canonical"`
			} `json:"results"`
		}
		require.NoError(t, json.Unmarshal(get(t, s, listPath(a.STXAddress, "?limit=50")).Body.Bytes(), &body))
		mined := false
		prev := position{height: 1 << 62}
		for _, r := range body.Results {
			if r.BlockHeight == nil {
				require.False(t, mined, "%s: mempool entries come first", r.TxID)
				continue
			}
			mined = true
			p := position{*r.BlockHeight, *r.TxIndex}
			require.Equal(t, -1, p.compare(prev), "%s: newest first by position", r.TxID)
			prev = p
			if !*r.Canonical {
				seenFork++
			}
		}
	}
	require.GreaterOrEqual(t, seenFork, 3, "forks are listed on v1")
}

// Positions (block, index) are unique in a world, Activity swaps included:
// a sweep's cursor can never stand on two transactions at once.
func TestPositionsAreUnique(t *testing.T) {
	t.Parallel()
	s, _ := newSim(t, Config{Seed: 43, Hiro: HiroConfig{Agents: 40, Activity: true, Features: SweepFeatures()}})
	w := s.World()
	w.ExpectedSwaps(epoch.Add(72 * time.Hour))
	seen := map[position]string{}
	w.mu.Lock()
	defer w.mu.Unlock()
	require.Greater(t, len(w.txs), 1000)
	for _, tx := range w.txs {
		p := tx.position(epoch.Add(72 * time.Hour))
		require.Empty(t, seen[p], "%s and %s share %v", seen[p], tx.TxID, p)
		seen[p] = tx.TxID
	}
}

func TestHiroCostsAndHiddenLimit(t *testing.T) {
	t.Parallel()
	s, clock := newSim(t, Config{Seed: 44, Hiro: HiroConfig{
		Costs:     map[string]int{HiroTxRoute: 3},
		Anonymous: Limits{PerMinute: 50, HiddenPerMinute: 30},
	}})
	clock.Add(15 * time.Second)
	w := s.World()
	agent := w.Agents()[0].STXAddress
	tx := txOf(t, w, CaseSwap).TxID

	rec := get(t, s, listPath(agent, ""))
	require.Equal(t, "1", rec.Header().Get("x-ratelimit-cost-stacks"))
	require.Equal(t, "50", rec.Header().Get("ratelimit-limit"), "the plan's limit is what is advertised")
	require.Equal(t, "29", rec.Header().Get("ratelimit-remaining"), "what is left gives the hidden limit away")
	rec = get(t, s, txPath(tx))
	require.Equal(t, "3", rec.Header().Get("x-ratelimit-cost-stacks"))
	require.Equal(t, "26", rec.Header().Get("ratelimit-remaining"))
	require.Equal(t, "26", rec.Header().Get("x-ratelimit-remaining-stacks-minute"))

	// 26 left: eight more detail requests cost 24, a ninth does not fit.
	for i := range 8 {
		require.NotEqual(t, http.StatusTooManyRequests, get(t, s, txPath(tx)).Code, "request %d", i)
	}
	rec = get(t, s, txPath(tx))
	require.Equal(t, http.StatusTooManyRequests, rec.Code)
	require.Equal(t, "2", rec.Header().Get("ratelimit-remaining"))
	require.Equal(t, "45", rec.Header().Get("retry-after"))
	require.Equal(t, http.StatusOK, get(t, s, v3Path(agent, "")).Code, "a 1-cost request still fits")
}

func TestActivity(t *testing.T) {
	t.Parallel()
	s, _ := newSim(t, Config{Seed: 45, Hiro: HiroConfig{Agents: 400, Activity: true}})
	w := s.World()

	tiers := map[string]int{}
	genesis := 0
	for _, a := range w.Agents() {
		isGenesis := a.ERC8004AgentID != nil && (a.ClaimStatus == competition.ClaimVerified || a.ClaimStatus == competition.ClaimRewarded)
		if !isGenesis {
			require.Empty(t, a.Tier, "only genesis agents trade over time")
			continue
		}
		genesis++
		tiers[a.Tier]++
		lo, hi := map[string]float64{"hot": 12, "warm": 0.3, "cold": 0.005}[a.Tier], map[string]float64{"hot": 480, "warm": 3, "cold": 0.1}[a.Tier]
		require.True(t, a.SwapsPerDay >= lo && a.SwapsPerDay <= hi, "%s agent at %.3f a day", a.Tier, a.SwapsPerDay)
	}
	require.InDelta(t, 0.05*float64(genesis), float64(tiers["hot"]), 1)
	require.InDelta(t, 0.15*float64(genesis), float64(tiers["warm"]), 1)
	require.Equal(t, genesis, tiers["hot"]+tiers["warm"]+tiers["cold"])

	// Swaps keep arriving, each hot agent's at about its rate.
	day1, day3 := w.ExpectedSwaps(epoch), w.ExpectedSwaps(epoch.Add(48*time.Hour))
	require.Greater(t, len(day3), len(day1)+100)
	perAgent := map[string]int{}
	for _, sw := range day3 {
		if sw.BurnBlockTime >= epoch.Unix() {
			perAgent[sw.Sender]++
		}
	}
	var burst bool
	for _, a := range w.Agents() {
		if a.Tier == "hot" && a.SwapsPerDay > 100 {
			// Two days of a Poisson process: within five standard deviations.
			want := 2 * a.SwapsPerDay
			require.InDelta(t, want, float64(perAgent[a.STXAddress]), 5*math.Sqrt(want)+burstMax*2, a.STXAddress)
		}
		burst = burst || perAgent[a.STXAddress] >= 2*burstMin
	}
	require.True(t, burst, "the busy agent's bursts")
}

// The same seed gives the same Activity swaps whatever is asked first.
func TestActivityIsDeterministic(t *testing.T) {
	t.Parallel()
	cfg := Config{Seed: 46, Hiro: HiroConfig{Agents: 30, Activity: true}}
	a, _ := newSim(t, cfg)
	b, _ := newSim(t, cfg)
	later := epoch.Add(30 * time.Hour)

	// a: one agent's list far ahead first, then everything; b: everything.
	hot := ""
	for _, ag := range a.World().Agents() {
		if ag.Tier == "hot" {
			hot = ag.STXAddress
		}
	}
	a.World().principalList(hot, later.Add(24*time.Hour))
	require.Equal(t, a.World().ExpectedSwaps(later), b.World().ExpectedSwaps(later))
	b.World().principalList(hot, later.Add(24*time.Hour))
	require.Equal(t, a.World().Transactions(), b.World().Transactions())
}

func TestSweepFeatures(t *testing.T) {
	t.Parallel()
	s, _ := newSim(t, Config{Seed: 47, Hiro: HiroConfig{Features: SweepFeatures()}})
	w := s.World()
	window := epoch.Add(10*time.Minute + time.Second)

	byCase := map[TxCase][]WorldTx{}
	for _, tx := range w.Transactions() {
		byCase[tx.Case] = append(byCase[tx.Case], tx)
	}
	require.Len(t, byCase[CaseBusy], 200)
	busy := byCase[CaseBusy][0].Sender
	for _, tx := range byCase[CaseBusy] {
		require.Equal(t, busy, tx.Sender, "one busy agent")
		require.True(t, tx.AppearsAt.After(epoch) && !tx.AppearsAt.After(window), "between a visit at Origin and one 10 minutes on")
	}

	before, after := rowsByID(w.ExpectedSwaps(epoch)), rowsByID(w.ExpectedSwaps(window))
	for _, tx := range byCase[CaseBusy] {
		_, was := before[tx.TxID]
		_, is := after[tx.TxID]
		require.True(t, !was && is, "%s is a row of the second visit only", tx.TxID)
	}
	require.GreaterOrEqual(t, len(after), len(before)+200, "the burst, and ordinary arrivals")

	var thirty bool
	for _, tx := range byCase[CaseManyEvents] {
		thirty = thirty || tx.Events == 30
		require.False(t, tx.AppearsAt.After(epoch), "before the first visit")
		_, ok := before[tx.TxID]
		require.True(t, ok, "%s is a row at the first visit", tx.TxID)
	}
	require.True(t, thirty, "a 30-event swap")

	var through int
	for _, tx := range byCase[CaseThroughAgent] {
		row, ok := before[tx.TxID]
		require.True(t, ok, "%s is a row at the first visit", tx.TxID)
		require.Equal(t, "stx", row.TokenIn)
		require.True(t, strings.HasSuffix(row.TokenOut, ".sbtc-token::sbtc-token"), row.TokenOut)
		var legs competition.Legs
		require.NoError(t, json.Unmarshal(row.RawEventJSON, &legs))
		require.Len(t, legs.NetFlows, 3)
		require.Equal(t, "0", legs.NetFlows[1].Net, "the middle token nets to zero")
		require.Len(t, legs.LegsOut, 2)
		require.Len(t, legs.LegsIn, 2)
		require.Equal(t, legs.LegsOut[1].Amount, legs.LegsIn[0].Amount, "all of it passes through")
		through++
	}
	require.Positive(t, through)

	outcomes := w.ExpectedOutcomes(window)
	for _, tx := range byCase[CaseFork] {
		require.Equal(t, competition.ReasonNotCanonical, outcomes[tx.TxID].Reason)
		_, ok := after[tx.TxID]
		require.False(t, ok, "a fork is never a row")
		rec := get(t, s, txPath(tx.TxID))
		require.Contains(t, rec.Body.String(), `"canonical":false`)
	}
	require.Len(t, byCase[CaseFork], 2, "the ordinary world's and the feature's")
}

func rowsByID(rows []competition.Swap) map[string]competition.Swap {
	out := map[string]competition.Swap{}
	for _, r := range rows {
		out[r.TxID] = r
	}
	return out
}

// TestWorldBooksBalance checks the world's own bookkeeping: for every row
// it expects, the legs add up to the route's ends and nothing else.
func TestWorldBooksBalance(t *testing.T) {
	t.Parallel()
	s, _ := newSim(t, Config{Seed: 48, Hiro: HiroConfig{Agents: 40, Activity: true, Features: SweepFeatures()}})
	for _, row := range s.World().ExpectedSwaps(epoch.Add(30 * time.Hour)) {
		var legs competition.Legs
		require.NoError(t, json.Unmarshal(row.RawEventJSON, &legs))
		for _, f := range legs.NetFlows {
			switch f.AssetID {
			case row.TokenIn:
				require.Equal(t, "-"+row.AmountIn, f.Net, row.TxID)
			case row.TokenOut:
				require.Equal(t, row.AmountOut, f.Net, row.TxID)
			default:
				require.Equal(t, "0", f.Net, "%s: %s passes through", row.TxID, f.AssetID)
			}
		}
		require.NotEqual(t, row.TokenIn, row.TokenOut)
		require.Regexp(t, `^[1-9][0-9]*$`, row.AmountIn)
		require.Regexp(t, `^[1-9][0-9]*$`, row.AmountOut)
	}
}
