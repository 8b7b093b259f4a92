package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrForbiddenDestination is a connection the guard refused: the address
// is loopback, private, link-local, a metadata service or otherwise not a
// public unicast address (SPEC §10.2). PACER_WEBHOOK_ALLOW_PRIVATE=1 lifts
// it for development.
var ErrForbiddenDestination = errors.New("destination not allowed: not a public address")

// forbiddenPrefixes are the special-purpose ranges (IANA's registries)
// that netip's predicates do not already cover, and that no subscriber on
// the internet lives in: a webhook to them can only be aimed at pacer's
// own network.
var forbiddenPrefixes = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8",       // "this network"
		"100.64.0.0/10",   // CGNAT, shared address space
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // TEST-NET-1
		"192.88.99.0/24",  // 6to4 relay anycast
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // TEST-NET-2
		"203.0.113.0/24",  // TEST-NET-3
		"240.0.0.0/4",     // reserved, and 255.255.255.255
		"64:ff9b::/96",    // NAT64: would reach any IPv4 address, private ones too
		"64:ff9b:1::/48",  // local-use NAT64
		"100::/64",        // discard-only
		"2001::/32",       // Teredo: embeds an IPv4 address
		"2001:db8::/32",   // documentation
		"2002::/16",       // 6to4: embeds an IPv4 address
		"fec0::/10",       // deprecated site-local
		"::ffff:0:0:0/96", // SIIT (IPv4-translated)
		"::/96",           // deprecated IPv4-compatible
		"3fff::/20",       // documentation
		"5f00::/16",       // segment routing SIDs
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// Forbidden reports whether a webhook may not connect to ip: anything but
// a public unicast address. IPv4-mapped IPv6 addresses are judged as the
// IPv4 address they carry, so ::ffff:127.0.0.1 is loopback.
func Forbidden(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsUnspecified() ||
		ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() ||
		ip.IsMulticast() {
		// IsPrivate covers 10/8, 172.16/12, 192.168/16 and fc00::/7;
		// IsLinkLocalUnicast 169.254/16 (the metadata service) and fe80::/10.
		return true
	}
	for _, p := range forbiddenPrefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// Resolver finds a host's addresses; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// ConnectFunc makes one connection to an address already checked
// ("ip:port").
type ConnectFunc func(ctx context.Context, network, address string) (net.Conn, error)

// GuardOptions configure Guard.
type GuardOptions struct {
	// AllowPrivate turns the guard off (PACER_WEBHOOK_ALLOW_PRIVATE=1).
	AllowPrivate bool
	// Resolver finds the addresses of a name (net.DefaultResolver).
	Resolver Resolver
	// Connect connects to a checked address. Nil is a net.Dialer whose
	// Control checks the socket's address once more just before connect,
	// so even an address that reached it some other way is refused.
	Connect ConnectFunc
}

// Guard returns a DialContext that refuses forbidden destinations at
// connect time: it resolves the name itself, checks every address, and
// connects to the very address it checked. A name that resolved to a
// public address when the subscriber was added and to a private one now
// (DNS rebinding) is refused now; there is no second lookup between the
// check and the connect for an attacker to answer differently. A name
// with any forbidden address is refused whole, so an attacker cannot
// count on the fallback to the next address either.
func Guard(o GuardOptions) ConnectFunc {
	if o.Resolver == nil {
		o.Resolver = net.DefaultResolver
	}
	if o.Connect == nil {
		d := &net.Dialer{Timeout: AttemptTimeout, KeepAlive: 30 * time.Second}
		if !o.AllowPrivate {
			d.Control = controlForbidden
		}
		o.Connect = d.DialContext
	}
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		host, portText, err := net.SplitHostPort(address)
		if err != nil {
			return nil, fmt.Errorf("webhook dial: %w", err)
		}
		port, err := strconv.ParseUint(portText, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("webhook dial: bad port")
		}
		ips, err := lookup(ctx, o.Resolver, network, host)
		if err != nil {
			return nil, err
		}
		if !o.AllowPrivate {
			for _, ip := range ips {
				if Forbidden(ip) {
					return nil, &net.OpError{Op: "dial", Net: network, Err: ErrForbiddenDestination}
				}
			}
		}
		var firstErr error
		for _, ip := range ips {
			conn, err := o.Connect(ctx, network, netip.AddrPortFrom(ip.Unmap(), uint16(port)).String())
			if err == nil {
				return conn, nil
			}
			if firstErr == nil {
				firstErr = err
			}
			if ctx.Err() != nil {
				break
			}
		}
		return nil, firstErr
	}
}

func lookup(ctx context.Context, r Resolver, network, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip}, nil
	}
	ipNet := "ip"
	switch network {
	case "tcp4":
		ipNet = "ip4"
	case "tcp6":
		ipNet = "ip6"
	}
	ips, err := r.LookupNetIP(ctx, ipNet, host)
	if err != nil {
		return nil, err
	}
	if len(ips) == 0 {
		return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	return ips, nil
}

// controlForbidden is the last check, on the socket's own address just
// before connect(2).
func controlForbidden(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || Forbidden(ap.Addr()) {
		return ErrForbiddenDestination
	}
	return nil
}

// CheckHost refuses, when a subscriber is added, a URL whose host is
// plainly not public: an IP literal that Forbidden refuses, or localhost.
// Names are not resolved here: what a name resolves to can change at any
// time, so the guard decides at every connection, and adding a subscriber
// sends no packet anywhere.
func CheckHost(rawURL string, allowPrivate bool) error {
	if allowPrivate {
		return nil
	}
	host := rawURL
	if i := strings.Index(host, "://"); i >= 0 {
		host = host[i+3:]
	}
	if i := strings.IndexAny(host, "/?#"); i >= 0 {
		host = host[:i]
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if ip, err := netip.ParseAddr(host); err == nil && Forbidden(ip) {
		return fmt.Errorf("%w: the host is not a public address (set PACER_WEBHOOK_ALLOW_PRIVATE=1 in development)", ErrBadURL)
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return fmt.Errorf("%w: localhost is not a public address (set PACER_WEBHOOK_ALLOW_PRIVATE=1 in development)", ErrBadURL)
	}
	return nil
}
