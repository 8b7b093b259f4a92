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
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/pacer-dev/pacer"
)

// FeedPage is one page of the chain's confirmed transactions, newest first.
type FeedPage struct {
	// Entries are newest first, as Hiro listed them (Canonical false on
	// entries of a fork that lost).
	Entries []Entry
	// Offset and Total are the page's place in the feed and the feed's
	// length when it was read.
	Offset, Total int
	Quota         Quota
	// Requests is how many requests the page took (retries included).
	Requests int
}

// Feed reads one page of the chain's confirmed transactions of one type,
// newest first (GET /extended/v1/tx?type=…&limit=50&offset=…): the tail's
// list (SPEC §5.0). Offsets shift as blocks arrive; internal/discovery
// makes a walk of them lose nothing.
func (c *Client) Feed(ctx context.Context, txType string, offset int) (FeedPage, error) {
	const path = "/extended/v1/tx"
	op := "hiro GET " + path
	if txType == "" || offset < 0 {
		return FeedPage{}, &pacer.Error{Class: pacer.ClassPermanent, Op: op,
			Err: fmt.Errorf("%w: type %q, offset %d", ErrInvalidArgument, abbreviate(txType), offset)}
	}
	q := "?type=" + url.QueryEscape(txType) + "&limit=" + strconv.Itoa(MaxLimit) + "&offset=" + strconv.Itoa(offset)
	res, err := c.get(ctx, op, path+q)
	page := FeedPage{Offset: offset, Quota: res.quota, Requests: res.attempts}
	if err != nil {
		return page, err
	}
	var body Page
	if err := json.Unmarshal(res.body, &body); err != nil {
		return page, &pacer.Error{Class: pacer.ClassParseError, Op: op, Err: err}
	}
	if len(body.Results) > MaxLimit {
		return page, &pacer.Error{Class: pacer.ClassParseError, Op: op, Err: fmt.Errorf("%d results for a limit of %d", len(body.Results), MaxLimit)}
	}
	page.Total = body.Total
	for _, r := range body.Results {
		if r.TxID == "" {
			return page, &pacer.Error{Class: pacer.ClassParseError, Op: op, Err: errors.New("a result has no tx_id")}
		}
		page.Entries = append(page.Entries, entryOfV1(r))
	}
	return page, nil
}

// MaxBatch is the most transactions pacer asks /extended/v1/tx/multiple
// for at once. The server (stacks-blockchain-api, src/api/routes/v1/tx.ts,
// route '/multiple') takes tx_id as a repeated or comma-separated array
// with no count limit of its own, so the bound is the URL's length (Node's
// default header limit is 16 KiB; each "&tx_id=0x…" is 73 bytes): 20 keeps
// a request near 1.5 KiB and a response of 20 × 100 events well inside
// maxBody.
const MaxBatch = 20

// multipleRecheck is how long a refusal of /multiple keeps batches on
// single requests before it is tried again.
const multipleRecheck = time.Hour

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

// Txs reads several transactions with all their events, in batches of
// MaxBatch through GET /extended/v1/tx/multiple?tx_id=…&tx_id=…&event_limit=100
// where the server offers it. In the server's source the route takes
// event_limit (at most 100, like /extended/v1/tx/{id}) and event_offset,
// applied to every transaction of the batch, and fills events as the
// detail does, with event_count the total: a transaction with more events
// than the first page reads the rest from /extended/v1/tx/{id} with
// event_offset, as Tx does. Where the server refuses /multiple (404, 400,
// 414), each transaction is one Tx call, and batches stay off for a while.
//
// Requests is how many requests were sent. An error is returned only when
// nothing could be read (a batch failed as a whole); a transaction the
// server does not know comes back with a ClassNotFound error of its own.
// Results are keyed by the txids as given.
func (c *Client) Txs(ctx context.Context, txids []string) (out map[string]TxResult, requests int, err error) {
	out = make(map[string]TxResult, len(txids))
	for start := 0; start < len(txids); start += MaxBatch {
		batch := txids[start:min(len(txids), start+MaxBatch)]
		n, err := c.txBatch(ctx, batch, out)
		requests += n
		if err != nil {
			for _, id := range batch {
				if _, ok := out[id]; !ok {
					out[id] = TxResult{Err: err}
				}
			}
			if ctx.Err() != nil || pacer.ClassOf(err) == pacer.ClassRateLimit || pacer.ClassOf(err) == pacer.ClassTransport {
				// The rest would fail the same way.
				for _, id := range txids[start:] {
					if _, ok := out[id]; !ok {
						out[id] = TxResult{Err: err}
					}
				}
				return out, requests, err
			}
		}
	}
	return out, requests, nil
}

// txBatch reads one batch into out.
func (c *Client) txBatch(ctx context.Context, batch []string, out map[string]TxResult) (requests int, err error) {
	if len(batch) == 1 || c.multipleMissing() {
		return c.txSingles(ctx, batch, out), nil
	}
	const path = "/extended/v1/tx/multiple"
	op := "hiro GET " + path
	q := make([]string, 0, len(batch)+1)
	for _, id := range batch {
		if id == "" || strings.ContainsAny(id, "&=#?/ ") {
			out[id] = TxResult{Err: &pacer.Error{Class: pacer.ClassPermanent, Op: op, Err: fmt.Errorf("%w: txid %q", ErrInvalidArgument, abbreviate(id))}}
			continue
		}
		q = append(q, "tx_id="+url.QueryEscape(id))
	}
	if len(q) == 0 {
		return 0, nil
	}
	q = append(q, "event_limit="+strconv.Itoa(EventLimit))
	res, err := c.get(ctx, op, path+"?"+strings.Join(q, "&"))
	requests = res.attempts
	var se *StatusError
	if err != nil && errors.As(err, &se) && (se.StatusCode == http.StatusNotFound || se.StatusCode == http.StatusBadRequest || se.StatusCode == http.StatusRequestURITooLong || se.StatusCode == http.StatusRequestHeaderFieldsTooLarge) {
		c.multipleMissingSince.Store(time.Now().UnixNano())
		c.conn.Log.Info("hiro.multiple_refused", zap.Int("status", se.StatusCode))
		return requests + c.txSingles(ctx, batch, out), nil
	}
	switch class := pacer.ClassOf(err); {
	case err == nil:
	case class == pacer.ClassServerError || class == pacer.ClassTimeout || class == pacer.ClassParseError:
		// The batch failed as a whole, maybe for one transaction's sake
		// (a detail the server cannot render): each on its own, so that
		// one bad transaction does not hold the others back.
		return requests + c.txSingles(ctx, batch, out), nil
	default:
		return requests, err
	}
	var body map[string]multipleEntry
	if err := json.Unmarshal(res.body, &body); err != nil {
		return requests + c.txSingles(ctx, batch, out), nil
	}
	byID := make(map[string]multipleEntry, len(body))
	for k, v := range body {
		byID[strings.ToLower(k)] = v
	}
	var unfound []string
	for _, id := range batch {
		if _, done := out[id]; done {
			continue
		}
		e, ok := byID[strings.ToLower(id)]
		if !ok || !e.Found {
			unfound = append(unfound, id)
			continue
		}
		tx, n, err := c.completeEvents(ctx, e.Result, res.quota)
		requests += n
		out[id] = TxResult{Tx: tx, Err: err}
	}
	// /multiple reads canonical transactions only: one on a losing fork
	// comes back found:false although /extended/v1/tx/{id} still serves it
	// (canonical:false). Asking the detail once is what tells a fork
	// (not_canonical, final) from a transaction Hiro does not know
	// (tx_not_found, looked at again).
	return requests + c.txSingles(ctx, unfound, out), nil
}

// completeEvents decodes a transaction of a batch and reads the events the
// batch's page left out.
func (c *Client) completeEvents(ctx context.Context, raw json.RawMessage, q Quota) (Tx, int, error) {
	const op = "hiro GET /extended/v1/tx/multiple"
	var tx Tx
	if err := json.Unmarshal(raw, &tx); err != nil {
		return Tx{}, 0, &pacer.Error{Class: pacer.ClassParseError, Op: op, Err: err}
	}
	if tx.TxID == "" {
		return Tx{}, 0, &pacer.Error{Class: pacer.ClassParseError, Op: op, Err: errors.New("a result has no tx_id")}
	}
	if tx.EventCount < 0 {
		return Tx{}, 0, &pacer.Error{Class: pacer.ClassParseError, Op: op, Err: fmt.Errorf("negative event_count %d", tx.EventCount)}
	}
	tx.Raw, tx.Quota = raw, q
	err := c.readEvents(ctx, &tx)
	return tx, tx.Requests, err
}

// txSingles reads each transaction on its own.
func (c *Client) txSingles(ctx context.Context, batch []string, out map[string]TxResult) (requests int) {
	for _, id := range batch {
		if _, done := out[id]; done {
			continue
		}
		tx, err := c.Tx(ctx, id)
		requests += tx.Requests
		out[id] = TxResult{Tx: tx, Err: err}
	}
	return requests
}

func (c *Client) multipleMissing() bool {
	since := c.multipleMissingSince.Load()
	return since != 0 && time.Since(time.Unix(0, since)) < multipleRecheck
}

// multipleFlag is embedded state of Client for /multiple's availability.
type multipleFlag struct {
	// multipleMissingSince is when /multiple was last refused (unix
	// nanoseconds, 0 = never).
	multipleMissingSince atomic.Int64
}
