package admin_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/activities"
	"github.com/pacer-dev/pacer/internal/actor"
	"github.com/pacer-dev/pacer/internal/admin"
	"github.com/pacer-dev/pacer/internal/discovery"
	"github.com/pacer-dev/pacer/internal/operate"
	"github.com/pacer-dev/pacer/internal/store"
	"github.com/pacer-dev/pacer/internal/testenv"
	"github.com/pacer-dev/pacer/internal/webhook"
)

// clock is the test's time, shared by the operations and the deliver
// activity.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// receiver is a subscriber's endpoint that fails while told to, and checks
// each arrival's signature with the standard-webhooks library against each
// secret it was given, separately: a receiver knowing only that secret.
type receiver struct {
	srv *httptest.Server

	mu       sync.Mutex
	failing  bool
	secrets  []string
	arrivals []arrival
}

type arrival struct {
	id       string
	verified []bool // per secret, in the order given
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		a := arrival{id: req.Header.Get("webhook-id")}
		for _, s := range r.secrets {
			wh, err := standardwebhooks.NewWebhook(s)
			require.NoError(t, err)
			a.verified = append(a.verified, wh.Verify(body, req.Header) == nil)
		}
		r.arrivals = append(r.arrivals, a)
		if r.failing {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) set(failing bool, secrets ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failing, r.secrets = failing, secrets
}

// take returns the arrivals since the last take.
func (r *receiver) take() []arrival {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.arrivals
	r.arrivals = nil
	return out
}

// api calls the admin API as the operator "alice", as the operator
// listener would once her token is checked.
type api struct {
	t    *testing.T
	base string
}

func (a api) do(method, path string, body any, wantStatus int, out any) {
	a.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(a.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(a.t.Context(), method, a.base+path, rd)
	require.NoError(a.t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(a.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(a.t, err)
	if wantStatus != 0 { // 0: any
		require.Equal(a.t, wantStatus, resp.StatusCode, "%s %s: %s", method, path, raw)
	}
	if out != nil {
		// Fields the answer leaves out (omitempty) must not keep an
		// earlier answer's values.
		v := reflect.ValueOf(out).Elem()
		v.Set(reflect.Zero(v.Type()))
		require.NoError(a.t, json.Unmarshal(raw, out), string(raw))
	}
}

// newAPI serves admin.New over real HTTP with the actor set as the
// operator listener sets it.
func newAPI(t *testing.T, svc *operate.Service) api {
	h := admin.New(admin.Options{Operate: svc, Logger: zaptest.NewLogger(t)})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(actor.With(r.Context(), "alice")))
	}))
	t.Cleanup(srv.Close)
	return api{t: t, base: srv.URL + admin.Prefix}
}

// The operator story through the admin API only (no CLI, no SQL
// on the subscriber or its deliveries), on real Postgres, real HTTP and
// the real deliver activity: add a subscriber, change its filters, let it
// fail until it is disabled, enable it, recover what it missed, rotate its
// secret while deliveries flow (nothing fails verification at a receiver
// that knows either secret during the overlap), delete it; its deliveries
// remain readable; every step is in the audit log with actor, before and
// after.
func TestSubscriberLifecycleThroughTheAdminAPI(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	clk := &clock{}
	t0 := time.Date(2026, 11, 2, 0, 0, 30, 0, time.UTC)
	clk.Set(t0)
	const disableAfter = 3 * time.Hour
	acts := activities.New(activities.Options{
		Discovery: discovery.Config{Mode: "agents"}, // per-agent visits, as these tests were written for
		Store:     st, Logger: zaptest.NewLogger(t, zaptest.Level(zap.ErrorLevel)),
		TeneroBaseURL: "http://127.0.0.1:1", HiroBaseURL: "http://127.0.0.1:1",
		DeliveryLadder: webhook.Ladder{20 * time.Minute, 20 * time.Minute, 20 * time.Minute},
		DisableAfter:   disableAfter, Clock: clk.Now,
		WebhookAllowPrivate: true, // the receivers are on loopback
	})
	// Each run is its own occurrence (the ledger answers a repeated one
	// with its first result), as the scheduler makes them.
	var runs atomic.Int64
	runDeliver := func() (converter.EncodedValue, error) {
		var suite testsuite.WorkflowTestSuite
		env := suite.NewTestActivityEnvironment()
		env.RegisterActivity(acts)
		return env.ExecuteActivity(acts.Deliver, pacer.DeliverInput{Occurrence: pacer.Occurrence{
			Task: pacer.TaskDeliver, NominalAt: clk.Now().Add(time.Duration(runs.Add(1)) * time.Millisecond)}})
	}
	deliver := func() pacer.DeliverResult {
		t.Helper()
		v, err := runDeliver()
		require.NoError(t, err)
		var res pacer.DeliverResult
		require.NoError(t, v.Get(&res))
		return res
	}
	// The rollups the deliveries carry: 40 closed hours from t0's hour.
	// (Fixture data, not an operator's step.)
	hour0 := t0.Truncate(time.Hour)
	for h := range 40 {
		start := hour0.Add(time.Duration(h) * time.Hour)
		for _, row := range []struct{ kind, subject, data string }{
			{"competition", "all", `{"swaps":1}`}, {"token", "stx", `{"close":"1.5"}`}, {"token", "other", `{"close":"2"}`},
		} {
			_, err := st.Pool().Exec(t.Context(), `
insert into rollups (period, period_start, period_end, subject_kind, subject, data, complete, computed_at)
values ('hour', $1, $2, $3, $4, $5, true, $2)`, start, start.Add(time.Hour), row.kind, row.subject, row.data)
			require.NoError(t, err)
		}
	}
	svc := &operate.Service{Store: st, SecretOverlap: 24 * time.Hour, Now: clk.Now, AllowPrivate: true} // the receiver is on loopback
	a := newAPI(t, svc)
	rcv := newReceiver(t)
	at := func(h int) { clk.Set(hour0.Add(time.Duration(h)*time.Hour + 5*time.Second)) }

	// 1. Add a subscriber; the secret comes back once.
	var created struct {
		Subscriber store.Subscriber `json:"subscriber"`
		Secret     string           `json:"secret"`
	}
	a.do("POST", "subscribers", map[string]any{"url": rcv.srv.URL + "/hook?k=t0ps3cret", "events": []string{"hourly"}}, 201, &created)
	id, s1 := created.Subscriber.ID, created.Secret
	require.True(t, webhook.ValidSubscriberID(id))
	require.Equal(t, store.SubscriberActive, created.Subscriber.Status)

	// 2. Change its filters.
	var sub store.Subscriber
	a.do("PATCH", "subscribers/"+id, map[string]any{"tokens": []string{"stx"}}, 200, &sub)
	require.Equal(t, []string{"stx"}, sub.Tokens)

	// 3. It fails every attempt until, PACER_DISABLE_AFTER after its first
	// failure, it is disabled with its reason.
	rcv.set(true, s1)
	for h := 1; h <= 4; h++ {
		at(h)
		res := deliver()
		require.Zero(t, res.Delivered)
		require.Positive(t, res.Failed)
		a.do("GET", "subscribers/"+id, nil, 200, &sub)
		if h < 4 {
			require.Equal(t, store.SubscriberActive, sub.Status, "hour %d: failing for less than %s", h, disableAfter)
			require.Equal(t, hour0.Add(time.Hour+5*time.Second), sub.FailingSince.UTC(), "failing since its first failure")
		}
	}
	require.Equal(t, store.SubscriberDisabled, sub.Status)
	require.Contains(t, sub.DisabledReason, "failed every attempt for 3h0m0s")
	require.Positive(t, sub.FailureStreak)
	var ds struct{ Deliveries []store.Delivery }
	a.do("GET", "subscribers/"+id+"/deliveries?status=exhausted", nil, 200, &ds)
	missedWhileFailing := len(ds.Deliveries)
	require.Equal(t, 4, missedWhileFailing, "hours 0-3, each exhausted by the disable")
	// While disabled, nothing is attempted and no period is emitted.
	rcv.take()
	at(6)
	require.Zero(t, deliver().Attempted)
	require.Empty(t, rcv.take())

	// 4. Enable it, and 5. recover what it missed: the four periods
	// exhausted while it failed, and the two that ended while it was
	// disabled, never created (recover creates them; the next emission
	// would too, within its lookback).
	rcv.set(false, s1)
	a.do("POST", "subscribers/"+id+"/enable", nil, 200, &sub)
	require.Equal(t, store.SubscriberActive, sub.Status)
	require.Nil(t, sub.FailingSince)
	var rec store.Recovered
	a.do("POST", "deliveries/recover", map[string]any{"subscriber": id, "from": hour0.Format(time.RFC3339),
		"to": clk.Now().Format(time.RFC3339)}, 200, &rec)
	require.Equal(t, missedWhileFailing+2, rec.Count)
	require.Equal(t, map[string]int{store.DeliveryExhausted: missedWhileFailing, store.RecoveredMissing: 2}, rec.From)
	res := deliver()
	require.Equal(t, missedWhileFailing+2, res.Delivered)
	require.Zero(t, res.Emitted, "nothing left for the emission")
	a.do("GET", "subscribers/"+id+"/deliveries", nil, 200, &ds)
	require.Len(t, ds.Deliveries, 6)
	for _, d := range ds.Deliveries {
		require.Equal(t, store.DeliveryDelivered, d.Status, d.ID)
	}
	for _, arr := range rcv.take() {
		require.Equal(t, []bool{true}, arr.verified, arr.id)
	}

	// 6. Rotate its secret while deliveries flow: every delivered period
	// is recovered again, and deliver runs while the rotation happens.
	a.do("POST", "deliveries/recover", map[string]any{"subscriber": id, "statuses": []string{"delivered"},
		"from": hour0.Format(time.RFC3339)}, 200, &rec)
	require.Equal(t, 6, rec.Count)
	var rot operate.Rotated
	var wg sync.WaitGroup
	wg.Add(1)
	var flowing error
	go func() {
		defer wg.Done()
		_, flowing = runDeliver()
	}()
	a.do("POST", "subscribers/"+id+"/rotate-secret", nil, 200, &rot)
	wg.Wait()
	require.NoError(t, flowing)
	s2 := rot.Secret
	require.NotEqual(t, s1, s2)
	require.Equal(t, clk.Now().Add(24*time.Hour), rot.PreviousSecretUntil)
	// A receiver that knows only the old secret never fails in the
	// overlap; what was signed after the rotation verifies with the new
	// one too.
	for _, arr := range rcv.take() {
		require.True(t, arr.verified[0], "old secret, %s", arr.id)
	}
	rcv.set(false, s1, s2)
	for h := 7; h <= 9; h++ {
		at(h)
		require.Equal(t, 1, deliver().Delivered)
	}
	a.do("POST", "deliveries/"+webhook.DeliveryID(id, "hourly", hour0)+"/redeliver", nil, 200, nil)
	require.Equal(t, 1, deliver().Delivered)
	during := rcv.take()
	require.Len(t, during, 4)
	for _, arr := range during {
		require.Equal(t, []bool{true, true}, arr.verified, "both secrets verify during the overlap: %s", arr.id)
	}
	// Past the overlap only the new secret signs.
	at(6 + 25)
	require.Positive(t, deliver().Delivered)
	for _, arr := range rcv.take() {
		require.Equal(t, []bool{false, true}, arr.verified, arr.id)
	}

	// 7. Delete it: it leaves the list, its deliveries stay readable.
	a.do("DELETE", "subscribers/"+id, nil, 200, &sub)
	require.NotNil(t, sub.DeletedAt)
	var list struct{ Subscribers []store.Subscriber }
	a.do("GET", "subscribers", nil, 200, &list)
	require.Empty(t, list.Subscribers)
	a.do("GET", "subscribers/"+id+"/deliveries?limit=1000", nil, 200, &ds)
	require.Len(t, ds.Deliveries, 6+3+(31-9))
	var d store.Delivery
	a.do("GET", "deliveries/"+webhook.DeliveryID(id, "hourly", hour0), nil, 200, &d)
	require.Equal(t, id, d.SubscriberID)
	require.JSONEq(t, `{"close":"1.5"}`, string(mustField(t, d.Payload, "data", "tokens", "stx")))

	// Every step is in the audit log, with its actor, before and after,
	// and no secret anywhere in it.
	var page struct {
		Entries []store.AuditEntry `json:"entries"`
		Next    *int64             `json:"next"`
	}
	var all []store.AuditEntry
	for before := int64(0); ; {
		a.do("GET", "audit?limit=3&target="+id+"&before="+itoa(before), nil, 200, &page)
		all = append(all, page.Entries...)
		if page.Next == nil {
			break
		}
		before = *page.Next
	}
	var steps []string
	for _, e := range slices.Backward(all) {
		steps = append(steps, e.Actor+" "+e.Action)
		require.NotEmpty(t, e.After, e.Action)
		if e.Action != operate.ActionCreate {
			require.NotEmpty(t, e.Before, e.Action)
		}
		for _, secret := range []string{s1, s2, "t0ps3cret"} {
			require.NotContains(t, string(e.Before)+string(e.After), secret)
		}
	}
	require.Equal(t, []string{
		"alice subscriber.create", "alice subscriber.update", "pacer subscriber.disable", "alice subscriber.enable",
		"alice deliveries.recover", "alice deliveries.recover", "alice subscriber.rotate_secret", "alice subscriber.delete",
	}, steps)
	update := all[len(all)-2]
	require.JSONEq(t, `null`, string(mustField(t, update.Before, "tokens")))
	require.JSONEq(t, `["stx"]`, string(mustField(t, update.After, "tokens")))
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// mustField digs a field out of a JSON document.
func mustField(t *testing.T, doc json.RawMessage, path ...string) json.RawMessage {
	t.Helper()
	for _, p := range path {
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(doc, &m), string(doc))
		doc = m[p]
	}
	return doc
}
