package hiro

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"go.uber.org/zap"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/fault"
)

// Endpoint names a route Hiro's v9 API deprecates that pacer can still
// fall back to (SPEC §5.0, "Endpoints that last"). In the server's source
// (src/api/deprecation-plugin.ts) a deprecated route sends Warning: 299
// and, once ENABLE_DEPRECATED_ENDPOINTS is off, answers 410
// {"error":"Gone","message":"This endpoint has been disabled. …"} before
// doing anything: its sunset answer.
type Endpoint string

// The deprecated endpoints pacer knows; each has a current replacement it
// turns to.
const (
	// EndpointFeed is the chain's transaction feed; the replacement is the
	// allowlisted contracts' own lists (v3 principals).
	EndpointFeed Endpoint = "/extended/v1/tx"
	// EndpointDetail is one transaction by id; tx/multiple replaces it.
	EndpointDetail Endpoint = "/extended/v1/tx/{tx_id}"
	// EndpointV1List is an address's v1 list; v3 principals replaces it.
	EndpointV1List Endpoint = "/extended/v1/address/{principal}/transactions"
)

// ErrSunset is the cause of an error for a deprecated endpoint Hiro has
// switched off. It is classified not_found, never permanent: the caller
// turns to the replacement, and the task goes on.
var ErrSunset = errors.New("hiro has switched this deprecated endpoint off (410 Gone)")

// sunsets remembers, for the whole process, which deprecated endpoints
// each Hiro (by base URL) has answered with its sunset answer: every
// client of the process then turns to the replacement without asking the
// deprecated route again.
var sunsets sync.Map // sunsetKey → struct{}

type sunsetKey struct {
	base string
	e    Endpoint
}

// Sunset reports whether Hiro has answered e with its sunset answer in
// this process.
func (c *Client) Sunset(e Endpoint) bool {
	_, gone := sunsets.Load(sunsetKey{c.conn.BaseURL, e})
	return gone
}

// getDeprecated is get for a deprecated endpoint: after its sunset answer,
// it fails at once without a request.
func (c *Client) getDeprecated(ctx context.Context, e Endpoint, op, pathAndQuery string) (result, error) {
	if c.Sunset(e) {
		return result{}, &fault.Error{Class: pacer.ClassNotFound, Op: op, Err: ErrSunset}
	}
	res, err := c.get(ctx, op, pathAndQuery)
	var se *StatusError
	if err != nil && errors.As(err, &se) && se.StatusCode == http.StatusGone {
		if _, had := sunsets.LoadOrStore(sunsetKey{c.conn.BaseURL, e}, struct{}{}); !had {
			c.conn.Log.Warn("hiro.sunset", zap.String("endpoint", string(e)), zap.String("detail", se.Detail))
		}
		return res, &fault.Error{Class: pacer.ClassNotFound, Op: op, Err: fmt.Errorf("%w: %w", ErrSunset, se)}
	}
	return res, err
}
