package api

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"
)

// cell keeps one value that is costly to get (a billed Temporal query, a
// GROUP BY over every swap, a health check) for any number of concurrent
// readers: at most one fetch is ever in flight, a success is reused for ttl
// and a failure for failTTL, and a reader that cannot wait gets the last
// good value, marked stale, instead of starting another fetch. A fetch runs
// detached from the request that started it, bounded by timeout, so one
// impatient client does not cancel it for the others.
type cell[T any] struct {
	what    string
	fetch   func(context.Context) (T, error)
	ttl     time.Duration
	failTTL time.Duration
	timeout time.Duration
	// staleOK serves a value past its TTL at once, refreshing it in the
	// background, for a value that barely moves: no reader waits while one
	// is known.
	staleOK bool
	// onFailure sees each failed fetch once, however many readers it had:
	// the place to log the raw error.
	onFailure func(error)
	metrics   *cellMetrics
	// clock is time.Now unless a test sets it.
	clock func() time.Time

	group singleflight.Group

	mu     sync.Mutex
	good   T
	have   bool
	goodAt time.Time
	err    error // the last fetch's failure; nil once one succeeds
	errAt  time.Time
}

// reading is what a reader gets.
type reading[T any] struct {
	// Value is the last good value, when Have.
	Value T
	Have  bool
	// At is when Value was fetched.
	At time.Time
	// Fresh says Value is within its TTL and no fetch has failed since.
	Fresh bool
	// Err is the last fetch's failure, when none has succeeded since.
	Err error
	// Waiting says the reader's deadline ended while a fetch was still in
	// flight: the dependency is slow.
	Waiting bool
}

// get returns a fresh value, waiting for a fetch (its own or one already in
// flight) until ctx ends; then whatever is known.
func (c *cell[T]) get(ctx context.Context) reading[T] {
	r, ok := c.cached()
	if ok {
		return r
	}
	ch := c.group.DoChan(c.what, func() (any, error) {
		// A fetch that ended between cached and DoChan has answered already.
		if _, ok := c.cached(); !ok {
			c.fetchOnce()
		}
		return nil, nil
	})
	if c.staleOK && r.Have {
		return r
	}
	select {
	case <-ch:
		r, _ := c.cached()
		return r
	case <-ctx.Done():
		r := c.snapshot()
		r.Waiting = true
		return r
	}
}

// cached returns the reading when the cell need not fetch: its value is
// fresh, or its last failure is recent enough to be served again.
func (c *cell[T]) cached() (reading[T], bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	switch {
	case c.err != nil && now.Sub(c.errAt) < c.failTTL:
		return c.readingLocked(), true
	case c.err == nil && c.have && now.Sub(c.goodAt) < c.ttl:
		return c.readingLocked(), true
	}
	return c.readingLocked(), false
}

func (c *cell[T]) snapshot() reading[T] {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readingLocked()
}

func (c *cell[T]) readingLocked() reading[T] {
	r := reading[T]{Value: c.good, Have: c.have, At: c.goodAt, Err: c.err}
	r.Fresh = c.have && c.err == nil && c.now().Sub(c.goodAt) < c.ttl
	return r
}

func (c *cell[T]) now() time.Time {
	if c.clock != nil {
		return c.clock()
	}
	return time.Now()
}

func (c *cell[T]) fetchOnce() {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	c.metrics.start(c.what)
	v, err := c.fetch(ctx)
	c.metrics.end(c.what)
	c.mu.Lock()
	if err != nil {
		c.err, c.errAt = err, c.now()
	} else {
		c.good, c.have, c.goodAt, c.err = v, true, c.now(), nil
	}
	c.mu.Unlock()
	if err != nil && c.onFailure != nil {
		c.onFailure(err)
	}
}

// cellMetrics count the fetches behind the caches, so that an operator (and
// a test) can see that a storm of requests made one call. Nil counts
// nothing.
type cellMetrics struct {
	total    *prometheus.CounterVec
	inFlight *prometheus.GaugeVec
}

func newCellMetrics(reg prometheus.Registerer, whats ...string) *cellMetrics {
	m := &cellMetrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pacer_api_fetches_total",
			Help: "Calls the API made behind its single-flight caches, by what they fetched (status: a Temporal query; tracked_tokens: the traded-token ranking; postgres, temporal: readiness checks).",
		}, []string{"what"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "pacer_api_fetches_in_flight",
			Help: "Calls in flight behind the API's single-flight caches, by what they fetch: never more than 1 each.",
		}, []string{"what"}),
	}
	for _, w := range whats {
		m.total.WithLabelValues(w)
		m.inFlight.WithLabelValues(w)
	}
	if reg == nil {
		return m
	}
	m.total = register(reg, m.total)
	m.inFlight = register(reg, m.inFlight)
	return m
}

// register registers c, or returns the collector already registered under
// its name (a second Server on the same registry shares the series).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(fmt.Sprintf("api: register %T: %v", c, err)) // a programming error: two metrics of one name
	}
	return c
}

func (m *cellMetrics) start(what string) {
	if m != nil {
		m.total.WithLabelValues(what).Inc()
		m.inFlight.WithLabelValues(what).Inc()
	}
}

func (m *cellMetrics) end(what string) {
	if m != nil {
		m.inFlight.WithLabelValues(what).Dec()
	}
}

// keyed holds a cell per distinct key, for reads whose answer depends on
// their parameters (a rollups range, a trades page). It is bounded in
// entries and in the bytes its answers hold: past either bound it starts
// over, which costs a fetch per entry at worst and keeps a flood of
// distinct keys from growing it.
type keyed[K comparable, T any] struct {
	// newCell makes the cell of a key; its fetch reports what the answer
	// weighs through add.
	newCell    func(k K, add func(bytes int)) *cell[T]
	maxEntries int
	maxBytes   int

	mu    sync.Mutex
	cells map[K]*cell[T]
	bytes int
}

func newKeyed[K comparable, T any](maxEntries, maxBytes int, newCell func(K, func(int)) *cell[T]) *keyed[K, T] {
	return &keyed[K, T]{newCell: newCell, maxEntries: maxEntries, maxBytes: maxBytes, cells: map[K]*cell[T]{}}
}

func (c *keyed[K, T]) get(k K) *cell[T] {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.cells[k]; ok {
		return cl
	}
	if len(c.cells) >= c.maxEntries || c.bytes >= c.maxBytes {
		clear(c.cells)
		c.bytes = 0
	}
	cl := c.newCell(k, func(n int) {
		c.mu.Lock()
		c.bytes += n
		c.mu.Unlock()
	})
	c.cells[k] = cl
	return cl
}

// len is how many keys the cache holds.
func (c *keyed[K, T]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.cells)
}

// pageSet keeps the encoded pages of one computation of an answer (the
// leaderboard's), up to a bound in pages and bytes: a page past it is
// encoded for its request and not kept. Every offset and limit is a
// distinct page, and while the answer cannot be recomputed (Postgres
// down) its computation lives on: without the bound, distinct pages would
// pile up for as long as the outage lasts.
type pageSet[K comparable] struct {
	mu    sync.Mutex
	pages map[K]encodedRead
	bytes int
}

// The leaderboard's bound: its canonical pages (every sort, limit 50,
// 10,000 agents) are 800; at 200 rows a page is ~46 KB.
const (
	maxBoardPages     = 1024
	maxBoardPageBytes = 16 << 20
)

// get returns k's page, encoding it with enc the first time; it is kept
// while the set is within its bounds.
func (p *pageSet[K]) get(k K, enc func() (encodedRead, error)) (encodedRead, error) {
	p.mu.Lock()
	e, ok := p.pages[k]
	p.mu.Unlock()
	if ok {
		return e, nil
	}
	e, err := enc()
	if err != nil {
		return encodedRead{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if kept, ok := p.pages[k]; ok {
		return kept, nil
	}
	if len(p.pages) < maxBoardPages && p.bytes+len(e.body) <= maxBoardPageBytes {
		if p.pages == nil {
			p.pages = map[K]encodedRead{}
		}
		p.pages[k] = e
		p.bytes += len(e.body)
	}
	return e, nil
}

// len is how many pages the set keeps.
func (p *pageSet[K]) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pages)
}
