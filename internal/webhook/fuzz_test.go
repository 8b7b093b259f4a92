package webhook_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pacer-dev/pacer/internal/webhook"
)

// A URL that ValidateURL accepts is an http(s) URL with a host and no
// credentials or fragment, canonical (validating it again changes
// nothing), and a rejection never quotes the input.
func FuzzValidateURL(f *testing.F) {
	for _, s := range []string{"https://hooks.example/x?a=1", "http://127.0.0.1:8080/", "https://u:p@x.example/",
		"javascript:alert(1)", "https://x.example/#f", "http://[::1]:0/", "https://%zz/", " http://x/", "http:/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := webhook.ValidateURL(raw)
		if err != nil {
			if len(raw) > 12 && strings.Contains(err.Error(), raw) {
				t.Fatalf("the error quotes the URL: %v", err)
			}
			return
		}
		u, perr := url.Parse(got)
		if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil || u.Fragment != "" {
			t.Fatalf("accepted %q as %q", raw, got)
		}
		if again, err := webhook.ValidateURL(got); err != nil || again != got {
			t.Fatalf("not canonical: %q -> %q (%v)", got, again, err)
		}
	})
}

// ParseLadder accepts only what it can render back, within its bounds.
func FuzzParseLadder(f *testing.F) {
	for _, s := range []string{webhook.DefaultLadder, "1s,2s,3s", "", ",", "1m,-1m", "9999999999h", "100ms"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := webhook.ParseLadder(s)
		if err != nil {
			return
		}
		if len(l) == 0 || len(l) > webhook.MaxSteps {
			t.Fatalf("%q: %d steps", s, len(l))
		}
		for _, d := range l {
			if d < webhook.MinStep || d > webhook.MaxStep {
				t.Fatalf("%q: step %s out of bounds", s, d)
			}
			for _, u := range []float64{0, 0.5, 0.999} {
				got, ok := l.Next(1, 0, u)
				if !ok || got < time.Duration(float64(l[0])*0.9)-time.Nanosecond || got > time.Duration(float64(l[0])*1.1)+time.Nanosecond {
					t.Fatalf("%q: first retry %s", s, got)
				}
			}
		}
		again, err := webhook.ParseLadder(l.String())
		if err != nil || again.String() != l.String() {
			t.Fatalf("%q does not round-trip: %v", s, err)
		}
	})
}
