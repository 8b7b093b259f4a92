package hiro

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/fault"
)

// fakeEvents serves one transaction whose events come a page at a time,
// as Hiro serves them: 20 unless event_limit asks for more, at most 100.
type fakeEvents struct {
	mu      *sync.Mutex
	count   int // event_count
	real    int // events that exist (fewer than count: an indexer behind)
	perPage int // the most a page holds whatever is asked (0 = 100)
	// ignoreOffset serves every page from the start.
	ignoreOffset bool
	// otherTxAfter answers about another transaction after that many pages.
	otherTxAfter int
	queries      []string
}

func (f *fakeEvents) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries = append(f.queries, r.URL.RawQuery)
	q := r.URL.Query()
	limit, offset := 20, 0
	if s := q.Get("event_limit"); s != "" {
		limit, _ = strconv.Atoi(s)
	}
	if limit > 100 {
		http.Error(w, `{"error":"event_limit"}`, http.StatusBadRequest)
		return
	}
	if f.perPage > 0 {
		limit = min(limit, f.perPage)
	}
	if s := q.Get("event_offset"); s != "" && !f.ignoreOffset {
		offset, _ = strconv.Atoi(s)
	}
	var events []map[string]any
	for i := offset; i < min(offset+limit, f.real); i++ {
		events = append(events, map[string]any{"event_index": i, "event_type": "stx_asset",
			"asset": map[string]any{"asset_event_type": "transfer", "amount": strconv.Itoa(i)}})
	}
	id := "0x01"
	if f.otherTxAfter > 0 && len(f.queries) > f.otherTxAfter {
		id = "0x02"
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"tx_id": id, "tx_status": "success", "event_count": f.count, "events": events})
}

func TestTxPagesEvents(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name         string
		giveFake     fakeEvents
		wantQueries  []string
		wantEvents   int
		wantComplete bool
		wantClass    pacer.ErrorClass
	}{
		{
			name:         "30 events in one request",
			giveFake:     fakeEvents{count: 30, real: 30},
			wantQueries:  []string{"event_limit=100"},
			wantEvents:   30,
			wantComplete: true,
		},
		{
			name:         "250 events in three",
			giveFake:     fakeEvents{count: 250, real: 250},
			wantQueries:  []string{"event_limit=100", "event_limit=100&event_offset=100", "event_limit=100&event_offset=200"},
			wantEvents:   250,
			wantComplete: true,
		},
		{
			name:         "a server that serves 20 whatever is asked is paged on",
			giveFake:     fakeEvents{count: 45, real: 45, perPage: 20},
			wantQueries:  []string{"event_limit=100", "event_limit=100&event_offset=20", "event_limit=100&event_offset=40"},
			wantEvents:   45,
			wantComplete: true,
		},
		{
			name:        "a server that ignores the offset: one more request, then incomplete",
			giveFake:    fakeEvents{count: 45, real: 45, perPage: 20, ignoreOffset: true},
			wantQueries: []string{"event_limit=100", "event_limit=100&event_offset=20"},
			wantEvents:  20,
		},
		{
			name:        "fewer events than event_count: incomplete",
			giveFake:    fakeEvents{count: 130, real: 110},
			wantQueries: []string{"event_limit=100", "event_limit=100&event_offset=100", "event_limit=100&event_offset=110"},
			wantEvents:  110,
		},
		{
			name:        "an absurd event_count costs at most maxEventPages requests",
			giveFake:    fakeEvents{count: 1 << 30, real: 1 << 30},
			wantEvents:  maxEventPages * EventLimit,
			wantQueries: nil, // checked by count below
		},
		{
			name:      "a page about another transaction is unusable",
			giveFake:  fakeEvents{count: 150, real: 150, otherTxAfter: 1},
			wantClass: pacer.ClassParseError,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := &tt.giveFake
			f.mu = &sync.Mutex{}
			srv := httptest.NewServer(f)
			t.Cleanup(srv.Close)
			c := newTestClient(t, Config{BaseURL: srv.URL})

			tx, err := c.detail(t.Context(), "0x01")
			if tt.wantClass != "" {
				require.Equal(t, tt.wantClass, fault.ClassOf(err))
				return
			}
			require.NoError(t, err)
			require.Len(t, tx.Events, tt.wantEvents)
			for i, e := range tx.Events {
				require.Equal(t, i, e.EventIndex, "each event once, in order")
			}
			require.Equal(t, tt.wantComplete, tx.EventsComplete())
			require.Equal(t, len(f.queries), tx.Requests, "every page is counted")
			if tt.wantQueries != nil {
				require.Equal(t, tt.wantQueries, f.queries)
			} else {
				require.Len(t, f.queries, maxEventPages)
			}
		})
	}
}

func TestTxEventPageFailureFailsTheCall(t *testing.T) {
	t.Parallel()
	first := `{"tx_id":"0x01","tx_status":"success","event_count":101,"events":[` + `{"event_index":0}` + `]}`
	srv, fake := newFakeHiro(t, ok(first), canned{status: 503})
	c := newTestClient(t, Config{BaseURL: srv.URL})
	tx, err := c.detail(t.Context(), "0x01")
	require.Equal(t, pacer.ClassServerError, fault.ClassOf(err))
	require.Equal(t, 1+maxFailureAttempts, tx.Requests)
	require.Len(t, fake.calls(), 1+maxFailureAttempts)
}

func TestTxCanonical(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		give string
		want bool
	}{
		{name: "not said (mempool)", give: `{}`, want: true},
		{name: "both true", give: `{"canonical":true,"microblock_canonical":true}`, want: true},
		{name: "a fork that lost", give: `{"canonical":false,"microblock_canonical":true}`},
		{name: "a microblock that lost", give: `{"canonical":true,"microblock_canonical":false}`},
	}
	for _, tt := range tests {
		var tx Tx
		require.NoError(t, json.Unmarshal([]byte(tt.give), &tx))
		require.Equal(t, tt.want, tx.IsCanonical(), tt.name)
	}
}
