package activities_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/activities"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/metrics"
	"github.com/pacer-dev/pacer/internal/rollup"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/internal/webhook"
)

// simClock is a clock shifted from the wall clock by a settable offset: it
// runs at real speed, so real HTTP timing and the ladder hold, from a
// simulated instant of the test's choosing (just after a period's end).
type simClock struct{ offset atomic.Int64 }

func (c *simClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// Set makes Now read t at once.
func (c *simClock) Set(t time.Time) { c.offset.Store(int64(time.Until(t))) }

type rollupFixture struct {
	st    *store.Store
	acts  *activities.Activities
	clock *simClock
}

type fixtureOptions struct {
	zone            *time.Location
	ladder          webhook.Ladder
	deliveryTimeout time.Duration
	metrics         *metrics.Metrics
}

func newRollupFixture(t *testing.T, o fixtureOptions) *rollupFixture {
	t.Helper()
	st := testenv.Store(t)
	clock := &simClock{}
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	acts := activities.New(activities.Options{
		Discovery: discovery.Config{Mode: "agents"}, // per-agent visits, as these tests were written for
		Store:     st, Logger: log, TeneroBaseURL: "http://127.0.0.1:1", HiroBaseURL: "http://127.0.0.1:1",
		DayZone: o.zone, DeliveryLadder: o.ladder, DeliveryTimeout: o.deliveryTimeout, Clock: clock.Now, Metrics: o.metrics,
		WebhookAllowPrivate: true, // the receivers are on loopback
	})
	return &rollupFixture{st: st, acts: acts, clock: clock}
}

// rollup runs the Rollup activity the way a worker does.
func (f *rollupFixture) rollup(t *testing.T, nominal time.Time) pacer.RollupResult {
	t.Helper()
	res, err := f.runRollup(nominal)
	require.NoError(t, err)
	return res
}

// runRollup is rollup for another goroutine than the test's.
func (f *rollupFixture) runRollup(nominal time.Time) (pacer.RollupResult, error) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(f.acts)
	v, err := env.ExecuteActivity(f.acts.Rollup, pacer.RollupInput{
		Occurrence: pacer.Occurrence{Task: pacer.TaskRollup, NominalAt: nominal},
	})
	var res pacer.RollupResult
	if err == nil {
		err = v.Get(&res)
	}
	return res, err
}

// markSweptAt records that the sweep listed every agent successfully at
// `at` (SPEC §5.1's agent_ingest, whose rows registering the agents made).
func (f *rollupFixture) markSweptAt(t *testing.T, at time.Time) {
	t.Helper()
	require.NoError(t, f.sweptAt(t.Context(), at))
}

func (f *rollupFixture) sweptAt(ctx context.Context, at time.Time) error {
	_, err := f.st.Pool().Exec(ctx, `update agent_ingest set last_success_at = $1`, at)
	return err
}

// Token facts the test states itself (from data/tokens.json and SPEC §4),
// rather than reading them from pacer's catalog.
const (
	tokSTX   = "stx"
	tokSBTC  = "SM3VDXK3WZZSA84XXFKAFAF15NNZX32CTSG82JFQ4.sbtc-token::sbtc-token"
	tokSTSTX = "SP4SZE494VC2YC5JYG7AYFQ44F5Q4PYV7DVMDPBG.ststx-token::ststx"
	// A peg, stored by tenero under its contract id; swaps carry ::asset.
	pegKey   = "SP120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNE.usdcx"
	tokUSDCx = pegKey + "::usdcx-token"
	// A token the catalog does not know: its decimals come from Tenero.
	tokALEX = "SP102V8P0F7JX67ARQ77WEA3D3CFB5XW39REDT0AM.token-alex"
	// A token nobody prices.
	tokNone = "SP3MBWGE8GDHCPDJ5RJSNW2D3CE1EXZTWKQTRPG0R.nothing"
)

var testDecimals = map[string]int{tokSTX: 6, tokSBTC: 8, tokSTSTX: 6, tokUSDCx: 6, tokALEX: 8}

func agentAddr(i int) string { return fmt.Sprintf("SP%038d", i) }

type obs struct {
	token string
	at    time.Time
	price string // "" = no price
}

type swapRow struct {
	txid, sender, tokenIn, tokenOut, amountIn string
	at                                        time.Time
	status                                    string
}

// world is a simulated day's raw data: observations and swaps.
type world struct {
	obs   []obs
	swaps []swapRow
}

func randPrice(rng *rand.Rand, whole int) string {
	return fmt.Sprintf("%d.%012d", rng.IntN(whole)+1, rng.Int64N(1_000_000_000_000))
}

// simulateDay builds the data of one day: each token observed on its own
// cadence, ststx with nothing in the day's last 90 minutes (its close must
// be its high), stx observed at midnight exactly; swaps of five agents,
// some priced, some not, some outside the day.
func simulateDay(seed uint64, day rollup.Period) world {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	var w world
	cadence := map[string]time.Duration{tokSTX: 7 * time.Minute, tokSBTC: 11 * time.Minute, tokSTSTX: 13 * time.Minute, tokALEX: 17 * time.Minute}
	whole := map[string]int{tokSTX: 3, tokSBTC: 90000, tokSTSTX: 4, tokALEX: 1}
	for _, tok := range []string{tokSTX, tokSBTC, tokSTSTX, tokALEX} {
		start := day.Start.Add(-3 * time.Hour).Add(time.Duration(rng.IntN(300)) * time.Second)
		for at := start; at.Before(day.End); at = at.Add(cadence[tok]) {
			if tok == tokSTSTX && at.After(day.End.Add(-90*time.Minute)) {
				break
			}
			price := randPrice(rng, whole[tok])
			if rng.IntN(25) == 0 {
				price = "" // Tenero said "no price" now and then
			}
			w.obs = append(w.obs, obs{tok, at, price})
		}
	}
	w.obs = append(w.obs, obs{tokSTX, day.End, randPrice(rng, 3)})
	for at := day.Start.Add(-time.Hour); at.Before(day.End); at = at.Add(30 * time.Minute) {
		w.obs = append(w.obs, obs{pegKey, at, "1"})
	}
	ins := []string{tokSTX, tokSBTC, tokUSDCx, tokALEX, tokNone, "unknown", tokSTSTX}
	for i := range 60 {
		at := day.Start.Add(time.Duration(rng.Int64N(int64(day.End.Sub(day.Start))))).Truncate(time.Second)
		switch i {
		case 0:
			at = day.Start.Add(-time.Second) // the day before
		case 1:
			at = day.End // the next day
		case 2:
			at = day.Start // first second of the day
		}
		in := ins[rng.IntN(len(ins))]
		out := ins[rng.IntN(len(ins))]
		// Amounts from 4 to 25 digits: well past 2^64 at the top.
		amount := []byte{byte('1' + rng.IntN(9))}
		for range rng.IntN(22) + 3 {
			amount = append(amount, byte('0'+rng.IntN(10)))
		}
		status := "success"
		if i == 3 {
			status = "abort_by_response"
		}
		w.swaps = append(w.swaps, swapRow{
			txid: fmt.Sprintf("0x%064x", i+1), sender: agentAddr(rng.IntN(5) + 1), tokenIn: in, tokenOut: out,
			amountIn: string(amount), at: at, status: status,
		})
	}
	return w
}

// load writes the world into Postgres the way the tasks would: agents,
// swaps, price observations, and Tenero's decimals for ALEX.
func (f *rollupFixture) load(t *testing.T, w world) {
	t.Helper()
	ctx := t.Context()
	for i := 1; i <= 5; i++ {
		require.NoError(t, f.st.UpsertAgent(ctx, competition.Agent{STXAddress: agentAddr(i)}, ""))
	}
	f.addObservations(t, w.obs)
	f.insertSwaps(t, w.swaps...)
	eight := 8
	_, err := f.st.UpsertPrice(ctx, store.Price{TokenID: tokALEX, Decimals: &eight, Source: store.SourceTenero, FetchedAt: time.Unix(0, 0)})
	require.NoError(t, err)
}

func (f *rollupFixture) insertSwaps(t *testing.T, swaps ...swapRow) {
	t.Helper()
	for _, s := range swaps {
		_, err := f.st.InsertSwap(t.Context(), competition.Swap{
			TxID: s.txid, Sender: s.sender, ContractID: "SP000000000000000000002Q6VF78.router", FunctionName: "swap",
			TokenIn: s.tokenIn, AmountIn: s.amountIn, TokenOut: s.tokenOut, AmountOut: "1",
			BurnBlockTime: s.at.Unix(), TxStatus: s.status, Source: "sweep",
		})
		require.NoError(t, err)
	}
}

func (f *rollupFixture) addObservations(t *testing.T, os []obs) {
	t.Helper()
	var rows []store.Observation
	for _, o := range os {
		var p *string
		if o.price != "" {
			p = &o.price
		}
		rows = append(rows, store.Observation{TokenID: o.token, ObservedAt: o.at, PriceUSD: p})
	}
	_, err := f.st.InsertObservations(t.Context(), rows)
	require.NoError(t, err)
}

// The test's own oracle, in exact rationals.

func rat(s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		panic("not a number: " + s)
	}
	return r
}

type candle struct {
	open, high, low, close *big.Rat
	samples                int
}

func (w world) candle(tok string, p rollup.Period) (candle, bool) {
	var in []obs
	for _, o := range w.obs {
		if o.token == tok && o.price != "" && !o.at.Before(p.Start) && o.at.Before(p.End) {
			in = append(in, o)
		}
	}
	if len(in) == 0 {
		return candle{}, false
	}
	sort.Slice(in, func(i, j int) bool { return in[i].at.Before(in[j].at) })
	c := candle{open: rat(in[0].price), high: rat(in[0].price), low: rat(in[0].price), close: rat(in[len(in)-1].price), samples: len(in)}
	for _, o := range in {
		if v := rat(o.price); v.Cmp(c.high) > 0 {
			c.high = v
		} else if v.Cmp(c.low) < 0 {
			c.low = v
		}
	}
	if p.Kind == rollup.Day {
		c.close = c.high
		var last *obs
		for i, o := range w.obs {
			if o.token == tok && o.price != "" && !o.at.After(p.End) && !o.at.Before(p.End.Add(-time.Hour)) &&
				(last == nil || o.at.After(last.at)) {
				last = &w.obs[i]
			}
		}
		if last != nil {
			c.close = rat(last.price)
		}
	}
	return c, true
}

// priceAt is the last price at or before at, under the token's own id,
// else under its contract id.
func (w world) priceAt(tok string, at time.Time) *big.Rat {
	find := func(id string) *big.Rat {
		var best *obs
		for i, o := range w.obs {
			if o.token == id && o.price != "" && !o.at.After(at) && (best == nil || o.at.After(best.at)) {
				best = &w.obs[i]
			}
		}
		if best == nil {
			return nil
		}
		return rat(best.price)
	}
	if p := find(tok); p != nil {
		return p
	}
	if contract, _, ok := strings.Cut(tok, "::"); ok {
		return find(contract)
	}
	return nil
}

type volume struct {
	swaps, unpriced int
	usd             *big.Rat // nil: nothing priced
	tokens          []string
	agents          map[string]bool
}

func (w world) volumes(p rollup.Period) (map[string]*volume, *volume) {
	per := map[string]*volume{}
	total := &volume{agents: map[string]bool{}}
	add := func(v *volume, s swapRow, usd *big.Rat) {
		v.swaps++
		if usd == nil {
			v.unpriced++
		} else {
			if v.usd == nil {
				v.usd = new(big.Rat)
			}
			v.usd.Add(v.usd, usd)
		}
		for _, tok := range []string{s.tokenIn, s.tokenOut} {
			if tok != "unknown" && !slices.Contains(v.tokens, tok) {
				v.tokens = append(v.tokens, tok)
			}
		}
	}
	for _, s := range w.swaps {
		if s.status != "success" || s.at.Before(p.Start) || !s.at.Before(p.End) {
			continue
		}
		var usd *big.Rat
		dec, known := testDecimals[s.tokenIn]
		if price := w.priceAt(s.tokenIn, s.at); price != nil && known {
			amount := rat(s.amountIn)
			scale := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(dec)), nil))
			usd = new(big.Rat).Quo(new(big.Rat).Mul(amount, price), scale)
		}
		if per[s.sender] == nil {
			per[s.sender] = &volume{}
		}
		add(per[s.sender], s, usd)
		add(total, s, usd)
		total.agents[s.sender] = true
	}
	for _, v := range per {
		slices.Sort(v.tokens)
	}
	slices.Sort(total.tokens)
	return per, total
}

// decode reads a rollup's data with numbers kept as text.
func decode(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	require.NoError(t, dec.Decode(&m))
	return m
}

func num(t *testing.T, v any) *big.Rat {
	t.Helper()
	n, ok := v.(json.Number)
	require.True(t, ok, "want a JSON number, got %T %v", v, v)
	return rat(n.String())
}

func requireRat(t *testing.T, want *big.Rat, got any, what string) {
	t.Helper()
	if want == nil {
		require.Nil(t, got, what)
		return
	}
	g := num(t, got)
	require.Zero(t, want.Cmp(g), "%s: want %s, got %s", what, want.FloatString(30), g.FloatString(30))
}

// checkPeriod compares every row of a period with the oracle.
func checkPeriod(t *testing.T, st *store.Store, w world, p rollup.Period) []store.Rollup {
	t.Helper()
	rows, err := st.Rollups(t.Context(), store.RollupQuery{Period: p.Kind, From: p.Start, To: p.Start.Add(time.Second), Limit: 1000})
	require.NoError(t, err)
	checkRows(t, w, p, rows, nil)
	return rows
}

// checkRows compares rows of a period with the oracle: a row for each
// token priced in the period, for each agent who swapped in it (of those
// in agents, when not nil), and the competition's.
func checkRows(t *testing.T, w world, p rollup.Period, rows []store.Rollup, agents []string) {
	t.Helper()
	per, total := w.volumes(p)
	if agents != nil {
		maps.DeleteFunc(per, func(a string, _ *volume) bool { return !slices.Contains(agents, a) })
	}
	tokens := 0
	for _, r := range rows {
		require.True(t, r.PeriodEnd.Equal(p.End))
		d := decode(t, r.Data)
		switch r.SubjectKind {
		case rollup.KindToken:
			tokens++
			c, ok := w.candle(r.Subject, p)
			require.True(t, ok, "a row for %s, which has no price in the period", r.Subject)
			requireRat(t, c.open, d["open"], r.Subject+" open")
			requireRat(t, c.high, d["high"], r.Subject+" high")
			requireRat(t, c.low, d["low"], r.Subject+" low")
			requireRat(t, c.close, d["close"], r.Subject+" close")
			require.Equal(t, json.Number(fmt.Sprint(c.samples)), d["samples"], r.Subject+" samples")
		case rollup.KindAgent:
			v := per[r.Subject]
			require.NotNil(t, v, "a row for agent %s, who did not swap", r.Subject)
			require.Equal(t, json.Number(fmt.Sprint(v.swaps)), d["swaps"])
			require.Equal(t, json.Number(fmt.Sprint(v.unpriced)), d["unpriced"])
			requireRat(t, v.usd, d["volumeUsd"], r.Subject+" volumeUsd")
			require.ElementsMatch(t, v.tokens, d["tokensTraded"])
			delete(per, r.Subject)
		case rollup.KindCompetition:
			require.Equal(t, rollup.CompetitionSubject, r.Subject)
			require.Equal(t, json.Number(fmt.Sprint(total.swaps)), d["swaps"])
			require.Equal(t, json.Number(fmt.Sprint(total.unpriced)), d["unpriced"])
			require.Equal(t, json.Number(fmt.Sprint(len(total.agents))), d["activeAgents"])
			requireRat(t, total.usd, d["volumeUsd"], "competition volumeUsd")
			require.ElementsMatch(t, total.tokens, d["tokensTraded"])
		}
	}
	require.Empty(t, per, "agents without a row")
	wantTokens := 0
	for _, tok := range []string{tokSTX, tokSBTC, tokSTSTX, tokALEX, pegKey} {
		if _, ok := w.candle(tok, p); ok {
			wantTokens++
		}
	}
	require.Equal(t, wantTokens, tokens)
}

// A simulated day in a zone with its own midnight: every figure equals
// the test's own exact computation, a token without a price near midnight
// closes at its high, the day stays incomplete until every token and the
// sweep have caught up past midnight, and recomputing changes nothing.
func TestRollupSimulatedDay(t *testing.T) {
	t.Parallel()
	ny, err := rollup.LoadZone("America/New_York")
	require.NoError(t, err)
	f := newRollupFixture(t, fixtureOptions{zone: ny})
	day := rollup.Period{Kind: rollup.Day,
		Start: time.Date(2026, 11, 10, 0, 0, 0, 0, ny).UTC(), End: time.Date(2026, 11, 11, 0, 0, 0, 0, ny).UTC()}
	w := simulateDay(42, day)
	f.load(t, w)

	// Five minutes past midnight nothing has been seen since: incomplete.
	first := f.rollup(t, day.End.Add(5*time.Minute))
	lastHour := rollup.Period{Kind: rollup.Hour, Start: day.End.Add(-time.Hour), End: day.End}
	require.Equal(t, []time.Time{lastHour.Start}, utc(first.Hours))
	require.NotEmpty(t, first.Days)
	require.True(t, first.Days[0].Start.Equal(day.Start))
	require.False(t, first.Days[0].Complete)
	rows := checkPeriod(t, f.st, w, day)
	for _, r := range rows {
		require.False(t, r.Complete)
	}
	checkPeriod(t, f.st, w, lastHour)

	c, ok := w.candle(tokSTSTX, day)
	require.True(t, ok)
	require.Zero(t, c.close.Cmp(c.high), "the oracle's ststx closes at its high")
	require.Positive(t, c.close.Cmp(c.low), "and that is not trivially its low")

	// Tokens caught up, but not the sweep: still incomplete.
	late := []obs{}
	for _, tok := range []string{tokSTX, tokSBTC, tokSTSTX, tokALEX, pegKey} {
		late = append(late, obs{tok, day.End.Add(3 * time.Minute), "2"})
	}
	f.addObservations(t, late)
	f.markSweptAt(t, day.End.Add(-time.Minute))
	second := f.rollup(t, day.End.Add(65*time.Minute))
	require.False(t, second.Days[0].Complete, "an agent not listed since midnight holds the day")

	// Everyone caught up: complete, with the same figures.
	f.markSweptAt(t, day.End.Add(10*time.Minute))
	third := f.rollup(t, day.End.Add(2*time.Hour+5*time.Minute))
	require.True(t, third.Days[0].Complete)
	again := checkPeriod(t, f.st, w, day)
	require.Len(t, again, len(rows))
	for i := range rows {
		require.True(t, again[i].Complete)
		require.JSONEq(t, string(rows[i].Data), string(again[i].Data), "recomputing changes no figure")
	}

	t.Logf("figures: simulated day in America/New_York: %d rollup rows, %d observations, %d swaps, every figure equal to the exact oracle",
		len(rows), len(w.obs), len(w.swaps))

	// A complete day is final: later runs leave it alone.
	fourth := f.rollup(t, day.End.Add(3*time.Hour+5*time.Minute))
	for _, d := range fourth.Days {
		require.False(t, d.Start.Equal(day.Start))
	}

	// The same occurrence does not run twice (the ledger); another one in
	// the same hour recomputes it to the same values.
	hourRows := checkPeriod(t, f.st, w, lastHour)
	f.rollup(t, day.End.Add(5*time.Minute))
	f.rollup(t, day.End.Add(6*time.Minute))
	for i, r := range checkPeriod(t, f.st, w, lastHour) {
		require.JSONEq(t, string(hourRows[i].Data), string(r.Data))
		require.True(t, r.ComputedAt.After(hourRows[i].ComputedAt) || r.ComputedAt.Equal(hourRows[i].ComputedAt))
	}
}

func utc(ts []time.Time) []time.Time {
	out := make([]time.Time, len(ts))
	for i, t := range ts {
		out[i] = t.UTC()
	}
	return out
}

// An hour without any data still gets its competition row (zeros): that row
// is what tells the deliver task the hour's rollups exist.
func TestRollupEmptyHour(t *testing.T) {
	t.Parallel()
	f := newRollupFixture(t, fixtureOptions{})
	at := time.Date(2026, 11, 2, 10, 5, 0, 0, time.UTC)
	res := f.rollup(t, at)
	require.Equal(t, 1+activities.DayLookback, res.Rows, "one competition row per hour and day")
	rows, err := f.st.Rollups(t.Context(), store.RollupQuery{Period: rollup.Hour, From: at.Add(-2 * time.Hour), To: at, Limit: 10})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, rollup.KindCompetition, rows[0].SubjectKind)
	require.JSONEq(t, `{"swaps":0,"volumeUsd":0,"unpriced":0,"tokensTraded":[],"activeAgents":0}`, string(rows[0].Data))
	require.True(t, rows[0].Complete, "no agent, no observation: nothing to wait for")
}
