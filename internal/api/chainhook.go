package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/singleflight"

	"github.com/pacer-dev/pacer/internal/chainhook"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/metrics"
	"github.com/pacer-dev/pacer/internal/store"
)

// ChainhookPath is where Chainhooks delivers (SPEC §11).
const ChainhookPath = "/api/chainhook"

// Limits of the chainhook endpoint. Chainhooks retries a delivery that
// fails or times out, then pauses the hook, so an answer must come fast:
// the verification a delivery asks for gets verifyWithin, and what does
// not finish by then is left to the sweep, whose agent the delivery made
// due.
const (
	chainhookAnswerWithin = 5 * time.Second
	chainhookVerifyWithin = 4 * time.Second
	// chainhookMaxVerify bounds the verifications one delivery starts;
	// the agents of the rest are only hinted.
	chainhookMaxVerify = 64
	// chainhookParallel is one delivery's verifications at once.
	chainhookParallel = 4
	// chainhookSlots bounds the deliveries read and parsed at once (each
	// up to chainhook.MaxBodyBytes); chainhookSlotWait is how long one
	// waits for a slot before a 503.
	chainhookSlots    = 4
	chainhookSlotWait = 2 * time.Second
)

// ChainhookResponse answers an accepted delivery.
type ChainhookResponse struct {
	Accepted         bool `json:"accepted"`
	RolledBackBlocks int  `json:"rolledBackBlocks"`
	SwapsRolledBack  int  `json:"swapsRolledBack"`
	AppliedBlocks    int  `json:"appliedBlocks"`
	// Candidates are applied allowlisted calls; Agents how many distinct
	// registered agents sent them (each made due now).
	Candidates   int `json:"candidates"`
	Agents       int `json:"agents"`
	Inserted     int `json:"inserted"`
	AlreadyKnown int `json:"alreadyKnown"`
	Pending      int `json:"pending"`
	Rejected     int `json:"rejected"`
	// Deferred were not verified in time (or past the per-delivery bound):
	// the sweep finds them.
	Deferred int `json:"deferred"`
}

// chainhookState is the endpoint's shared state.
type chainhookState struct {
	// want is the SHA-256 of the Authorization value that passes; nil
	// when no secret is set (the endpoint is off).
	want    []byte
	slots   chan struct{}
	flight  singleflight.Group
	metrics *metrics.Chainhook
}

func newChainhookState(o Options) *chainhookState {
	h := &chainhookState{slots: make(chan struct{}, chainhookSlots), metrics: metrics.NewChainhook(o.Registerer)}
	if o.ChainhookSecret != "" {
		sum := sha256.Sum256([]byte(o.ChainhookSecret))
		h.want = sum[:]
	}
	return h
}

// MinChainhookSecret is the shortest chainhook secret pacer accepts: a
// shorter one could be guessed through the endpoint.
const MinChainhookSecret = 24

// authorized compares digests, so the time taken says nothing about the
// secret, its length included. The scheme is case-insensitive (RFC 9110
// §11.1): "bearer" and "BEARER" pass too.
func (h *chainhookState) authorized(r *http.Request) bool {
	token, _ := bearer(r)
	got := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(got[:], h.want) == 1
}

// chainhookPush takes a Chainhooks delivery (SPEC §11): rollbacks first,
// then applies. Nothing is recorded before the secret is checked.
func (s *Server) chainhookPush(w http.ResponseWriter, r *http.Request) {
	h := s.hook
	if h.want == nil {
		h.metrics.ObservePush(metrics.PushDisabled)
		writeError(w, http.StatusNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
		return
	}
	if !h.authorized(r) {
		h.metrics.ObservePush(metrics.PushUnauthorized)
		w.Header().Set("WWW-Authenticate", `Bearer realm="pacer chainhook"`)
		writeError(w, http.StatusUnauthorized, "missing or wrong bearer secret")
		return
	}
	if r.ContentLength > chainhook.MaxBodyBytes {
		h.metrics.ObservePush(metrics.PushTooLarge)
		writeError(w, http.StatusRequestEntityTooLarge, "delivery body over "+strconv.Itoa(chainhook.MaxBodyBytes>>20)+" MB")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), chainhookAnswerWithin)
	defer cancel()
	if !h.acquire(ctx) {
		h.metrics.ObservePush(metrics.PushBusy)
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "too many deliveries at once")
		return
	}
	p, err := chainhook.Parse(r.Body)
	var applied []chainhook.Candidate
	var rolled []chainhook.RolledBack
	if err == nil {
		applied, rolled, err = chainhook.Extract(p, s.o.Catalog)
	}
	<-h.slots
	if err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			h.metrics.ObservePush(metrics.PushTooLarge)
			writeError(w, http.StatusRequestEntityTooLarge, "delivery body over "+strconv.Itoa(chainhook.MaxBodyBytes>>20)+" MB")
		case errors.Is(err, chainhook.ErrPayload):
			h.metrics.ObservePush(metrics.PushBadRequest)
			writeError(w, http.StatusBadRequest, err.Error())
		default:
			h.metrics.ObservePush(metrics.PushBadRequest)
			writeError(w, http.StatusBadRequest, "could not read the delivery body")
		}
		return
	}

	resp, err := s.takeDelivery(ctx, p, applied, rolled)
	if err != nil {
		// Chainhooks retries; a replay of what did happen changes nothing.
		h.metrics.ObservePush(metrics.PushFailed)
		s.dbError(w, err)
		return
	}
	h.metrics.ObservePush(metrics.PushAccepted)
	writeJSON(w, http.StatusOK, resp)
}

func (h *chainhookState) acquire(ctx context.Context) bool {
	wait := time.NewTimer(chainhookSlotWait)
	defer wait.Stop()
	select {
	case h.slots <- struct{}{}:
		return true
	case <-wait.C:
	case <-ctx.Done():
	}
	return false
}

// takeDelivery records an authenticated, parsed delivery: rolled-back
// blocks leave swaps, applied candidates of registered agents make their
// agents due and are verified within the deadline.
func (s *Server) takeDelivery(ctx context.Context, p chainhook.Payload, applied []chainhook.Candidate, rolled []chainhook.RolledBack) (ChainhookResponse, error) {
	st, h := s.o.Store, s.hook
	resp := ChainhookResponse{Accepted: true, RolledBackBlocks: len(rolled), AppliedBlocks: len(p.Event.Apply)}
	if err := st.NoteChainhookDelivery(ctx, time.Now()); err != nil {
		return resp, err
	}
	for _, rb := range rolled {
		moved, err := st.RollbackBlock(ctx, rb.Block.Hash, rb.Block.Height, rb.TxIDs)
		if err != nil {
			return resp, err
		}
		h.metrics.ObserveRollback(len(moved))
		resp.SwapsRolledBack += len(moved)
		for _, m := range moved {
			s.o.Logger.Info("api.chainhook_rolled_back", zap.String("txid", m.TxID), zap.String("block", rb.Block.Hash))
			// Only a rollback that moved swaps hints, and a replay moves
			// none: this needs no debounce, and must not wait for one.
			s.hintAgentEvery(ctx, m.Sender, 0)
		}
	}

	resp.Candidates = len(applied)
	if len(applied) == 0 {
		return resp, nil
	}
	senders := make([]string, 0, len(applied))
	for _, c := range applied {
		senders = append(senders, c.Sender)
	}
	agents, err := st.RegisteredAgents(ctx, senders)
	if err != nil {
		return resp, err
	}
	registered := make(map[string]bool, len(agents))
	for _, a := range agents {
		registered[a] = true
	}
	var mine []chainhook.Candidate
	var noted []store.ChainhookTx
	for _, c := range applied {
		if registered[c.Sender] {
			mine = append(mine, c)
			noted = append(noted, store.ChainhookTx{TxID: c.TxID, BlockHash: c.Block.Hash, BlockHeight: c.Block.Height})
		}
	}
	first, err := st.NoteApplied(ctx, noted)
	if err != nil {
		return resp, err
	}
	// The hint first: whatever happens to the verification, the sweep
	// visits the agent now.
	hinted := map[string]bool{}
	for _, c := range mine {
		s.hint(ctx, c.Sender, hinted)
	}
	resp.Agents = len(agents)
	s.verifyPushed(ctx, mine, first, &resp)
	return resp, nil
}

func (s *Server) hint(ctx context.Context, agent string, done map[string]bool) {
	if done[agent] {
		return
	}
	done[agent] = true
	s.hintAgent(ctx, agent)
}

// verifyPushed runs the verify path with source chainhook on the
// candidates, a few at a time, until chainhookVerifyWithin; its Hiro
// client takes from the fast path's share of the budget, which refuses
// rather than waits, so the sweep is never starved. Concurrent deliveries
// naming one transaction share one verification.
func (s *Server) verifyPushed(ctx context.Context, cands []chainhook.Candidate, first map[string]bool, resp *ChainhookResponse) {
	if s.o.Verifier == nil {
		resp.Deferred = len(cands)
		return
	}
	if len(cands) > chainhookMaxVerify {
		resp.Deferred += len(cands) - chainhookMaxVerify
		cands = cands[:chainhookMaxVerify]
	}
	vctx, cancel := context.WithTimeout(ctx, chainhookVerifyWithin)
	defer cancel()
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		sem = make(chan struct{}, chainhookParallel)
	)
	for _, c := range cands {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-vctx.Done():
				mu.Lock()
				resp.Deferred++
				mu.Unlock()
				return
			}
			o, ok := s.verifyOne(vctx, c, first[c.TxID])
			mu.Lock()
			defer mu.Unlock()
			switch {
			case !ok:
				resp.Deferred++
			case o.Status == competition.StatusInserted:
				resp.Inserted++
			case o.Status == competition.StatusAlreadyKnown:
				resp.AlreadyKnown++
			case o.Status == competition.StatusPending:
				resp.Pending++
			default:
				resp.Rejected++
			}
		})
	}
	wg.Wait()
}

// verifyOne verifies one candidate; ok is false when the answer did not
// come in time (or the verification could not tell for now).
func (s *Server) verifyOne(ctx context.Context, c chainhook.Candidate, first bool) (competition.Outcome, bool) {
	ch := s.hook.flight.DoChan(c.TxID, func() (any, error) {
		o := s.o.Verifier.Verify(ctx, c.TxID, competition.SourceChainhook)
		s.recordPushed(ctx, c, o, first)
		return o, nil
	})
	select {
	case <-ctx.Done():
		return competition.Outcome{}, false
	case res := <-ch:
		o := res.Val.(competition.Outcome)
		if o.Status == competition.StatusRejected && !o.Reason.Final() {
			if o.Err != nil && !errors.Is(o.Err, context.DeadlineExceeded) && !errors.Is(o.Err, context.Canceled) {
				s.o.Logger.Warn("api.chainhook_verify_failed", zap.String("txid", c.TxID), zap.String("reason", string(o.Reason)), zap.Error(o.Err))
			}
			return o, false
		}
		return o, true
	}
}

// recordPushed counts what a verification found and marks the hour of a
// swap a rollback had removed and the push brought back. A swap already
// there counts once, when a delivery names it first: replays of a
// delivery count nothing.
func (s *Server) recordPushed(ctx context.Context, c chainhook.Candidate, o competition.Outcome, first bool) {
	h := s.hook
	switch o.Status {
	case competition.StatusInserted:
		var latency time.Duration
		if c.Block.Timestamp > 0 {
			latency = time.Since(time.Unix(c.Block.Timestamp, 0))
		}
		h.metrics.ObserveSwap(true, "", latency)
		if _, err := s.o.Store.MarkReapplied(ctx, o.TxID, o.Swap.BurnBlockTime); err != nil {
			s.o.Logger.Warn("api.chainhook_mark_failed", zap.String("txid", o.TxID), zap.Error(err))
		}
	case competition.StatusAlreadyKnown:
		if !first {
			return
		}
		if sw, found, err := s.o.Store.Swap(ctx, o.TxID); err == nil && found {
			h.metrics.ObserveSwap(false, sw.Source, 0)
		}
	}
}
