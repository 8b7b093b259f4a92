// Package upstream holds what every upstream API client of pacer shares.
package upstream

import "net/http"

// NoRedirects returns a copy of hc (a new client when hc is nil) that never
// follows a redirect: Go would forward the x-api-key header to whatever host
// the redirect names. The caller sees the 3xx itself. hc is not changed.
func NoRedirects(hc *http.Client) *http.Client {
	c := http.Client{}
	if hc != nil {
		c = *hc
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}
