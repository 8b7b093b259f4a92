package webhook_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/webhook"
)

func TestForbidden(t *testing.T) {
	t.Parallel()
	for _, a := range []string{
		"127.0.0.1", "127.9.9.9", "10.0.0.5", "172.16.0.1", "172.31.255.255", "192.168.1.1",
		"169.254.169.254", "100.64.0.1", "100.127.255.254", "0.0.0.0", "0.1.2.3", "255.255.255.255",
		"224.0.0.1", "239.1.1.1", "240.0.0.1", "192.0.0.170", "198.18.0.1", "192.0.2.1",
		"::", "::1", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1", "::ffff:127.0.0.1",
		"::ffff:10.0.0.5", "::ffff:169.254.169.254", "64:ff9b::a00:5", "2002:a00:5::1", "2001:db8::1",
		"fec0::1", "::127.0.0.1", "fd00:ec2::254",
	} {
		require.True(t, webhook.Forbidden(netip.MustParseAddr(a)), a)
	}
	for _, a := range []string{"93.184.216.34", "1.1.1.1", "172.32.0.1", "100.128.0.1", "2606:4700::1111", "2a00:1450::1"} {
		require.False(t, webhook.Forbidden(netip.MustParseAddr(a)), a)
	}
	require.True(t, webhook.Forbidden(netip.Addr{}), "the zero address")
}

// fakeResolver answers each lookup of a name with the next of its answers
// (the last one repeated): the first lookup can say a public address and
// the next a private one, as a rebinding DNS server does.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][][]netip.Addr
	calls   map[string]int
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	list, ok := r.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	i := min(r.calls[host], len(list)-1)
	r.calls[host]++
	return list[i], nil
}

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

// recorder is a connect step that only records: it never opens a socket,
// so a broken guard still sends no packet anywhere.
type recorder struct {
	mu   sync.Mutex
	seen []string
}

var errRecordedOnly = errors.New("recorded, not connected")

func (r *recorder) connect(_ context.Context, _, address string) (net.Conn, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, address)
	return nil, errRecordedOnly
}

func (r *recorder) addresses() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

// TestGuardRefusesPrivateDestinationsAtConnectTime: names resolving to
// private, metadata or mixed addresses, IP literals, and a name that
// rebinds after a first, public answer. The connect step only records, and
// it never sees a forbidden address.
func TestGuardRefusesPrivateDestinationsAtConnectTime(t *testing.T) {
	t.Parallel()
	res := &fakeResolver{calls: map[string]int{}, answers: map[string][][]netip.Addr{
		"private.example":  {addrs("10.0.0.5")},
		"metadata.example": {addrs("169.254.169.254")},
		"loop6.example":    {addrs("::1")},
		"mixed.example":    {addrs("93.184.216.34", "10.0.0.5")},
		"mapped.example":   {addrs("::ffff:169.254.169.254")},
		// Public when first asked, private from then on.
		"rebind.example": {addrs("93.184.216.34"), addrs("10.0.0.5")},
	}}
	rec := &recorder{}
	s := webhook.NewSender(webhook.SenderOptions{Dial: webhook.Guard(webhook.GuardOptions{Resolver: res, Connect: rec.connect})})
	send := func(url string) webhook.Outcome {
		return s.Send(t.Context(), webhook.Message{ID: "id-1", URL: url, Secret: webhook.NewSecret(), Body: []byte(`{}`)})
	}
	for _, url := range []string{
		"http://private.example/hook", "https://metadata.example/latest/meta-data/", "http://loop6.example:8080/",
		"http://mixed.example/", "http://mapped.example/", "http://10.0.0.5/", "http://169.254.169.254/latest/",
		"http://[fd00::1]:5432/", "http://[::ffff:10.0.0.5]/",
	} {
		out := send(url)
		require.Equal(t, webhook.Network, out.Result, url)
		require.Equal(t, "destination refused: not a public address", out.Error, url)
	}
	require.Empty(t, rec.addresses(), "no forbidden address reached the connect step")

	// Rebinding: the first attempt finds a public address (recorded, not
	// connected); the second finds the private one and is refused.
	require.NoError(t, webhook.CheckHost("http://rebind.example/", false), "a name passes the add-time check")
	out := send("http://rebind.example/hook")
	require.Equal(t, webhook.Network, out.Result)
	require.Equal(t, []string{"93.184.216.34:80"}, rec.addresses())
	out = send("http://rebind.example/hook")
	require.Equal(t, "destination refused: not a public address", out.Error)
	require.Equal(t, []string{"93.184.216.34:80"}, rec.addresses(), "the rebound address never reached the connect step")

	// The socket-level check refuses too, should anything hand the dialer
	// a forbidden address directly.
	for _, a := range []string{"10.0.0.5:80", "169.254.169.254:80", "[::1]:80", "127.0.0.1:5432", "[fd00::1]:7233"} {
		require.ErrorIs(t, webhook.ControlForbidden("tcp", a, nil), webhook.ErrForbiddenDestination, a)
	}
	require.NoError(t, webhook.ControlForbidden("tcp4", "93.184.216.34:443", nil))
}

// TestGuardRefusesLoopbackListeners: real listeners on 127.0.0.1 and
// [::1] see no connection from the guarded sender, reached by IP literal
// or by a name that resolves to them; allowed, they do.
func TestGuardRefusesLoopbackListeners(t *testing.T) {
	t.Parallel()
	var accepted atomic.Int32
	listen := func(network, addr string) string {
		ln, err := net.Listen(network, addr)
		require.NoError(t, err)
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }),
			ConnState: func(_ net.Conn, st http.ConnState) {
				if st == http.StateNew {
					accepted.Add(1)
				}
			}}
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close() })
		return ln.Addr().String()
	}
	v4, v6 := listen("tcp4", "127.0.0.1:0"), listen("tcp6", "[::1]:0")
	_, v4port, _ := net.SplitHostPort(v4)
	res := &fakeResolver{calls: map[string]int{}, answers: map[string][][]netip.Addr{"loop.example": {addrs("127.0.0.1")}}}
	urls := []string{"http://" + v4 + "/hook", "http://" + v6 + "/hook", "http://loop.example:" + v4port + "/hook"}
	send := func(s *webhook.Sender, url string) webhook.Outcome {
		return s.Send(t.Context(), webhook.Message{ID: "id-1", URL: url, Secret: webhook.NewSecret(), Body: []byte(`{}`)})
	}
	guarded := webhook.NewSender(webhook.SenderOptions{Dial: webhook.Guard(webhook.GuardOptions{Resolver: res})})
	for _, url := range urls {
		out := send(guarded, url)
		require.Equal(t, webhook.Network, out.Result, url)
		require.Equal(t, "destination refused: not a public address", out.Error, url)
	}
	for _, url := range urls[:2] {
		require.Error(t, webhook.CheckHost(url, false), "an IP literal is refused when added too: %s", url)
	}
	require.Zero(t, accepted.Load(), "the listeners saw no connection")
	require.Error(t, webhook.CheckHost("http://localhost:8080/", false))
	require.Error(t, webhook.CheckHost("http://[::1]/", false))
	require.NoError(t, webhook.CheckHost("http://127.0.0.1/", true))

	allowed := webhook.NewSender(webhook.SenderOptions{Dial: webhook.Guard(webhook.GuardOptions{Resolver: res, AllowPrivate: true})})
	for _, url := range urls {
		require.Equal(t, webhook.Delivered, send(allowed, url).Result, url)
	}
	require.Equal(t, int32(3), accepted.Load(), "allowed, each URL connects")
}
