package api

import (
	"container/list"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Client addresses (SPEC §5.6): the connection's, or the right-most
// address of X-Forwarded-For that is not a trusted proxy when the
// connection comes from one (PACER_TRUSTED_PROXIES). Everything left of
// that hop was written by the client and proves nothing. IPv6 clients are
// one client per /64: a single host commonly holds a whole /64.

// ParseTrustedProxies reads PACER_TRUSTED_PROXIES: comma-separated CIDRs
// or addresses.
func ParseTrustedProxies(raw string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for item := range strings.SplitSeq(raw, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if !strings.Contains(item, "/") {
			a, err := netip.ParseAddr(item)
			if err != nil {
				return nil, err
			}
			a = a.Unmap()
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(item)
		if err != nil {
			return nil, err
		}
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

func (s *Server) trusted(a netip.Addr) bool {
	for _, p := range s.o.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// clientKey is the key of the request's client in the per-client limits.
func (s *Server) clientKey(r *http.Request) string {
	a, ok := remoteAddr(r.RemoteAddr)
	if !ok {
		return r.RemoteAddr
	}
	if len(s.o.TrustedProxies) > 0 && s.trusted(a) {
		a = s.forwardedFor(r, a)
	}
	return limitKey(a)
}

// forwardedFor walks X-Forwarded-For from the right, past trusted
// proxies, to the first hop that is not one: the client as the outermost
// trusted proxy saw it. A malformed hop ends the walk there: what is left
// of it cannot be trusted either, so the last good hop stands.
func (s *Server) forwardedFor(r *http.Request, from netip.Addr) netip.Addr {
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		h, ok := hopAddr(hops[i])
		if !ok {
			return from
		}
		from = h
		if !s.trusted(h) {
			return h
		}
	}
	return from
}

// hopAddr reads one hop of X-Forwarded-For as proxies write it: an
// address, an address with a port ("198.51.100.7:5123",
// "[2001:db8::7]:443"), or an IPv6 address in brackets ("[2001:db8::7]").
func hopAddr(hop string) (netip.Addr, bool) {
	hop = strings.TrimSpace(hop)
	if ap, err := netip.ParseAddrPort(hop); err == nil {
		return ap.Addr().Unmap().WithZone(""), true
	}
	if strings.HasPrefix(hop, "[") && strings.HasSuffix(hop, "]") {
		hop = hop[1 : len(hop)-1]
	}
	a, err := netip.ParseAddr(hop)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}

func remoteAddr(remote string) (netip.Addr, bool) {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}

// limitKey is an IPv4 address, or an IPv6 address's /64.
func limitKey(a netip.Addr) string {
	if a.Is4() {
		return a.String()
	}
	p, _ := a.Prefix(64)
	return p.String()
}

// clientLimits keeps one token bucket per client: perMinute a minute, a
// minute's worth at once. The table is bounded: when full, the least
// recently seen client's bucket goes, so a flood of new addresses can
// never lock newcomers out or make them share one bucket; it only forgets
// the quietest clients first (a forgotten bucket comes back full, which
// for a client quiet since the flood began is what it would be anyway).
type clientLimits struct {
	perMinute int
	max       int
	mu        sync.Mutex
	byKey     map[string]*list.Element
	lru       *list.List // front: most recently seen
}

type clientLimit struct {
	key string
	lim *rate.Limiter
}

// defaultMaxClients bounds each client table (~200 bytes a client).
const defaultMaxClients = 100_000

func newClientLimits(perMinute, maxClients int) *clientLimits {
	return &clientLimits{perMinute: perMinute, max: maxClients, byKey: map[string]*list.Element{}, lru: list.New()}
}

func (c *clientLimits) allow(key string, now time.Time) (ok bool, wait time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, found := c.byKey[key]
	if found {
		c.lru.MoveToFront(e)
	} else {
		if c.lru.Len() >= c.max {
			oldest := c.lru.Back()
			c.lru.Remove(oldest)
			delete(c.byKey, oldest.Value.(*clientLimit).key)
		}
		e = c.lru.PushFront(&clientLimit{key: key, lim: rate.NewLimiter(rate.Limit(float64(c.perMinute)/60), c.perMinute)})
		c.byKey[key] = e
	}
	r := e.Value.(*clientLimit).lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// size is the number of clients the table holds (tests).
func (c *clientLimits) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
