package discovery

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/hiro"
)

// chain is a feed for tests: entries newest first, one a block.
type chain struct{ entries []hiro.Entry }

func (c *chain) mine(n int) {
	height := int64(1)
	if len(c.entries) > 0 {
		height = c.entries[0].BlockHeight + 1
	}
	fresh := make([]hiro.Entry, n)
	for i := range n {
		h := height + int64(n-1-i)
		fresh[i] = hiro.Entry{TxID: fmt.Sprintf("0x%04x", h), TxType: hiro.TxTypeContractCall,
			BlockHeight: h, BlockTime: 1000 + h, Canonical: true}
	}
	c.entries = append(fresh, c.entries...)
}

func (c *chain) page(offset int) []hiro.Entry {
	if offset >= len(c.entries) {
		return nil
	}
	return slices.Clone(c.entries[offset:min(len(c.entries), offset+PageSize)])
}

// walk runs a scan to its end, mining arrive entries before every page,
// and returns the txids handed out.
func walk(t *testing.T, c *chain, s *Scan, arrive int) []string {
	t.Helper()
	var got []string
	for range 1000 {
		if s.Done() {
			return got
		}
		c.mine(arrive)
		p := s.AddFeed(c.page(s.NextOffset()), len(c.entries))
		for _, e := range p.Fresh {
			got = append(got, e.TxID)
		}
		s.Commit()
	}
	t.Fatal("scan never ended")
	return nil
}

func ids(c *chain, from, to int64) []string {
	var out []string
	for h := to; h > from; h-- {
		out = append(out, fmt.Sprintf("0x%04x", h))
	}
	return out
}

func TestFirstScanFindsTheHeadOnly(t *testing.T) {
	c := &chain{}
	c.mine(120)
	s := NewScan(ScanConfig{}, State{})
	require.Empty(t, walk(t, c, s, 0))
	require.Equal(t, int64(120), s.Position().BlockHeight)
	require.Nil(t, s.Gap())
}

func TestShiftingPagesRepeatButNeverSkip(t *testing.T) {
	for _, arrive := range []int{0, 1, 7, 49, 50, 120} {
		t.Run(fmt.Sprint(arrive), func(t *testing.T) {
			c := &chain{}
			c.mine(500)
			from := PositionOf(c.entries[400]) // height 100
			before := int64(len(c.entries))
			s := NewScan(ScanConfig{From: &from}, State{})
			got := walk(t, c, s, arrive)
			// Everything newer than From that existed when the scan began
			// is handed out once, newest first; what arrived during the
			// scan is either handed out or newer than its position.
			want := ids(c, 100, before)
			require.Subset(t, got, want)
			require.Len(t, got, len(slices.Compact(slices.Clone(got))), "no repeats")
			require.GreaterOrEqual(t, s.Position().BlockHeight, before)
			for _, id := range got {
				require.Greater(t, id, fmt.Sprintf("0x%04x", 100))
			}
		})
	}
}

func TestScanPassesOverLosingForks(t *testing.T) {
	c := &chain{}
	c.mine(10)
	c.entries[3].Canonical = false
	from := PositionOf(c.entries[9])
	s := NewScan(ScanConfig{From: &from}, State{})
	got := walk(t, c, s, 0)
	require.Len(t, got, 8)
	require.NotContains(t, got, c.entries[3].TxID)
}

func TestUncommittedPageIsHandedOutAgain(t *testing.T) {
	c := &chain{}
	c.mine(200)
	from := PositionOf(c.entries[199])
	s := NewScan(ScanConfig{From: &from}, State{})
	first := s.AddFeed(c.page(s.NextOffset()), len(c.entries))
	s.Commit()
	second := s.AddFeed(c.page(s.NextOffset()), len(c.entries))
	require.NotEmpty(t, second.Fresh)
	// The worker dies before the second page's candidates are settled: a
	// new scan resumes from the committed state.
	c.mine(30)
	resumed := NewScan(ScanConfig{From: &from}, s.State())
	got := walk(t, c, resumed, 0)
	all := append(idsOf(first.Fresh), got...)
	require.Equal(t, ids(c, 1, 200), all)
}

func idsOf(es []hiro.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.TxID)
	}
	return out
}

func TestTooFarBehindReportsTheGap(t *testing.T) {
	c := &chain{}
	c.mine(1000)
	from := PositionOf(c.entries[999])
	s := NewScan(ScanConfig{From: &from, MaxPages: 3}, State{})
	got := walk(t, c, s, 0)
	require.Len(t, got, 3*PageSize-2) // pages overlap by one entry
	gap := s.Gap()
	require.NotNil(t, gap)
	require.Equal(t, from, *gap.From)
	require.Equal(t, got[len(got)-1], gap.To.TxID)
	require.Equal(t, int64(1000), s.Position().BlockHeight, "the position moves to the head; the gap is reported")
}

func TestEntriesRemovedAboveTheOffsetAreReadAgain(t *testing.T) {
	c := &chain{}
	c.mine(200)
	from := PositionOf(c.entries[199])
	s := NewScan(ScanConfig{From: &from}, State{})
	var got []string
	p := s.AddFeed(c.page(s.NextOffset()), len(c.entries))
	got = append(got, idsOf(p.Fresh)...)
	s.Commit()
	// A fork drops the five newest entries: everything slides up by five.
	c.entries = c.entries[5:]
	got = append(got, walk(t, c, s, 0)...)
	require.Subset(t, got, ids(c, 1, 195))
}

func TestTokenPagedList(t *testing.T) {
	c := &chain{}
	c.mine(120)
	from := PositionOf(c.entries[110])
	s := NewScan(ScanConfig{From: &from, Tokens: true}, State{})
	p := s.AddList(c.entries[:50], "next")
	s.Commit()
	require.Len(t, p.Fresh, 50)
	require.False(t, s.Done())
	require.Equal(t, "next", s.NextToken())
	p = s.AddList(c.entries[50:100], "next2")
	s.Commit()
	p = s.AddList(c.entries[100:], "")
	s.Commit()
	require.Len(t, p.Fresh, 10)
	require.True(t, s.Done())
}

func TestFilter(t *testing.T) {
	f := Filter{
		Agent:   func(a string) bool { return a == "SPAGENT" },
		Allowed: func(c, fn string) bool { return c == "SP.dex" && fn == "swap" },
	}
	ok := hiro.Entry{TxID: "0x1", TxType: hiro.TxTypeContractCall, SenderAddress: "SPAGENT", Canonical: true, BlockHeight: 1,
		ContractCall: &hiro.ContractCall{ContractID: "SP.dex", FunctionName: "swap"}}
	require.True(t, f.Candidate(ok))
	for name, mut := range map[string]func(*hiro.Entry){
		"stranger": func(e *hiro.Entry) { e.SenderAddress = "SPOTHER" },
		"function": func(e *hiro.Entry) {
			e.ContractCall = &hiro.ContractCall{ContractID: "SP.dex", FunctionName: "add-liquidity"}
		},
		"contract":     func(e *hiro.Entry) { e.ContractCall = &hiro.ContractCall{ContractID: "SP.other", FunctionName: "swap"} },
		"not a call":   func(e *hiro.Entry) { e.TxType, e.ContractCall = "token_transfer", nil },
		"lost fork":    func(e *hiro.Entry) { e.Canonical = false },
		"without a id": func(e *hiro.Entry) { e.TxID = "" },
	} {
		e := ok
		mut(&e)
		require.False(t, f.Candidate(e), name)
	}
}

func TestTailIntervalStretchesWhenTheBudgetBinds(t *testing.T) {
	at := func(rate float64) time.Duration {
		return Run{TailEvery: 10 * time.Second, Budget: Budget{ReadCost: 2, Rate: rate}}.TailInterval()
	}
	require.Equal(t, 10*time.Second, at(0))
	require.Equal(t, 10*time.Second, at(360))
	// A month of 150,000 is 3.5 requests a minute; a read costing 2 fits
	// 80% of it every 2/(3.5·0.8) minutes.
	got := at(3.5)
	require.InDelta(t, (2/(3.5*TailShare))*60, got.Seconds(), 0.01)
}

// TestReconcilerStretchesWhenTheBudgetBinds: the reconciler reads a page
// of each list every PACER_RECONCILE_EVERY, or, when that does not fit
// what the tail leaves of the lane's rate, as often as it does: on a
// month of 150,000 the catalog's 40 lists every 15 minutes would cost 77%
// of the month's pace and hold the tail back (the chain bench's month
// plan, 40,000 calls a day: p99 17 min).
func TestReconcilerStretchesWhenTheBudgetBinds(t *testing.T) {
	at := func(rate float64, lists int) time.Duration {
		s := Run{ReconcileEvery: 15 * time.Minute, Lists: lists, Budget: Budget{Rate: rate}}
		return s.Every(ContractReader("SP1.a"))
	}
	require.Equal(t, 15*time.Minute, at(0, 40), "rate unknown")
	require.Equal(t, 15*time.Minute, at(45, 40), "keyless: 40 pages in 15 min fit 20% of 45 a minute")
	require.InDelta(t, 40/(3.5*(1-TailShare)), at(3.5, 40).Minutes(), 0.01, "the month's pace")
	require.Equal(t, 15*time.Minute, at(3.5, 5), "5 lists: 5/(0.7) min is under 15 min: no stretch")
	s := Run{ReconcileEvery: 15 * time.Minute, Contracts: make([]Reader, 40), Budget: Budget{Rate: 3.5}}
	require.Equal(t, at(3.5, 40), s.Every(ContractReader("SP1.a")), "no Lists: one for each contract's reader")
	s.OpenGaps = true
	require.Equal(t, 15*time.Minute, s.Every(ContractReader("SP1.a")), "gaps open: the reconciler is the one reader that fills them")
	s.OpenGaps = false
	s.ContractsAreTail = true
	require.Equal(t, s.TailInterval(), s.Every(ContractReader("SP1.a")), "the lists as the tail: the tail's interval")
	require.Equal(t, 15*time.Minute, s.Every(ReaderTail), "the feed's probe")
}

func TestLag(t *testing.T) {
	pos := &Position{Position: hiro.Position{BlockHeight: 5}, Time: 100}
	require.Zero(t, Lag(pos, pos))
	require.Equal(t, 30.0, Lag(pos, &Position{Position: hiro.Position{BlockHeight: 9}, Time: 130}))
	require.Zero(t, Lag(nil, pos))
}

// A fork that removes more entries than several pages hold sends the scan
// back as far as it takes, to the head if need be: it never goes on past
// entries it has not seen.
func TestDeepRemovalReadsBackToTheHead(t *testing.T) {
	c := &chain{}
	c.mine(600)
	from := PositionOf(c.entries[599])
	s := NewScan(ScanConfig{From: &from}, State{})
	var got []string
	for range 4 {
		p := s.AddFeed(c.page(s.NextOffset()), len(c.entries))
		got = append(got, idsOf(p.Fresh)...)
		s.Commit()
	}
	c.entries = c.entries[300:] // 300 entries gone above the scan's offset
	got = append(got, walk(t, c, s, 0)...)
	require.Subset(t, got, ids(c, 1, 300))
}

// TestWalkAcrossRunsWastesNoPage: a walk too long for one run goes on in
// the next, two pages a run, the feed growing between runs (27 entries)
// but not between a run's pages. Growth guessed on from the last page
// would start a run's second page past where the walk reached: a rewound
// page, a request for nothing (35% of a month plan's feed pages).
func TestWalkAcrossRunsWastesNoPage(t *testing.T) {
	c := &chain{}
	c.mine(1000)
	from := PositionOf(c.entries[900])
	before := int64(len(c.entries))
	s := NewScan(ScanConfig{From: &from, MaxPages: 1000}, State{})
	var got []string
	rewound := 0
	for page := 0; !s.Done(); page++ {
		require.Less(t, page, 200, "the walk never ends")
		if page%2 == 0 {
			c.mine(27) // a new run
		}
		p := s.AddFeed(c.page(s.NextOffset()), len(c.entries))
		if p.Rewound {
			rewound++
		}
		for _, e := range p.Fresh {
			got = append(got, e.TxID)
		}
		s.Commit()
	}
	require.Zero(t, rewound, "pages rewound")
	require.Subset(t, got, ids(c, 100, before), "every entry from the walk's start handed out")
	require.Len(t, got, len(slices.Compact(slices.Clone(got))), "no repeats")
}

// A walk whose pages are read apart (the month's pace lets one go every
// 20 s or so), the feed growing 25 entries between them: read at
// NextOffset, each page began with the 25 entries the last one ended
// with, half of it repeats; NextOffsetAt skips ahead by most of the
// growth the feed's rate predicts. Nothing is skipped either way, and a
// rate that predicts too much costs rewound pages, never an entry.
func TestPagesReadApartSkipAheadByTheGrowth(t *testing.T) {
	const arrive, apart = 25, 20 * time.Second
	perMinute := arrive / apart.Minutes()
	pages := func(rate float64, at bool) (n, rewound int) {
		c := &chain{}
		c.mine(2000)
		from := PositionOf(c.entries[1500])
		before := int64(len(c.entries))
		s := NewScan(ScanConfig{From: &from, MaxPages: 1000}, State{})
		now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
		var got []string
		for ; !s.Done(); n++ {
			require.Less(t, n, 500, "the walk never ends")
			c.mine(arrive)
			now = now.Add(apart)
			offset := s.NextOffset()
			if at {
				offset = s.NextOffsetAt(now, rate)
			}
			p := s.AddFeed(c.page(offset), len(c.entries))
			if p.Rewound {
				rewound++
			}
			for _, e := range p.Fresh {
				got = append(got, e.TxID)
			}
			s.Commit()
		}
		require.Subset(t, got, ids(c, before-1500, before), "every entry from the walk's start handed out")
		require.Len(t, got, len(slices.Compact(slices.Clone(got))), "no repeats handed out")
		return n, rewound
	}
	plain, _ := pages(0, false)
	predicted, rewound := pages(perMinute, true)
	require.Zero(t, rewound)
	require.Less(t, float64(predicted), 0.75*float64(plain), "pages read apart: %d at NextOffset, %d at NextOffsetAt", plain, predicted)
	_, rewound = pages(3*perMinute, true)
	require.NotZero(t, rewound, "a rate that predicts too much rewinds")
	// A rate far off (a clock that jumped) moves a page past the feed's
	// end: an empty page is read again, not taken for the list's end.
	_, rewound = pages(1000*perMinute, true)
	require.NotZero(t, rewound)
}

// The zero Config and an empty PACER_DISCOVERY mean the same mode.
func TestConfigDefaultsAgreeWithParseMode(t *testing.T) {
	mode, err := ParseMode("")
	require.NoError(t, err)
	c := Config{}.WithDefaults()
	require.Equal(t, mode, c.Mode)
	require.Equal(t, Config{Mode: ModeTail, TailEvery: DefaultTailEvery, ReconcileEvery: DefaultReconcileEvery, MaxPages: DefaultMaxPages}, c)
}

// An agent's list: the mempool and forks that lost handed out too, a
// margin below From looked at again, and the walk ending at Since.
func TestAgentScanHandsOutItsWholeListDownToTheMargin(t *testing.T) {
	c := &chain{}
	c.mine(20) // heights 1..20, block time 1000+h
	c.entries[2].Canonical = false
	pending := hiro.Entry{TxID: "0xpend", TxStatus: hiro.StatusPending, TxType: hiro.TxTypeContractCall}
	list := append([]hiro.Entry{pending}, c.entries...)
	cursor := &Position{Position: hiro.Position{BlockHeight: 15}} // an agent's cursor names only the place

	s := NewScan(ScanConfig{From: cursor, Tokens: true, Agent: true, Margin: 2}, State{})
	p := s.AddList(list, "next")
	require.True(t, p.Reached, "below the margin: read before")
	var got, again []string
	for _, e := range p.Fresh {
		got = append(got, e.TxID)
		if s.Again(e) {
			again = append(again, e.TxID)
		}
	}
	require.Equal(t, append([]string{"0xpend"}, ids(c, 12, 20)...), got, "pending, the fork that lost, and down to 13")
	require.Equal(t, ids(c, 12, 15), again, "15 (the cursor's place), 14 and 13 again")
	s.Commit()
	require.True(t, s.Done())
	require.Equal(t, int64(20), s.Position().BlockHeight)

	// No cursor: the whole list, down to the competition's start.
	s = NewScan(ScanConfig{Tokens: true, Agent: true, Margin: 2, Since: 1000 + 8}, State{})
	p = s.AddList(c.entries, "next")
	require.True(t, p.Reached)
	require.Len(t, p.Fresh, 13, "20 down to 8")
	require.False(t, s.Again(p.Fresh[0]))
}

func TestContractReaders(t *testing.T) {
	require.Equal(t, []string{"contract:SP1.dex", "contract:SP2.pool"}, ContractReaders([]string{"SP1.dex", "SP2.pool"}))
	require.Empty(t, ContractReaders(nil))
}
