// Package discovery reads the chain once for every agent (SPEC §5.0): the
// tail reads the chain's confirmed contract calls newest first down to the
// place it has fully read before, the reconciler reads each allowlisted
// contract's own list the same way, and both pick the candidates (an
// allowlisted call by a registered agent) out of each page locally, without
// a request.
//
// The package is pure: pages come in as arguments, decisions come out, time
// is an argument, nothing is read or written. The sweep activity and the
// virtual-time discovery benchmark drive the same code.
//
// # A scan
//
// A Scan is one reader's walk from the newest entry down to its saved
// position (From). Pages arrive newest first; offset pages shift as blocks
// arrive, so an entry can come twice (it is dropped the second time) but,
// since the scan only hands out entries older than the oldest one it has
// settled (Low), never be skipped: an entry slides to a higher offset when
// newer ones arrive, never to a lower one, except when a fork removes
// entries, which NextOffset notices (the page it reads starts one entry
// before where the last one ended) and answers by reading further back.
//
// The caller verifies the candidates of a page and only then calls Commit:
// the scan's state (State) then says every entry of the page is settled
// (a row, a rejection, or kept in pending_txs for retry). A scan left
// without Commit (the budget ran out, the worker was killed) goes on from
// its last committed page, so nothing is lost and nothing done twice.
//
// When the walk reaches From, the reader's position becomes the newest
// entry the scan saw (Top). A scan that reads MaxPages without reaching
// From gives up on the rest: its position still moves to Top, and the range
// it did not read (From, Low) is a Gap, reported, for the reconciler to
// fill. It is never skipped silently.
//
// An agent's visit walks the agent's own list with a Scan too
// (ScanConfig.Agent): every entry handed out, a reorg margin below From
// looked at again (Again), and the walk ending at COMPETITION_START.
package discovery

import (
	"cmp"
	"fmt"
	"math"
	"time"

	"github.com/pacer-dev/pacer/internal/hiro"
)

// Readers' names, as discovery_cursors keys them.
const (
	ReaderTail = "tail"
	// ContractPrefix prefixes a contract's reader: "contract:<contract_id>".
	ContractPrefix = "contract:"
)

// ContractReader is the reader name of a contract's own list.
func ContractReader(contractID string) string { return ContractPrefix + contractID }

// ContractReaders are the readers of the contracts' lists.
func ContractReaders(contractIDs []string) []string {
	names := make([]string, len(contractIDs))
	for i, c := range contractIDs {
		names[i] = ContractReader(c)
	}
	return names
}

// Defaults (SPEC §2).
const (
	DefaultTailEvery = 10 * time.Second
	// DefaultReconcileEvery is PACER_RECONCILE_EVERY's default: how often
	// each allowlisted contract's list is read for what the tail missed,
	// or, in the agents mode with push on, the floor of the agents'
	// polling (ingest.Config.ReconcileEvery); and how often a pending
	// transaction is looked at again (the plan's Verify step).
	DefaultReconcileEvery = 15 * time.Minute
	DefaultMaxPages       = 200
	// ReconcileMaxPages bounds a scan of the last reader (a contract's
	// list, an agent's visit) only against a list that never ends: no
	// reader comes after it, so its scan goes on across runs rather than
	// give a range up.
	ReconcileMaxPages = 1 << 20
	// ReorgDepth is how many blocks below its cursor a visit reads again:
	// a fork that lost can have held the cursor's block, and the winning
	// fork's transactions at those heights must not be skipped.
	ReorgDepth = 6
	// PageSize is the feed's page: Hiro's list endpoints take at most 50.
	PageSize = hiro.MaxLimit
)

// Mode is PACER_DISCOVERY.
type Mode string

// Modes.
const (
	// ModeTail reads the chain once for every agent (SPEC §5.0).
	ModeTail Mode = "tail"
	// ModeAgents visits each agent on its own (SPEC §5.3).
	ModeAgents Mode = "agents"
)

// ParseMode reads a mode name ("" is the default, tail).
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case "", ModeTail:
		return ModeTail, nil
	case ModeAgents:
		return ModeAgents, nil
	}
	return "", fmt.Errorf("discovery %q: want tail or agents", s)
}

// Config is how the sweep finds swaps (SPEC §5.0: PACER_DISCOVERY,
// PACER_TAIL_EVERY, PACER_RECONCILE_EVERY, PACER_TAIL_MAX_PAGES).
type Config struct {
	Mode           Mode
	TailEvery      time.Duration
	ReconcileEvery time.Duration
	MaxPages       int
	// Linger is how long one sweep run goes on reading the tail, every
	// TailEvery (stretched by the budget), before it reports: the workflow
	// starts a run at most every PACER_SWEEP_EVERY, and the tail reads
	// more often than that. A run always reads once; 0 is once.
	Linger time.Duration
	// Push is PACER_PUSH=ws: Hiro's WebSocket brings new calls while it
	// is live (Run.PushLive), and the readers reconcile.
	Push bool
}

// WithDefaults fills the zero fields; a zero Mode is ParseMode's
// default (tail), as PACER_DISCOVERY's.
func (c Config) WithDefaults() Config {
	if c.Mode == "" {
		c.Mode, _ = ParseMode("")
	}
	if c.TailEvery <= 0 {
		c.TailEvery = DefaultTailEvery
	}
	if c.ReconcileEvery <= 0 {
		c.ReconcileEvery = DefaultReconcileEvery
	}
	if c.MaxPages <= 0 {
		c.MaxPages = DefaultMaxPages
	}
	return c
}

// Position is a place in the chain, as a reader keeps it: a block height
// and a transaction index (hiro.Position, whose Compare orders them; two
// forks can share one) and the transaction there.
type Position struct {
	hiro.Position
	TxID string `json:"txid"`
	// Time is the entry's block time (unix seconds; its burn block's when
	// the block's own is unknown), what the lag behind the head is
	// measured by.
	Time int64 `json:"time,omitempty"`
}

// PositionOf is where a mined entry sits.
func PositionOf(e hiro.Entry) Position {
	return Position{Position: e.Position(), TxID: e.TxID, Time: cmp.Or(e.BlockTime, e.BurnBlockTime)}
}

// Filter decides locally, without a request, whether a list entry is a
// candidate: a mined, canonical contract call whose sender is a registered
// agent and whose (contract_id, function_name) pair is allowlisted.
type Filter struct {
	// Agent reports whether an address is a registered agent.
	Agent func(address string) bool
	// Allowed reports whether calls of function on contractID count.
	Allowed func(contractID, function string) bool
}

// Candidate reports whether e deserves verification.
func (f Filter) Candidate(e hiro.Entry) bool {
	return e.TxID != "" && e.Canonical && e.TxType == hiro.TxTypeContractCall && e.ContractCall != nil &&
		f.Agent != nil && f.Allowed != nil &&
		f.Agent(e.SenderAddress) && f.Allowed(e.ContractCall.ContractID, e.ContractCall.FunctionName)
}

// State is a scan's progress, kept with the reader's position so that a
// scan cut short goes on where it stopped. The zero State is a scan not
// begun.
type State struct {
	// Top is the newest entry the scan has seen: the reader's position
	// once the scan is done. Nil before the first page.
	Top *Position `json:"top,omitempty"`
	// Low is the oldest entry settled so far; entries at or above it are
	// done (or newer than Top, left to the next scan).
	Low *Position `json:"low,omitempty"`
	// Offset is where the next feed page starts; Token the next page of a
	// token-paged list (the reconciler's).
	Offset int    `json:"offset,omitempty"`
	Token  string `json:"token,omitempty"`
	// Total is the feed's length at the last page.
	Total int `json:"total,omitempty"`
	// Pages counts the pages this scan has read, toward MaxPages.
	Pages int `json:"pages,omitempty"`
	// rewinds counts reads further back since the last page that moved
	// the scan on.
	Rewinds int `json:"rewinds,omitempty"`
	// At is when the feed's last page was read (NextOffsetAt; zero: not
	// known); Overshot counts the pages it moved too far, each halving
	// the moves after it.
	At       time.Time `json:"at,omitzero"`
	Overshot int       `json:"overshot,omitempty"`
}

// Started reports whether the scan has read a page.
func (s State) Started() bool { return s.Top != nil }

// Gap is a range of the chain a reader did not read: entries older than To
// and newer than From (From nil: from the start of the tail).
type Gap struct {
	From *Position `json:"from"`
	To   Position  `json:"to"`
}

// Scan is one walk of a newest-first list down to From.
type Scan struct {
	cfg ScanConfig
	st  State
	// pending is the state after the page last read, before Commit.
	pending *State
	done    bool
	gap     *Gap
	// ahead is how far past Offset the page being read starts, and at
	// when it is read (NextOffsetAt; zero: NextOffset).
	ahead int
	at    time.Time
}

// ScanConfig configures a Scan.
type ScanConfig struct {
	// From is the reader's position: everything at or below it is read.
	// Nil: the reader has never read, and the scan only finds the head
	// (the first page's newest entry becomes the position; nothing older
	// is handed out, that being each agent's own history).
	From *Position
	// MaxPages is the most pages one scan reads (≤ 0: DefaultMaxPages).
	MaxPages int
	// Tokens is true for a list paged by tokens (each page names the
	// next, which already accounts for shifts: hiro.ListTransactions), false
	// for the offset-paged feed.
	Tokens bool
	// Agent is true for an agent's own list (a visit, SPEC §5.2): every
	// entry is handed out, pending, dropped or on a fork that lost (the
	// verifier gives each its verdict), and a nil From reads the whole
	// list. Margin is how many blocks below From it reads again (a fork
	// that lost can have held From's block: see Again), and Since (unix
	// seconds, 0: none) ends the walk at an entry whose block time is
	// before it (older ones are older still).
	Agent  bool
	Margin int64
	Since  int64
}

// NewScan begins a walk, or resumes one cut short from st (the zero State
// begins anew).
func NewScan(cfg ScanConfig, st State) *Scan {
	if cfg.MaxPages <= 0 {
		cfg.MaxPages = DefaultMaxPages
	}
	return &Scan{st: st, cfg: cfg}
}

// NewVisit is an agent's visit's walk of its list (SPEC §5.2): on from st
// (a visit cut short), down to ReorgDepth blocks below the cursor from,
// or to since (the competition's start).
func NewVisit(from *Position, st State, since time.Time) *Scan {
	return NewScan(ScanConfig{From: from, MaxPages: ReconcileMaxPages, Tokens: true, Agent: true,
		Margin: ReorgDepth, Since: since.Unix()}, st)
}

// Page is what one page of a list brought, after the scan looked at it.
type Page struct {
	// Fresh are the page's entries this scan has not handed out before,
	// newer than From: the ones to filter and verify, newest first.
	// Entries of forks that lost (canonical false) and entries never mined
	// are passed over.
	Fresh []hiro.Entry
	// Reached is true when the page reached From or the list's end: after
	// Commit the scan is done.
	Reached bool
	// Repeats counts entries already handed out (offsets shift).
	Repeats int
	// Rewound is true when the page began below where the last one ended
	// (a fork removed entries above it): it is read again further back,
	// and nothing of it is handed out.
	Rewound bool
}

// AddFeed takes the feed page read at NextOffset: entries newest first,
// and the feed's total when it was read. Entries that arrived since the
// last page push the rest to higher offsets; the growth of the total says
// by how much, so the next offset follows them instead of reading repeats
// (the overlap check catches a total that misled). It returns the entries
// to look at; the scan moves on only at Commit.
func (s *Scan) AddFeed(entries []hiro.Entry, total int) Page {
	return s.add(entries, "", total)
}

// AddList takes the page of a token-paged list read at NextToken, and the
// token of the next page ("" at the list's end).
func (s *Scan) AddList(entries []hiro.Entry, next string) Page {
	return s.add(entries, next, 0)
}

func (s *Scan) add(entries []hiro.Entry, next string, total int) Page {
	ahead, at := s.ahead, s.at // NextOffsetAt's, for this page only
	s.ahead, s.at = 0, time.Time{}
	st := s.st
	st.Pages++
	var out Page
	if ahead > 0 && !s.cfg.Tokens && !startsAtOrAbove(entries, s.st.Low) {
		// Skipped ahead past entries not yet seen (the feed grew less
		// than predicted, or not at all, or the page is past the end):
		// read again at the last page's end, without a prediction, and
		// predict half as much after.
		st.Rewinds++
		st.Overshot++
		s.pending = &st
		return Page{Rewound: true}
	}
	first := true
	for _, e := range entries {
		if !e.Mined() {
			if s.cfg.Agent {
				out.Fresh = append(out.Fresh, e)
			} // else the mempool is not the chain; the sender's visits see it
			continue
		}
		p := PositionOf(e)
		if first {
			first = false
			if !s.cfg.Tokens && s.st.Low != nil && s.st.Offset > 0 && below(p, *s.st.Low) {
				// The page should begin at or above the last page's end (it
				// starts one entry back): entries moved up past the offset.
				// Read further back, a page more each time, down to the
				// head if need be: never on past entries not yet seen.
				st.Rewinds++
				st.Offset = max(0, s.st.Offset-PageSize*st.Rewinds)
				s.pending = &st
				return Page{Rewound: true}
			}
		}
		if st.Top == nil {
			top := p
			st.Top = &top
		}
		if s.cfg.From == nil && !s.cfg.Agent {
			out.Reached = true // first read: the head is the position
			break
		}
		if s.cfg.From != nil && !newer(p, *s.cfg.From) && (s.cfg.Margin == 0 || p.BlockHeight < s.cfg.From.BlockHeight-s.cfg.Margin) {
			out.Reached = true // From, or older (below its margin): read before
			break
		}
		if s.cfg.Since > 0 && p.Time > 0 && p.Time < s.cfg.Since {
			out.Reached = true
			break
		}
		if st.Low != nil && !below(p, *st.Low) {
			out.Repeats++
			continue
		}
		low := p
		st.Low = &low
		if e.Canonical || s.cfg.Agent {
			out.Fresh = append(out.Fresh, e)
		}
	}
	st.Rewinds = 0
	if s.cfg.Tokens {
		st.Token = next
		out.Reached = out.Reached || next == ""
	} else {
		st.Offset = s.st.Offset + ahead + max(len(entries)-1, 1)
		// Growth that would make the next page all repeats is assumed to
		// go on (pages read at a steady pace); less is left as repeats,
		// since the next page is often read at once (a walk resumed in a
		// later run): overshooting it costs a rewound page, a request.
		// A page read at a known time (NextOffsetAt) skipped ahead by
		// the growth its wait predicted instead.
		if s.st.Total > 0 && total-s.st.Total >= PageSize-1 && at.IsZero() {
			st.Offset += total - s.st.Total
		}
		st.Total, st.At = total, at
		out.Reached = out.Reached || len(entries) < PageSize
	}
	s.pending = &st
	s.done = out.Reached
	if !out.Reached && st.Pages >= s.cfg.MaxPages {
		to := st.Top
		if st.Low != nil {
			to = st.Low
		}
		if to != nil {
			s.gap = &Gap{From: s.cfg.From, To: *to}
		}
		s.done = true
	}
	return out
}

// startsAtOrAbove reports whether the first mined entry of a page is at
// or above low (nil: any page), as a page read where the last one ended
// (one entry back) is; false for a page with none.
func startsAtOrAbove(entries []hiro.Entry, low *Position) bool {
	for _, e := range entries {
		if e.Mined() {
			return low == nil || !below(PositionOf(e), *low)
		}
	}
	return false
}

// below reports whether p comes after o in a newest-first list: older, or
// at o's place but another transaction (forks can share a place; the
// scan hands such an entry out rather than risk skipping it).
func below(p, o Position) bool {
	c := p.Compare(o.Position)
	return c < 0 || (c == 0 && p.TxID != o.TxID)
}

// newer reports whether p comes before o in a newest-first list: newer, or
// at o's place but another transaction (o naming one: an agent's cursor
// names only the place).
func newer(p, o Position) bool {
	c := p.Compare(o.Position)
	return c > 0 || (c == 0 && o.TxID != "" && p.TxID != o.TxID)
}

// Again reports whether a handed-out entry lies at or below From, within
// the Margin: it was looked at before, and counts only if it is new.
func (s *Scan) Again(e hiro.Entry) bool {
	return s.cfg.From != nil && e.Mined() && !newer(PositionOf(e), *s.cfg.From)
}

// Commit records that every candidate of the page last added is settled.
func (s *Scan) Commit() {
	if s.pending != nil {
		s.st = *s.pending
		s.pending = nil
	}
}

// Done reports whether the committed scan is over: it reached From, the
// list ended, or it read MaxPages (then Gap says what it left).
func (s *Scan) Done() bool { return s.done && s.pending == nil }

// State is the committed progress, to keep while the scan is not done.
func (s *Scan) State() State { return s.st }

// NextOffset is the feed offset of the next page: one entry before where
// the last page ended, so that a page that begins below that entry shows
// that entries moved up (see Add).
func (s *Scan) NextOffset() int { return s.st.Offset }

// growthShare is the share of the entries the feed's rate predicts since
// the last page that the next page skips ahead by: less than all, since
// blocks come in lumps, and a page that starts too far down is read
// again further back (a request), while one that starts too high only
// repeats a few entries.
const growthShare = 0.7

// NextOffsetAt is the feed offset of the next page when it is read at
// now and the feed grows perMinute entries a minute: NextOffset, moved on
// by growthShare of the entries that arrived since the last page, which
// push the rest down. Pages read apart (the month's pace lets one go
// every 20 s) otherwise begin with what the last page read: at 100,000
// calls a day, half of every page was repeats, and the tail fell behind.
// The first page and one after a rewind are not moved; a page moved too
// far (it begins below where the last one ended, or holds nothing) is
// read again where the last one ended, a request, never a skip, and the
// scan's moves after it are halved (a rate far off, a clock that jumped).
func (s *Scan) NextOffsetAt(now time.Time, perMinute float64) int {
	s.ahead, s.at = 0, now
	if s.st.Low != nil && s.st.Rewinds == 0 && !s.st.At.IsZero() && now.After(s.st.At) && perMinute > 0 {
		s.ahead = int(math.Ldexp(growthShare*perMinute*now.Sub(s.st.At).Minutes(), -min(s.st.Overshot, 30)))
	}
	return s.st.Offset + s.ahead
}

// NextToken is the token of the next page of a token-paged list.
func (s *Scan) NextToken() string { return s.st.Token }

// Position is the reader's position once the scan is done: the newest
// entry it saw, or From when the list brought nothing newer.
func (s *Scan) Position() *Position {
	if s.st.Top != nil && (s.cfg.From == nil || s.st.Top.Compare(s.cfg.From.Position) >= 0) {
		return s.st.Top
	}
	return s.cfg.From
}

// Gap is the range the scan gave up on after MaxPages, nil when none.
func (s *Scan) Gap() *Gap { return s.gap }

// Lag is how far the reader's position is behind the chain's head, in
// seconds of block time: head is the newest entry seen at the top of the
// list. A reader at the head lags 0.
func Lag(pos *Position, head *Position) float64 {
	if pos == nil || head == nil || pos.Compare(head.Position) >= 0 || head.Time <= pos.Time {
		return 0
	}
	return float64(head.Time - pos.Time)
}
