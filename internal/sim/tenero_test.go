package sim

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/fault"
	"github.com/pacer-dev/pacer/internal/tenero"
)

func TestTeneroTokenAnswers(t *testing.T) {
	t.Parallel()
	s, clock := newSim(t, Config{Seed: 11})

	styles := map[string]int{}
	for _, tok := range s.Tokens() {
		rec := get(t, s, tokenPath(tok.Address))
		require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
		if rec.Code == http.StatusNotFound {
			require.True(t, tok.Peg, "only stablecoins are unknown to Tenero: %s", tok.ID)
			styles["404"]++
			continue
		}
		require.Equal(t, http.StatusOK, rec.Code, tok.ID)
		body := decode(t, rec.Body.Bytes())
		require.Equal(t, json.Number("200"), body["statusCode"])
		require.Equal(t, "OK", body["message"])
		data, ok := body["data"].(map[string]any)
		require.True(t, ok, "data: %v", body["data"])
		require.Equal(t, tok.Address, data["address"])
		require.Equal(t, tok.Symbol, data["symbol"])
		require.Equal(t, tok.Name, data["name"])
		require.Equal(t, json.Number(strconv.Itoa(tok.Decimals)), data["decimals"])

		want, priced := s.PriceAt(tok.Address, clock.Now())
		switch price := data["price_usd"].(type) {
		case json.Number:
			if tok.Peg {
				require.Equal(t, json.Number("0"), price)
				require.False(t, priced)
				styles["zero"]++
				continue
			}
			require.Equal(t, want, string(price))
			styles["number"]++
		case string:
			require.Equal(t, want, price)
			styles["string"]++
		case nil:
			require.False(t, priced)
			styles["null"]++
		default:
			t.Fatalf("%s: price_usd is %T", tok.ID, price)
		}
	}
	require.Equal(t, 5, styles["404"]+styles["zero"], "every stablecoin is unpriced")
	require.Greater(t, styles["number"], styles["string"])
	require.Positive(t, styles["string"])
	require.Positive(t, styles["null"])
}

func TestTeneroUnknownToken(t *testing.T) {
	t.Parallel()
	s, _ := newSim(t, Config{})

	for _, address := range []string{"SP000000000000000000002Q6VF78.nothing", "STX", "stx::stx"} {
		rec := get(t, s, tokenPath(address))
		require.Equal(t, http.StatusNotFound, rec.Code)
		require.JSONEq(t, `{"statusCode":404,"message":"Token not found","data":null}`, rec.Body.String())
		// Even a 404 spends the budget and says so.
		require.NotEmpty(t, rec.Header().Get(headerMinuteRemaining))
	}
}

func TestTeneroMinuteWindow(t *testing.T) {
	t.Parallel()
	s, clock := newSim(t, Config{Tenero: TeneroConfig{Anonymous: Limits{PerMinute: 3}}})
	clock.Add(45 * time.Second) // 12:00:45, 15 s before the window ends

	for want := 2; want >= 0; want-- {
		rec := get(t, s, tokenPath("stx"))
		require.Equal(t, http.StatusOK, rec.Code)
		require.Equal(t, strconv.Itoa(want), rec.Header().Get(headerMinuteRemaining))
		require.Equal(t, strconv.Itoa(50_000-3+want), rec.Header().Get(headerMonthRemaining))
		require.Equal(t, "web-ui-ip", rec.Header().Get(headerType))
		require.Empty(t, rec.Header().Get("Retry-After"))
	}

	rec := get(t, s, tokenPath("stx"))
	require.Equal(t, http.StatusTooManyRequests, rec.Code)
	require.Equal(t, "15", rec.Header().Get("Retry-After"))
	require.Equal(t, "0", rec.Header().Get(headerMinuteRemaining))
	require.Equal(t, "49997", rec.Header().Get(headerMonthRemaining), "a refused request costs nothing")
	require.JSONEq(t, `{"statusCode":429,"message":"Rate limit exceeded","data":null}`, rec.Body.String())

	clock.Add(14*time.Second + 500*time.Millisecond)
	rec = get(t, s, tokenPath("stx"))
	require.Equal(t, http.StatusTooManyRequests, rec.Code)
	require.Equal(t, "1", rec.Header().Get("Retry-After"), "rounded up, never 0")

	clock.Add(500 * time.Millisecond) // 12:01:00, a new window
	rec = get(t, s, tokenPath("stx"))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "2", rec.Header().Get(headerMinuteRemaining))
}

func TestTeneroMonthWindow(t *testing.T) {
	t.Parallel()
	s, clock := newSim(t, Config{Tenero: TeneroConfig{Anonymous: Limits{PerMonth: 2}}})

	require.Equal(t, http.StatusOK, get(t, s, tokenPath("stx")).Code)
	rec := get(t, s, tokenPath("stx"))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "0", rec.Header().Get(headerMonthRemaining))

	rec = get(t, s, tokenPath("stx"))
	require.Equal(t, http.StatusTooManyRequests, rec.Code)
	toJune := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC).Sub(epoch)
	require.Equal(t, strconv.Itoa(int(toJune/time.Second)), rec.Header().Get("Retry-After"))

	clock.Add(time.Hour) // a new minute does not refill the month
	require.Equal(t, http.StatusTooManyRequests, get(t, s, tokenPath("stx")).Code)
	clock.Add(toJune)
	require.Equal(t, http.StatusOK, get(t, s, tokenPath("stx")).Code)
}

func TestTeneroNoisyNeighbour(t *testing.T) {
	t.Parallel()
	s, clock := newSim(t, Config{Tenero: TeneroConfig{Anonymous: Limits{NoisyPerMinute: 98}}})

	rec := get(t, s, tokenPath("stx"))
	require.Equal(t, "1", rec.Header().Get(headerMinuteRemaining))
	require.Equal(t, strconv.Itoa(50_000-98-1), rec.Header().Get(headerMonthRemaining))
	require.Equal(t, http.StatusOK, get(t, s, tokenPath("stx")).Code)
	require.Equal(t, http.StatusTooManyRequests, get(t, s, tokenPath("stx")).Code)

	clock.Add(time.Minute)
	rec = get(t, s, tokenPath("stx"))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "1", rec.Header().Get(headerMinuteRemaining))
	require.Equal(t, strconv.Itoa(50_000-2*98-3), rec.Header().Get(headerMonthRemaining))
}

func TestTeneroBudgets(t *testing.T) {
	t.Parallel()
	s, _ := newSim(t, Config{Tenero: TeneroConfig{Anonymous: Limits{PerMinute: 1}}})

	// Without a key the budget is per IP: a neighbour on another IP has its own.
	require.Equal(t, http.StatusOK, get(t, s, tokenPath("stx")).Code)
	require.Equal(t, http.StatusTooManyRequests, get(t, s, tokenPath("stx")).Code)
	req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, tokenPath("stx"), nil)
	req.RemoteAddr = "198.51.100.7:4000"
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code)

	// A key has its own plan and budget, untouched by the spent IP budget.
	rec = get(t, s, tokenPath("stx"), "x-api-key", "k1")
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "starter", rec.Header().Get(headerType))
	require.Equal(t, "9", rec.Header().Get(headerMinuteRemaining))
	require.Equal(t, "9999", rec.Header().Get(headerMonthRemaining))
	rec = get(t, s, tokenPath("stx"), "x-api-key", "k2")
	require.Equal(t, "9", rec.Header().Get(headerMinuteRemaining))
}

func TestTeneroAPIKeys(t *testing.T) {
	t.Parallel()
	s, _ := newSim(t, Config{Tenero: TeneroConfig{
		APIKeys: []string{"good"},
		Keyed:   Limits{PerMinute: 50, PerMonth: 1000, Type: "pro"},
	}})

	rec := get(t, s, tokenPath("stx"), "x-api-key", "bad")
	require.Equal(t, http.StatusUnauthorized, rec.Code)
	require.JSONEq(t, `{"statusCode":401,"message":"Invalid API key","data":null}`, rec.Body.String())

	rec = get(t, s, tokenPath("stx"), "x-api-key", "good")
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "pro", rec.Header().Get(headerType))
	require.Equal(t, "49", rec.Header().Get(headerMinuteRemaining))
	require.Equal(t, "999", rec.Header().Get(headerMonthRemaining))
}

// TestTeneroClientRoundTrip runs pacer's own Tenero client against the
// simulator over a real socket.
func TestTeneroClientRoundTrip(t *testing.T) {
	t.Parallel()
	s, clock := newSim(t, Config{Seed: 5, Tenero: TeneroConfig{Anonymous: Limits{PerMinute: 5}}})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	var delays []time.Duration
	c := tenero.New(tenero.Config{BaseURL: srv.URL, Sleep: func(_ context.Context, d time.Duration) error {
		delays = append(delays, d)
		return nil
	}})
	ctx := t.Context()

	// A priced token, with its quota.
	stx := s.Tokens()[0]
	got, err := c.Price(ctx, stx.ID)
	require.NoError(t, err)
	want, _ := s.PriceAt(stx.Address, clock.Now())
	require.Equal(t, want, *got.PriceUSD)
	require.Equal(t, stx.Decimals, *got.Decimals)
	require.EqualValues(t, 4, *got.Quota.MinuteRemaining)
	require.EqualValues(t, 49_999, *got.Quota.MonthRemaining)
	require.Equal(t, "web-ui-ip", got.Quota.Type)

	// Every generated token either has a price or says it has none.
	sbtc := s.Tokens()[1]
	got, err = c.Price(ctx, sbtc.ID)
	require.NoError(t, err)
	require.NotNil(t, got.PriceUSD)

	// An unknown token is an item problem.
	_, err = c.Price(ctx, "SP000000000000000000002Q6VF78.nothing")
	require.Equal(t, pacer.ClassNotFound, fault.ClassOf(err))

	// Wrong-typed JSON is a parse error, and the client does not retry it.
	require.NoError(t, s.SetFaults(Faults{WrongType: 1}))
	_, err = c.Price(ctx, stx.ID)
	require.Equal(t, pacer.ClassParseError, fault.ClassOf(err))
	require.NoError(t, s.SetFaults(Faults{}))

	// The fifth request of the minute spends the quota: the price still
	// comes back and the client reports the spent minute.
	got, err = c.Price(ctx, stx.ID)
	require.NoError(t, err)
	require.NotNil(t, got.PriceUSD)
	backoff, spent := got.Quota.Exhausted()
	require.True(t, spent)
	require.Equal(t, fault.MinuteQuotaBackoff, backoff)

	// Past the quota: one 429 and no retry into the wall.
	_, err = c.Price(ctx, stx.ID)
	require.Equal(t, pacer.ClassRateLimit, fault.ClassOf(err))
	require.Empty(t, delays)
	require.Equal(t, 4, s.Stats().Count(TeneroTokenRoute, http.StatusOK))
	require.Equal(t, 1, s.Stats().Count(TeneroTokenRoute, http.StatusNotFound))
	require.Equal(t, 1, s.Stats().Count(TeneroTokenRoute, http.StatusTooManyRequests))

	// In the next minute a 5xx storm costs exactly three upstream calls.
	clock.Add(time.Minute)
	s.ResetStats()
	require.NoError(t, s.SetFaults(Faults{ServerError: 1}))
	_, err = c.Price(ctx, stx.ID)
	require.Equal(t, pacer.ClassServerError, fault.ClassOf(err))
	require.Equal(t, 3, s.Stats().Total)
	require.Equal(t, []time.Duration{500 * time.Millisecond, time.Second}, delays)
}
