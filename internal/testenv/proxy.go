package testenv

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"
)

// PGProxy stands between a test and Postgres, to make the database fail
// the ways a network does: Cut drops every open connection and refuses new
// ones, as a database that crashed or failed over does; SetDelay holds
// every answer back, as a slow or overloaded one does. The machine's
// Postgres itself is shared and never touched.
type PGProxy struct {
	// URL is the database URL through the proxy.
	URL    string
	target string
	ln     net.Listener
	closed chan struct{}

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
	delay time.Duration
	// changed is closed (and replaced) when the delay changes, so answers
	// already held back are held to the new delay.
	changed chan struct{}
}

// StartPGProxy proxies to the host of dbURL until t ends.
func StartPGProxy(t testing.TB, dbURL string) *PGProxy {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("testenv: proxy: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testenv: proxy: %v", err)
	}
	p := &PGProxy{target: u.Host, ln: ln, conns: map[net.Conn]struct{}{}, closed: make(chan struct{}), changed: make(chan struct{})}
	u.Host = ln.Addr().String()
	p.URL = u.String()
	go p.serve()
	t.Cleanup(func() {
		close(p.closed)
		_ = ln.Close()
		p.Cut()
	})
	return p
}

func (p *PGProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

func (p *PGProxy) forward(c net.Conn) {
	p.mu.Lock()
	if p.down {
		p.mu.Unlock()
		_ = c.Close()
		return
	}
	p.conns[c] = struct{}{}
	p.mu.Unlock()
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	p.conns[up] = struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, &delayed{r: up, p: p}); done <- struct{}{} }()
	<-done
	_ = c.Close()
	_ = up.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// delayed holds back what Postgres sends until it is the proxy's delay old.
type delayed struct {
	r io.Reader
	p *PGProxy
}

func (d *delayed) Read(b []byte) (int, error) {
	n, err := d.r.Read(b)
	if n == 0 {
		return n, err
	}
	arrived := time.Now()
	for {
		d.p.mu.Lock()
		wait, changed := d.p.delay-time.Since(arrived), d.p.changed
		d.p.mu.Unlock()
		if wait <= 0 {
			return n, err
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-changed:
		case <-d.p.closed:
			t.Stop()
			return 0, io.EOF
		}
		t.Stop()
	}
}

// SetDelay holds every answer from Postgres back until it is d old, those
// already held included (0: none).
func (p *PGProxy) SetDelay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = d
	close(p.changed)
	p.changed = make(chan struct{})
}

// Cut drops every open connection and refuses new ones until Restore.
func (p *PGProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// Restore accepts connections again.
func (p *PGProxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

// HungListener returns the address of a TCP listener that accepts
// connections and never answers on them, until t ends: a Temporal frontend
// (or any server) that hangs.
func HungListener(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testenv: hung listener: %v", err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}
