package hiro

import (
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func intp(n int64) *int64                 { return &n }
func durp(d time.Duration) *time.Duration { return &d }

func TestParseQuota(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name       string
		giveHeader map[string]string
		wantQuota  Quota
	}{
		{
			name:      "no headers leave everything unknown",
			wantQuota: Quota{Cost: 1},
		},
		{
			name: "all headers",
			giveHeader: map[string]string{
				"x-ratelimit-cost-stacks":             "3",
				"ratelimit-limit":                     "50",
				"ratelimit-remaining":                 "42",
				"ratelimit-reset":                     "17",
				"retry-after":                         "3",
				"x-ratelimit-remaining-stacks-minute": "450",
				"x-ratelimit-remaining-stacks-month":  "149000",
				"x-ratelimit-limit-stacks-month":      "150000",
			},
			wantQuota: Quota{
				Cost:            3,
				Limit:           intp(50),
				Remaining:       intp(42),
				Reset:           durp(17 * time.Second),
				RetryAfter:      durp(3 * time.Second),
				MinuteRemaining: intp(450),
				MonthRemaining:  intp(149000),
				MonthLimit:      intp(150000),
			},
		},
		{
			name: "header names are case-insensitive and values may carry spaces",
			giveHeader: map[string]string{
				"RateLimit-Remaining": " 0 ",
				"Retry-After":         "1.5",
			},
			wantQuota: Quota{Cost: 1, Remaining: intp(0), RetryAfter: durp(1500 * time.Millisecond)},
		},
		{
			name: "garbage is unknown, not zero",
			giveHeader: map[string]string{
				"ratelimit-remaining":                 "lots",
				"ratelimit-reset":                     "-1",
				"retry-after":                         "Wed, 21 Oct 2015 07:28:00 GMT",
				"x-ratelimit-remaining-stacks-minute": "-5",
				"x-ratelimit-remaining-stacks-month":  "1e3",
				"x-ratelimit-limit-stacks-month":      "+5",
				"x-ratelimit-cost-stacks":             "two",
			},
			wantQuota: Quota{Cost: 1},
		},
		{
			name: "counts past 2^31 and past 2^63 are clamped, never unknown or wrapped",
			giveHeader: map[string]string{
				"x-ratelimit-remaining-stacks-month": "3000000000",
				"x-ratelimit-limit-stacks-month":     "99999999999999999999999",
				"ratelimit-remaining":                "9223372036854775808",
				"x-ratelimit-cost-stacks":            "9223372036854775807",
			},
			wantQuota: Quota{
				Cost:           math.MaxInt64,
				Remaining:      intp(math.MaxInt64),
				MonthRemaining: intp(3_000_000_000),
				MonthLimit:     intp(math.MaxInt64),
			},
		},
		{
			name:       "a zero cost is read as the default, not as free",
			giveHeader: map[string]string{"x-ratelimit-cost-stacks": "0"},
			wantQuota:  Quota{Cost: 1},
		},
		{
			name: "absurd delays are unknown rather than overflowing",
			giveHeader: map[string]string{
				"retry-after":     "1e300",
				"ratelimit-reset": "NaN",
			},
			wantQuota: Quota{Cost: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			for k, v := range tt.giveHeader {
				h.Set(k, v)
			}
			require.Equal(t, tt.wantQuota, ParseQuota(h))
		})
	}
}

func TestQuotaPredicates(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name                string
		giveQuota           Quota
		wantMonthLow        bool
		wantMonthExhausted  bool
		wantMinuteExhausted bool
	}{
		{name: "unknown", giveQuota: Quota{}},
		{
			name:      "exactly 20% left is not low",
			giveQuota: Quota{MonthRemaining: intp(30000), MonthLimit: intp(150000)},
		},
		{
			name:         "just under 20% is low",
			giveQuota:    Quota{MonthRemaining: intp(29999), MonthLimit: intp(150000)},
			wantMonthLow: true,
		},
		{
			name:      "remaining without a limit cannot be judged",
			giveQuota: Quota{MonthRemaining: intp(1)},
		},
		{
			name:      "a zero limit is not a quota",
			giveQuota: Quota{MonthRemaining: intp(0), MonthLimit: intp(0)},
			// Remaining zero is still exhausted whatever the limit says.
			wantMonthExhausted: true,
		},
		{
			name:         "a huge limit does not overflow the 20% test",
			giveQuota:    Quota{MonthRemaining: intp(math.MaxInt64 / 6), MonthLimit: intp(math.MaxInt64)},
			wantMonthLow: true,
		},
		{
			name:      "a huge remaining is not low",
			giveQuota: Quota{MonthRemaining: intp(math.MaxInt64), MonthLimit: intp(math.MaxInt64)},
		},
		{
			name:               "month spent",
			giveQuota:          Quota{MonthRemaining: intp(0), MonthLimit: intp(150000)},
			wantMonthLow:       true,
			wantMonthExhausted: true,
		},
		{
			name:                "stacks minute counter spent",
			giveQuota:           Quota{MinuteRemaining: intp(0)},
			wantMinuteExhausted: true,
		},
		{
			name:                "generic window spent",
			giveQuota:           Quota{Remaining: intp(0), MinuteRemaining: intp(3)},
			wantMinuteExhausted: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.wantMonthLow, tt.giveQuota.MonthLow(), "MonthLow")
			require.Equal(t, tt.wantMonthExhausted, tt.giveQuota.MonthExhausted(), "MonthExhausted")
			require.Equal(t, tt.wantMinuteExhausted, tt.giveQuota.MinuteExhausted(), "MinuteExhausted")
		})
	}
}
