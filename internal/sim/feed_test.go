package sim

import (
	"cmp"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/catalog"
)

const feedPath = "/extended/v1/tx?type=contract_call"

// roomy lifts the anonymous plan's minute so a test can read many pages.
var roomy = Limits{PerMinute: 1 << 20}

// feedEntry is what a reader of the feed needs of an entry, decoded here
// by the test itself rather than by pacer's client.
type feedEntry struct {
	TxID          string `json:"tx_id"`
	TxType        string `json:"tx_type"`
	TxStatus      string `json:"tx_status"`
	Sender        string `json:"sender_address"`
	BlockHeight   int64  `json:"block_height"`
	TxIndex       int64  `json:"tx_index"`
	BlockTime     int64  `json:"block_time"`
	BurnBlockTime int64  `json:"burn_block_time"`
	Canonical     *bool  `json:"canonical"`
	EventCount    *int   `json:"event_count"`
	Events        []any  `json:"events"`
	ContractCall  *struct {
		ContractID   string `json:"contract_id"`
		FunctionName string `json:"function_name"`
	} `json:"contract_call"`
}

type feedPage struct {
	Limit   int         `json:"limit"`
	Offset  int         `json:"offset"`
	Total   int         `json:"total"`
	Results []feedEntry `json:"results"`
}

func readFeed(t *testing.T, h http.Handler, path string) feedPage {
	t.Helper()
	rec := get(t, h, path)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var keys map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &keys))
	require.Len(t, keys, 4, "exactly limit, offset, total, results: %s", rec.Body.String()[:min(200, rec.Body.Len())])
	var p feedPage
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &p))
	return p
}

// pos is a feed entry's place: block, index, and txid to break ties a
// buggy server might make.
type pos struct {
	height, index int64
	txid          string
}

func posOf(e feedEntry) pos { return pos{e.BlockHeight, e.TxIndex, e.TxID} }

func (p pos) compare(o pos) int {
	return cmp.Or(cmp.Compare(p.height, o.height), cmp.Compare(p.index, o.index), strings.Compare(p.txid, o.txid))
}

func pagePath(offset int) string { return feedPath + "&limit=50&offset=" + strconv.Itoa(offset) }

// walkDown is a tail as the SPEC describes it, written here independently
// of pacer's engine: read pages of 50 from offset 0 down to the first
// entry at or below stop, dropping repeats; between pages, advance is
// called (blocks arrive). It returns the new entries in the order first
// seen and how many repeats it dropped.
func walkDown(t *testing.T, h http.Handler, stop pos, advance func()) (seen []feedEntry, repeats int) {
	t.Helper()
	ids := map[string]bool{}
	for offset := 0; ; offset += 50 {
		p := readFeed(t, h, pagePath(offset))
		require.NotEmpty(t, p.Results, "ran off the end of the feed at offset %d before reaching the stop", offset)
		for _, e := range p.Results {
			if posOf(e).compare(stop) <= 0 {
				return seen, repeats
			}
			if ids[e.TxID] {
				repeats++
				continue
			}
			ids[e.TxID] = true
			seen = append(seen, e)
		}
		advance()
	}
}

// Nakamoto tenures (SPEC §5.0 "Times"): every transaction has its Stacks
// block's own time, blocks 4 s apart, and the time of the Bitcoin block
// that began its tenure, shared by the tenure's many blocks.
func TestFeedTenuresOfFourSecondBlocks(t *testing.T) {
	t.Parallel()
	s, clock := newSim(t, Config{Seed: 43, Hiro: HiroConfig{Activity: true, Anonymous: roomy}})
	clock.Add(3 * time.Hour)
	blocks := map[int64]int64{}           // height → block_time
	tenures := map[int64]map[int64]bool{} // burn_block_time → heights
	for offset := 0; offset < 1000; offset += 50 {
		for _, e := range readFeed(t, s, pagePath(offset)).Results {
			require.Zero(t, (e.BlockTime-heightEpoch)%4, "a block every 4 s: %d", e.BlockTime)
			if bt, ok := blocks[e.BlockHeight]; ok {
				require.Equal(t, bt, e.BlockTime, "one time a block")
			}
			blocks[e.BlockHeight] = e.BlockTime
			require.LessOrEqual(t, e.BurnBlockTime, e.BlockTime)
			require.Less(t, e.BlockTime-e.BurnBlockTime, int64(600), "in the tenure its burn block began")
			if tenures[e.BurnBlockTime] == nil {
				tenures[e.BurnBlockTime] = map[int64]bool{}
			}
			tenures[e.BurnBlockTime][e.BlockHeight] = true
		}
	}
	for h, bt := range blocks {
		if next, ok := blocks[h+1]; ok {
			require.Equal(t, bt+4, next, "block %d follows %d by 4 s", h+1, h)
		}
	}
	many := 0
	for _, heights := range tenures {
		if len(heights) > 10 {
			many++
		}
	}
	require.Positive(t, many, "tenures of many blocks under one burn block: %d tenures", len(tenures))
}

func TestFeedShapeAndOrder(t *testing.T) {
	t.Parallel()
	s, clock := newSim(t, Config{Seed: 41, Hiro: HiroConfig{Activity: true, Anonymous: roomy}})
	clock.Add(3 * time.Hour)
	now := clock.Now()
	rec := get(t, s, pagePath(0))
	require.Equal(t, http.StatusOK, rec.Code)
	require.NotEmpty(t, rec.Header().Get(hiroHeaderCost), "the feed is rate limited like every Hiro route")
	require.Contains(t, rec.Header().Get("Warning"), "299")

	p := readFeed(t, s, pagePath(0))
	require.Equal(t, 50, p.Limit)
	require.Equal(t, 0, p.Offset)
	require.Len(t, p.Results, 50)
	require.Greater(t, p.Total, 1000, "a day and more of 40,000 calls a day")
	agents := map[string]bool{}
	for _, a := range s.World().Agents() {
		agents[a.STXAddress] = true
	}
	var strangers, agentCalls int
	var prev *pos
	for offset := 0; offset < 2000; offset += 50 {
		for _, e := range readFeed(t, s, pagePath(offset)).Results {
			require.Equal(t, "contract_call", e.TxType)
			require.NotNil(t, e.ContractCall)
			require.NotNil(t, e.Events, "events: [] in list entries")
			require.Empty(t, e.Events)
			require.NotNil(t, e.EventCount)
			require.NotNil(t, e.Canonical)
			require.NotEqual(t, statusPending, e.TxStatus, "the feed lists mined transactions only")
			require.LessOrEqual(t, e.BurnBlockTime, now.Unix(), "nothing after the simulated now")
			p := posOf(e)
			if prev != nil {
				require.Negative(t, p.compare(*prev), "newest first, no two at one position")
			}
			prev = &p
			if agents[e.Sender] {
				agentCalls++
			} else {
				strangers++
			}
		}
	}
	require.Positive(t, strangers)
	require.Positive(t, agentCalls, "the agents' swaps are woven into the same blocks")

	// A stranger's call answers by id, events and all.
	for _, e := range p.Results {
		if agents[e.Sender] {
			continue
		}
		rec := get(t, s, txPath(e.TxID)+"?event_limit=100")
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		var tx feedEntry
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &tx))
		require.Equal(t, e.TxID, tx.TxID)
		require.Equal(t, e.BlockHeight, tx.BlockHeight)
		require.Len(t, tx.Events, *tx.EventCount)
		require.NotEmpty(t, tx.Events)
		break
	}
}

func TestFeedLimits(t *testing.T) {
	t.Parallel()
	s, _ := newSim(t, Config{Seed: 42})
	for path, want := range map[string]int{
		feedPath + "&limit=50":                              http.StatusOK,
		feedPath + "&limit=51":                              http.StatusBadRequest,
		feedPath + "&limit=500":                             http.StatusBadRequest,
		feedPath + "&offset=-1":                             http.StatusBadRequest,
		feedPath + "&limit=x":                               http.StatusBadRequest,
		"/extended/v1/tx?type=bogus":                        http.StatusBadRequest,
		"/extended/v1/tx?type=coinbase,x":                   http.StatusBadRequest,
		"/extended/v1/tx":                                   http.StatusOK,
		"/extended/v1/tx?type=contract_call,token_transfer": http.StatusOK,
	} {
		require.Equal(t, want, get(t, s, path).Code, path)
	}
	require.Equal(t, hiroDefaultLimit, readFeed(t, s, "/extended/v1/tx").Limit)
	p := readFeed(t, s, feedPath)
	// Past the end: an empty page, not an error.
	end := readFeed(t, s, feedPath+"&offset="+strconv.Itoa(p.Total+10))
	require.Empty(t, end.Results)
	require.Equal(t, p.Total, end.Total)

	sunset, _ := newSim(t, Config{Seed: 42, Hiro: HiroConfig{Sunset: true}})
	require.Equal(t, http.StatusGone, get(t, sunset, feedPath).Code)
}

// TestFeedWalkAsBlocksArrive: pages shift while a reader walks them, yet
// the reader, dropping repeats, sees every transaction between its last
// position and the head exactly once.
func TestFeedWalkAsBlocksArrive(t *testing.T) {
	t.Parallel()
	cfg := Config{Seed: 43, Hiro: HiroConfig{Origin: epoch, Activity: true, Anonymous: roomy,
		Chain: ChainConfig{Volume: 200_000}}}
	s, clock := newSim(t, cfg)
	clock.Add(time.Hour)
	t0 := clock.Now()
	stop := posOf(readFeed(t, s, pagePath(0)).Results[0])

	clock.Add(5 * time.Minute)
	start := clock.Now()
	seen, repeats := walkDown(t, s, stop, func() { clock.Add(3 * time.Second) })
	require.Positive(t, repeats, "blocks arrived during the walk, so pages shifted and repeated")

	// The truth: the same world frozen at the walk's start, read by a
	// second simulator whose clock never moves.
	cfg.Now = func() time.Time { return start }
	frozen := New(cfg)
	truth, frozenRepeats := walkDown(t, frozen, stop, func() {})
	require.Zero(t, frozenRepeats)
	require.Greater(t, len(truth), 500, "five minutes at 200,000 a day")

	got := map[string]bool{}
	for _, e := range seen {
		require.False(t, got[e.TxID], "each transaction once")
		got[e.TxID] = true
	}
	strangers := 0
	agents := map[string]bool{}
	for _, a := range s.World().Agents() {
		agents[a.STXAddress] = true
	}
	for _, e := range truth {
		require.True(t, got[e.TxID], "the walk skipped %s", e.TxID)
		if !agents[e.Sender] {
			strangers++
		}
	}
	// Anything else the walk saw arrived during it.
	for _, e := range seen {
		if !slicesContainsID(truth, e.TxID) {
			require.Greater(t, e.BurnBlockTime, start.Unix())
		}
	}
	// And the truth holds every stranger's call of the window, counted by
	// the chain's own books rather than through the feed.
	w := frozen.World()
	require.Equal(t, w.StrangerCalls(start)-w.StrangerCalls(t0), strangers)
}

func slicesContainsID(es []feedEntry, id string) bool {
	for _, e := range es {
		if e.TxID == id {
			return true
		}
	}
	return false
}

func TestFeedForks(t *testing.T) {
	t.Parallel()
	cfg := Config{Seed: 44, Hiro: HiroConfig{Origin: epoch, Anonymous: roomy, Features: Features{Forks: 1},
		Chain: ChainConfig{ForkShare: 0.05}}}
	s, clock := newSim(t, cfg)
	clock.Add(time.Hour)
	forks := forkEntries(t, s)
	require.NotEmpty(t, forks, "losing forks show in the feed, canonical false")

	// A fork's transaction: /tx/ serves it (canonical false), tx/multiple
	// says not found, as the real server does.
	rec := get(t, s, txPath(forks[0]))
	require.Equal(t, http.StatusOK, rec.Code)
	var tx feedEntry
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &tx))
	require.False(t, *tx.Canonical)
	m := readMultiple(t, s, "?tx_id="+forks[0])
	require.False(t, m[forks[0]].Found)
}

// forkEntries walks the first 2,000 entries of the feed and returns the
// txids marked canonical false.
func forkEntries(t *testing.T, h http.Handler) []string {
	t.Helper()
	var forks []string
	for offset := 0; offset < 2000; offset += 50 {
		p := readFeed(t, h, pagePath(offset))
		for _, e := range p.Results {
			if !*e.Canonical {
				forks = append(forks, e.TxID)
			}
		}
	}
	return forks
}

type multipleEntry struct {
	Found  bool            `json:"found"`
	Result json.RawMessage `json:"result"`
}

func readMultiple(t *testing.T, h http.Handler, query string) map[string]multipleEntry {
	t.Helper()
	rec := get(t, h, "/extended/v1/tx/multiple"+query)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var out map[string]multipleEntry
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
	return out
}

func TestTxMultiple(t *testing.T) {
	t.Parallel()
	s, clock := newSim(t, Config{Seed: 45, Hiro: HiroConfig{Anonymous: roomy}})
	clock.Add(settled.Sub(epoch))
	w := s.World()
	many := txOf(t, w, CaseManyEvents)
	pending := txOf(t, w, CasePending)
	notFound := txOf(t, w, CaseNotFound)
	stranger := readFeed(t, s, pagePath(0)).Results[0].TxID
	absent := "0x" + strings.Repeat("ab", 32)

	m := readMultiple(t, s, "?tx_id="+many.TxID+"&tx_id="+stranger+","+pending.TxID+
		"&tx_id="+notFound.TxID+"&tx_id="+absent+"&event_limit=10&event_offset=20")
	require.Len(t, m, 5)
	for _, id := range []string{many.TxID, stranger, pending.TxID} {
		require.True(t, m[id].Found, id)
	}
	for _, id := range []string{notFound.TxID, absent} {
		require.False(t, m[id].Found, id)
		require.JSONEq(t, `{"tx_id":"`+id+`"}`, string(m[id].Result))
	}
	// event_limit and event_offset make a window of each transaction's
	// events; event_count stays its total.
	var tx struct {
		EventCount int `json:"event_count"`
		Events     []struct {
			EventIndex int    `json:"event_index"`
			TxID       string `json:"tx_id"`
		} `json:"events"`
		TxStatus string `json:"tx_status"`
	}
	require.NoError(t, json.Unmarshal(m[many.TxID].Result, &tx))
	require.Equal(t, many.Events, tx.EventCount)
	require.Len(t, tx.Events, 10)
	require.Equal(t, 20, tx.Events[0].EventIndex)
	require.Equal(t, many.TxID, tx.Events[0].TxID)
	require.NoError(t, json.Unmarshal(m[stranger].Result, &tx))
	require.Empty(t, tx.Events, "a stranger's few events are all before offset 20")
	require.NoError(t, json.Unmarshal(m[pending.TxID].Result, &tx))
	require.Equal(t, statusPending, tx.TxStatus, "a mempool transaction is found, in its mempool shape")

	// Default window: the first 20.
	m = readMultiple(t, s, "?tx_id="+many.TxID)
	require.NoError(t, json.Unmarshal(m[many.TxID].Result, &tx))
	require.Len(t, tx.Events, 20)
	// An id asked in upper case is answered under the stored one.
	m = readMultiple(t, s, "?tx_id=0x"+strings.ToUpper(many.TxID[2:]))
	require.True(t, m[many.TxID].Found)

	long := make([]string, 240)
	for i := range long {
		long[i] = "tx_id=" + many.TxID
	}
	for query, want := range map[string]int{
		"":                        http.StatusBadRequest,
		"?tx_id=" + many.TxID[2:]: http.StatusBadRequest, // no 0x
		"?tx_id=0x1234":           http.StatusBadRequest,
		"?tx_id=" + many.TxID + "&event_limit=101":            http.StatusBadRequest,
		"?tx_id=" + many.TxID + "&event_limit=100":            http.StatusOK,
		"?tx_id=" + many.TxID + "&event_offset=-1":            http.StatusBadRequest,
		"?tx_id=" + txOf(t, w, CaseFetchFails).TxID:           http.StatusInternalServerError,
		"?" + strings.Join(long[:200], "&"):                   http.StatusOK,
		"?" + strings.Join(long, "&"):                         http.StatusRequestHeaderFieldsTooLarge,
		"?tx_id=" + many.TxID + "," + strings.Repeat("z", 64): http.StatusBadRequest,
	} {
		require.Equal(t, want, get(t, s, "/extended/v1/tx/multiple"+query).Code, query[:min(len(query), 90)])
	}
	st := s.Stats()
	require.Positive(t, st.Count(HiroTxMultipleRoute, http.StatusOK))
	require.Positive(t, st.Count(HiroTxListRoute, http.StatusOK))
}

func TestContractList(t *testing.T) {
	t.Parallel()
	s, clock := newSim(t, Config{Seed: 46, Hiro: HiroConfig{Activity: true, Anonymous: roomy}})
	clock.Add(2 * time.Hour)
	agents := map[string]bool{}
	for _, a := range s.World().Agents() {
		agents[a.STXAddress] = true
	}
	// Every allowlisted contract has its own list, newest first, holding
	// only calls to it: strangers' and, on some, the agents' swaps.
	agentSwaps := 0
	for _, pair := range catalog.Default().Pairs() {
		p := readFeed(t, s, listPath(pair.ContractID, "?limit=50"))
		require.Positive(t, p.Total, pair.ContractID)
		var prev *pos
		for offset := 0; offset < min(p.Total, 150); offset += 50 {
			for _, e := range readFeed(t, s, listPath(pair.ContractID, "?limit=50&offset="+strconv.Itoa(offset))).Results {
				require.Equal(t, pair.ContractID, e.ContractCall.ContractID)
				require.Empty(t, e.Events)
				if inMempool(e.TxStatus) {
					require.Nil(t, prev, "mempool entries come first")
					continue
				}
				p := posOf(e)
				if prev != nil {
					require.Negative(t, p.compare(*prev))
				}
				prev = &p
				if agents[e.Sender] {
					agentSwaps++
				}
			}
		}
	}
	require.Positive(t, agentSwaps)
	require.Equal(t, http.StatusBadRequest, get(t, s, listPath(catalog.Default().Pairs()[0].ContractID, "?limit=51")).Code)
}

// TestChainVolume: the strangers' calls of a day match the configured
// volume, spread over the allowlisted contracts and others.
func TestChainVolume(t *testing.T) {
	t.Parallel()
	for _, volume := range []int{10_000, 40_000, 200_000} {
		s, _ := newSim(t, Config{Seed: 47, Hiro: HiroConfig{Chain: ChainConfig{Volume: volume}}})
		w := s.World()
		from := epoch.Add(2 * time.Hour)
		got := w.StrangerCalls(from.Add(24*time.Hour)) - w.StrangerCalls(from)
		require.InEpsilon(t, volume, got, 0.05, "volume %d", volume)
	}
	off, _ := newSim(t, Config{Seed: 47, Hiro: HiroConfig{Chain: ChainConfig{Volume: -1}}})
	require.Zero(t, off.World().StrangerCalls(epoch.Add(time.Hour)))

	// Of a day's calls, about a third swap through allowlisted pairs and
	// most go elsewhere.
	s, clock := newSim(t, Config{Seed: 48, Hiro: HiroConfig{Anonymous: roomy}})
	clock.Add(time.Hour)
	allowed, n := 0, 0
	cat := catalog.Default()
	for offset := 0; offset < 5000; offset += 50 {
		for _, e := range readFeed(t, s, pagePath(offset)).Results {
			n++
			if cat.Allowed(e.ContractCall.ContractID, e.ContractCall.FunctionName) {
				allowed++
			}
		}
	}
	require.InDelta(t, 0.33, float64(allowed)/float64(n), 0.05)
}

func TestChainDeterministic(t *testing.T) {
	t.Parallel()
	at := epoch.Add(90 * time.Minute)
	body := func(seed int64, reads ...string) string {
		s := New(Config{Seed: seed, Now: func() time.Time { return at }, Hiro: HiroConfig{Origin: epoch, Activity: true}})
		for _, r := range reads {
			get(t, s, r) // earlier questions must not change later answers
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, pagePath(1000), nil))
		return rec.Body.String()
	}
	a := body(49)
	require.Equal(t, a, body(49, pagePath(0), listPath(stableswapCore, "")))
	require.NotEqual(t, a, body(50))
}

// BenchmarkFeedWeek reads pages of the feed of a week-long world at
// 200,000 calls a day: the first read generates the week (reported as
// heap bytes per call), later reads are what a tail's pages cost the
// simulator.
func BenchmarkFeedWeek(b *testing.B) {
	now := epoch
	s := New(Config{Seed: 51, Now: func() time.Time { return now }, Hiro: HiroConfig{
		CompetitionStart: epoch.Add(-8 * 24 * time.Hour), Origin: epoch, History: 7 * 24 * time.Hour,
		Activity: true, Anonymous: roomy, Chain: ChainConfig{Volume: 200_000},
	}})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	calls := s.World().StrangerCalls(now)
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ResetTimer()
	for i := range b.N {
		now = epoch.Add(time.Duration(i) * time.Second)
		req := httptest.NewRequestWithContext(b.Context(), http.MethodGet, pagePath(50*(i%200)), nil)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Code, rec.Body.String())
		}
	}
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(calls), "heapB/call")
	b.ReportMetric(float64(calls), "calls")
}

// TestChainRoutesShareTheBudget: the feed, contracts' lists and
// tx/multiple spend the one Hiro budget of the other routes, with the same
// headers, costs, noisy neighbour and faults.
func TestChainRoutesShareTheBudget(t *testing.T) {
	t.Parallel()
	s, clock := newSim(t, Config{Seed: 52, Hiro: HiroConfig{
		Anonymous: Limits{PerMinute: 10, NoisyPerMinute: 2},
		Costs:     map[string]int{HiroTxMultipleRoute: 2},
	}})
	clock.Add(30 * time.Minute)
	agent := s.World().Agents()[0].STXAddress
	stranger := readFeed(t, s, pagePath(0)).Results[0].TxID // 1 (+2 noisy)
	for _, path := range []string{listPath(agent, ""), listPath(stableswapCore, ""), txPath(stranger)} {
		require.Equal(t, http.StatusOK, get(t, s, path).Code, path) // 4, 5, 6
	}
	rec := get(t, s, "/extended/v1/tx/multiple?tx_id="+stranger) // 8
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "2", rec.Header().Get(hiroHeaderCost))
	require.Equal(t, "2", rec.Header().Get(hiroHeaderRemaining))
	require.Equal(t, http.StatusOK, get(t, s, pagePath(50)).Code) // 9
	require.Equal(t, http.StatusOK, get(t, s, pagePath(0)).Code)  // 10
	rec = get(t, s, pagePath(0))
	require.Equal(t, http.StatusTooManyRequests, rec.Code)
	require.NotEmpty(t, rec.Header().Get("retry-after"))
	require.Equal(t, http.StatusTooManyRequests, get(t, s, "/extended/v1/tx/multiple?tx_id="+stranger).Code)

	clock.Add(time.Minute)
	require.NoError(t, s.SetFaults(Faults{PathPrefix: "/extended/v1/tx", ServerError: 1}))
	require.GreaterOrEqual(t, get(t, s, pagePath(0)).Code, 500)
	require.GreaterOrEqual(t, get(t, s, "/extended/v1/tx/multiple?tx_id="+stranger).Code, 500)
	require.Equal(t, http.StatusOK, get(t, s, listPath(agent, "")).Code, "outside the prefix")
}

// TestFeedFollowsReorgs: a rolled-back block's transactions leave the feed
// (back in the mempool) and come back at the top in their new block, as
// Hiro's canonical-only list shows a reorg.
func TestFeedFollowsReorgs(t *testing.T) {
	t.Parallel()
	s, clock := newSim(t, Config{Seed: 53, Hiro: HiroConfig{Origin: epoch, Anonymous: roomy,
		Reorgs: Reorgs{Count: 1, RollbackAfter: 5 * time.Second, ReapplyAfter: 20 * time.Second}}})
	rg := s.World().Reorgs()
	require.Len(t, rg, 1)
	txid := rg[0].TxIDs[0]
	inFeed := func() (feedEntry, bool) {
		for offset := 0; offset < 500; offset += 50 {
			for _, e := range readFeed(t, s, pagePath(offset)).Results {
				if e.TxID == txid {
					return e, true
				}
			}
		}
		return feedEntry{}, false
	}
	clock.Add(rg[0].RollbackAt.Add(-time.Second).Sub(clock.Now()))
	e, ok := inFeed()
	require.True(t, ok)
	require.Equal(t, rg[0].Height, e.BlockHeight)
	clock.Add(2 * time.Second)
	_, ok = inFeed()
	require.False(t, ok, "rolled back: not in the feed")
	clock.Add(rg[0].ReapplyAt.Sub(clock.Now()))
	e, ok = inFeed()
	require.True(t, ok)
	require.Equal(t, rg[0].NewHeight, e.BlockHeight, "re-applied in its new block")
	require.True(t, *e.Canonical)
}

// TestSwapTimes: every swap the ledger must hold has its mining time, the
// start of its discovery delay; a re-applied one is canonical again from
// its re-apply.
func TestSwapTimes(t *testing.T) {
	t.Parallel()
	s, clock := newSim(t, Config{Seed: 54, Hiro: HiroConfig{Origin: epoch, Activity: true,
		Reorgs: Reorgs{Count: 1}}})
	clock.Add(2 * time.Hour)
	w := s.World()
	now := clock.Now()
	swaps := w.ExpectedSwaps(now)
	rec := get(t, s, "/_sim/swaps")
	require.Equal(t, http.StatusOK, rec.Code)
	var doc struct {
		Now   time.Time  `json:"now"`
		Swaps []SwapTime `json:"swaps"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &doc))
	require.Len(t, doc.Swaps, len(swaps))
	reorged := map[string]Reorg{}
	for _, r := range w.Reorgs() {
		for _, id := range r.TxIDs {
			reorged[id] = r
		}
	}
	moved := 0
	for i, sw := range swaps {
		got := doc.Swaps[i]
		require.Equal(t, sw.TxID, got.TxID)
		require.Equal(t, sw.Sender, got.Sender)
		require.Equal(t, BurnBlockOf(got.MinedAt).Unix(), sw.BurnBlockTime)
		require.False(t, got.MinedAt.After(now))
		if r, ok := reorged[sw.TxID]; ok {
			require.Equal(t, r.ReapplyAt.Unix(), got.CanonicalAt.Unix())
			require.Equal(t, r.NewHeight, got.Height)
			moved++
			continue
		}
		require.Equal(t, got.MinedAt, got.CanonicalAt)
		require.Equal(t, sw.BlockTime, got.MinedAt.Unix())
	}
	require.Positive(t, moved)
}

// TestContractListV3: the current cursor endpoint lists a contract's
// calls too, strangers' included, canonical ones only, and its cursor
// pages walk the same entries as the v1 list.
func TestContractListV3(t *testing.T) {
	t.Parallel()
	s, clock := newSim(t, Config{Seed: 55, Hiro: HiroConfig{Activity: true, Anonymous: roomy,
		Chain: ChainConfig{ForkShare: 0.05}}})
	clock.Add(2 * time.Hour)
	contract := xykCore
	var v1 []string
	for offset := 0; len(v1) < 300; offset += 50 {
		p := readFeed(t, s, listPath(contract, "?limit=50&offset="+strconv.Itoa(offset)))
		require.NotEmpty(t, p.Results)
		for _, e := range p.Results {
			if !inMempool(e.TxStatus) && *e.Canonical {
				v1 = append(v1, e.TxID)
			}
		}
	}
	type v3Page struct {
		Cursor struct {
			Next *string `json:"next"`
		} `json:"cursor"`
		Results []struct {
			Transaction struct {
				TxID         string `json:"tx_id"`
				ContractCall struct {
					ContractID string `json:"contract_id"`
				} `json:"contract_call"`
			} `json:"transaction"`
		} `json:"results"`
	}
	var v3 []string
	cursor := ""
	for len(v3) < 300 {
		q := "?limit=50"
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		rec := get(t, s, v3Path(contract, q))
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		var p v3Page
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &p))
		for _, r := range p.Results {
			require.Equal(t, contract, r.Transaction.ContractCall.ContractID)
			v3 = append(v3, r.Transaction.TxID)
		}
		require.NotNil(t, p.Cursor.Next)
		cursor = *p.Cursor.Next
	}
	require.Equal(t, v1[:300], v3[:300])
}
