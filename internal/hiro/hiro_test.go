package hiro

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/fault"
)

// canned is one scripted answer of the fake Hiro.
type canned struct {
	status int
	header map[string]string
	body   string
}

func ok(body string) canned { return canned{status: http.StatusOK, body: body} }

// fakeHiro answers with a script, repeating its last answer once it runs out,
// and records what it was asked.
type fakeHiro struct {
	mu       sync.Mutex
	script   []canned
	requests []*http.Request
}

func newFakeHiro(t *testing.T, script ...canned) (*httptest.Server, *fakeHiro) {
	t.Helper()
	f := &fakeHiro{script: script}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv, f
}

func (f *fakeHiro) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	n := len(f.requests)
	f.requests = append(f.requests, r.Clone(context.Background()))
	c := f.script[min(n, len(f.script)-1)]
	f.mu.Unlock()

	for k, v := range c.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(c.status)
	_, _ = w.Write([]byte(c.body))
}

func (f *fakeHiro) calls() []*http.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*http.Request(nil), f.requests...)
}

// sleeps records the delays the client asked for instead of waiting.
type sleeps struct {
	mu     sync.Mutex
	delays []time.Duration
}

func (s *sleeps) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.delays = append(s.delays, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.delays...)
}

type testClient struct {
	*Client
	sleeps *sleeps
	logs   *observer.ObservedLogs
}

func newTestClient(t *testing.T, cfg Config) testClient {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	s := &sleeps{}
	cfg.Sleep = s.Sleep
	cfg.Logger = zap.New(core)
	if cfg.HTTPClient == nil {
		// Each test its own transport: a shared pool could hand a new server
		// a connection to an old one that had the same port.
		cfg.HTTPClient = &http.Client{Transport: &http.Transport{}}
	}
	return testClient{Client: New(cfg), sleeps: s, logs: logs}
}

func boolp(b bool) *bool { return &b }

func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return string(b)
}

func TestInvalidArgumentsSendNothing(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		giveCall func(context.Context, *Client) error
	}{
		{name: "empty principal", giveCall: func(ctx context.Context, c *Client) error {
			_, err := c.ListTransactions(ctx, "", "")
			return err
		}},
		{name: "empty txid", giveCall: func(ctx context.Context, c *Client) error {
			_, err := c.Tx(ctx, "")
			return err
		}},
		{name: "empty txid, detail", giveCall: func(ctx context.Context, c *Client) error {
			_, err := c.detail(ctx, "")
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, fake := newFakeHiro(t, ok(`{"results":[]}`))
			c := newTestClient(t, Config{BaseURL: srv.URL})

			err := tt.giveCall(t.Context(), c.Client)
			require.ErrorIs(t, err, ErrInvalidArgument)
			require.Equal(t, pacer.ClassPermanent, fault.ClassOf(err))
			require.Empty(t, fake.calls())
		})
	}
}

func TestTx(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		giveFile string
		wantTx   Tx
	}{
		{
			name:     "landing-page stableswap",
			giveFile: "tx-stableswap-stx-ststx.json",
			wantTx: Tx{
				TxSummary: TxSummary{
					TxID:          "0x46bc5587ae56e5bd4453daa2bf63c2a9e0414953fd21a82eb44f2f926f0ee0e4",
					TxStatus:      "success",
					TxType:        "contract_call",
					SenderAddress: "SP4DXVEC16FS6QR7RBKGWZYJKTXPC81W49W0ATJE",
					BurnBlockTime: 1778787000,
					ContractCall: &ContractCall{
						ContractID:   "SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.stableswap-stx-ststx-v-1-2",
						FunctionName: "swap-x-for-y",
						FunctionArgs: []FunctionArg{},
					},
				},
				Events: []Event{
					{EventIndex: 0, EventType: "stx_asset", Asset: &Asset{
						AssetEventType: "transfer",
						Sender:         "SP4DXVEC16FS6QR7RBKGWZYJKTXPC81W49W0ATJE",
						Recipient:      "SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M",
						Amount:         "1000000",
					}},
					{EventIndex: 1, EventType: "ft_transfer_event", Asset: &Asset{
						AssetEventType: "transfer",
						AssetID:        "SP4SZE494VC2YC5JYG7AYFQ44F5Q4PYV7DVMDPBG.ststx-token::ststx",
						Sender:         "SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M",
						Recipient:      "SP4DXVEC16FS6QR7RBKGWZYJKTXPC81W49W0ATJE",
						Amount:         "859839",
					}},
				},
			},
		},
		{
			name:     "real mainnet tx with a log and an FT event",
			giveFile: "tx-mainnet-with-events.json",
			wantTx: Tx{
				TxSummary: TxSummary{
					TxID:                "0xee0049faf8dde5507418140ed72bd64f73cc001b08de98e0c16a3a8d9f2c38cf",
					TxStatus:            "success",
					TxType:              "contract_call",
					SenderAddress:       "SP3F7B2PGN7TVMTNBS1HBJBEC6M64DMCY944MXDD0",
					BlockHeight:         168868,
					BlockHash:           "0x9248a412fc98e245820160aba1f89defefe5380af920bff73bc6617207284aa9",
					TxIndex:             85,
					BurnBlockTime:       1728309301,
					BlockTime:           1728309360,
					Canonical:           boolp(true),
					MicroblockCanonical: boolp(true),
					ContractCall: &ContractCall{
						ContractID:   "SP2N959SER36FZ5QT1CX9BR63W3E8X35WQCMBYYWC.leo-cats",
						FunctionName: "list-in-ustx",
						FunctionArgs: []FunctionArg{{Name: "id", Repr: "u3441", Type: "uint"}},
					},
				},
				EventCount: 1,
				Events: []Event{
					{EventIndex: 0, EventType: "smart_contract_log"},
					{EventIndex: 1, EventType: "fungible_token_asset", Asset: &Asset{
						AssetEventType: "transfer",
						AssetID:        "SP3K8BC0PPEVCV7NZ6QSRWPQ2JE9E5B6N3PA0KBR9.brc20-db20::brc20-db20",
						Sender:         "SPP2B792YYNWTM5W8N3TBJT51745K8HPSCP9EFTT",
						Recipient:      "SP38AN2F75Y4AP8ZVA7402XPK77F82TBQX05R8EH6",
						Amount:         "1548865732",
					}},
				},
			},
		},
		{
			name:     "pending mempool tx has no events and no burn time",
			giveFile: "tx-mempool-pending.json",
			wantTx: Tx{
				TxSummary: TxSummary{
					TxID:          "0x698096b646d17297836542beecfe8d6a30454b2ce5ce4e9b0e5d243b05dce998",
					TxStatus:      "pending",
					TxType:        "contract_call",
					SenderAddress: "SPBDCE0KCWY56SX6XE7MB6DVVETABYM2WRDK6PCB",
					ContractCall: &ContractCall{
						ContractID:   "SP2C2YFP12AJZB4MABJBAJ55XECVS7E4PMMZ89YZR.arkadiko-swap-v2-1",
						FunctionName: "swap-x-for-y",
						FunctionArgs: []FunctionArg{
							{Name: "token-x-trait", Repr: "SP2C2YFP12AJZB4MABJBAJ55XECVS7E4PMMZ89YZR.arkadiko-token", Type: "trait_reference"},
							{Name: "token-y-trait", Repr: "SP2C2YFP12AJZB4MABJBAJ55XECVS7E4PMMZ89YZR.usda-token", Type: "trait_reference"},
							{Name: "dx", Repr: "u990000000", Type: "uint"},
							{Name: "min-dy", Repr: "u1659521695", Type: "uint"},
						},
					},
				},
			},
		},
		{
			name:     "docs contract call",
			giveFile: "tx-contract-call.json",
			wantTx: Tx{
				TxSummary: TxSummary{
					TxID:                "0xb88e97c8b86124a298de9e02bfb0551a977f09769624bd8e6d659a157a695e9f",
					TxStatus:            "success",
					TxType:              "contract_call",
					SenderAddress:       "STJTXEJPJPPVDNA9B052NSRRBGQCFNKVS178VGH1",
					BlockHeight:         3201,
					BlockHash:           "0x196f4bef47694eabe72e6278913fa464916ec2e3f6bbfa5abc81347379382a39",
					TxIndex:             1,
					BurnBlockTime:       1594228593,
					Canonical:           boolp(true),
					MicroblockCanonical: boolp(true),
					ContractCall: &ContractCall{
						ContractID:   "STJTXEJPJPPVDNA9B052NSRRBGQCFNKVS178VGH1.hello_world",
						FunctionName: "set-value",
						FunctionArgs: []FunctionArg{
							{Name: "key", Repr: `"foo"`, Type: "(buff 32)"},
							{Name: "value", Repr: `"bar"`, Type: "(buff 32)"},
						},
					},
				},
				Events: []Event{},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body := fixture(t, tt.giveFile)
			srv, fake := newFakeHiro(t, ok(body))
			c := newTestClient(t, Config{BaseURL: srv.URL})

			got, err := c.detail(t.Context(), tt.wantTx.TxID)
			require.NoError(t, err)
			require.Equal(t, body, string(got.Raw), "the raw body is kept byte for byte")
			require.Equal(t, int64(1), got.Quota.Cost)
			got.Raw, got.Quota = nil, Quota{}
			tt.wantTx.Requests = 1
			require.Equal(t, tt.wantTx, got)
			require.True(t, got.EventsComplete())
			require.Len(t, fake.calls(), 1)
			require.Equal(t, "/extended/v1/tx/"+tt.wantTx.TxID, fake.calls()[0].URL.Path)
			require.Equal(t, "event_limit=100", fake.calls()[0].URL.RawQuery, "asks for the most events a page holds")
		})
	}
}

func TestRetriesAndErrorClasses(t *testing.T) {
	t.Parallel()

	const goodTx = `{"tx_id":"0x01","tx_status":"success"}`
	tooMany := func(h map[string]string) canned {
		return canned{status: http.StatusTooManyRequests, header: h, body: `{"error":"slow down"}`}
	}
	status := func(code int) canned { return canned{status: code, body: `{"error":"nope"}`} }

	tests := []struct {
		name         string
		giveScript   []canned
		wantClass    pacer.ErrorClass // empty: success
		wantCalls    int
		wantSleeps   []time.Duration
		wantErrMatch string
	}{
		{
			name:       "success at once",
			giveScript: []canned{ok(goodTx)},
			wantCalls:  1,
		},
		{
			name:         "429 five times gives up with the default back-off",
			giveScript:   []canned{tooMany(nil)},
			wantClass:    pacer.ClassRateLimit,
			wantCalls:    5,
			wantSleeps:   []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second},
			wantErrMatch: "status 429",
		},
		{
			name:       "429 honours Retry-After",
			giveScript: []canned{tooMany(map[string]string{"Retry-After": "3"}), ok(goodTx)},
			wantCalls:  2,
			wantSleeps: []time.Duration{3 * time.Second},
		},
		{
			name:       "Retry-After is capped at 30 s",
			giveScript: []canned{tooMany(map[string]string{"Retry-After": "120"}), ok(goodTx)},
			wantCalls:  2,
			wantSleeps: []time.Duration{30 * time.Second},
		},
		{
			name:       "unreadable Retry-After falls back to the default",
			giveScript: []canned{tooMany(map[string]string{"Retry-After": "soon"}), ok(goodTx)},
			wantCalls:  2,
			wantSleeps: []time.Duration{time.Second},
		},
		{
			name:         "429 with the month spent is not retried",
			giveScript:   []canned{tooMany(map[string]string{"x-ratelimit-remaining-stacks-month": "0"})},
			wantClass:    pacer.ClassRateLimit,
			wantCalls:    1,
			wantErrMatch: "month quota exhausted",
		},
		{
			name:         "5xx three times gives up",
			giveScript:   []canned{status(http.StatusBadGateway)},
			wantClass:    pacer.ClassServerError,
			wantCalls:    3,
			wantSleeps:   []time.Duration{500 * time.Millisecond, time.Second},
			wantErrMatch: "status 502",
		},
		{
			name:       "5xx then success",
			giveScript: []canned{status(http.StatusServiceUnavailable), ok(goodTx)},
			wantCalls:  2,
			wantSleeps: []time.Duration{500 * time.Millisecond},
		},
		{
			name:       "429 and 5xx keep separate counts",
			giveScript: []canned{tooMany(nil), status(500), tooMany(nil), status(500), ok(goodTx)},
			wantCalls:  5,
			wantSleeps: []time.Duration{time.Second, 500 * time.Millisecond, 2 * time.Second, time.Second},
		},
		{
			name:         "404 is not found, not retried",
			giveScript:   []canned{status(http.StatusNotFound)},
			wantClass:    pacer.ClassNotFound,
			wantCalls:    1,
			wantErrMatch: "status 404",
		},
		{
			name:         "410 of a deprecated endpoint is its sunset, not a permanent error",
			giveScript:   []canned{status(http.StatusGone)},
			wantClass:    pacer.ClassNotFound,
			wantCalls:    1,
			wantErrMatch: "switched this deprecated endpoint off (410 Gone)",
		},
		{
			name:         "401 points at the key",
			giveScript:   []canned{status(http.StatusUnauthorized)},
			wantClass:    pacer.ClassPermanent,
			wantCalls:    1,
			wantErrMatch: "check HIRO_API_KEY",
		},
		{
			name:       "other 4xx are permanent",
			giveScript: []canned{status(http.StatusBadRequest)},
			wantClass:  pacer.ClassPermanent,
			wantCalls:  1,
		},
		{
			name:       "bad JSON is a parse error, not retried",
			giveScript: []canned{ok(`<html>maintenance</html>`)},
			wantClass:  pacer.ClassParseError,
			wantCalls:  1,
		},
		{
			name:       "truncated JSON",
			giveScript: []canned{ok(`{"tx_id":"0x01","events":[{"event_in`)},
			wantClass:  pacer.ClassParseError,
			wantCalls:  1,
		},
		{
			name:       "wrong-typed JSON",
			giveScript: []canned{ok(`{"tx_id":"0x01","burn_block_time":"yesterday"}`)},
			wantClass:  pacer.ClassParseError,
			wantCalls:  1,
		},
		{
			name:         "an empty object is not a transaction",
			giveScript:   []canned{ok(`{}`)},
			wantClass:    pacer.ClassParseError,
			wantCalls:    1,
			wantErrMatch: "no tx_id",
		},
		{
			name:         "a body over 4 MiB is refused",
			giveScript:   []canned{ok(`{"tx_id":"0x01","pad":"` + strings.Repeat("x", maxBody) + `"}`)},
			wantClass:    pacer.ClassParseError,
			wantCalls:    1,
			wantErrMatch: "larger than",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, fake := newFakeHiro(t, tt.giveScript...)
			c := newTestClient(t, Config{BaseURL: srv.URL})

			tx, err := c.detail(t.Context(), "0x01")
			require.Len(t, fake.calls(), tt.wantCalls)
			require.Equal(t, tt.wantSleeps, c.sleeps.got())
			if tt.wantClass == "" {
				require.NoError(t, err)
				require.Equal(t, "0x01", tx.TxID)
				return
			}
			require.Error(t, err)
			var pe *fault.Error
			require.ErrorAs(t, err, &pe, "errors are *fault.Error")
			require.Equal(t, tt.wantClass, pe.Class)
			require.Contains(t, err.Error(), tt.wantErrMatch)
		})
	}
}

func TestStatusErrorCarriesQuota(t *testing.T) {
	t.Parallel()
	srv, _ := newFakeHiro(t, canned{
		status: http.StatusNotFound,
		header: map[string]string{"x-ratelimit-remaining-stacks-minute": "7"},
		body:   `{"error":"could not find transaction by ID"}`,
	})
	c := newTestClient(t, Config{BaseURL: srv.URL})

	tx, err := c.detail(t.Context(), "0x01")
	var se *StatusError
	require.ErrorAs(t, err, &se)
	require.Equal(t, http.StatusNotFound, se.StatusCode)
	require.Equal(t, intp(7), se.Quota.MinuteRemaining)
	require.Equal(t, intp(7), tx.Quota.MinuteRemaining, "the quota comes back with a failure too")
	require.Contains(t, err.Error(), "could not find transaction")
}

func TestPerAttemptTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	c := newTestClient(t, Config{BaseURL: srv.URL, AttemptTimeout: time.Millisecond})

	_, err := c.detail(t.Context(), "0x01")
	require.Equal(t, pacer.ClassTimeout, fault.ClassOf(err))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, []time.Duration{500 * time.Millisecond, time.Second}, c.sleeps.got())
}

func TestNetworkErrorKeepsCause(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close() // nothing listens any more: every dial is refused

	c := newTestClient(t, Config{BaseURL: base})
	_, err := c.detail(t.Context(), "0x01")
	require.Equal(t, pacer.ClassServerError, fault.ClassOf(err))
	require.Equal(t, []time.Duration{500 * time.Millisecond, time.Second}, c.sleeps.got())
	var ue interface{ Timeout() bool }
	require.ErrorAs(t, err, &ue, "the net/http cause is still in the chain")
}

func TestCallerCancellationStopsRetries(t *testing.T) {
	t.Parallel()
	srv, fake := newFakeHiro(t, canned{status: http.StatusServiceUnavailable})
	ctx, cancel := context.WithCancel(t.Context())
	c := New(Config{
		BaseURL: srv.URL,
		Sleep: func(ctx context.Context, d time.Duration) error {
			cancel() // the activity is cancelled while waiting to retry
			return ctx.Err()
		},
	})

	_, err := c.detail(ctx, "0x01")
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, pacer.ClassTransport, fault.ClassOf(err))
	require.Len(t, fake.calls(), 1)
}

// fakeLimiter counts the slots it hands out, can refuse, and records what
// it observes.
type fakeLimiter struct {
	mu       sync.Mutex
	waits    int
	err      error
	observed []Quota
}

func (l *fakeLimiter) Wait(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waits++
	return l.err
}

func (l *fakeLimiter) Observe(_ context.Context, q Quota) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.observed = append(l.observed, q)
}

func TestLimiter(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name      string
		giveErr   error
		wantWaits int
		wantCalls int
		wantClass pacer.ErrorClass
		wantRetry time.Duration
	}{
		{name: "every attempt takes a slot", wantWaits: 2, wantCalls: 2},
		{
			name:      "a failing budget store is transport trouble, never a rate limit",
			giveErr:   errors.New("budget: connection refused"),
			wantWaits: 1,
			wantClass: pacer.ClassTransport,
		},
		{
			name:      "a spent budget that must not wait is a rate limit at once",
			giveErr:   &BudgetSpentError{RetryAfter: 12 * time.Second, What: "fast-path share"},
			wantWaits: 1,
			wantClass: pacer.ClassRateLimit,
			wantRetry: 12 * time.Second,
		},
		{
			name:      "a classified refusal keeps its class",
			giveErr:   &fault.Error{Class: pacer.ClassPermanent, Op: "budget", Err: errors.New("disabled")},
			wantWaits: 1,
			wantClass: pacer.ClassPermanent,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, fake := newFakeHiro(t, canned{status: 500}, ok(`{"tx_id":"0x01"}`))
			l := &fakeLimiter{err: tt.giveErr}
			c := newTestClient(t, Config{BaseURL: srv.URL, Limiter: l})

			_, err := c.detail(t.Context(), "0x01")
			require.Equal(t, tt.wantWaits, l.waits)
			require.Len(t, fake.calls(), tt.wantCalls)
			if tt.wantClass == "" {
				require.NoError(t, err)
				return
			}
			require.Equal(t, tt.wantClass, fault.ClassOf(err))
			require.Empty(t, c.sleeps.got(), "a refusal is never waited out by the client")
			retry, ok := RetryAfter(err)
			require.Equal(t, tt.wantRetry != 0, ok)
			require.Equal(t, tt.wantRetry, retry)
		})
	}
}

func TestLimiterObservesEveryResponse(t *testing.T) {
	t.Parallel()
	srv, _ := newFakeHiro(t,
		canned{status: 429, header: map[string]string{"ratelimit-remaining": "0", "x-ratelimit-cost-stacks": "2"}},
		canned{status: 200, header: map[string]string{"ratelimit-remaining": "9"}, body: `{"tx_id":"0x01"}`},
	)
	l := &fakeLimiter{}
	c := newTestClient(t, Config{BaseURL: srv.URL, Limiter: l})

	_, err := c.detail(t.Context(), "0x01")
	require.NoError(t, err)
	require.Equal(t, 2, l.waits)
	// Each answer says when its request went out, so the budget can tell
	// an older answer arriving late.
	require.Len(t, l.observed, 2)
	require.False(t, l.observed[0].SentAt.IsZero())
	require.False(t, l.observed[1].SentAt.Before(l.observed[0].SentAt))
	for i := range l.observed {
		l.observed[i].SentAt = time.Time{}
	}
	require.Equal(t, []Quota{
		{StatusCode: 429, Cost: 2, Remaining: intp(0)},
		{StatusCode: 200, Cost: 1, Remaining: intp(9)},
	}, l.observed)
}

// Retry-After: 0 once made the client retry a 429 back to back, spending
// five requests of the budget within a millisecond (issue 15). A zero or
// negative Retry-After now means the default delay.
func TestRetryAfterZeroKeepsTheDefaultDelay(t *testing.T) {
	t.Parallel()
	for _, give := range []string{"0", "-3", "0.0"} {
		t.Run(give, func(t *testing.T) {
			t.Parallel()
			srv, fake := newFakeHiro(t, canned{status: 429, header: map[string]string{"retry-after": give}})
			c := newTestClient(t, Config{BaseURL: srv.URL})

			_, err := c.detail(t.Context(), "0x01")
			require.Equal(t, pacer.ClassRateLimit, fault.ClassOf(err))
			require.Len(t, fake.calls(), maxRateLimitAttempts)
			require.Equal(t, rateLimitDelays, c.sleeps.got())
			_, ok := RetryAfter(err)
			require.False(t, ok, "no usable Retry-After to pass on")
		})
	}
}

// A retry that would start after the caller's deadline is not waited for:
// the fast path's 10 s answer must not become a timeout behind a 30 s
// Retry-After.
func TestNoRetryPastTheDeadline(t *testing.T) {
	t.Parallel()
	srv, fake := newFakeHiro(t, canned{status: 429, header: map[string]string{"retry-after": "30"}})
	c := newTestClient(t, Config{BaseURL: srv.URL})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	_, err := c.detail(ctx, "0x01")
	require.Equal(t, pacer.ClassRateLimit, fault.ClassOf(err))
	require.Len(t, fake.calls(), 1)
	require.Empty(t, c.sleeps.got())
	retry, ok := RetryAfter(err)
	require.True(t, ok)
	require.Equal(t, 30*time.Second, retry)
}

func TestDeprecationWarningLoggedOnce(t *testing.T) {
	t.Parallel()
	srv, _ := newFakeHiro(t, canned{
		status: http.StatusOK,
		header: map[string]string{"Warning": `299 - "Deprecated: use /extended/v2/addresses/{address}/transactions"`},
		body:   `{"results":[]}`,
	})
	c := newTestClient(t, Config{BaseURL: srv.URL})

	for range 3 {
		_, err := c.ListTransactions(t.Context(), "SP1", "")
		require.NoError(t, err)
	}
	logged := c.logs.FilterMessage("hiro.deprecated_endpoint").All()
	require.Len(t, logged, 1)
	require.Equal(t, zapcore.WarnLevel, logged[0].Level)
	require.Contains(t, logged[0].ContextMap()["warning"], "Deprecated")
}

func TestMonthQuotaLowWarnsOnCrossing(t *testing.T) {
	t.Parallel()
	month := func(remaining int) canned {
		return canned{
			status: http.StatusOK,
			header: map[string]string{
				"x-ratelimit-remaining-stacks-month": fmt.Sprint(remaining),
				"x-ratelimit-limit-stacks-month":     "1000",
			},
			body: `{"results":[]}`,
		}
	}
	// 500 is fine, 199 crosses, 150 stays low, 900 is a new month, 10 crosses again.
	srv, _ := newFakeHiro(t, month(500), month(199), month(150), month(900), month(10))
	c := newTestClient(t, Config{BaseURL: srv.URL})

	for range 5 {
		_, err := c.ListTransactions(t.Context(), "SP1", "")
		require.NoError(t, err)
	}
	logged := c.logs.FilterMessage("hiro.month_quota_low").All()
	require.Len(t, logged, 2)
	require.EqualValues(t, 199, logged[0].ContextMap()["monthRemaining"])
	require.EqualValues(t, 10, logged[1].ContextMap()["monthRemaining"])
	require.EqualValues(t, 1000, logged[1].ContextMap()["monthLimit"])
}

func TestAPIKeyNeverLeaks(t *testing.T) {
	t.Parallel()
	const key = "hiro-secret-key-7f3a"
	// A misbehaving proxy echoes the request headers into its error bodies.
	echo := func(code int) canned {
		return canned{status: code, body: `{"error":"bad request","headers":{"x-api-key":"` + key + `"}}`}
	}

	tests := []struct {
		name       string
		giveScript []canned
	}{
		{name: "404", giveScript: []canned{echo(404)}},
		{name: "410", giveScript: []canned{echo(410)}},
		{name: "401", giveScript: []canned{echo(401)}},
		{name: "429 exhausted", giveScript: []canned{echo(429)}},
		{name: "5xx exhausted", giveScript: []canned{echo(503)}},
		{name: "bad JSON", giveScript: []canned{ok(`{"tx_id": "` + key)}},
		{name: "deprecated", giveScript: []canned{{
			status: 404,
			header: map[string]string{"Warning": `299 - "key ` + key + ` is deprecated"`},
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, fake := newFakeHiro(t, tt.giveScript...)
			c := newTestClient(t, Config{BaseURL: srv.URL, APIKey: key})

			_, err := c.detail(t.Context(), "0x01")
			require.Error(t, err)
			require.NotContains(t, err.Error(), key)
			require.Equal(t, key, fake.calls()[0].Header.Get("x-api-key"), "the key is still sent")
			for _, entry := range c.logs.All() {
				b, jerr := json.Marshal(entry.ContextMap())
				require.NoError(t, jerr)
				require.NotContains(t, string(b)+entry.Message, key)
			}
		})
	}
}

// A redirect is never followed: it would carry the API key to another host.
func TestRedirectIsNotFollowed(t *testing.T) {
	t.Parallel()
	var leaked atomic.Bool
	elsewhere := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		leaked.Store(r.Header.Get("x-api-key") != "")
	}))
	t.Cleanup(elsewhere.Close)
	home := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusFound)
	}))
	t.Cleanup(home.Close)
	c := newTestClient(t, Config{BaseURL: home.URL, APIKey: "secret-key"})
	_, err := c.detail(t.Context(), "0x"+strings.Repeat("a", 64))
	require.Error(t, err)
	require.False(t, leaked.Load())
	require.NotContains(t, err.Error(), "secret-key")
}

// A failure names the response's cf-ray and x-request-id, what Hiro's
// support traces a request by; one without them says nothing of them.
func TestStatusErrorCarriesTraceIDs(t *testing.T) {
	t.Parallel()
	srv, _ := newFakeHiro(t,
		canned{status: http.StatusServiceUnavailable, body: "upstream connect error",
			header: map[string]string{"cf-ray": "8f1c2d3e4a5b6c7d-AMS", "x-request-id": "0b9d7c1e-52f4-4c53-9d61-7f0e2a1b3c4d"}},
	)
	c := newTestClient(t, Config{BaseURL: srv.URL})
	_, err := c.detail(t.Context(), "0x01")
	var se *StatusError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "8f1c2d3e4a5b6c7d-AMS", se.RayID)
	require.Equal(t, "0b9d7c1e-52f4-4c53-9d61-7f0e2a1b3c4d", se.RequestID)
	require.Contains(t, err.Error(), "cf-ray 8f1c2d3e4a5b6c7d-AMS")
	require.Contains(t, err.Error(), "x-request-id 0b9d7c1e-52f4-4c53-9d61-7f0e2a1b3c4d")

	bare, _ := newFakeHiro(t, canned{status: http.StatusNotFound, body: `{"error":"not found"}`})
	_, err = newTestClient(t, Config{BaseURL: bare.URL}).detail(t.Context(), "0x01")
	require.ErrorAs(t, err, &se)
	require.Empty(t, se.RayID)
	require.NotContains(t, err.Error(), "cf-ray")
	require.NotContains(t, err.Error(), "x-request-id")
}
