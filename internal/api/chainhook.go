package api

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/singleflight"

	"github.com/pacer-dev/pacer"
	"github.com/pacer-dev/pacer/internal/chainhook"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/fault"
	"github.com/pacer-dev/pacer/internal/hiro"
	"github.com/pacer-dev/pacer/internal/metrics"
	"github.com/pacer-dev/pacer/internal/store"
)

// ChainhookPath is where Chainhooks delivers (SPEC §11).
const ChainhookPath = "/api/chainhook"

// Limits of the chainhook endpoint. Chainhooks retries a delivery that
// fails or times out, then pauses the hook, so an answer must come fast:
// the swaps a delivery describes are recorded from the delivery itself,
// without a Hiro request, within verifyWithin, and what does not finish
// by then is left to the sweep, whose agent the delivery made due.
const (
	chainhookAnswerWithin = 5 * time.Second
	chainhookVerifyWithin = 4 * time.Second
	// chainhookMaxVerify bounds the verifications one delivery starts;
	// the agents of the rest are only hinted.
	chainhookMaxVerify = 256
	// chainhookParallel is one delivery's verifications at once.
	chainhookParallel = 4
	// chainhookSlots bounds the deliveries read and parsed at once (each
	// up to PACER_CHAINHOOK_MAX_BYTES); chainhookSlotWait is how long one
	// waits for a slot before a 503.
	chainhookSlots    = 2
	chainhookSlotWait = 2 * time.Second
)

// ConsumerSecretHeader is the header Hiro's Chainhooks 2.0 sends the
// account's consumer secret in; its documentation also names
// "Authorization: Bearer <secret>", and both are accepted (SPEC §11).
const ConsumerSecretHeader = "X-Chainhook-Consumer-Secret"

// ChainhookResponse answers an accepted delivery.
type ChainhookResponse struct {
	Accepted         bool `json:"accepted"`
	RolledBackBlocks int  `json:"rolledBackBlocks"`
	SwapsRolledBack  int  `json:"swapsRolledBack"`
	AppliedBlocks    int  `json:"appliedBlocks"`
	// Candidates are applied allowlisted calls with token transfers;
	// Agents how many distinct registered agents sent them (each made due
	// now).
	Candidates   int `json:"candidates"`
	Agents       int `json:"agents"`
	Inserted     int `json:"inserted"`
	AlreadyKnown int `json:"alreadyKnown"`
	Pending      int `json:"pending"`
	Rejected     int `json:"rejected"`
	// Deferred were not recorded in time (or past the per-delivery bound):
	// the sweep finds them.
	Deferred int `json:"deferred"`
	// Skipped are applied allowlisted calls the delivery says failed, left
	// the canonical chain or moved no token; Other the applied
	// transactions that are no allowlisted call with a sender. Both are
	// logged.
	Skipped int `json:"skipped"`
	Other   int `json:"other"`
}

// chainhookState is the endpoint's shared state.
type chainhookState struct {
	// secrets are the SHA-256 digests of the consumer secrets that pass
	// (a rotation's old one and its successor); none turns the endpoint
	// off.
	secrets  [][sha256.Size]byte
	maxBytes int64
	slots    chan struct{}
	flight   singleflight.Group
	metrics  *metrics.Chainhook
}

func newChainhookState(o Options) *chainhookState {
	h := &chainhookState{slots: make(chan struct{}, chainhookSlots), metrics: metrics.NewChainhook(o.Registerer),
		maxBytes: o.ChainhookMaxBytes}
	if h.maxBytes <= 0 {
		h.maxBytes = chainhook.DefaultMaxBodyBytes
	}
	for _, secret := range ChainhookSecrets(o.ChainhookSecret) {
		h.secrets = append(h.secrets, sha256.Sum256([]byte(secret)))
	}
	return h
}

// MinChainhookSecret is the shortest chainhook secret pacer accepts: a
// shorter one could be guessed through the endpoint.
const MinChainhookSecret = 24

// ChainhookSecrets splits PACER_CHAINHOOK_SECRET, a comma-separated list
// (a rotated secret and its successor), dropping blanks.
func ChainhookSecrets(list string) []string {
	var out []string
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// authorized compares digests of every secret presented (the consumer
// secret header, a bearer token) with every secret configured, each
// comparison run whatever the others found: the time taken says nothing
// about which secret, or which part of one, matched. The scheme is
// case-insensitive (RFC 9110 §11.1).
func (h *chainhookState) authorized(r *http.Request) bool {
	var presented []string
	if v := r.Header.Values(ConsumerSecretHeader); len(v) == 1 && v[0] != "" {
		presented = append(presented, v[0])
	}
	if token, ok := bearer(r); ok {
		presented = append(presented, token)
	}
	ok := 0
	for _, p := range presented {
		got := sha256.Sum256([]byte(p))
		for _, want := range h.secrets {
			ok |= subtle.ConstantTimeCompare(got[:], want[:])
		}
	}
	return ok == 1
}

// chainhookPush takes a Chainhooks delivery (SPEC §11): rollbacks first,
// then applies. Nothing is recorded before the secret is checked. The body
// is decoded as it arrives (ServeHTTP bounds it), never held whole.
func (s *Server) chainhookPush(w http.ResponseWriter, r *http.Request) {
	h := s.hook
	if len(h.secrets) == 0 {
		h.metrics.ObservePush(metrics.PushDisabled)
		writeError(w, http.StatusNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
		return
	}
	if !h.authorized(r) {
		h.metrics.ObservePush(metrics.PushUnauthorized)
		w.Header().Set("WWW-Authenticate", `Bearer realm="pacer chainhook"`)
		writeError(w, http.StatusUnauthorized, "missing or wrong consumer secret")
		return
	}
	tooLarge := "delivery body over " + strconv.FormatInt(h.maxBytes, 10) + " bytes (PACER_CHAINHOOK_MAX_BYTES)"
	if r.ContentLength > h.maxBytes {
		h.metrics.ObservePush(metrics.PushTooLarge)
		writeError(w, http.StatusRequestEntityTooLarge, tooLarge)
		return
	}
	if !h.acquire(r.Context()) {
		h.metrics.ObservePush(metrics.PushBusy)
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "too many deliveries at once")
		return
	}
	p, err := chainhook.Parse(r.Body)
	var ex chainhook.Extracted
	if err == nil {
		ex, err = chainhook.Extract(p, s.o.Catalog)
	}
	<-h.slots
	if err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			h.metrics.ObservePush(metrics.PushTooLarge)
			writeError(w, http.StatusRequestEntityTooLarge, tooLarge)
		case errors.Is(err, chainhook.ErrPayload):
			h.metrics.ObservePush(metrics.PushBadRequest)
			s.o.Logger.Warn("api.chainhook_bad_delivery", zap.Error(err))
			writeError(w, http.StatusBadRequest, err.Error())
		default:
			h.metrics.ObservePush(metrics.PushBadRequest)
			writeError(w, http.StatusBadRequest, "could not read the delivery body")
		}
		return
	}

	// The body's read is bounded by the listener's read timeout and the
	// size limit; the bound on the answer starts once it is read, so a
	// big delivery over a slow link is not refused for its upload.
	ctx, cancel := context.WithTimeout(r.Context(), cmp.Or(s.o.ChainhookAnswerWithin, chainhookAnswerWithin))
	defer cancel()
	resp, err := s.takeDelivery(ctx, p, ex)
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
// agents due and are recorded from the delivery within the deadline.
func (s *Server) takeDelivery(ctx context.Context, p chainhook.Payload, ex chainhook.Extracted) (ChainhookResponse, error) {
	st, h := s.o.Store, s.hook
	resp := ChainhookResponse{Accepted: true, RolledBackBlocks: len(ex.RolledBack), AppliedBlocks: len(p.Event.Apply),
		Skipped: len(ex.Skipped), Other: ex.Other}
	if err := st.NoteChainhookDelivery(ctx, time.Now()); err != nil {
		return resp, err
	}
	for _, rb := range ex.RolledBack {
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
	s.logUnrecorded(ctx, p, ex)

	resp.Candidates = len(ex.Applied)
	if len(ex.Applied) == 0 {
		return resp, nil
	}
	senders := make([]string, 0, len(ex.Applied))
	for _, c := range ex.Applied {
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
	for _, c := range ex.Applied {
		if registered[c.Sender] {
			mine = append(mine, c)
			noted = append(noted, store.ChainhookTx{TxID: c.TxID, BlockHash: c.Block.Hash, BlockHeight: c.Block.Height})
		}
	}
	first, err := st.NoteApplied(ctx, noted)
	if err != nil {
		return resp, err
	}
	// The hint first: whatever happens to the recording, the sweep
	// visits the agent now.
	hinted := map[string]bool{}
	for _, c := range mine {
		s.hint(ctx, c.Sender, hinted)
	}
	resp.Agents = len(agents)
	s.verifyPushed(ctx, mine, first, &resp)
	return resp, nil
}

// logUnrecorded says what of a delivery cannot be recorded from it: each
// allowlisted call it says failed, left the canonical chain or moved no
// token (whose registered sender is hinted: the sweep reads it from
// Hiro), and a delivery whose transactions held nothing pacer reads at
// all, which means a hook pacer did not define or a payload shape it does
// not know (SPEC §11: never a silent 200).
func (s *Server) logUnrecorded(ctx context.Context, p chainhook.Payload, ex chainhook.Extracted) {
	for _, sk := range ex.Skipped {
		s.o.Logger.Info("api.chainhook_not_recorded", zap.String("txid", sk.TxID), zap.String("sender", sk.Sender),
			zap.String("reason", sk.Reason), zap.String("status", sk.Status))
		if sk.Reason != chainhook.SkipNoTransfers {
			continue
		}
		if agents, err := s.o.Store.RegisteredAgents(ctx, []string{sk.Sender}); err == nil && len(agents) == 1 {
			s.hintAgent(ctx, sk.Sender)
		}
	}
	if ex.Transactions > 0 && len(ex.Applied) == 0 && len(ex.Skipped) == 0 {
		s.o.Logger.Warn("api.chainhook_nothing_parsed", zap.String("hook", p.Chainhook.Name),
			zap.String("uuid", p.Chainhook.UUID), zap.Int("transactions", ex.Transactions),
			zap.Int("blocks", len(p.Event.Apply)))
	}
}

func (s *Server) hint(ctx context.Context, agent string, done map[string]bool) {
	if done[agent] {
		return
	}
	done[agent] = true
	s.hintAgent(ctx, agent)
}

// verifyPushed runs the verify path with source chainhook on the
// candidates, a few at a time, until chainhookVerifyWithin, reading each
// transaction from the delivery (its operations, netted by SPEC §5.5's
// rules): no Hiro request, so a delivery is recorded while Hiro is slow or
// down. The readers confirm each row later against Hiro (one row; the
// chain's answer wins). A delivery is no verdict: what it says is not
// kept as a rejection or as pending, the readers decide those.
// Concurrent deliveries naming one transaction share one verification.
func (s *Server) verifyPushed(ctx context.Context, cands []chainhook.Candidate, first map[string]bool, resp *ChainhookResponse) {
	if s.o.Verifier == nil {
		resp.Deferred = len(cands)
		return
	}
	if len(cands) > chainhookMaxVerify {
		resp.Deferred += len(cands) - chainhookMaxVerify
		cands = cands[:chainhookMaxVerify]
	}
	v := pushVerifier(s.o.Verifier, cands)
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
			o, ok := s.verifyOne(vctx, v, c, first[c.TxID])
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
				s.o.Logger.Info("api.chainhook_rejected", zap.String("txid", c.TxID),
					zap.String("reason", string(o.Reason)), zap.String("detail", o.Detail))
			}
		})
	}
	wg.Wait()
}

// pushVerifier is base with the delivery as its source of transactions
// and a ledger that keeps no verdict.
func pushVerifier(base *competition.Verifier, cands []chainhook.Candidate) *competition.Verifier {
	v := *base
	txs := make(deliveryTxs, len(cands))
	for _, c := range cands {
		txs[c.TxID] = c.Tx
	}
	v.Txs = txs
	v.Ledger = noVerdicts{base.Ledger}
	return &v
}

// deliveryTxs answers the verifier from a delivery.
type deliveryTxs map[string]hiro.Tx

func (d deliveryTxs) Tx(_ context.Context, txid string) (hiro.Tx, error) {
	tx, ok := d[txid]
	if !ok {
		return hiro.Tx{}, fault.Errorf(pacer.ClassNotFound, "chainhook "+txid, "not in the delivery")
	}
	return tx, nil
}

// noVerdicts is a ledger that records swaps and keeps no rejection or
// pending transaction: a delivery's word on those is not the chain's.
type noVerdicts struct{ competition.Ledger }

func (noVerdicts) RecordRejection(context.Context, competition.Rejection) error { return nil }
func (noVerdicts) RecordPending(context.Context, string, string) error          { return nil }

// Rollbacks passes the ledger's rollbacks on, so a delivery replaying a
// rolled-back block is held back as the readers are.
func (l noVerdicts) Rollbacks(ctx context.Context, txid string) ([]competition.Rollback, error) {
	if rl, ok := l.Ledger.(competition.RollbackLedger); ok {
		return rl.Rollbacks(ctx, txid)
	}
	return nil, nil
}

// verifyOne verifies one candidate; ok is false when the answer did not
// come in time (or the verification could not tell for now).
func (s *Server) verifyOne(ctx context.Context, v *competition.Verifier, c chainhook.Candidate, first bool) (competition.Outcome, bool) {
	ch := s.hook.flight.DoChan(c.TxID, func() (any, error) {
		o := v.Verify(ctx, c.TxID, competition.SourceChainhook)
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
