package hiro

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/fault"
)

// Event paging (SPEC §5.5, §9): Hiro serves 20 events unless event_limit
// asks for more, at most 100 a page.
const (
	EventLimit = 100
	// maxEventPages bounds the requests one transaction may cost: 2,000
	// events, far past any swap. A transaction with more is returned
	// incomplete (EventsComplete false), never read forever.
	maxEventPages = 20
)

// A tx/multiple batch is bounded by its URL and by its answer, not by a
// count (the server, src/api/routes/v1/tx.ts '/multiple', takes tx_id as
// an array with no maxItems). The request line and headers together must
// fit Node's default 16 KiB header limit (a 431 otherwise): maxQuery
// leaves the headers 2 KiB, and each "tx_id=0x…&" is 73 bytes, so about
// 195 ids a request. An answer longer than maxBody (the client's cap) is
// split in halves and asked again.
const (
	maxQuery = 14 << 10
	perID    = len("tx_id=0x") + 64 + len("&")
	// multipleRecheck is how long a refusal of /multiple keeps details on
	// single requests before it is tried again.
	multipleRecheck = time.Hour
)

// MaxBatch is the most transactions one tx/multiple request can name.
var MaxBatch = (maxQuery - len("/extended/v1/tx/multiple?event_limit=100&event_offset=100000")) / perID

// TxResult is one transaction of a batch: the transaction with all its
// events, or why it could not be read (ClassNotFound when Hiro does not
// know it).
type TxResult struct {
	Tx  Tx
	Err error
}

// multipleEntry is one value of /extended/v1/tx/multiple's answer, an
// object keyed by tx_id: {"found": true, "result": <tx>} or {"found":
// false, "result": {"tx_id": …}} (TransactionSearchResponseSchema in the
// server's src/api/schemas/v1/entities/transactions.ts).
type multipleEntry struct {
	Found  bool            `json:"found"`
	Result json.RawMessage `json:"result"`
}

// Tx returns one transaction with all its events, through tx/multiple
// (current; /extended/v1/tx/{id} is deprecated): Tx.Requests says how
// many requests it took. A transaction tx/multiple does not find is not
// found (ClassNotFound), without a second request: a losing fork's
// transaction, which only the deprecated detail still shows, is not found
// either, and one request is what the fast path's small share can pay.
func (c *Client) Tx(ctx context.Context, txid string) (Tx, error) {
	out, n, _ := c.txs(ctx, []string{txid}, false)
	r := out[txid]
	r.Tx.Requests = n
	return r.Tx, r.Err
}

// Txs reads several transactions with all their events, in batches as
// long as the URL allows, through GET
// /extended/v1/tx/multiple?tx_id=…&tx_id=…&event_limit=100. In the
// server's source the route takes event_limit (at most 100) and
// event_offset, applied to every transaction of the batch, and fills
// events as the detail does, with event_count the total: a transaction
// with more events than the first page reads the rest from tx/multiple
// with event_offset. Where the server refuses /multiple (404, 400), each
// transaction is one detail request (deprecated), and batches stay off
// for a while.
//
// Requests is how many requests were sent. An error is returned only when
// the rest could not be read (the budget, the caller's context); a
// transaction the server does not know comes back with a ClassNotFound
// error of its own. Results are keyed by the txids as given.
func (c *Client) Txs(ctx context.Context, txids []string) (out map[string]TxResult, requests int, err error) {
	return c.txs(ctx, txids, true)
}

// txs is Txs; forks says whether a transaction tx/multiple does not find
// is asked of the detail, which still shows a losing fork's.
func (c *Client) txs(ctx context.Context, txids []string, forks bool) (out map[string]TxResult, requests int, err error) {
	const op = "hiro GET /extended/v1/tx/multiple"
	out = make(map[string]TxResult, len(txids))
	ids := make([]string, 0, len(txids))
	seen := make(map[string]bool, len(txids))
	for _, id := range txids {
		switch {
		case seen[id]:
		case id == "" || strings.ContainsAny(id, "&=#?/ ") || len(id) > 2+64:
			out[id] = TxResult{Err: &fault.Error{Class: pacer.ClassPermanent, Op: op, Err: fmt.Errorf("%w: txid %q", ErrInvalidArgument, abbreviate(id))}}
		default:
			ids = append(ids, id)
		}
		seen[id] = true
	}
	for start := 0; start < len(ids); start += MaxBatch {
		batch := ids[start:min(len(ids), start+MaxBatch)]
		n, err := c.txBatch(ctx, batch, forks, out)
		requests += n
		if err != nil {
			// The rest would fail the same way.
			for _, id := range ids[start:] {
				if _, ok := out[id]; !ok {
					out[id] = TxResult{Err: err}
				}
			}
			return out, requests, err
		}
	}
	return out, requests, nil
}

// txBatch reads one batch into out. Its error means the rest would fail
// the same way (the budget, the caller gave up, the transport).
func (c *Client) txBatch(ctx context.Context, batch []string, forks bool, out map[string]TxResult) (requests int, err error) {
	if c.multipleMissing() {
		return c.details(ctx, batch, out)
	}
	const op = "hiro GET /extended/v1/tx/multiple"
	res, err := c.get(ctx, op, multipleQuery(batch, 0))
	requests = res.attempts
	var se *StatusError
	errors.As(err, &se)
	switch class := fault.ClassOf(err); {
	case err == nil:
	case len(batch) > 1 && (errors.Is(err, errTooLarge) || se != nil && (se.StatusCode == http.StatusRequestURITooLong || se.StatusCode == http.StatusRequestHeaderFieldsTooLarge)):
		// Longer than this server or the client takes: in halves.
		n, err := c.halves(ctx, batch, forks, out)
		return requests + n, err
	case se != nil && (se.StatusCode == http.StatusNotFound || se.StatusCode == http.StatusBadRequest):
		c.multipleMissingSince.Store(time.Now().UnixNano())
		c.conn.Log.Info("hiro.multiple_refused", zap.Int("status", se.StatusCode))
		n, err := c.details(ctx, batch, out)
		return requests + n, err
	case class == pacer.ClassServerError || class == pacer.ClassTimeout || class == pacer.ClassParseError:
		// The batch failed as a whole, maybe for one transaction's sake
		// (a detail the server cannot render): in halves, so that one bad
		// transaction does not hold the others back.
		if len(batch) == 1 {
			out[batch[0]] = TxResult{Tx: Tx{Quota: res.quota}, Err: err}
			return requests, nil
		}
		n, err := c.halves(ctx, batch, forks, out)
		return requests + n, err
	default:
		return requests, err
	}
	var body map[string]multipleEntry
	if err := json.Unmarshal(res.body, &body); err != nil {
		if len(batch) == 1 {
			out[batch[0]] = TxResult{Err: &fault.Error{Class: pacer.ClassParseError, Op: op, Err: err}}
			return requests, nil
		}
		n, err := c.halves(ctx, batch, forks, out)
		return requests + n, err
	}
	byID := make(map[string]multipleEntry, len(body))
	for k, v := range body {
		byID[strings.ToLower(k)] = v
	}
	var unfound []string
	for _, id := range batch {
		e, ok := byID[strings.ToLower(id)]
		if !ok || !e.Found {
			unfound = append(unfound, id)
			continue
		}
		tx, err := c.decode(op, e.Result, res.quota)
		if err == nil {
			err = c.readEvents(ctx, &tx, c.multiplePage)
		}
		requests += tx.Requests
		out[id] = TxResult{Tx: tx, Err: err}
		if ctx.Err() != nil {
			return requests, contextError(ctx, op)
		}
	}
	// /multiple reads canonical transactions only: one on a losing fork
	// comes back found:false although the detail still serves it
	// (canonical:false). Asking the detail once is what tells a fork
	// (not_canonical, final) from a transaction Hiro does not know
	// (tx_not_found, looked at again), while the detail is served.
	if !forks || c.Sunset(EndpointDetail) {
		for _, id := range unfound {
			out[id] = TxResult{Tx: Tx{Quota: res.quota}, Err: &fault.Error{Class: pacer.ClassNotFound, Op: op, Err: errors.New("not found")}}
		}
		return requests, nil
	}
	n, err := c.details(ctx, unfound, out)
	return requests + n, err
}

// halves reads a batch as two.
func (c *Client) halves(ctx context.Context, batch []string, forks bool, out map[string]TxResult) (int, error) {
	h := len(batch) / 2
	n, err := c.txBatch(ctx, batch[:h], forks, out)
	if err != nil {
		return n, err
	}
	m, err := c.txBatch(ctx, batch[h:], forks, out)
	return n + m, err
}

// multipleQuery is the path and query of a tx/multiple request.
func multipleQuery(ids []string, offset int) string {
	var b strings.Builder
	b.WriteString("/extended/v1/tx/multiple?")
	for _, id := range ids {
		b.WriteString("tx_id=" + url.QueryEscape(id) + "&")
	}
	b.WriteString("event_limit=" + strconv.Itoa(EventLimit))
	if offset > 0 {
		b.WriteString("&event_offset=" + strconv.Itoa(offset))
	}
	return b.String()
}

// multiplePage reads one page of a transaction's events through
// tx/multiple.
func (c *Client) multiplePage(ctx context.Context, txid string, offset int) (Tx, result, error) {
	const op = "hiro GET /extended/v1/tx/multiple"
	if c.multipleMissing() {
		return c.detailPage(ctx, txid, offset)
	}
	res, err := c.get(ctx, op, multipleQuery([]string{txid}, offset))
	if err != nil {
		return Tx{}, res, err
	}
	var body map[string]multipleEntry
	if err := json.Unmarshal(res.body, &body); err != nil {
		return Tx{}, res, &fault.Error{Class: pacer.ClassParseError, Op: op, Err: err}
	}
	for k, e := range body {
		if strings.EqualFold(k, txid) && e.Found {
			tx, err := c.decode(op, e.Result, res.quota)
			return tx, res, err
		}
	}
	return Tx{}, res, &fault.Error{Class: pacer.ClassParseError, Op: op, Err: fmt.Errorf("events page at offset %d has no %q", offset, abbreviate(txid))}
}

// details reads each transaction on its own from the deprecated detail
// endpoint (tx/multiple refused them or did not find them).
func (c *Client) details(ctx context.Context, ids []string, out map[string]TxResult) (requests int, err error) {
	for _, id := range ids {
		tx, err := c.detail(ctx, id)
		requests += tx.Requests
		out[id] = TxResult{Tx: tx, Err: err}
		if ctx.Err() != nil {
			return requests, contextError(ctx, "hiro GET /extended/v1/tx/{tx_id}")
		}
		if class := fault.ClassOf(err); err != nil && (class == pacer.ClassRateLimit || class == pacer.ClassTransport) {
			return requests, err
		}
	}
	return requests, nil
}

// detail returns one transaction with all its events from the deprecated
// GET /extended/v1/tx/{txid}, reading events EventLimit at a time with
// event_offset until event_count are read.
func (c *Client) detail(ctx context.Context, txid string) (Tx, error) {
	tx, res, err := c.detailPage(ctx, txid, 0)
	if err != nil {
		return Tx{Quota: res.quota, Requests: res.attempts}, err
	}
	tx.Raw = res.body
	tx.Requests = res.attempts
	err = c.readEvents(ctx, &tx, c.detailPage)
	return tx, err
}

// detailPage reads one page of a transaction's events from the detail
// endpoint, starting at offset.
func (c *Client) detailPage(ctx context.Context, txid string, offset int) (Tx, result, error) {
	path := "/extended/v1/tx/" + url.PathEscape(txid)
	op := "hiro GET " + path
	if txid == "" {
		return Tx{}, result{}, &fault.Error{Class: pacer.ClassPermanent, Op: op, Err: fmt.Errorf("%w: empty txid", ErrInvalidArgument)}
	}
	q := "?event_limit=" + strconv.Itoa(EventLimit)
	if offset > 0 {
		q += "&event_offset=" + strconv.Itoa(offset)
	}
	res, err := c.getDeprecated(ctx, EndpointDetail, op, path+q)
	if err != nil {
		return Tx{}, res, err
	}
	tx, err := c.decode(op, res.body, res.quota)
	return tx, res, err
}

// decode reads a transaction's JSON.
func (c *Client) decode(op string, raw json.RawMessage, q Quota) (Tx, error) {
	var tx Tx
	if err := json.Unmarshal(raw, &tx); err != nil {
		return Tx{}, &fault.Error{Class: pacer.ClassParseError, Op: op, Err: err}
	}
	if tx.TxID == "" {
		// A body like {} or null decodes cleanly but describes no transaction.
		return Tx{}, &fault.Error{Class: pacer.ClassParseError, Op: op, Err: errors.New("response has no tx_id")}
	}
	if tx.EventCount < 0 {
		return Tx{}, &fault.Error{Class: pacer.ClassParseError, Op: op, Err: fmt.Errorf("negative event_count %d", tx.EventCount)}
	}
	tx.Raw, tx.Quota = raw, q
	return tx, nil
}

// eventPager reads one page of a transaction's events from offset.
type eventPager func(ctx context.Context, txid string, offset int) (Tx, result, error)

// readEvents reads the events of tx that its first page left out, with
// event_offset, until event_count are read; tx.Requests counts the pages.
// When paging ends short of event_count (a page brought nothing new, or
// maxEventPages were read) tx comes back without error and
// EventsComplete is false: the caller decides what an incomplete
// transaction is worth. On failure tx keeps only its quota and request
// count.
func (c *Client) readEvents(ctx context.Context, tx *Tx, page eventPager) error {
	seen := make(map[int]bool, len(tx.Events))
	events := make([]Event, 0, max(len(tx.Events), min(tx.EventCount, EventLimit*maxEventPages)))
	keep := func(evs []Event) (added int) {
		for _, e := range evs {
			if !seen[e.EventIndex] {
				seen[e.EventIndex] = true
				events = append(events, e)
				added++
			}
		}
		return added
	}
	keep(tx.Events)
	offset := len(tx.Events)
	for n := 1; len(events) < tx.EventCount && n < maxEventPages; n++ {
		next, res, err := page(ctx, tx.TxID, offset)
		tx.Requests += res.attempts
		if err != nil {
			*tx = Tx{Quota: res.quota, Requests: tx.Requests}
			return err
		}
		tx.Quota = res.quota
		if !strings.EqualFold(next.TxID, tx.TxID) {
			*tx = Tx{Quota: res.quota, Requests: tx.Requests}
			return &fault.Error{Class: pacer.ClassParseError, Op: "hiro events of " + abbreviate(tx.TxID),
				Err: fmt.Errorf("events page at offset %d is of tx_id %q", offset, abbreviate(next.TxID))}
		}
		if keep(next.Events) == 0 {
			break // nothing new: reading on would only spend the budget
		}
		offset += len(next.Events)
	}
	if len(events) > 0 {
		tx.Events = events
	}
	return nil
}

func (c *Client) multipleMissing() bool {
	since := c.multipleMissingSince.Load()
	return since != 0 && time.Since(time.Unix(0, since)) < multipleRecheck
}
