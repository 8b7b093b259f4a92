package sim

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// PushConfig makes the simulator deliver its world to pacer as Hiro
// Chainhooks 2.0 does (SPEC §11): as the clock passes each block, the
// block's contract calls to allowlisted pairs (what `pacer chainhook spec`
// asks for) are POSTed to URL, one delivery a block, with a bearer secret;
// a rolled-back block (HiroConfig.Reorgs) is delivered as a rollback, and
// its transactions' new block as an ordinary apply. Deliveries can be
// dropped, duplicated, reordered and replayed, as users report Chainhooks
// doing. The payloads are built here from the world, never by pacer's
// chainhook package.
type PushConfig struct {
	// URL receives the deliveries; empty: Push refuses to run.
	URL string
	// Secret is sent as Authorization: Bearer <Secret>.
	Secret string
	// Drop, Duplicate, Reorder and Replay are the chances that a delivery
	// is never sent, sent twice in a row, held back and sent after the
	// next one, or sent once more replayAfter (5 s) later. A reorg's deliveries
	// (the block that will be rolled back, the rollback, the block its
	// transactions come back in) are never dropped, so a test can watch
	// the rollback remove what the push brought; a rollback is
	// always replayed once right after its re-apply, as a restarted
	// Chainhooks node would.
	Drop, Duplicate, Reorder, Replay float64
	// Attempts is how many times a send that got no answer, a 429 or a
	// 5xx is tried, a second apart (0: pushAttempts, 3). Chainhooks
	// retries for longer; a test on a loaded machine may ask for that.
	Attempts int
}

// PushStats counts what the pusher did. Copies (duplicates, reordered and
// replayed sends) count in Sent and in their own counter.
type PushStats struct {
	// Deliveries are the deliveries made: blocks applied and rolled back.
	Deliveries int `json:"deliveries"`
	Applies    int `json:"applies"`
	Rollbacks  int `json:"rollbacks"`
	// Txs are the transactions the deliveries named (each once).
	Txs        int `json:"txs"`
	Dropped    int `json:"dropped"`
	DroppedTxs int `json:"droppedTxs"`
	Duplicated int `json:"duplicated"`
	Reordered  int `json:"reordered"`
	Replayed   int `json:"replayed"`
	// Sent counts the POSTs that got an answer, ByStatus by its status;
	// Failed the sends whose every attempt failed or was refused with a
	// 429 or 5xx.
	Sent     int         `json:"sent"`
	Failed   int         `json:"failed"`
	ByStatus map[int]int `json:"byStatus"`
}

// PushRecord is one send (or drop) of a delivery.
type PushRecord struct {
	// Seq numbers the deliveries; a delivery's copies share it.
	Seq int `json:"seq"`
	// Kind is "apply" or "rollback".
	Kind string `json:"kind"`
	// Copy is "" for a first send, or "duplicate", "reordered",
	// "replay".
	Copy   string `json:"copy,omitempty"`
	Height int64  `json:"height"`
	Hash   string `json:"hash"`
	// Timestamp is the block's time, as the payload gives it.
	Timestamp int64    `json:"timestamp"`
	TxIDs     []string `json:"txids"`
	// Dropped: the delivery was never sent.
	Dropped bool `json:"dropped,omitempty"`
	// SentAt and AnsweredAt are real time (not the simulator's clock),
	// to set against database timestamps; Status and Answer are the last
	// attempt's, Err its failure.
	SentAt     time.Time       `json:"sentAt,omitzero"`
	AnsweredAt time.Time       `json:"answeredAt,omitzero"`
	Status     int             `json:"status,omitempty"`
	Answer     json.RawMessage `json:"answer,omitempty"`
	Err        string          `json:"error,omitempty"`
}

// Kinds of delivery.
const (
	PushApply    = "apply"
	PushRollback = "rollback"
)

// Copies of a delivery.
const (
	CopyDuplicate = "duplicate"
	CopyReordered = "reordered"
	CopyReplay    = "replay"
)

const (
	// pushEvery is how often the pusher looks for new blocks.
	pushEvery = time.Second
	// replayAfter is how long after a delivery its replay comes, in ticks
	// of pushEvery.
	replayAfter = 5 * time.Second
	// pushAttempts is how many times a delivery that got no answer, a 429
	// or a 5xx is tried, a second apart.
	pushAttempts = 3
	// maxPushRecords bounds the records kept (a long `pacer dev` run);
	// the stats count everything.
	maxPushRecords = 20_000
	maxAnswerBytes = 64 << 10
)

// ErrNoPushURL is Push's answer without PushConfig.URL.
var ErrNoPushURL = errors.New("sim: push needs a URL")

// pusher sends the deliveries. Push runs one loop; the records and
// stats are read concurrently.
type pusher struct {
	cfg    PushConfig
	client *http.Client
	world  *World
	now    func() time.Time
	sleep  func(context.Context, time.Duration) error
	rng    *rand.Rand

	// Loop state, touched by the loop only.
	last    time.Time // mining events up to it are delivered
	tick    int
	seq     int
	held    *delivery // a reordered delivery waiting for the next one
	heldAt  int
	replays []replay
	// rollbackOf keeps each reorg's rollback delivery until its replay
	// after the re-apply.
	rollbackOf map[*Reorg]*delivery

	mu      sync.Mutex
	stats   PushStats
	records []PushRecord
}

type delivery struct {
	rec   PushRecord // the first send's record, before it is sent
	body  []byte
	reorg bool
}

type replay struct {
	tick int
	d    *delivery
}

func newPusher(seed int64, cfg PushConfig, w *World, now func() time.Time, sleep func(context.Context, time.Duration) error) *pusher {
	return &pusher{cfg: cfg, client: &http.Client{Timeout: 10 * time.Second}, world: w, now: now, sleep: sleep,
		rng:        rand.New(rand.NewPCG(uint64(seed), 0xc4a1)),
		rollbackOf: map[*Reorg]*delivery{},
		stats:      PushStats{ByStatus: map[int]int{}}}
}

// Push delivers the world's blocks to PushConfig.URL as the clock passes
// them, from the block after the present on, until ctx ends; it returns
// nil then. Run it once per Server.
func (s *Server) Push(ctx context.Context) error {
	p := s.push
	if p.cfg.URL == "" {
		return ErrNoPushURL
	}
	p.last = s.now().Truncate(time.Second)
	for {
		if err := s.sleep(ctx, pushEvery); err != nil {
			return nil
		}
		p.step(ctx)
	}
}

// PushStats returns what the pusher did so far.
func (s *Server) PushStats() PushStats {
	p := s.push
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.stats
	st.ByStatus = maps.Clone(p.stats.ByStatus)
	return st
}

// PushRecords returns the sends and drops so far, oldest first (the last
// maxPushRecords of them).
func (s *Server) PushRecords() []PushRecord {
	p := s.push
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.records)
}

// pushDoc is GET /_sim/push: the stats and the last 100 records.
func (s *Server) pushDoc() any {
	recs := s.PushRecords()
	return doc{"url": s.push.cfg.URL, "stats": s.PushStats(), "records": recs[max(0, len(recs)-100):]}
}

// step delivers what happened since the last step: rollbacks and blocks
// in the order of their times (a rollback before a block of its second),
// then the replays that came due.
func (p *pusher) step(ctx context.Context) {
	p.tick++
	now := p.now()
	for _, d := range p.deliveries(now) {
		p.deliver(ctx, d)
	}
	if p.held != nil && p.heldAt < p.tick {
		p.release(ctx) // nothing came to overtake it for a whole tick
	}
	due := func(r replay) bool { return r.tick <= p.tick }
	for _, r := range p.replays {
		if due(r) {
			p.send(ctx, r.d, CopyReplay)
		}
	}
	p.replays = slices.DeleteFunc(p.replays, due)
	if now.After(p.last) {
		p.last = now
	}
}

// deliver sends a new delivery through the faults.
func (p *pusher) deliver(ctx context.Context, d *delivery) {
	// Four draws a delivery, always, so that one fault's setting does not
	// change which deliveries another fault hits.
	drop, dup, reorder, again := p.rng.Float64(), p.rng.Float64(), p.rng.Float64(), p.rng.Float64()
	dropped := !d.reorg && drop < p.cfg.Drop
	p.mu.Lock()
	p.stats.Deliveries++
	p.stats.Txs += len(d.rec.TxIDs)
	if d.rec.Kind == PushRollback {
		p.stats.Rollbacks++
	} else {
		p.stats.Applies++
	}
	if dropped {
		rec := d.rec
		rec.Dropped = true
		p.stats.Dropped++
		p.stats.DroppedTxs += len(d.rec.TxIDs)
		p.appendLocked(rec)
	}
	p.mu.Unlock()
	if dropped {
		return
	}
	if again < p.cfg.Replay {
		p.replays = append(p.replays, replay{tick: p.tick + max(1, int(replayAfter/pushEvery)), d: d})
	}
	if p.held == nil && reorder < p.cfg.Reorder {
		p.held, p.heldAt = d, p.tick
		return
	}
	p.send(ctx, d, "")
	if dup < p.cfg.Duplicate {
		p.send(ctx, d, CopyDuplicate)
	}
	p.release(ctx) // d overtook it
}

// release sends the delivery held back, if any.
func (p *pusher) release(ctx context.Context) {
	if d := p.held; d != nil {
		p.held = nil
		p.send(ctx, d, CopyReordered)
	}
}

// send POSTs a delivery, trying again after a failure or a 429/5xx.
func (p *pusher) send(ctx context.Context, d *delivery, copyOf string) {
	rec := d.rec
	rec.Copy = copyOf
	rec.SentAt = time.Now()
	failed := func() bool { return rec.Status == 0 || rec.Status == http.StatusTooManyRequests || rec.Status >= 500 }
	for attempt := 1; ; attempt++ {
		status, answer, err := p.post(ctx, d.body)
		rec.Status, rec.Answer, rec.Err = status, answer, ""
		if err != nil {
			rec.Err = err.Error()
		}
		if !failed() || attempt >= cmp.Or(p.cfg.Attempts, pushAttempts) || ctx.Err() != nil || p.sleep(ctx, time.Second) != nil {
			break
		}
	}
	rec.AnsweredAt = time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if rec.Status != 0 {
		p.stats.Sent++
		p.stats.ByStatus[rec.Status]++
	}
	if failed() {
		p.stats.Failed++
	}
	if n, ok := map[string]*int{CopyDuplicate: &p.stats.Duplicated, CopyReordered: &p.stats.Reordered, CopyReplay: &p.stats.Replayed}[copyOf]; ok {
		*n++
	}
	p.appendLocked(rec)
}

func (p *pusher) appendLocked(rec PushRecord) {
	if len(p.records) >= maxPushRecords {
		p.records = slices.Delete(p.records, 0, len(p.records)-maxPushRecords+1)
	}
	p.records = append(p.records, rec)
}

func (p *pusher) post(ctx context.Context, body []byte) (int, json.RawMessage, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+p.cfg.Secret)
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil || !json.Valid(raw) {
		return resp.StatusCode, nil, nil
	}
	return resp.StatusCode, raw, nil
}

// event is a block mined or rolled back between two steps.
type event struct {
	at       time.Time
	rollback *Reorg
	height   int64
	txs      []*worldTx
}

// deliveries builds the deliveries of what happened in (p.last, now]:
// each block with a matching transaction, mined then (a re-applied
// transaction in its new block), and each rollback.
func (p *pusher) deliveries(now time.Time) []*delivery {
	w := p.world
	// The rollbacks first, oldest first, so that one comes before a
	// block of its second once sorted by time (a second has one block).
	var events []*event
	for _, r := range w.reorgs {
		if r.RollbackAt.After(p.last) && !r.RollbackAt.After(now) {
			txs := slices.DeleteFunc(slices.Clone(r.txs), func(tx *worldTx) bool { return !w.matches(tx) })
			if len(txs) > 0 { // else nothing of it was ever delivered
				events = append(events, &event{at: r.RollbackAt, rollback: r, height: r.Height, txs: txs})
			}
		}
	}
	blocks := map[int64]*event{}
	mined := func(height int64, at time.Time, tx *worldTx) {
		if !at.After(p.last) || at.After(now) {
			return
		}
		e := blocks[height]
		if e == nil {
			e = &event{at: at, height: height}
			blocks[height] = e
		}
		e.txs = append(e.txs, tx)
	}
	for _, tx := range w.existing(now) {
		if !w.matches(tx) {
			continue
		}
		if !inMempool(tx.status) {
			mined(heightAt(tx.minedAt()), tx.minedAt(), tx)
		}
		if r := tx.reorg; r != nil {
			mined(r.NewHeight, r.ReapplyAt, tx)
		}
	}
	events = slices.AppendSeq(events, maps.Values(blocks))
	slices.SortStableFunc(events, func(a, b *event) int { return a.at.Compare(b.at) })
	out := make([]*delivery, 0, len(events))
	for _, e := range events {
		out = append(out, p.build(e))
	}
	return out
}

// matches says whether a Chainhooks predicate of `pacer chainhook spec`
// (a contract_call filter per allowlisted pair) matches the transaction:
// a contract call to an allowlisted pair on the canonical chain, whatever
// its outcome. The world's own allowlist decides.
func (w *World) matches(tx *worldTx) bool {
	return tx.found(w.allow) && !tx.fork
}

// build makes the delivery of an event: its payload and its record.
func (p *pusher) build(e *event) *delivery {
	slices.SortFunc(e.txs, func(a, b *worldTx) int { return strings.Compare(a.TxID, b.TxID) })
	p.seq++
	d := &delivery{rec: PushRecord{Seq: p.seq, Kind: PushApply, Height: e.height, Hash: blockHash(e.height), Timestamp: e.at.Unix()}}
	var apply, rollback []doc
	if r := e.rollback; r != nil {
		d.rec.Kind, d.reorg = PushRollback, true
		d.rec.Hash, d.rec.Timestamp = r.Hash, e.txs[0].minedAt().Unix()
		// As Chainhooks reports a reorg: the block that lost, then the one
		// that won at its height (its transactions come back later, in a
		// block of their own).
		rollback = []doc{hookBlockOf(r.Height, r.Hash, e.txs[0].minedAt(), e.txs)}
		apply = []doc{hookBlockOf(r.Height, competingHash(r.Height), r.RollbackAt, nil)}
		p.rollbackOf[r] = d
	} else {
		apply, rollback = []doc{hookBlockOf(e.height, d.rec.Hash, e.at, e.txs)}, []doc{}
		for _, tx := range e.txs {
			r := tx.reorg
			if r == nil {
				continue
			}
			d.reorg = true // the block that will be rolled back, or the new one
			if rb := p.rollbackOf[r]; rb != nil && r.NewHeight == e.height {
				// The stale rollback, once more after the re-apply.
				delete(p.rollbackOf, r)
				p.replays = append(p.replays, replay{tick: p.tick + 1, d: rb})
			}
		}
	}
	for _, tx := range e.txs {
		d.rec.TxIDs = append(d.rec.TxIDs, tx.TxID)
	}
	body, err := json.Marshal(doc{
		"event":     doc{"apply": apply, "rollback": rollback, "chain": "stacks", "network": "mainnet"},
		"chainhook": doc{"name": "pacer-sim", "uuid": "5e3d0000-0000-4000-8000-000000000001"},
	})
	if err != nil {
		panic(fmt.Sprintf("sim: encode delivery: %v", err)) // the simulator's own types always encode
	}
	d.body = body
	return d
}

// The Chainhooks 2.0 delivery is built as Hiro documents it: what pacer
// reads and a little more, so that a reader that ignores unknown fields is
// tested against them.

// hookBlockOf is a block as a delivery shows it at its time at (a
// re-applied transaction in its new block).
func hookBlockOf(height int64, hash string, at time.Time, txs []*worldTx) doc {
	rendered := make([]doc, 0, len(txs))
	for _, tx := range txs {
		rendered = append(rendered, hookTxOf(tx, at))
	}
	return doc{
		"timestamp":               at.Unix(),
		"block_identifier":        doc{"index": height, "hash": hash},
		"parent_block_identifier": doc{"index": height - 1, "hash": blockHash(height - 1)},
		"transactions":            rendered,
	}
}

// hookTxOf renders a contract call as a delivery carries it. Every other
// one (by its place in the block) names its target only in its
// contract_call operation, as some Chainhooks versions do. The arguments
// leave out Hiro's hex, as the simulator's /tx/ answers do.
func hookTxOf(tx *worldTx, at time.Time) doc {
	call := doc{"contract_identifier": tx.call.ContractID, "function_name": tx.call.FunctionName, "args": tx.call.FunctionArgs}
	meta := doc{
		"type": txTypeContractCall, "nonce": tx.nonce, "result": tx.result, "status": tx.status,
		"fee_rate": fmt.Sprint(tx.feeRate), "position": doc{"index": tx.position(at).index, "microblock_identifier": nil},
		"sender_address": tx.Sender, "sponsor_address": nil, "canonical": true, "sponsored": false, "microblock_canonical": true,
	}
	if tx.index%2 == 0 {
		maps.Copy(meta, call)
	}
	status := "success"
	if tx.status != statusSuccess {
		status = "failed"
	}
	return doc{
		"transaction_identifier": doc{"hash": tx.TxID},
		"metadata":               meta,
		"operations":             hookOperations(tx, status, call),
	}
}

// hookOperations are a transaction's operations as Chainhooks 2.0 documents
// them: its fee, its contract call, then each transfer of a successful one
// as two token_transfer operations (the sender's negative amount, the
// recipient's positive one), and its prints as contract_log ones.
func hookOperations(tx *worldTx, status string, call doc) []doc {
	ops := []doc{
		{"type": "fee", "status": status, "account": doc{"address": tx.Sender},
			"amount":   doc{"value": fmt.Sprint(-tx.feeRate), "currency": doc{"symbol": "STX", "decimals": 6}},
			"metadata": doc{"sponsored": false}},
		{"type": txTypeContractCall, "status": status, "account": doc{"address": tx.Sender}, "metadata": call},
	}
	if tx.status == statusSuccess {
		for _, e := range tx.events {
			switch {
			case e.Asset != nil && e.Asset.AssetEventType == "transfer":
				currency := doc{"symbol": "STX", "decimals": 6}
				if e.EventType != "stx_asset" {
					currency = doc{"symbol": "", "decimals": 0, "metadata": doc{"token_type": "ft", "asset_identifier": e.Asset.AssetID}}
				}
				ops = append(ops,
					doc{"type": "token_transfer", "status": "success", "account": doc{"address": e.Asset.Sender},
						"amount": doc{"value": "-" + e.Asset.Amount, "currency": currency}},
					doc{"type": "token_transfer", "status": "success", "account": doc{"address": e.Asset.Recipient},
						"amount": doc{"value": e.Asset.Amount, "currency": currency}})
			case e.ContractLog != nil:
				ops = append(ops, doc{"type": "contract_log", "status": "success",
					"metadata": doc{"topic": e.ContractLog.Topic, "value": e.ContractLog.Value, "contract_identifier": e.ContractLog.ContractID}})
			}
		}
	}
	for i, op := range ops {
		op["operation_identifier"] = doc{"index": i}
	}
	return ops
}
