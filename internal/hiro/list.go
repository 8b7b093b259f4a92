package hiro

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/fault"
)

// Position is where a mined transaction sits in the chain; a greater
// position is newer. It is what an agent's ingestion cursor holds.
type Position struct {
	BlockHeight int64 `json:"blockHeight"`
	TxIndex     int64 `json:"txIndex"`
}

// Compare returns -1, 0 or +1 as p is older than, the same as, or newer
// than o.
func (p Position) Compare(o Position) int {
	return cmp.Or(cmp.Compare(p.BlockHeight, o.BlockHeight), cmp.Compare(p.TxIndex, o.TxIndex))
}

func (p Position) String() string { return fmt.Sprintf("%d:%d", p.BlockHeight, p.TxIndex) }

// Entry is one transaction of an address listing: what the sweep needs to
// decide whether the transaction deserves a detail request. Listings carry
// no events.
type Entry struct {
	TxID          string
	TxType        string
	TxStatus      string
	SenderAddress string
	// BlockHeight and TxIndex are zero for a transaction that was never
	// mined (pending, dropped).
	BlockHeight   int64
	TxIndex       int64
	BurnBlockTime int64
	// BlockTime is the Stacks block's time, 0 when unknown.
	BlockTime int64
	// Canonical is false only when the listing says another fork won.
	Canonical bool
	// ContractCall is set for contract calls (without their arguments).
	ContractCall *ContractCall
}

// Mined reports whether the entry is in a block; pending and dropped
// transactions are not, and have no Position.
func (e Entry) Mined() bool { return e.BlockHeight > 0 }

// Position is where the entry sits in the chain (zero when not mined).
func (e Entry) Position() Position {
	return Position{BlockHeight: e.BlockHeight, TxIndex: e.TxIndex}
}

// PageToken says where a listing page starts: "" is the newest page, and
// every TxPage names the next (older) one. Tokens are plain strings a
// caller may store (an agent's saved place in a visit cut short) and pass
// back later, to this process or another: a v3 token is an exact place in
// the chain; a v1 token is an offset checked against the position of the
// last entry it followed, so transactions that arrived in between can
// repeat entries but never make one be skipped.
type PageToken string

// TxPage is one page of an address's transactions.
type TxPage struct {
	// Entries are newest first. A page may be empty and still have a
	// Next: every entry it read was one already handed out.
	Entries []Entry
	// Next is the token of the next (older) page, "" when none is left.
	Next PageToken
	// Endpoint is "v3" or "v1": which list endpoint answered.
	Endpoint string
	// Quota is that of the last response; Requests how many requests the
	// page took (a v3 probe answered 404, a v1 rewind, retries).
	Quota    Quota
	Requests int
}

// List endpoints and their page size.
const (
	endpointV3 = "v3"
	endpointV1 = "v1"
	// v3Recheck is how long a 404 of the v3 endpoint keeps listings on v1
	// before v3 is tried again (a server upgraded in place).
	v3Recheck = time.Hour
	// maxRewinds bounds the v1 pages read backwards to find the place a
	// token left off, when the list shrank under it (a reorg).
	maxRewinds = 4
)

// v3CursorPattern is Hiro's transaction cursor:
// block_height:microblock_sequence:tx_index.
var v3CursorPattern = regexp.MustCompile(`^[0-9]{1,19}:[0-9]{1,19}:[0-9]{1,19}$`)

// ListTransactions returns one page of principal's transactions, newest
// first, starting at from ("" for the newest). It reads the current cursor
// endpoint GET /extended/v3/principals/{principal}/transactions where the
// server offers it; after a 404 there it reads the deprecated v1 offset
// endpoint (GET /extended/v1/address/{principal}/transactions) and keeps to
// v1 for a while. A v3 token handed to a client on v1 continues on v1 from
// the same place. A 410 of v1 is a permanent error (Hiro has switched it
// off). Pages hold MaxLimit entries.
//
// A caller walking back to its cursor stops at the first mined entry whose
// Position is at or below it, and may save Next to resume there later.
func (c *Client) ListTransactions(ctx context.Context, principal string, from PageToken) (TxPage, error) {
	op := "hiro list " + principal
	if principal == "" {
		return TxPage{}, &fault.Error{Class: pacer.ClassPermanent, Op: op, Err: fmt.Errorf("%w: empty principal", ErrInvalidArgument)}
	}
	tok, err := parseToken(from)
	if err != nil {
		return TxPage{}, &fault.Error{Class: pacer.ClassPermanent, Op: op, Err: err}
	}
	if c.v3Missing() {
		return c.listV1(ctx, principal, tok.v1())
	}
	// A v1 token (saved before, or left by a v3 404) goes on in v3 from
	// its place: the entry there comes again, nothing is skipped.
	page, err := c.listV3(ctx, principal, tok.v3().cursor)
	if fault.ClassOf(err) != pacer.ClassNotFound {
		return page, err
	}
	c.v3MissingSince.Store(time.Now().UnixNano())
	c.conn.Log.Info("hiro.v3_missing", zap.String("principal", principal), zap.Error(err))
	v1, err := c.listV1(ctx, principal, tok.v1())
	v1.Requests += page.Requests
	return v1, err
}

func (c *Client) v3Missing() bool {
	since := c.v3MissingSince.Load()
	return since != 0 && time.Since(time.Unix(0, since)) < v3Recheck
}

// token is a decoded PageToken.
type token struct {
	endpoint string
	// cursor is the v3 cursor ("" = newest).
	cursor string
	// offset is the v1 offset. With after set, only entries older than
	// after (or at its position but another txid) are handed out, and the
	// entry at offset-1 is read too, to check that nothing slid past the
	// offset since.
	offset int
	after  *Position
	// afterTxID is the txid of the entry at after; "" means entries at
	// after's position are still to be handed out.
	afterTxID string
}

// v1 is the token as a v1 one: a v3 cursor becomes "at or older than its
// position", read from the top of the v1 list.
func (t token) v1() token {
	if t.endpoint == endpointV1 || t.cursor == "" {
		return t
	}
	parts := strings.Split(t.cursor, ":")
	height, _ := strconv.ParseInt(parts[0], 10, 64)
	index, _ := strconv.ParseInt(parts[2], 10, 64)
	return token{endpoint: endpointV1, after: &Position{BlockHeight: height, TxIndex: index}}
}

// v3 is the token as a v3 one: a v1 token's place becomes the cursor at
// its position (inclusive); a v1 token with no place starts again from
// the newest entry.
func (t token) v3() token {
	if t.endpoint != endpointV1 {
		return t
	}
	if t.after == nil {
		return token{endpoint: endpointV3}
	}
	return token{endpoint: endpointV3, cursor: fmt.Sprintf("%d:%d:%d", t.after.BlockHeight, anchoredSequence, t.after.TxIndex)}
}

// anchoredSequence is the microblock sequence of an anchored block's
// transactions in a v3 cursor: the largest, so that a cursor at a block's
// position covers every transaction there.
const anchoredSequence = 2147483647

func (t token) encode() PageToken {
	switch {
	case t.endpoint == endpointV3:
		return PageToken("v3:" + t.cursor)
	case t.after == nil:
		return PageToken("v1:" + strconv.Itoa(t.offset))
	default:
		return PageToken(fmt.Sprintf("v1:%d:%d:%d:%s", t.offset, t.after.BlockHeight, t.after.TxIndex, t.afterTxID))
	}
}

// parseToken reads a PageToken. Tokens come back from storage, so anything
// pacer did not write is refused rather than sent to Hiro.
func parseToken(p PageToken) (token, error) {
	s := string(p)
	bad := func() (token, error) {
		return token{}, fmt.Errorf("%w: page token %q", ErrInvalidArgument, abbreviate(s))
	}
	switch {
	case s == "":
		return token{}, nil
	case strings.HasPrefix(s, "v3:"):
		c := strings.TrimPrefix(s, "v3:")
		if !v3CursorPattern.MatchString(c) {
			return bad()
		}
		return token{endpoint: endpointV3, cursor: c}, nil
	case strings.HasPrefix(s, "v1:"):
		parts := strings.SplitN(strings.TrimPrefix(s, "v1:"), ":", 4)
		t := token{endpoint: endpointV1}
		var err error
		if t.offset, err = strconv.Atoi(parts[0]); err != nil || t.offset < 0 {
			return bad()
		}
		switch len(parts) {
		case 1:
			return t, nil
		case 4:
			h, herr := strconv.ParseInt(parts[1], 10, 64)
			i, ierr := strconv.ParseInt(parts[2], 10, 64)
			if herr != nil || ierr != nil || h < 0 || i < 0 {
				return bad()
			}
			t.after, t.afterTxID = &Position{BlockHeight: h, TxIndex: i}, parts[3]
			return t, nil
		}
	}
	return bad()
}

// v3Page is the body of GET /extended/v3/principals/{principal}/transactions.
type v3Page struct {
	Total  int `json:"total"`
	Limit  int `json:"limit"`
	Cursor struct {
		Next    *string `json:"next"`
		Current *string `json:"current"`
	} `json:"cursor"`
	Results []struct {
		Transaction v3Tx `json:"transaction"`
	} `json:"results"`
}

// v3Tx is a transaction summary of the v3 endpoints. It lists mined,
// canonical transactions only.
type v3Tx struct {
	TxID   string `json:"tx_id"`
	Sender struct {
		Address string `json:"address"`
	} `json:"sender"`
	Block struct {
		Height  int64   `json:"height"`
		TxIndex int64   `json:"tx_index"`
		Time    float64 `json:"time"`
	} `json:"block"`
	BitcoinBlock struct {
		Time float64 `json:"time"`
	} `json:"bitcoin_block"`
	Status       string `json:"status"`
	Type         string `json:"type"`
	ContractCall *struct {
		ContractID   string `json:"contract_id"`
		FunctionName string `json:"function_name"`
	} `json:"contract_call"`
}

func (c *Client) listV3(ctx context.Context, principal, cursor string) (TxPage, error) {
	path := "/extended/v3/principals/" + url.PathEscape(principal) + "/transactions"
	op := "hiro GET " + path
	q := "?limit=" + strconv.Itoa(MaxLimit)
	if cursor != "" {
		q += "&cursor=" + url.QueryEscape(cursor)
	}
	res, err := c.get(ctx, op, path+q)
	page := TxPage{Endpoint: endpointV3, Quota: res.quota, Requests: res.attempts}
	if err != nil {
		return page, err
	}
	var body v3Page
	if err := json.Unmarshal(res.body, &body); err != nil {
		return page, &fault.Error{Class: pacer.ClassParseError, Op: op, Err: err}
	}
	for _, r := range body.Results {
		t := r.Transaction
		if t.TxID == "" {
			return page, &fault.Error{Class: pacer.ClassParseError, Op: op, Err: errors.New("a result has no tx_id")}
		}
		e := Entry{
			TxID: t.TxID, TxType: t.Type, TxStatus: t.Status, SenderAddress: t.Sender.Address,
			BlockHeight: t.Block.Height, TxIndex: t.Block.TxIndex, BurnBlockTime: unixSeconds(t.BitcoinBlock.Time),
			BlockTime: unixSeconds(t.Block.Time), Canonical: true,
		}
		if t.ContractCall != nil {
			e.ContractCall = &ContractCall{ContractID: t.ContractCall.ContractID, FunctionName: t.ContractCall.FunctionName}
		}
		page.Entries = append(page.Entries, e)
	}
	if next := body.Cursor.Next; next != nil && *next != "" && len(body.Results) > 0 {
		if !v3CursorPattern.MatchString(*next) || *next == cursor {
			// Following it could loop for ever or send Hiro garbage; ending
			// the listing here would make the caller skip what lies beyond.
			return page, &fault.Error{Class: pacer.ClassParseError, Op: op, Err: fmt.Errorf("unusable next cursor %q", abbreviate(*next))}
		}
		page.Next = token{endpoint: endpointV3, cursor: *next}.encode()
	}
	return page, nil
}

// unixSeconds turns a JSON number of seconds into an int64, whatever its
// size or sign, without overflow.
func unixSeconds(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

func (c *Client) listV1(ctx context.Context, principal string, tok token) (TxPage, error) {
	path := "/extended/v1/address/" + url.PathEscape(principal) + "/transactions"
	op := "hiro GET " + path
	page := TxPage{Endpoint: endpointV1}
	offset := tok.offset
	checkOverlap := tok.after != nil && offset > 0
	if checkOverlap {
		offset-- // read the entry the token followed, to see it is still there
	}
	for rewinds := 0; ; rewinds++ {
		res, err := c.getDeprecated(ctx, EndpointV1List, op, path+"?limit="+strconv.Itoa(MaxLimit)+"&offset="+strconv.Itoa(offset))
		page.Quota = res.quota
		page.Requests += res.attempts
		if err != nil {
			return page, err
		}
		var body Page
		if err := json.Unmarshal(res.body, &body); err != nil {
			return page, &fault.Error{Class: pacer.ClassParseError, Op: op, Err: err}
		}
		results := body.Results
		if checkOverlap && offset > 0 && slid(results, tok) {
			// Entries older than the token's place moved up past the
			// offset (the list lost entries above it): read further back.
			if rewinds == maxRewinds {
				return page, &fault.Error{Class: pacer.ClassParseError, Op: op,
					Err: fmt.Errorf("could not find where page token left off within %d pages", maxRewinds)}
			}
			offset = max(0, offset-MaxLimit)
			continue
		}

		for _, r := range results {
			if r.TxID == "" {
				return page, &fault.Error{Class: pacer.ClassParseError, Op: op, Err: errors.New("a result has no tx_id")}
			}
			e := entryOfV1(r)
			if tok.after != nil && !olderThan(e, tok) {
				continue // handed out before
			}
			page.Entries = append(page.Entries, e)
		}
		end := offset + len(results)
		if len(results) < MaxLimit || end >= body.Total {
			return page, nil
		}
		next := token{endpoint: endpointV1, offset: end, after: tok.after, afterTxID: tok.afterTxID}
		// The bound only ever moves back: a page of entries that arrived
		// since, all newer than it, must not hand the older ones out again.
		if last := entryOfV1(results[len(results)-1]); last.Mined() && (next.after == nil || last.Position().Compare(*next.after) < 0) {
			p := last.Position()
			next.after, next.afterTxID = &p, last.TxID
		}
		page.Next = next.encode()
		return page, nil
	}
}

// slid reports whether the first entry of a page read at the token's offset
// minus one is older than where the token left off: then entries the caller
// has not seen moved above the offset.
func slid(results []TxSummary, tok token) bool {
	if len(results) == 0 {
		return true
	}
	first := entryOfV1(results[0])
	return first.Mined() && first.Position().Compare(*tok.after) < 0
}

// olderThan reports whether e comes after the token's place: older, or at
// the same position but another transaction (forks can share a position).
// Mempool entries sit above every mined one and were handed out first.
func olderThan(e Entry, tok token) bool {
	if !e.Mined() {
		return false
	}
	switch e.Position().Compare(*tok.after) {
	case -1:
		return true
	case 0:
		return e.TxID != tok.afterTxID
	}
	return false
}

func entryOfV1(r TxSummary) Entry {
	e := Entry{
		TxID: r.TxID, TxType: r.TxType, TxStatus: r.TxStatus, SenderAddress: r.SenderAddress,
		BlockHeight: r.BlockHeight, TxIndex: r.TxIndex, BurnBlockTime: r.BurnBlockTime, BlockTime: r.BlockTime,
		Canonical: r.IsCanonical(),
	}
	if r.ContractCall != nil {
		e.ContractCall = &ContractCall{ContractID: r.ContractCall.ContractID, FunctionName: r.ContractCall.FunctionName}
	}
	return e
}
