package hiro

import (
	"context"
	"errors"
	"io"
	"math"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/fault"
)

// FuzzParseQuota reads arbitrary header values. A header it cannot read is
// unknown (nil), never a negative count or a negative or overflowed
// duration, and plain decimal counts are read exactly.
func FuzzParseQuota(f *testing.F) {
	f.Add("49", "60", "3", "450", "149000", "150000")
	f.Add("-1", "1.5", "abc", "", "0", "0")
	f.Add(" 7 ", "9223372036.854776", "9223372036.8547", "99999999999999999999", "1e3", "NaN")
	f.Add("0", "Inf", "+Inf", "0x10", "29999", "150000")
	f.Fuzz(func(t *testing.T, remaining, reset, retryAfter, minute, month, monthLimit string) {
		h := http.Header{}
		h.Set("ratelimit-remaining", remaining)
		h.Set("ratelimit-reset", reset)
		h.Set("retry-after", retryAfter)
		h.Set("x-ratelimit-remaining-stacks-minute", minute)
		h.Set("x-ratelimit-remaining-stacks-month", month)
		h.Set("x-ratelimit-limit-stacks-month", monthLimit)
		h.Set("x-ratelimit-cost-stacks", minute)
		q := ParseQuota(h)
		require.GreaterOrEqual(t, q.Cost, int64(1), "a cost is never free or negative")
		if want, ok := plainCount(minute); ok && want > 0 {
			require.Equal(t, want, q.Cost)
		}

		for name, c := range map[string]struct {
			got  *int64
			sent string
		}{
			"ratelimit-remaining": {q.Remaining, remaining}, "minute": {q.MinuteRemaining, minute},
			"month": {q.MonthRemaining, month}, "monthLimit": {q.MonthLimit, monthLimit},
		} {
			if c.got != nil {
				require.GreaterOrEqual(t, *c.got, int64(0), name)
			}
			if want, ok := plainCount(c.sent); ok {
				require.NotNil(t, c.got, "%s %q is a plain count", name, c.sent)
				require.Equal(t, want, *c.got, name)
			}
		}
		for name, d := range map[string]*time.Duration{"reset": q.Reset, "retryAfter": q.RetryAfter} {
			if d != nil {
				require.GreaterOrEqual(t, *d, time.Duration(0), "%s must not be negative or overflow", name)
			}
		}
		if q.MonthExhausted() {
			require.Zero(t, *q.MonthRemaining)
		}
		if q.MonthLow() {
			require.NotNil(t, q.MonthRemaining)
			require.NotNil(t, q.MonthLimit)
			require.Less(t, new(big.Int).Mul(big.NewInt(*q.MonthRemaining), big.NewInt(5)).Cmp(big.NewInt(*q.MonthLimit)), 0)
		}
	})
}

// plainCount is the independent reading of a count: optional spaces around
// ASCII digits, clamped to the int64 range.
func plainCount(s string) (int64, bool) {
	s = strings.Trim(s, " \t")
	if s == "" {
		return 0, false
	}
	n := new(big.Int)
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, false
		}
		n.Mul(n, big.NewInt(10)).Add(n, big.NewInt(int64(r-'0')))
	}
	if !n.IsInt64() {
		return math.MaxInt64, true
	}
	return n.Int64(), true
}

// FuzzTxResponse drives Client.Tx over a transport that answers every
// attempt with a fuzzed status, quota headers and body. Tx must never
// panic, must stay within its retry budget, must return a transaction with
// an id or a classified *fault.Error, and must never let a recognisable
// piece of the API key into an error, however the upstream echoes it.
func FuzzTxResponse(f *testing.F) {
	for _, name := range []string{"tx-contract-call.json", "tx-mainnet-with-events.json", "tx-mempool-pending.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		require.NoError(f, err)
		f.Add(200, string(b), "", "", 0)
	}
	f.Add(401, `{"error":"Invalid API key KEY"}`, "", "", 0)
	f.Add(403, `{"error":"Invalid API key KEY"}`, "", "", 230)
	f.Add(429, `{"error":"rate limited for KEY"}`, "0", "5", 0)
	f.Add(503, `KEY`, "", "", 240)
	f.Add(410, `{"error":"gone"}`, "", "", 0)
	f.Add(200, `{}`, "", "", 0)
	f.Add(200, `null`, "", "", 0)
	f.Add(200, `{"tx_id":"0x01","events":[{"asset":{"amount":5}}]}`, "", "", 0)
	f.Add(200, `{"tx_id":"0x01","event_count":130,"events":[{"event_index":0},{"event_index":1}]}`, "", "", 0)
	f.Add(200, `{"tx_id":"0x01","event_count":-1,"events":[]}`, "", "", 0)
	f.Add(200, `{"tx_id":"0x01","canonical":false,"microblock_canonical":"no"}`, "", "", 0)
	f.Fuzz(func(t *testing.T, status int, body, month, retryAfter string, pad int) {
		c, calls := fuzzClient(t, status, body, month, retryAfter, pad)
		tx, err := c.detail(context.Background(), "0xabc")
		// Every answer is the same, so a second events page brings nothing
		// new and paging stops there.
		require.LessOrEqual(t, int(calls.Load()), 2*(maxRateLimitAttempts+maxFailureAttempts), "retries stay within budget")
		if err == nil {
			require.NotEmpty(t, tx.TxID)
			require.NotEmpty(t, tx.Raw)
			require.Equal(t, int(calls.Load()), tx.Requests, "every request is counted")
			require.LessOrEqual(t, len(tx.Events), max(tx.EventCount, len(tx.Events)))
			return
		}
		requireClassified(t, err)
	})
}

// FuzzAddressTransactionsResponse is FuzzTxResponse for the list
// endpoints: ListTransactions from the newest page
// (v3 first, v1 after a 404) and from a saved v1 token. A listing never
// panics, stays within its retry budget, and either fails classified or
// hands out entries with ids and a next token it can read back.
func FuzzAddressTransactionsResponse(f *testing.F) {
	for _, name := range []string{"address-transactions-page.json", "tx-list.json", "principal-transactions-v3.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		require.NoError(f, err)
		f.Add(200, string(b), "", "", 0)
	}
	f.Add(200, `{"results":[{"tx_id":5}]}`, "", "", 0)
	f.Add(200, `{"limit":"25","results":null}`, "", "", 0)
	f.Add(500, `{"error":"boom KEY"}`, "", "", 250)
	f.Add(429, ``, "0", "", 0)
	f.Add(404, `{"error":"Not Found"}`, "", "", 0)
	f.Add(200, `{"total":3,"cursor":{"next":"1:2:3"},"results":[{"transaction":{"tx_id":"0x1","block":{"height":1e30}}}]}`, "", "", 0)
	f.Fuzz(func(t *testing.T, status int, body, month, retryAfter string, pad int) {
		const principal = "SP4DXVEC16FS6QR7RBKGWZYJKTXPC81W49W0ATJE"
		for _, from := range []PageToken{"", "v1:50:1000:3:0xabc"} {
			c, calls := fuzzClient(t, status, body, month, retryAfter, pad)
			page, err := c.ListTransactions(context.Background(), principal, from)
			// A v3 probe, then v1 and its rewinds, each within the retry budget.
			require.LessOrEqual(t, int(calls.Load()), (2+maxRewinds)*(maxRateLimitAttempts+maxFailureAttempts))
			require.Equal(t, int(calls.Load()), page.Requests, "every request is counted")
			if err != nil {
				requireClassified(t, err)
				continue
			}
			for _, e := range page.Entries {
				require.NotEmpty(t, e.TxID)
			}
			if page.Next != "" {
				_, err := parseToken(page.Next)
				require.NoError(t, err, "the next token %q reads back", page.Next)
			}
		}
	})
}

const fuzzKey = "hiro-SECRET-0123456789abcdefghijkl"

// fuzzClient returns a client whose every attempt gets the same answer. The
// key is spliced into the body where it says KEY, after a fuzzed amount of
// padding, so that every cut of a snippet falls through it somewhere.
func fuzzClient(t *testing.T, status int, body, month, retryAfter string, pad int) (*Client, *atomic.Int32) {
	t.Helper()
	if status < 200 || status > 599 {
		// Informational answers are consumed by net/http itself.
		status = 200 + int(uint(status)%400)
	}
	echoed := strings.ReplaceAll(body, "KEY", strings.Repeat("x", int(uint(pad)%300))+fuzzKey)
	calls := &atomic.Int32{}
	rt := roundTrip(func(r *http.Request) (*http.Response, error) {
		calls.Add(1)
		h := http.Header{}
		h.Set("x-ratelimit-remaining-stacks-month", month)
		h.Set("x-ratelimit-limit-stacks-month", "150000")
		h.Set("retry-after", retryAfter)
		return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(echoed)), Request: r}, nil
	})
	c := New(Config{BaseURL: "http://hiro.test", APIKey: fuzzKey, HTTPClient: &http.Client{Transport: rt},
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	return c, calls
}

func requireClassified(t *testing.T, err error) {
	t.Helper()
	var pe *fault.Error
	require.True(t, errors.As(err, &pe), "want a *fault.Error, got %T: %v", err, err)
	require.Contains(t, []pacer.ErrorClass{pacer.ClassRateLimit, pacer.ClassServerError, pacer.ClassTimeout,
		pacer.ClassNotFound, pacer.ClassParseError, pacer.ClassPermanent}, pe.Class, "error: %v", err)
	const piece = 12
	for i := 0; i+piece <= len(fuzzKey); i++ {
		require.NotContains(t, err.Error(), fuzzKey[i:i+piece], "a piece of the API key leaked")
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
