package fault

import (
	"testing"
	"time"
)

func TestRateLimitBackoff(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name       string
		monthSpent bool
		roomAt     time.Time
		want       time.Duration
	}{
		{"the month spent: a day", true, now.Add(time.Second), MonthQuotaBackoff},
		{"room not known: the minute quota's", false, time.Time{}, MinuteQuotaBackoff},
		{"until the budget has room", false, now.Add(20 * time.Second), 20 * time.Second},
		{"at least a second", false, now.Add(-time.Minute), time.Second},
		{"at most the minute quota's", false, now.Add(time.Hour), MinuteQuotaBackoff},
	} {
		if got := RateLimitBackoff(tt.monthSpent, tt.roomAt, now); got != tt.want {
			t.Errorf("%s: RateLimitBackoff = %v, want %v", tt.name, got, tt.want)
		}
	}
}
