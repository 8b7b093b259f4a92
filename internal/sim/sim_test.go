package sim

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/catalog"
)

// fakeClock is a settable clock for Config.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(t time.Time) *fakeClock { return &fakeClock{t: t} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

var epoch = time.Date(2026, 5, 14, 12, 0, 0, 0, time.UTC)

// newSim returns a simulator on a fake clock set to epoch.
func newSim(t *testing.T, cfg Config) (*Server, *fakeClock) {
	t.Helper()
	clock := newClock(epoch)
	if cfg.Now == nil {
		cfg.Now = clock.Now
	}
	return New(cfg), clock
}

// do serves one request directly, without a network.
func do(t *testing.T, h http.Handler, method, path, body string, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequestWithContext(t.Context(), method, path, strings.NewReader(body))
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func get(t *testing.T, h http.Handler, path string, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	return do(t, h, http.MethodGet, path, "", headers...)
}

func tokenPath(address string) string { return "/v1/stacks/tokens/" + address }

// decode reads a JSON body keeping numbers exact.
func decode(t *testing.T, body []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v map[string]any
	require.NoError(t, dec.Decode(&v), "body: %.200s", body)
	return v
}

func TestWorldIsDeterministic(t *testing.T) {
	t.Parallel()
	a := New(Config{Seed: 7})
	b := New(Config{Seed: 7})
	other := New(Config{Seed: 8})

	require.Equal(t, a.Tokens(), b.Tokens())
	require.NotEqual(t, a.Tokens(), other.Tokens())
	for _, tok := range a.Tokens() {
		for _, at := range []time.Time{epoch, epoch.Add(37 * time.Minute), epoch.AddDate(0, 2, 3)} {
			pa, oka := a.PriceAt(tok.Address, at)
			pb, okb := b.PriceAt(tok.Address, at)
			require.Equal(t, oka, okb)
			require.Equal(t, pa, pb, "%s at %v", tok.ID, at)
		}
	}
	// Requests answered by a and b agree too, as a restarted simulator must.
	for _, tok := range a.Tokens()[:10] {
		require.Equal(t, get(t, a, tokenPath(tok.Address)).Body.String(), get(t, b, tokenPath(tok.Address)).Body.String())
	}
}

func TestWorldShape(t *testing.T) {
	t.Parallel()
	s := New(Config{Seed: 42})
	cat := catalog.Default()
	tokens := s.Tokens()
	require.Len(t, tokens, 3+5+defaultGeneratedTokens)

	// The static base comes first and agrees with the catalog pacer ships.
	var static []string
	for _, tok := range tokens[:3] {
		static = append(static, tok.ID)
		decimals, ok := cat.Decimals(tok.ID)
		require.True(t, ok, tok.ID)
		require.Equal(t, decimals, tok.Decimals, tok.ID)
	}
	require.Equal(t, cat.StaticBase(), static)

	addresses := map[string]bool{}
	pegs := 0
	for _, tok := range tokens {
		require.True(t, catalog.ValidTokenID(tok.ID), tok.ID)
		require.Equal(t, catalog.ContractOf(tok.ID), tok.Address)
		require.False(t, addresses[tok.Address], "duplicate %s", tok.Address)
		addresses[tok.Address] = true
		peg, isPeg := cat.Peg(tok.ID)
		require.Equal(t, isPeg, tok.Peg, tok.ID)
		if isPeg {
			pegs++
			require.Equal(t, peg.Decimals, tok.Decimals, tok.ID)
		}
	}
	require.Equal(t, 5, pegs)

	require.Len(t, New(Config{Tenero: TeneroConfig{Tokens: 5}}).Tokens(), 3+5+5)
}

func TestPriceWalk(t *testing.T) {
	t.Parallel()
	s := New(Config{Seed: 3})
	price := func(at time.Time) float64 {
		text, ok := s.PriceAt("stx", at)
		require.True(t, ok)
		var f float64
		require.NoError(t, json.Unmarshal([]byte(text), &f))
		require.Positive(t, f)
		return f
	}

	// Within one minute the price holds still.
	require.Equal(t, price(epoch), price(epoch.Add(59*time.Second)))
	// Minute to minute it moves a little; over weeks it wanders.
	moved := false
	for i := range 60 {
		at := epoch.Add(time.Duration(i) * time.Minute)
		ratio := price(at.Add(time.Minute)) / price(at)
		require.InDelta(t, 1, ratio, 0.05, "minute %d", i)
		moved = moved || ratio != 1
	}
	require.True(t, moved)
	require.NotEqual(t, price(epoch), price(epoch.AddDate(0, 0, 30)))
}

func TestFormatPrice(t *testing.T) {
	t.Parallel()
	tests := []struct {
		give float64
		want string
	}{
		{give: 1.85, want: "1.85"},
		{give: 95123.456, want: "95123.5"},
		{give: 1234567.8, want: "1234568"},
		{give: 0.000000123456789, want: "0.000000123457"},
		{give: 2, want: "2"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, formatPrice(tt.give))
	}
}

func TestStats(t *testing.T) {
	t.Parallel()
	s, _ := newSim(t, Config{})

	get(t, s, tokenPath("stx"))
	get(t, s, tokenPath("stx"))
	get(t, s, tokenPath("SP000000000000000000002Q6VF78.nothing"))
	get(t, s, "/no/such/route")
	get(t, s, "/_sim/faults") // control routes are not upstream calls

	want := Stats{Total: 4, Routes: map[string]RouteStats{
		TeneroTokenRoute: {Total: 3, ByStatus: map[int]int{200: 2, 404: 1}},
		"/":              {Total: 1, ByStatus: map[int]int{404: 1}},
	}}
	require.Equal(t, want, s.Stats())
	require.Equal(t, 2, s.Stats().Count(TeneroTokenRoute, 200))
	require.Zero(t, s.Stats().Count("GET /elsewhere", 200))

	rec := get(t, s, "/_sim/stats")
	require.Equal(t, http.StatusOK, rec.Code)
	var got Stats
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
	require.Equal(t, want, got)

	require.Equal(t, http.StatusNoContent, do(t, s, http.MethodDelete, "/_sim/stats", "").Code)
	require.Equal(t, Stats{Routes: map[string]RouteStats{}}, s.Stats())
}

func TestControlTokens(t *testing.T) {
	t.Parallel()
	s, _ := newSim(t, Config{Seed: 1})

	rec := get(t, s, "/_sim/tokens")
	require.Equal(t, http.StatusOK, rec.Code)
	var got []Token
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
	require.Equal(t, s.Tokens(), got)
}
