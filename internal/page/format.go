package page

import (
	"fmt"
	"math"
	"time"

	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// printer groups thousands the way people read them (10,000).
var printer = message.NewPrinter(language.English)

// count formats a whole number for people: 12,345.
func count[N int | int64](n N) string { return printer.Sprintf("%d", n) }

// decimal formats a rate for people: at most one decimal, grouped.
func decimal(f float64) string {
	if f == math.Trunc(f) || math.Abs(f) >= 100 {
		return printer.Sprintf("%.0f", f)
	}
	return printer.Sprintf("%.1f", f)
}

// compact formats a number for a narrow axis label: 950, 12k, 1.5M.
func compact(n int64) string {
	switch {
	case n >= 1_000_000:
		return decimal(float64(n)/1e6) + "M"
	case n >= 10_000:
		return decimal(float64(n)/1e3) + "k"
	}
	return count(n)
}

// span formats a duration for people at the precision that matters: 45s,
// 3m 20s, 2h 5m, 3d 4h. Negative durations read as their magnitude.
func span(d time.Duration) string {
	d = d.Abs()
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		m, s := int(d.Minutes()), int(d.Seconds())%60
		if s == 0 {
			return fmt.Sprintf("%dm", m)
		}
		return fmt.Sprintf("%dm %ds", m, s)
	case d < 48*time.Hour:
		h, m := int(d.Hours()), int(d.Minutes())%60
		if m == 0 {
			return fmt.Sprintf("%dh", h)
		}
		return fmt.Sprintf("%dh %dm", h, m)
	default:
		days, h := int(d.Hours())/24, int(d.Hours())%24
		if h == 0 {
			return fmt.Sprintf("%dd", days)
		}
		return fmt.Sprintf("%dd %dh", days, h)
	}
}

// relative says when t is seen from now: "3m ago", "in 2h 5m", "now".
func relative(t, now time.Time) string {
	d := t.Sub(now)
	switch {
	case d.Abs() < time.Second:
		return "now"
	case d < 0:
		return span(d) + " ago"
	default:
		return "in " + span(d)
	}
}

// stamp is an absolute time for people, in UTC.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

// day is a date for people, in UTC.
func day(t time.Time) string { return t.UTC().Format("Mon 2 Jan 2006") }

// Moment is a point in time shown both ways: relative to the page's now,
// with the absolute time as its tooltip. The zero Moment shows as "—".
type Moment struct {
	Rel string
	Abs string
}

func moment(t *time.Time, now time.Time) Moment {
	if t == nil || t.IsZero() {
		return Moment{Rel: "—"}
	}
	return Moment{Rel: relative(*t, now), Abs: stamp(*t)}
}
