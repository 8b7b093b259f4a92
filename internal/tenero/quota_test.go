package tenero

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/fault"
)

func TestParseQuota(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		give map[string]string
		want Quota
	}{
		{name: "absent", give: nil, want: Quota{}},
		{
			name: "all present",
			give: map[string]string{
				HeaderMinuteRemaining: "99",
				HeaderMonthRemaining:  "49000",
				HeaderType:            "web-ui-ip",
				HeaderRetryAfter:      "12",
			},
			want: Quota{MinuteRemaining: ptr[int64](99), MonthRemaining: ptr[int64](49000), Type: "web-ui-ip", RetryAfter: 12 * time.Second},
		},
		{
			name: "zeros are kept",
			give: map[string]string{HeaderMinuteRemaining: "0", HeaderMonthRemaining: " 0 "},
			want: Quota{MinuteRemaining: ptr[int64](0), MonthRemaining: ptr[int64](0)},
		},
		{
			name: "garbage is unknown",
			give: map[string]string{
				HeaderMinuteRemaining: "lots",
				HeaderMonthRemaining:  "12.5",
				HeaderType:            "bad\x01type",
				HeaderRetryAfter:      "Wed, 21 Oct 2015 07:28:00 GMT",
			},
			want: Quota{},
		},
		{
			name: "negative is unknown",
			give: map[string]string{HeaderMinuteRemaining: "-1", HeaderRetryAfter: "-5"},
			want: Quota{},
		},
		{
			name: "past 32 bits is read exactly",
			give: map[string]string{HeaderMinuteRemaining: "4294967295", HeaderMonthRemaining: "3000000000"},
			want: Quota{MinuteRemaining: ptr[int64](4294967295), MonthRemaining: ptr[int64](3_000_000_000)},
		},
		{
			name: "overflow and huge Retry-After are clamped",
			give: map[string]string{HeaderMinuteRemaining: "9223372036854775807", HeaderMonthRemaining: "99999999999999999999", HeaderRetryAfter: "99999999999999"},
			want: Quota{MinuteRemaining: ptr[int64](MaxCount), MonthRemaining: ptr[int64](MaxCount), RetryAfter: maxRetryAfterHeader},
		},
		{
			name: "negative overflow is unknown",
			give: map[string]string{HeaderMonthRemaining: "-99999999999999999999"},
			want: Quota{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, ParseQuota(headerOf(tt.give)))
		})
	}
}

func TestQuotaExhausted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		give      Quota
		wantDelay time.Duration
		wantSpent bool
	}{
		{name: "unknown", give: Quota{}},
		{name: "plenty", give: Quota{MinuteRemaining: ptr[int64](5), MonthRemaining: ptr[int64](100)}},
		{name: "last request of the minute", give: Quota{MinuteRemaining: ptr[int64](1)}},
		{name: "minute spent", give: Quota{MinuteRemaining: ptr[int64](0), MonthRemaining: ptr[int64](100)}, wantDelay: fault.MinuteQuotaBackoff, wantSpent: true},
		{name: "month spent", give: Quota{MinuteRemaining: ptr[int64](7), MonthRemaining: ptr[int64](0)}, wantDelay: fault.MonthQuotaBackoff, wantSpent: true},
		{name: "month wins over minute", give: Quota{MinuteRemaining: ptr[int64](0), MonthRemaining: ptr[int64](0)}, wantDelay: fault.MonthQuotaBackoff, wantSpent: true},
		{name: "Retry-After alone is not a spent quota", give: Quota{RetryAfter: time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			delay, spent := tt.give.Exhausted()
			require.Equal(t, tt.wantSpent, spent)
			require.Equal(t, tt.wantDelay, delay)
		})
	}
}

func FuzzParseQuota(f *testing.F) {
	f.Add("99", "49000", "web-ui-ip", "3")
	f.Add("0", "-1", "", "Wed, 21 Oct 2015 07:28:00 GMT")
	f.Add(" 7 ", "1e3", "x\x00y", "99999999999999999999")
	f.Fuzz(func(t *testing.T, minute, month, typ, retryAfter string) {
		h := http.Header{}
		h.Set(HeaderMinuteRemaining, minute)
		h.Set(HeaderMonthRemaining, month)
		h.Set(HeaderType, typ)
		h.Set(HeaderRetryAfter, retryAfter)

		q := ParseQuota(h)
		for _, n := range []*int64{q.MinuteRemaining, q.MonthRemaining} {
			if n != nil {
				require.GreaterOrEqual(t, *n, int64(0))
				require.LessOrEqual(t, *n, int64(MaxCount))
			}
		}
		require.GreaterOrEqual(t, q.RetryAfter, time.Duration(0))
		require.LessOrEqual(t, q.RetryAfter, maxRetryAfterHeader)
		require.LessOrEqual(t, len(q.Type), 64)
		delay, spent := q.Exhausted()
		require.Equal(t, spent, delay > 0)
	})
}

func FuzzParsePrice(f *testing.F) {
	for _, s := range []string{`1.85`, `"0.5"`, `null`, `0`, `-1`, `"NaN"`, `{}`, `1e400`, `"1e-400"`, `" +2 "`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if len(raw) == 0 {
			return
		}
		price, err := parsePrice([]byte(raw))
		if err != nil || price == nil {
			return
		}
		// Whatever is accepted must be plain positive decimal text that
		// both JSON and Postgres numeric read.
		require.Regexp(t, decimalText, *price)
	})
}
