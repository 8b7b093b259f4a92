package tenero

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/fault"
)

// FuzzDecodeToken feeds arbitrary bytes to the 2xx body decoder. Whatever it
// accepts must be a price Postgres can store exactly (plain positive
// decimal text within float64's range) or the confirmed "no price", and
// decimals within bounds; whatever it refuses is refused with a short error.
func FuzzDecodeToken(f *testing.F) {
	fixture, err := os.ReadFile(filepath.Join("testdata", "tenero-tokens-stx-200.json"))
	require.NoError(f, err)
	f.Add(fixture)
	for _, s := range []string{
		`{"statusCode":200,"message":"OK","data":{"price_usd":1.85,"decimals":6}}`,
		`{"statusCode":200,"data":{"price_usd":"0.000001234","decimals":"8"}}`,
		`{"statusCode":404,"message":"Token not found","data":null}`,
		`{"data":{"price_usd":null}}`,
		`{"data":{"price_usd":{"value":1}}}`,
		`{"data":{"decimals":6}}`,
		`{"data":{"price_usd":"1e308","decimals":-1}}`,
		`{"data":{"price_usd":"NaN"}}`,
		`{"statusCode":"200","message":7,"data":{"price_usd":"+0.5"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		tok, err := decodeToken(body)
		if err != nil {
			require.Equal(t, decodedToken{}, tok)
			require.LessOrEqual(t, len(err.Error()), 512, "errors quote at most a snippet of the body")
			return
		}
		if tok.priceUSD != nil {
			requireStorablePrice(t, *tok.priceUSD)
		}
		if tok.decimals != nil {
			require.GreaterOrEqual(t, *tok.decimals, 0)
			require.LessOrEqual(t, *tok.decimals, maxDecimals)
		}
	})
}

func requireStorablePrice(t *testing.T, price string) {
	t.Helper()
	require.Regexp(t, decimalText, price)
	f, err := strconv.ParseFloat(price, 64)
	require.NoError(t, err)
	require.False(t, math.IsInf(f, 0) || math.IsNaN(f))
	require.Positive(t, f)
}

// FuzzDecodeTokenNumber builds well-formed bodies from parts and checks the
// decoder against what the contract (SPEC §4.3) says each one means: a
// positive number or numeric string is that exact price, a zero is "no
// price", decimals outside 0..255 and a failing body statusCode are errors.
func FuzzDecodeTokenNumber(f *testing.F) {
	f.Add(uint64(1), uint64(85), uint8(2), int16(0), false, int16(6), int16(200))
	f.Add(uint64(0), uint64(0), uint8(0), int16(0), true, int16(0), int16(200))
	f.Add(uint64(0), uint64(1234), uint8(9), int16(-3), true, int16(18), int16(0))
	f.Add(uint64(7), uint64(0), uint8(0), int16(300), false, int16(256), int16(429))
	f.Fuzz(func(t *testing.T, whole, frac uint64, fracDigits uint8, exp int16, asString bool, decimals, code int16) {
		text := strconv.FormatUint(whole, 10)
		if fracDigits > 0 {
			digits := fmt.Sprintf("%0*d", int(fracDigits%30), frac)
			if len(digits) > 0 {
				text += "." + digits
			}
		}
		if exp != 0 {
			text += "e" + strconv.Itoa(int(exp%400))
		}
		price := json.RawMessage(text)
		if asString {
			price, _ = json.Marshal(text)
		}
		doc := map[string]any{"message": "OK", "data": map[string]any{"price_usd": price, "decimals": decimals}}
		if code != 0 {
			doc["statusCode"] = code
		}
		body, err := json.Marshal(doc)
		require.NoError(t, err)

		tok, err := decodeToken(body)
		if code != 0 && (code < 200 || code > 299) {
			var bodyErr *bodyStatusError
			require.ErrorAs(t, err, &bodyErr, "statusCode %d in the body is a failure", code)
			return
		}
		if decimals < 0 || decimals > maxDecimals {
			require.Error(t, err)
			return
		}
		value, parseErr := strconv.ParseFloat(text, 64)
		switch {
		case isZeroMantissa(text):
			require.NoError(t, err)
			require.Nil(t, tok.priceUSD, "%s is zero: no price", text)
		case parseErr != nil || value == 0 || math.IsInf(value, 0):
			require.Error(t, err, "%s is out of float64's range", text)
		default:
			require.NoError(t, err, "body %s", body)
			require.NotNil(t, tok.priceUSD)
			require.Equal(t, text, *tok.priceUSD, "the price is kept exactly as sent")
		}
		if err == nil {
			require.Equal(t, int(decimals), *tok.decimals)
		}
	})
}

// isZeroMantissa reports whether the digits before any exponent are all zero.
func isZeroMantissa(text string) bool {
	mantissa, _, _ := strings.Cut(text, "e")
	return strings.Trim(mantissa, "0.") == ""
}

// FuzzPriceResponse drives the whole client over a transport that answers
// with a fuzzed status, headers and body, every attempt alike. Price must
// never panic, must stop within its retry budget, must return either a
// storable price or a classified *fault.Error, and must never let the API
// key, or a recognisable part of it, into an error, even when the upstream
// echoes it back anywhere in its answer.
func FuzzPriceResponse(f *testing.F) {
	f.Add(200, `{"statusCode":200,"data":{"price_usd":1.5}}`, "10", "100", "", 0)
	f.Add(401, `{"statusCode":401,"message":"Invalid API key KEY"}`, "", "", "", 150)
	f.Add(403, `{"statusCode":403,"message":"Invalid API key KEY"}`, "", "", "", 170)
	f.Add(429, `{"message":"slow down KEY"}`, "0", "5", "2", 0)
	f.Add(503, `KEY`, "", "", "", 195)
	f.Add(200, `{"statusCode":500,"message":"upstream says KEY"}`, "1", "1", "", 190)
	f.Add(200, `{"data":{"price_usd":"KEY","decimals":"KEY"}}`, "", "", "", 30)
	f.Add(302, ``, "", "", "", 0)
	const key = "tenero-SECRET-0123456789abcdefghij"
	f.Fuzz(func(t *testing.T, status int, body, minute, month, retryAfter string, pad int) {
		if status < 200 || status > 599 {
			// Informational answers are consumed by net/http itself.
			status = 200 + abs(status)%400
		}
		// The key is spliced in after a fuzzed amount of padding, so that
		// truncation of messages and snippets cuts through it at every place.
		echoed := strings.ReplaceAll(body, "KEY", strings.Repeat("x", abs(pad)%300)+key)
		var calls atomic.Int32
		rt := roundTrip(func(r *http.Request) (*http.Response, error) {
			calls.Add(1)
			require.Equal(t, key, r.Header.Get("x-api-key"))
			h := http.Header{}
			h.Set(HeaderMinuteRemaining, minute)
			h.Set(HeaderMonthRemaining, month)
			h.Set(HeaderRetryAfter, retryAfter)
			return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(echoed)), Request: r}, nil
		})
		c := New(Config{BaseURL: "http://tenero.test", APIKey: key, HTTPClient: &http.Client{Transport: rt},
			Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})

		p, err := c.Price(context.Background(), "stx")
		require.LessOrEqual(t, int(calls.Load()), 1+len(rateLimitDelays)+len(failureDelays), "retries stay within budget")
		if err == nil {
			require.GreaterOrEqual(t, status, 200)
			require.LessOrEqual(t, status, 299)
			if p.PriceUSD != nil {
				requireStorablePrice(t, *p.PriceUSD)
			}
			return
		}
		var pe *fault.Error
		require.True(t, errors.As(err, &pe), "want a *fault.Error, got %T", err)
		require.Contains(t, []pacer.ErrorClass{pacer.ClassRateLimit, pacer.ClassServerError, pacer.ClassTimeout,
			pacer.ClassNotFound, pacer.ClassParseError, pacer.ClassPermanent}, pe.Class, "error: %v", err)
		requireNoKey(t, err.Error(), key)
	})
}

// requireNoKey fails when s holds the key or any 12-character piece of it:
// a truncated echo still hands most of a key to whoever reads the logs.
func requireNoKey(t *testing.T, s, key string) {
	t.Helper()
	const piece = 12
	for i := 0; i+piece <= len(key); i++ {
		require.NotContains(t, s, key[i:i+piece], "a piece of the API key leaked")
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func abs(n int) int {
	if n < 0 {
		if n == math.MinInt {
			return math.MaxInt
		}
		return -n
	}
	return n
}
