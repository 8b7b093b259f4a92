package tenero

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// envelope is Tenero's wrapper around every answer. Only data is read
// strictly; statusCode and message are informative and a messy upstream may
// send them in any shape.
type envelope struct {
	StatusCode json.RawMessage `json:"statusCode"`
	Message    json.RawMessage `json:"message"`
	Data       json.RawMessage `json:"data"`
}

// tokenData holds the two fields pacer reads. They stay raw so that an
// explicit null can be told apart from a missing field.
type tokenData struct {
	PriceUSD json.RawMessage `json:"price_usd"`
	Decimals json.RawMessage `json:"decimals"`
}

// bodyStatusError is a 2xx answer whose body carries a failing statusCode;
// Tenero has been seen to wrap its real status this way.
type bodyStatusError struct {
	code    int
	message string
}

func (e *bodyStatusError) Error() string {
	if e.message == "" {
		return fmt.Sprintf("body statusCode %d", e.code)
	}
	return fmt.Sprintf("body statusCode %d: %s", e.code, e.message)
}

// decodedToken is what a successful body yields.
type decodedToken struct {
	priceUSD *string
	decimals *int
}

// decodeEnvelope reads the wrapper of any answer.
func decodeEnvelope(body []byte) (envelope, error) {
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return envelope{}, fmt.Errorf("decode body: %w", err)
	}
	return env, nil
}

// decodeToken reads a 2xx body. It returns a *bodyStatusError when the body's
// own statusCode is a failure, and a descriptive error for anything
// unreadable.
func decodeToken(body []byte) (decodedToken, error) {
	env, err := decodeEnvelope(body)
	if err != nil {
		return decodedToken{}, err
	}
	if code, ok := statusCodeOf(env.StatusCode); ok && (code < 200 || code > 299) {
		return decodedToken{}, &bodyStatusError{code: code, message: messageOf(env.Message)}
	}
	if isNull(env.Data) {
		return decodedToken{}, errors.New("body has no data")
	}
	var data tokenData
	if err := json.Unmarshal(env.Data, &data); err != nil {
		return decodedToken{}, fmt.Errorf("decode data: %w", err)
	}
	// A body without price_usd is not the confirmed "no price" that an
	// explicit null is: if Tenero renamed the field, storing null for every
	// token would silently wipe good prices.
	if data.PriceUSD == nil {
		return decodedToken{}, errors.New("data.price_usd is missing")
	}
	price, err := parsePrice(data.PriceUSD)
	if err != nil {
		return decodedToken{}, fmt.Errorf("data.price_usd: %w", err)
	}
	decimals, err := parseDecimals(data.Decimals)
	if err != nil {
		return decodedToken{}, fmt.Errorf("data.decimals: %w", err)
	}
	return decodedToken{priceUSD: price, decimals: decimals}, nil
}

// parsePrice turns price_usd into exact decimal text. Null and zero are a
// confirmed "no price" (nil, no error); Tenero sends both a JSON number and a
// numeric string, so both are read, and the text is kept as sent because a
// float64 would round a price that Postgres can store exactly.
func parsePrice(raw json.RawMessage) (*string, error) {
	if isNull(raw) {
		return nil, nil
	}
	var text string
	switch raw[0] {
	case '"':
		if err := json.Unmarshal(raw, &text); err != nil {
			return nil, err
		}
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		text = string(raw)
	default:
		return nil, fmt.Errorf("want a number or a numeric string, got %s", snippet(raw))
	}
	return parseDecimal(text)
}

// decimalText is a plain decimal with an optional exponent: what both JSON
// and Postgres numeric accept. It rules out what strconv.ParseFloat would
// also take (NaN, Inf, hex floats, digit separators).
var decimalText = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// parseDecimal validates numeric text and returns it normalised (trimmed,
// without a leading '+'), or nil when it is zero.
func parseDecimal(text string) (*string, error) {
	s := strings.TrimSpace(text)
	negative := strings.HasPrefix(s, "-")
	unsigned := strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	if !decimalText.MatchString(unsigned) {
		return nil, fmt.Errorf("not a decimal number: %q", truncate(text, 40))
	}
	// Zero is decided on the text, not the float, so that "0.000" is zero
	// and a tiny but real price is not.
	mantissa, _, _ := strings.Cut(strings.ToLower(unsigned), "e")
	if strings.Trim(mantissa, "0.") == "" {
		return nil, nil
	}
	if negative {
		return nil, fmt.Errorf("negative price %q", truncate(text, 40))
	}
	// The float only checks that the value is in a sane range: beyond
	// float64 it is surely garbage, and Postgres numeric would refuse it.
	f, err := strconv.ParseFloat(unsigned, 64)
	if err != nil || f == 0 {
		return nil, fmt.Errorf("price out of range: %q", truncate(text, 40))
	}
	return &unsigned, nil
}

// maxDecimals is far above any real token (Clarity fungible tokens use at
// most a few dozen); anything larger is a broken answer.
const maxDecimals = 255

// parseDecimals reads an optional token decimals count, as a number or a
// numeric string.
func parseDecimals(raw json.RawMessage) (*int, error) {
	if isNull(raw) {
		return nil, nil
	}
	text := string(raw)
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &text); err != nil {
			return nil, err
		}
	}
	n, err := strconv.Atoi(strings.TrimSpace(text))
	if err != nil || n < 0 || n > maxDecimals {
		return nil, fmt.Errorf("want an integer in 0..%d, got %s", maxDecimals, snippet(raw))
	}
	return &n, nil
}

// statusCodeOf reads the body's statusCode leniently: it is informative only.
func statusCodeOf(raw json.RawMessage) (int, bool) {
	var n int
	if isNull(raw) || json.Unmarshal(raw, &n) != nil {
		return 0, false
	}
	return n, true
}

// messageOf returns the body's message for an error text, if it is a string.
func messageOf(raw json.RawMessage) string {
	var s string
	if isNull(raw) || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return truncate(s, 200)
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

func snippet(raw json.RawMessage) string {
	return truncate(string(raw), 40)
}

// truncate bounds text copied from a response into an error message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Back off to a rune boundary so the message stays valid UTF-8.
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
