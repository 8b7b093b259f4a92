package sim

import (
	"cmp"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// Hiro's chain-wide routes, as keyed in Stats.
const (
	// HiroTxListRoute is the feed: the chain's mined transactions, newest
	// first (SPEC §5.0.1).
	HiroTxListRoute = "GET /extended/v1/tx"
	// HiroTxMultipleRoute answers many transactions by id in one request.
	HiroTxMultipleRoute = "GET /extended/v1/tx/multiple"
)

// The feed and tx/multiple follow the stacks-blockchain-api source
// (github.com/hirosystems/stacks-blockchain-api, v9.0.2-15, commit
// 759c4a58):
//
//   - src/api/routes/v1/tx.ts, GET / (get_transaction_list): `limit`
//     defaults to 20 and at most 50 (src/api/pagination.ts,
//     ResourceType.Tx; the schema's maximum makes more a 400), `offset`
//     from 0, `type` repeated or comma separated; answers
//     {limit, offset, total, results}. The route is marked deprecated, so
//     it sends `Warning: 299 - "Deprecated: …"` and answers 410 once
//     deprecated endpoints are switched off (src/api/deprecation-plugin.ts).
//   - src/datastore/pg-store.ts getTxList: ordered by block_height,
//     microblock_sequence, tx_index, descending; mined transactions up to
//     the chain tip only. Its SQL asks for canonical = true, so the v9
//     server itself never lists a losing fork's transaction; the simulator
//     shows them (canonical false), the harder case for a reader. List results carry `events: []`.
//   - src/api/routes/v1/tx.ts, GET /multiple (get_tx_list_details):
//     `tx_id` is an array (repeated or comma separated) with no maxItems
//     in the schema: the only bound is the request line, which Node's
//     default 16 KiB header limit turns into a 431 (about 200 ids).
//     Each id must match ^(0x)?[a-fA-F0-9]{64}$ and then carry its 0x
//     (src/api/query-helpers.ts validateRequestHexInput → hexToBuffer of
//     @stacks/api-toolkit, as in the server's own src/helpers.ts up to
//     v6: `Hex string is missing the "0x" prefix`), else 400. `event_limit` (default 20, at most 100) and
//     `event_offset` apply to every transaction: pg-store.ts
//     getTxListEvents selects event_index BETWEEN offset AND
//     offset+limit-1 per transaction, so each result carries its own
//     window of events, and `event_count` stays each one's total.
//   - src/api/controllers/db-controller.ts searchTxs: the answer is an
//     object keyed by txid; a canonical mined transaction is
//     {found: true, result: tx}; one not mined, or mined only off the
//     canonical chain, is looked up in the mempool and is
//     {found: true, result: mempool tx} there, else {found: false,
//     result: {tx_id}} (keyed by the id as asked). So unlike /tx/{id},
//     which falls back to a non-canonical mined transaction,
//     tx/multiple reports a losing fork's transaction as not found.
//   - src/api/routes/v3/transactions.ts, GET /extended/v3/transactions,
//     the feed's current replacement, is cursor paged and has no type
//     filter: it pages through every transaction type (not simulated).
const (
	// maxRequestLine is Node's default header limit, which bounds how many
	// ids one tx/multiple request can carry.
	maxRequestLine = 16 << 10
)

// txTypes are the tx_type values the list filter accepts.
var txTypes = []string{"coinbase", "token_transfer", "smart_contract", "contract_call",
	"poison_microblock", "tenure_change"}

// merged is a list as Hiro serves it, newest first: agents' transactions
// not yet mined on top (the simulator's address lists show them, see
// hiroAddressTransactions), then agents' mined transactions and
// strangers' calls merged by position.
type merged struct {
	top    []*worldTx
	agents []*worldTx // mined, newest first by position at at
	s      strangerSeq
	at     time.Time
}

func (m merged) total() int { return len(m.top) + len(m.agents) + m.s.total }

// page returns the entries at [offset, offset+limit).
func (m merged) page(offset, limit int) []*worldTx {
	var out []*worldTx
	for ; offset < len(m.top) && len(out) < limit; offset++ {
		out = append(out, m.top[offset])
	}
	for _, it := range m.items(offset-len(m.top), limit-len(out)) {
		out = append(out, m.tx(it))
	}
	return out
}

// item is an entry of the mined part: an agent's transaction, or the
// stranger's call of rank r.
type item struct {
	agent *worldTx
	r     int
}

func (m merged) mined() int { return len(m.agents) + m.s.total }

func (m merged) tx(it item) *worldTx {
	if it.agent != nil {
		return it.agent
	}
	return m.s.tx(it.r)
}

func (m merged) position(it item) position {
	if it.agent != nil {
		return it.agent.position(m.at)
	}
	return m.s.position(it.r)
}

// items returns the mined part's entries at [k, k+limit).
func (m merged) items(k, limit int) []item {
	if k < 0 || limit <= 0 || k >= m.mined() {
		return nil
	}
	// a is how many agents' entries rank above k: found by bisection, as
	// the strangers' list is only indexed, never materialised.
	lo, hi := max(0, k-m.s.total), min(k, len(m.agents))
	for lo < hi {
		mid := (lo + hi) / 2
		if m.agents[mid].position(m.at).compare(m.s.position(k-mid-1)) > 0 {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	a, r := lo, k-lo
	var out []item
	for len(out) < limit && (a < len(m.agents) || r < m.s.total) {
		if r == m.s.total || a < len(m.agents) && m.agents[a].position(m.at).compare(m.s.position(r)) > 0 {
			out = append(out, item{agent: m.agents[a]})
			a++
			continue
		}
		out = append(out, item{r: r})
		r++
	}
	return out
}

// rankAt is the rank in the mined part of the first entry at or below p.
func (m merged) rankAt(p position) int {
	return sort.Search(m.mined(), func(k int) bool { return m.position(m.items(k, 1)[0]).compare(p) <= 0 })
}

// listOf is a list at at of the agents' transactions among txs that exist
// then and keep accepts (nil: all): those not yet mined on top, newest
// received first, then the mined ones by position, newest first.
func listOf(txs []*worldTx, at time.Time, keep func(*worldTx) bool) merged {
	m := merged{at: at}
	for _, tx := range txs {
		switch {
		case !tx.exists(at) || keep != nil && !keep(tx):
		case inMempool(tx.statusAt(at)):
			m.top = append(m.top, tx)
		default:
			m.agents = append(m.agents, tx)
		}
	}
	slices.SortFunc(m.top, func(a, b *worldTx) int {
		return cmp.Or(b.AppearsAt.Compare(a.AppearsAt), strings.Compare(a.TxID, b.TxID))
	})
	slices.SortFunc(m.agents, func(a, b *worldTx) int { return b.position(at).compare(a.position(at)) })
	return m
}

// chainList is the list at at of the agents' transactions keep accepts,
// with the strangers' calls of contract ("": every contract).
func (w *World) chainList(contract string, at time.Time, keep func(*worldTx) bool) merged {
	w.mu.Lock()
	w.generateAll(at)
	m := listOf(w.txs, at, keep)
	w.mu.Unlock()
	m.s = w.chain.seq(contract, at)
	return m
}

// feed is the chain's mined transactions of the given types (all when
// none) at at.
func (w *World) feed(types map[string]bool, at time.Time) merged {
	m := w.chainList("", at, func(tx *worldTx) bool { return len(types) == 0 || types[tx.txType] })
	m.top = nil // mined transactions only
	if len(types) > 0 && !types[txTypeContractCall] {
		m.s = strangerSeq{} // strangers make contract calls only
	}
	return m
}

// hiroTxList serves the feed.
func (s *Server) hiroTxList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, offset, ok := pageQuery(w, q, "limit", hiroDefaultLimit, hiroMaxLimit, "offset")
	if !ok {
		return
	}
	types := map[string]bool{}
	for _, v := range q["type"] {
		for _, t := range strings.Split(v, ",") {
			if !slices.Contains(txTypes, t) {
				writeError(w, http.StatusBadRequest, fmt.Sprintf("querystring/type/0 must be equal to one of the allowed values, got %q", t))
				return
			}
			types[t] = true
		}
	}
	now := s.now()
	s.trace.served(&s.trace.tr.Feed, offset == 0, writeList(w, s.hiro.world.feed(types, now), limit, offset)...)
}

// writeList answers a page of a list, and returns it; list results never
// carry events, event_count still tells how many.
func writeList(w http.ResponseWriter, m merged, limit, offset int) []*worldTx {
	page := m.page(offset, limit)
	results := make([]txJSON, len(page))
	for i, tx := range page {
		results[i] = tx.render(m.at, eventWindow{})
	}
	writeJSON(w, http.StatusOK, doc{"limit": limit, "offset": offset, "total": m.total(), "results": results})
	return page
}

var prefixedTxid = regexp.MustCompile(`^0x[0-9a-fA-F]{64}$`)

// hiroTxMultiple answers many transactions by id (see the source facts
// above). A transaction whose /tx/ always fails makes the whole answer a
// 500, as a database error does to the real server's one query.
func (s *Server) hiroTxMultiple(w http.ResponseWriter, r *http.Request) {
	if len(r.RequestURI) > maxRequestLine {
		writeError(w, http.StatusRequestHeaderFieldsTooLarge, "Request Header Fields Too Large")
		return
	}
	q := r.URL.Query()
	var ids []string
	for _, v := range q["tx_id"] {
		for _, id := range strings.Split(v, ",") {
			if !txidPattern.MatchString(id) {
				writeError(w, http.StatusBadRequest, fmt.Sprintf("querystring/tx_id/%d must match pattern \"^(0x)?[a-fA-F0-9]{64}$\"", len(ids)))
				return
			}
			if !prefixedTxid.MatchString(id) {
				writeError(w, http.StatusBadRequest, fmt.Sprintf("Hex string is missing the \"0x\" prefix: %q", id))
				return
			}
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		writeError(w, http.StatusBadRequest, "querystring must have required property 'tx_id'")
		return
	}
	limit, offset, ok := pageQuery(w, q, "event_limit", hiroDefaultEventLimit, hiroMaxEventLimit, "event_offset")
	if !ok {
		return
	}
	now := s.now()
	// An entry is a transaction found, or the id asked for ({"tx_id": …}).
	out := make(doc, len(ids))
	for _, id := range ids {
		txid := strings.ToLower(id)
		tx, ok := s.hiro.world.tx(txid, now)
		if ok && tx.detail == detailFails {
			writeError(w, http.StatusInternalServerError, "Internal Server Error")
			return
		}
		// A losing fork's transaction is not canonical and not in the
		// mempool: not found here, though /tx/ serves it.
		if !ok || tx.fork {
			out[id] = doc{"found": false, "result": doc{"tx_id": id}}
			continue
		}
		out[txid] = doc{"found": true, "result": tx.render(now, eventWindow{offset: offset, limit: limit})}
		s.trace.served(&s.trace.tr.Multiple, false, tx)
	}
	writeJSON(w, http.StatusOK, out)
}
