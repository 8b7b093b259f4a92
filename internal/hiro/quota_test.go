package hiro

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func intp(n int) *int                     { return &n }
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
			wantQuota: Quota{},
		},
		{
			name: "all headers",
			giveHeader: map[string]string{
				"ratelimit-remaining":                 "42",
				"ratelimit-reset":                     "17",
				"retry-after":                         "3",
				"x-ratelimit-remaining-stacks-minute": "450",
				"x-ratelimit-remaining-stacks-month":  "149000",
				"x-ratelimit-limit-stacks-month":      "150000",
			},
			wantQuota: Quota{
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
			wantQuota: Quota{Remaining: intp(0), RetryAfter: durp(1500 * time.Millisecond)},
		},
		{
			name: "garbage is unknown, not zero",
			giveHeader: map[string]string{
				"ratelimit-remaining":                 "lots",
				"ratelimit-reset":                     "-1",
				"retry-after":                         "Wed, 21 Oct 2015 07:28:00 GMT",
				"x-ratelimit-remaining-stacks-minute": "-5",
				"x-ratelimit-remaining-stacks-month":  "1e3",
				"x-ratelimit-limit-stacks-month":      "99999999999999999999999",
			},
			wantQuota: Quota{},
		},
		{
			name: "absurd delays are unknown rather than overflowing",
			giveHeader: map[string]string{
				"retry-after":     "1e300",
				"ratelimit-reset": "NaN",
			},
			wantQuota: Quota{},
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
