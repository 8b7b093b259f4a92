// Package loopback keeps tests on loopback: an HTTP client that dials
// nothing else. Test code only, with no dependencies of pacer's, so any
// package's internal tests can import it.
package loopback

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
)

// ErrNotLoopback is Client's refusal of any other address.
var ErrNotLoopback = errors.New("loopback: only loopback may be dialled in tests")

// Client is an HTTP client that connects to loopback addresses
// only (127.0.0.0/8, [::1]), checked on the address being dialled: a test
// that names a private or public address to see it refused sends it no
// packet even if the refusal it tests is broken.
func Client() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	var d net.Dialer
	tr.DialContext = func(ctx context.Context, network, address string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return nil, err
		}
		if ip, err := netip.ParseAddr(host); err != nil || !ip.Unmap().IsLoopback() {
			return nil, fmt.Errorf("%w: %s", ErrNotLoopback, address)
		}
		return d.DialContext(ctx, network, address)
	}
	return &http.Client{Transport: tr}
}
