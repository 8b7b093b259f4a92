package hiro

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/fault"
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
		return FeedPage{}, &fault.Error{Class: pacer.ClassPermanent, Op: op,
			Err: fmt.Errorf("%w: type %q, offset %d", ErrInvalidArgument, abbreviate(txType), offset)}
	}
	q := "?type=" + url.QueryEscape(txType) + "&limit=" + strconv.Itoa(MaxLimit) + "&offset=" + strconv.Itoa(offset)
	res, err := c.getDeprecated(ctx, EndpointFeed, op, path+q)
	page := FeedPage{Offset: offset, Quota: res.quota, Requests: res.attempts}
	if err != nil {
		return page, err
	}
	var body Page
	if err := json.Unmarshal(res.body, &body); err != nil {
		return page, &fault.Error{Class: pacer.ClassParseError, Op: op, Err: err}
	}
	if len(body.Results) > MaxLimit {
		return page, &fault.Error{Class: pacer.ClassParseError, Op: op, Err: fmt.Errorf("%d results for a limit of %d", len(body.Results), MaxLimit)}
	}
	page.Total = body.Total
	for _, r := range body.Results {
		if r.TxID == "" {
			return page, &fault.Error{Class: pacer.ClassParseError, Op: op, Err: errors.New("a result has no tx_id")}
		}
		page.Entries = append(page.Entries, entryOfV1(r))
	}
	return page, nil
}
