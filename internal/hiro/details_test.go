package hiro

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/fault"
)

// Tx reads through tx/multiple, events past the first page included (the
// detail endpoint is deprecated): no request to /extended/v1/tx/{id}.
func TestTxReadsThroughMultiple(t *testing.T) {
	t.Parallel()
	m := &multipleServer{events: map[string]int{"0x01": 250}}
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	c := newTestClient(t, Config{BaseURL: srv.URL})
	tx, err := c.Tx(t.Context(), "0x01")
	require.NoError(t, err)
	require.True(t, tx.EventsComplete())
	require.Len(t, tx.Events, 250)
	require.Equal(t, 3, m.multiple, "three pages of events, each through tx/multiple")
	require.Zero(t, m.singles)
	require.Equal(t, 3, tx.Requests)
}

// Once the detail endpoint answered its sunset, a transaction tx/multiple
// does not find is not found, without asking the detail again.
func TestSunsetDetailIsNotAskedAgain(t *testing.T) {
	t.Parallel()
	m := &multipleServer{events: map[string]int{"0x01": 1}}
	gone := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/extended/v1/tx/multiple" {
			gone++
			w.WriteHeader(http.StatusGone)
			_, _ = w.Write([]byte(`{"error":"Gone","message":"This endpoint has been disabled. See https://docs.hiro.so/stacks/api for more information"}`))
			return
		}
		m.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t, Config{BaseURL: srv.URL})
	for range 3 {
		got, _, err := c.Txs(t.Context(), []string{"0x01", "0xdead"})
		require.NoError(t, err)
		require.NoError(t, got["0x01"].Err)
		require.Equal(t, pacer.ClassNotFound, fault.ClassOf(got["0xdead"].Err))
	}
	require.Equal(t, 1, gone, "the deprecated detail is asked once, then never again")
	require.True(t, c.Sunset(EndpointDetail))
	require.Len(t, c.logs.FilterMessage("hiro.sunset").All(), 1)
	// Another client of the process, on the same Hiro, knows it too.
	other := newTestClient(t, Config{BaseURL: srv.URL})
	_, err := other.detail(t.Context(), "0xdead")
	require.ErrorIs(t, err, ErrSunset)
	require.Equal(t, 1, gone)
}

// A batch is as long as the URL allows (about 195 ids in 14 KiB), not 20;
// an answer longer than the client takes is split in halves.
func TestTxsBatchesByURLAndAnswer(t *testing.T) {
	t.Parallel()
	m := &multipleServer{events: map[string]int{}}
	var ids []string
	for i := range 400 {
		id := fmt.Sprintf("0x%064x", i)
		ids = append(ids, id)
		m.events[id] = 2
	}
	var longest int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		longest = max(longest, len(r.RequestURI))
		m.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t, Config{BaseURL: srv.URL})
	got, requests, err := c.Txs(t.Context(), ids)
	require.NoError(t, err)
	require.Len(t, got, 400)
	require.GreaterOrEqual(t, MaxBatch, 190)
	require.Equal(t, 3, requests, "400 ids in three requests")
	require.LessOrEqual(t, longest, 14<<10, "each request line within the server's header limit")
	for _, id := range ids {
		require.NoError(t, got[id].Err)
	}

	// An answer over the client's cap: halves until each fits.
	big := &multipleServer{events: map[string]int{}}
	var few []string
	for i := range 8 {
		id := fmt.Sprintf("0x%064x", i)
		few = append(few, id)
		big.events[id] = 1
	}
	pad := strings.Repeat(" ", maxBody/3)
	srv2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := len(r.URL.Query()["tx_id"])
		rec := httptest.NewRecorder()
		big.ServeHTTP(rec, r)
		body := rec.Body.String()
		_, _ = w.Write([]byte(body[:len(body)-2] + strings.Repeat(pad, n/2) + "}\n")) // grows with the batch
	}))
	t.Cleanup(srv2.Close)
	c2 := newTestClient(t, Config{BaseURL: srv2.URL})
	got, requests, err = c2.Txs(t.Context(), few)
	require.NoError(t, err)
	for _, id := range few {
		require.NoError(t, got[id].Err, id)
	}
	require.Equal(t, 1+2, requests, "8 too long for the client, two 4s fit")
}
