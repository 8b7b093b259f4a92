package sim

import (
	"cmp"
	"encoding/json"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// TeneroTokenRoute is Tenero's token endpoint, as keyed in Stats.
const TeneroTokenRoute = "GET /v1/stacks/tokens/{address}"

// TeneroConfig configures the Tenero simulation. The zero value is the
// public API as pacer's first users met it.
type TeneroConfig struct {
	// Tokens is how many tokens to generate beside the static ones and the
	// stablecoins. Default 60.
	Tokens int
	// Anonymous is the plan of requests without x-api-key, one budget per
	// client IP, as Tenero's is per egress IP. Default 100/min,
	// 50,000/month, type "web-ui-ip".
	Anonymous Limits
	// Keyed is the plan of requests with x-api-key, one budget per key.
	// Default 10/min, 10,000/month, type "starter" (the Starter plan).
	Keyed Limits
	// APIKeys, when set, are the only keys accepted; any other key gets a
	// 401. Empty accepts every key.
	APIKeys []string
}

var (
	defaultAnonymous = Limits{PerMinute: 100, PerMonth: 50_000, Type: "web-ui-ip"}
	defaultKeyed     = Limits{PerMinute: 10, PerMonth: 10_000, Type: "starter"}
)

const defaultGeneratedTokens = 60

// Token is one token of the simulated world.
type Token struct {
	// ID is the token as swaps name it: "stx" or CONTRACT::asset.
	ID string `json:"id"`
	// Address is what Tenero keys it on: the ID without ::asset.
	Address  string `json:"address"`
	Symbol   string `json:"symbol"`
	Name     string `json:"name"`
	Decimals int    `json:"decimals"`
	// Peg marks a stablecoin; Tenero answers 404 or a price of 0 for those.
	Peg bool `json:"peg,omitempty"`
}

// priceStyle is how Tenero renders a token's price. Real answers mix them.
type priceStyle int

const (
	styleNumber priceStyle = iota
	styleString
	styleNull
	styleZero
	styleNotFound
)

// simToken is a token with what drives its price.
type simToken struct {
	Token
	style priceStyle
	// base is the USD price the walk wanders around, volatility the
	// per-minute standard deviation of the log price.
	base       float64
	volatility float64
	// key separates the tokens' walks; it depends on the address only.
	key uint64
}

type teneroSim struct {
	seed      uint64
	tokens    []*simToken
	byAddress map[string]*simToken
	*plans
}

// The tokens pacer always refreshes and the stablecoins it prices itself,
// as in internal/catalog/data/tokens.json (a test keeps the two in step).
var (
	staticTokens = []*simToken{
		{Token: Token{ID: "stx", Symbol: "STX", Name: "Stacks", Decimals: 6}, base: 1.85, volatility: 0.001},
		{Token: Token{ID: "SM3VDXK3WZZSA84XXFKAFAF15NNZX32CTSG82JFQ4.sbtc-token::sbtc-token", Symbol: "sBTC", Name: "sBTC", Decimals: 8},
			base: 95_000, volatility: 0.0006},
		{Token: Token{ID: "SP4SZE494VC2YC5JYG7AYFQ44F5Q4PYV7DVMDPBG.ststx-token::ststx", Symbol: "stSTX", Name: "Stacked STX Token", Decimals: 6},
			base: 2.05, volatility: 0.001},
	}
	// The asset names are the simulator's guess; only the contract part is
	// in the catalog.
	pegTokens = []Token{
		{ID: "SP120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNE.usdcx::usdcx-token", Symbol: "USDCx", Name: "USDCx", Decimals: 6},
		{ID: "SP3K8BC0PPEVCV7NZ6QSRWPQ2JE9E5B6N3PA0KBR9.token-aeusdc::aeUSDC", Symbol: "aeUSDC", Name: "aeUSDC", Decimals: 6},
		{ID: "SP3Y2ZSH8P7D50B0VBTSX11S7XSG24M1VB9YFQA4K.token-aeusdc::aeUSDC", Symbol: "aeUSDC", Name: "aeUSDC", Decimals: 6},
		{ID: "SP2C2YFP12AJZB4MABJBAJ55XECVS7E4PMMZ89YZR.usda-token::usda", Symbol: "USDA", Name: "USDA", Decimals: 6},
		{ID: "SP3K8BC0PPEVCV7NZ6QSRWPQ2JE9E5B6N3PA0KBR9.token-susdt::bridged-usdt", Symbol: "sUSDT", Name: "sUSDT", Decimals: 8},
	}
)

func newTeneroSim(seed int64, cfg TeneroConfig) *teneroSim {
	t := &teneroSim{
		seed:      uint64(seed),
		byAddress: map[string]*simToken{},
		plans:     newPlans(cfg.Anonymous.withDefaults(defaultAnonymous), cfg.Keyed.withDefaults(defaultKeyed), cfg.APIKeys),
	}
	rng := rand.New(rand.NewPCG(t.seed, 0x7e4e20))
	for _, st := range staticTokens {
		tok := *st
		t.add(&tok)
	}
	for _, peg := range pegTokens {
		peg.Peg = true
		style := styleNotFound
		if rng.IntN(2) == 0 {
			style = styleZero
		}
		t.add(&simToken{Token: peg, style: style, base: 1})
	}
	for _, tok := range generateTokens(rng, cmp.Or(max(cfg.Tokens, 0), defaultGeneratedTokens), t.byAddress) {
		t.add(tok)
	}
	return t
}

// add keys a token on its address, its ID without ::asset, as every
// token's is.
func (t *teneroSim) add(tok *simToken) {
	tok.Address, _, _ = strings.Cut(tok.ID, "::")
	h := fnv.New64a()
	_, _ = h.Write([]byte(tok.Address))
	tok.key = h.Sum64()
	t.tokens = append(t.tokens, tok)
	t.byAddress[tok.Address] = tok
}

// c32 is the alphabet of Stacks addresses.
const c32 = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

var (
	syllables = []string{
		"al", "ba", "bit", "ce", "do", "fi", "go", "ka", "leo", "lu", "mo", "nak",
		"ne", "orb", "pa", "pep", "ri", "roo", "sa", "sat", "stak", "to", "vu", "wel",
		"xi", "yo", "zo", "ken", "mi", "ra",
	}
	contractForms  = []string{"%s-token", "token-%s", "%s", "%s-coin", "w%s"}
	decimalChoices = []int{6, 6, 6, 6, 6, 6, 8, 8, 3, 0}
)

// word is n syllables.
func word(rng *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(syllables[rng.IntN(len(syllables))])
	}
	return b.String()
}

func capitalized(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

// generateTokens makes n plausible tokens with distinct names, skipping
// addresses already taken. Most answer with a JSON number; a minority with a
// numeric string and a few with null, as the real upstream does.
func generateTokens(rng *rand.Rand, n int, taken map[string]*simToken) []*simToken {
	names := map[string]bool{}
	out := make([]*simToken, 0, n)
	for len(out) < n {
		lower := word(rng, 2+rng.IntN(2))
		var principal strings.Builder
		principal.WriteString("SP")
		for range 38 + rng.IntN(3) {
			principal.WriteByte(c32[rng.IntN(len(c32))])
		}
		form := contractForms[rng.IntN(len(contractForms))]
		contract := principal.String() + "." + strings.Replace(form, "%s", lower, 1)
		decimals := decimalChoices[rng.IntN(len(decimalChoices))]
		// Log-uniform from a millionth of a dollar to fifty dollars, the
		// spread of a small-cap token list.
		base := math.Exp(math.Log(1e-6) + rng.Float64()*(math.Log(50)-math.Log(1e-6)))
		volatility := 0.0005 + rng.Float64()*0.0025
		if names[lower] || taken[contract] != nil {
			continue
		}
		names[lower] = true
		symbol := strings.ToUpper(lower)
		out = append(out, &simToken{
			Token: Token{
				ID:       contract + "::" + lower,
				Symbol:   symbol[:min(len(symbol), 6)],
				Name:     capitalized(lower),
				Decimals: decimals,
			},
			base:       base,
			volatility: volatility,
		})
	}
	nulls := max(1, n/20)
	strs := max(1, n*15/100)
	for i, j := range rng.Perm(n) {
		switch {
		case i < nulls:
			out[j].style = styleNull
		case i < nulls+strs:
			out[j].style = styleString
		}
	}
	return out
}

// Tokens returns the world's tokens: the static ones first, then the
// stablecoins, then the generated ones, always in the same order.
func (s *Server) Tokens() []Token {
	out := make([]Token, len(s.tenero.tokens))
	for i, t := range s.tenero.tokens {
		out[i] = t.Token
	}
	return out
}

// PriceAt returns the price text Tenero would answer for address at a moment,
// and false when it would answer no price (null, 0 or 404).
func (s *Server) PriceAt(address string, at time.Time) (string, bool) {
	t, ok := s.tenero.byAddress[address]
	if !ok || (t.style != styleNumber && t.style != styleString) {
		return "", false
	}
	return formatPrice(t.priceAt(s.tenero.seed, at)), true
}

// walkLevels are the time scales of the walk: 1, 4, 16, … 4^8 minutes (about
// 45 days). Summing value noise at scales growing by 4 with amplitudes
// growing by 2 looks like a random walk, yet the price at any minute costs
// nine hashes instead of a replay from the epoch.
const walkLevels = 9

// priceAt is the token's price in the minute holding at: a pure function of
// seed, token and minute, so restarts and parallel simulators agree.
func (t *simToken) priceAt(seed uint64, at time.Time) float64 {
	minute := floorDiv(at.Unix(), 60)
	var logDrift float64
	for level := range walkLevels {
		span := int64(1) << (2 * level)
		cell := floorDiv(minute, span)
		frac := float64(minute-cell*span) / float64(span)
		a := noise(seed, t.key, level, cell)
		b := noise(seed, t.key, level, cell+1)
		logDrift += t.volatility * math.Sqrt(float64(span)) * (a + (b-a)*frac)
	}
	return t.base * math.Exp(logDrift)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// noise is a uniform value in [-1, 1) fixed by its arguments.
func noise(seed, key uint64, level int, cell int64) float64 {
	h := Mix(seed ^ Mix(key^Mix(uint64(level)^Mix(uint64(cell)))))
	return float64(h>>11)/(1<<52) - 1
}

// Mix is splitmix64's finaliser: cheap, and every input bit moves every
// output bit, which is all value noise needs. The benchmarks' chain draws
// its strangers' senders and calls from it too.
func Mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// formatPrice renders six significant digits without an exponent and
// without trailing zeros, as a price list would show it.
func formatPrice(p float64) string {
	digits := max(5-int(math.Floor(math.Log10(p))), 0)
	s := strconv.FormatFloat(p, 'f', digits, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// writeTenero answers in Tenero's wrapper around every answer, in its
// order.
func writeTenero(w http.ResponseWriter, status int, msg string, data any) {
	writeJSON(w, status, struct {
		StatusCode int    `json:"statusCode"`
		Message    string `json:"message"`
		Data       any    `json:"data"`
	}{status, msg, data})
}

func (s *Server) teneroToken(w http.ResponseWriter, r *http.Request) {
	t, ok := s.tenero.byAddress[r.PathValue("address")]
	if !ok || t.style == styleNotFound {
		writeTenero(w, http.StatusNotFound, "Token not found", nil)
		return
	}
	var price any
	switch t.style {
	case styleNumber:
		price = json.Number(formatPrice(t.priceAt(s.tenero.seed, s.now())))
	case styleString:
		price = formatPrice(t.priceAt(s.tenero.seed, s.now()))
	case styleZero:
		price = json.Number("0")
	}
	writeTenero(w, http.StatusOK, "OK",
		doc{"address": t.Address, "symbol": t.Symbol, "name": t.Name, "decimals": t.Decimals, "price_usd": price})
}

// Tenero's rate-limit headers.
const (
	headerMinuteRemaining = "x-ratelimit-minute-remaining"
	headerMonthRemaining  = "x-ratelimit-month-remaining"
	headerType            = "x-ratelimit-type"
)

// teneroLimit spends the caller's budget and sends Tenero's headers, with a
// 429 and Retry-After (seconds to the spent window's end) once it is gone.
func (s *Server) teneroLimit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plan, d, ok := s.tenero.take(r, s.now(), 1)
		if !ok {
			writeTenero(w, http.StatusUnauthorized, "Invalid API key", nil)
			return
		}
		h := w.Header()
		h.Set(headerMinuteRemaining, strconv.Itoa(d.MinuteRemaining))
		h.Set(headerMonthRemaining, strconv.Itoa(d.MonthRemaining))
		h.Set(headerType, plan.Type)
		if !d.Allowed {
			h.Set("Retry-After", strconv.FormatInt(retryAfterSeconds(d.RetryAfter), 10))
			writeTenero(w, http.StatusTooManyRequests, "Rate limit exceeded", nil)
			return
		}
		next.ServeHTTP(w, r)
	})
}
