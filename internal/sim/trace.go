package sim

import (
	"maps"
	"sync"
	"time"
)

// Trace records, once TraceServed is on, when each transaction was first
// served by the feed, by tx/multiple and by /tx/{id} (the real clock, not
// the world's), and when the feed's first page was read: what a
// benchmark needs to tell where a swap's discovery delay went (its block,
// the tail's read that saw it, the detail fetch, the row).
type Trace struct {
	// Feed, Multiple and Detail are keyed by txid; Pushed is when the
	// WebSocket sent a transaction's address_tx_update.
	Feed, Multiple, Detail, Pushed map[string]time.Time
	// Heads are the times the feed's first page (offset 0) was read.
	Heads []time.Time
}

type tracer struct {
	mu sync.Mutex
	on bool
	tr Trace
}

// TraceServed turns the trace on (from now) or off; turning it on clears it.
func (s *Server) TraceServed(on bool) {
	s.trace.mu.Lock()
	defer s.trace.mu.Unlock()
	s.trace.on = on
	if on {
		s.trace.tr = Trace{Feed: map[string]time.Time{}, Multiple: map[string]time.Time{}, Detail: map[string]time.Time{},
			Pushed: map[string]time.Time{}}
	}
}

// Traced returns a copy of the trace.
func (s *Server) Traced() Trace {
	s.trace.mu.Lock()
	defer s.trace.mu.Unlock()
	return Trace{Feed: maps.Clone(s.trace.tr.Feed), Multiple: maps.Clone(s.trace.tr.Multiple), Detail: maps.Clone(s.trace.tr.Detail),
		Pushed: maps.Clone(s.trace.tr.Pushed),
		Heads:  append([]time.Time(nil), s.trace.tr.Heads...)}
}

// served notes transactions served in m, one of the trace's maps (the
// field's address: TraceServed replaces the maps).
func (t *tracer) served(m *map[string]time.Time, head bool, txs ...*worldTx) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.on {
		return
	}
	now := time.Now()
	if head {
		t.tr.Heads = append(t.tr.Heads, now)
	}
	for _, tx := range txs {
		if _, ok := (*m)[tx.TxID]; !ok {
			(*m)[tx.TxID] = now
		}
	}
}
