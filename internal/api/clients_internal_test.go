package api

import (
	"fmt"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestClientKey(t *testing.T) {
	t.Parallel()
	proxies, err := ParseTrustedProxies("10.1.0.0/16, 192.168.7.7, fd00::/8")
	require.NoError(t, err)
	s := &Server{o: Options{TrustedProxies: proxies}}
	for _, tc := range []struct {
		name, remote string
		xff          []string
		want         string
	}{
		{"no proxy", "203.0.113.9:5555", nil, "203.0.113.9"},
		{"untrusted connection: header ignored", "203.0.113.9:5555", []string{"198.51.100.1"}, "203.0.113.9"},
		{"trusted proxy names the client", "10.1.2.3:80", []string{"198.51.100.1"}, "198.51.100.1"},
		{"right-most untrusted hop wins over a spoofed left part", "10.1.2.3:80", []string{"1.2.3.4, 198.51.100.1"}, "198.51.100.1"},
		{"a chain of trusted proxies", "10.1.2.3:80", []string{"198.51.100.1, 192.168.7.7", "10.1.9.9"}, "198.51.100.1"},
		{"all hops trusted: the left-most", "10.1.2.3:80", []string{"10.1.5.5"}, "10.1.5.5"},
		{"garbage hop ends the walk", "10.1.2.3:80", []string{"198.51.100.1, not-an-ip"}, "10.1.2.3"},
		{"no header from a proxy", "10.1.2.3:80", nil, "10.1.2.3"},
		{"IPv6 per /64", "[2001:db8:1:2:aaaa::1]:443", nil, "2001:db8:1:2::/64"},
		{"IPv6 neighbour in the same /64", "[2001:db8:1:2:ffff:ffff:ffff:ffff]:443", nil, "2001:db8:1:2::/64"},
		{"IPv6 behind an IPv6 proxy", "[fd00::1]:80", []string{"2001:db8:9:9::77"}, "2001:db8:9:9::/64"},
		{"IPv4-mapped is IPv4", "[::ffff:203.0.113.9]:1", nil, "203.0.113.9"},
		// Issue 28 finding 8: hops written with a port or in brackets
		// name their client; before, they ended the walk at the proxy.
		{"hop with a port", "10.1.2.3:80", []string{"198.51.100.7:5123"}, "198.51.100.7"},
		{"IPv6 hop in brackets", "10.1.2.3:80", []string{"[2001:db8::7]"}, "2001:db8::/64"},
		{"IPv6 hop in brackets with a port", "10.1.2.3:80", []string{"[2001:db8::7]:443"}, "2001:db8::/64"},
		{"trusted hop with a port, then the client", "10.1.2.3:80", []string{"198.51.100.8, 10.1.9.9:8080"}, "198.51.100.8"},
		{"brackets around IPv4 are garbage", "10.1.2.3:80", []string{"[198.51.100.7"}, "10.1.2.3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tc.remote
			for _, h := range tc.xff {
				r.Header.Add("X-Forwarded-For", h)
			}
			require.Equal(t, tc.want, s.clientKey(r))
		})
	}
	_, err = ParseTrustedProxies("10.0.0.0/33")
	require.Error(t, err)
	got, err := ParseTrustedProxies("::ffff:10.0.0.0/104")
	require.NoError(t, err)
	require.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, got)
}

// TestClientTableCannotLockNewcomersOut fills a bounded table with
// spent clients: a newcomer still gets a full bucket of its own, and the
// table stays at its bound.
func TestClientTableCannotLockNewcomersOut(t *testing.T) {
	t.Parallel()
	const bound = 1000
	c := newClientLimits(2, bound)
	now := time.Unix(1_800_000_000, 0)
	for i := range 5 * bound {
		key := fmt.Sprintf("2001:db8:%x::/64", i)
		ok, _ := c.allow(key, now)
		require.True(t, ok)
		ok, _ = c.allow(key, now)
		require.True(t, ok)
		ok, _ = c.allow(key, now)
		require.False(t, ok, "each attacker address is limited")
	}
	require.Equal(t, bound, c.size())
	for i := range 10 {
		key := fmt.Sprintf("198.51.100.%d", i)
		for range 2 {
			ok, _ := c.allow(key, now)
			require.True(t, ok, "a newcomer has its own full bucket")
		}
		ok, _ := c.allow(key, now)
		require.False(t, ok, "and its own limit, not a shared one")
	}
	// A client active throughout keeps its state (recently used stays).
	require.Equal(t, bound, c.size())
}
