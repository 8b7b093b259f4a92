package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/api"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/sim"
)

// Two consumer secrets, as while the account rolls one over to the next.
const (
	oldSecret = "old-consumer-secret-0123456789abcdef"
	newSecret = "new-consumer-secret-0123456789abcdef"
)

// newHookFixtureMax is newHookFixture with a bound on a delivery's body
// (0: the default).
func newHookFixtureMax(t *testing.T, secret string, maxBytes int64, opts ...func(*api.Options)) *hookFixture {
	t.Helper()
	f := newTradeFixture(t)
	reg := prometheus.NewRegistry()
	o := api.Options{Store: f.st, Catalog: catalog.Default(),
		Verifier: f.acts.FastVerifier, ChainhookSecret: secret, ChainhookMaxBytes: maxBytes, Registerer: reg}
	for _, opt := range opts {
		opt(&o)
	}
	srv := httptest.NewServer(api.New(o))
	t.Cleanup(srv.Close)
	return &hookFixture{tradeFixture: f, url: srv.URL + api.ChainhookPath, reg: reg, like: map[string]sim.WorldTx{}}
}

// send posts body with the header given ("Name: value"; "" for none).
func (f *hookFixture) send(t *testing.T, header string, body []byte) (int, api.ChainhookResponse, time.Duration) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if name, value, ok := strings.Cut(header, ": "); ok {
		req.Header.Set(name, value)
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	took := time.Since(start)
	require.NoError(t, err)
	var out api.ChainhookResponse
	require.NoError(t, json.Unmarshal(raw, &out), "%s", raw)
	return resp.StatusCode, out, took
}

// expected is the swap SPEC §5.5 makes of tx, worked out here from its
// events on Hiro: the sender's transfers netted per asset, token_in the
// largest net outflow, token_out the largest net inflow.
func (f *hookFixture) expected(t *testing.T, tx sim.WorldTx) [4]string {
	t.Helper()
	onHiro, err := f.acts.Hiro.Tx(context.Background(), tx.TxID)
	require.NoError(t, err)
	net := map[string]*big.Int{}
	var order []string
	for _, e := range onHiro.Events {
		a := e.Asset
		if a == nil || a.AssetEventType != "transfer" || (a.Sender == tx.Sender) == (a.Recipient == tx.Sender) {
			continue
		}
		asset := a.AssetID
		if e.EventType == "stx_asset" {
			asset = "stx"
		}
		n, ok := new(big.Int).SetString(a.Amount, 10)
		require.True(t, ok)
		if net[asset] == nil {
			net[asset] = new(big.Int)
			order = append(order, asset)
		}
		if a.Sender == tx.Sender {
			n.Neg(n)
		}
		net[asset].Add(net[asset], n)
	}
	var in, out string
	for _, asset := range order {
		if n := net[asset]; n.Sign() < 0 && (in == "" || n.Cmp(net[in]) < 0) {
			in = asset
		} else if n.Sign() > 0 && (out == "" || n.Cmp(net[out]) > 0) {
			out = asset
		}
	}
	require.NotEmpty(t, in)
	require.NotEmpty(t, out)
	return [4]string{in, new(big.Int).Neg(net[in]).String(), out, net[out].String()}
}

func (f *hookFixture) row(t *testing.T, txid string) (competition.Swap, bool) {
	t.Helper()
	sw, found, err := f.st.Swap(context.Background(), txid)
	require.NoError(t, err)
	return sw, found
}

func legsOf(sw competition.Swap) [4]string {
	return [4]string{sw.TokenIn, sw.AmountIn, sw.TokenOut, sw.AmountOut}
}

func (f *hookFixture) unconfirmed(t *testing.T, txid string) bool {
	t.Helper()
	pushed, err := f.st.Unconfirmed(context.Background(), txid)
	require.NoError(t, err)
	return pushed
}

// TestChainhookSecretFormsWhileHiroFails: Chainhooks 2.0 sends the consumer
// secret as x-chainhook-consumer-secret (its documentation also names
// Authorization: Bearer); during a rotation the old secret and the new one
// pass. Each delivery's swap is recorded from the delivery itself while
// Hiro's detail endpoints answer 500; a wrong secret is 401.
func TestChainhookSecretFormsWhileHiroFails(t *testing.T) {
	t.Parallel()
	f := newHookFixtureMax(t, oldSecret+", "+newSecret, 0)
	txs := f.worldTxs(t, 4)
	var bodies [][]byte
	var want [][4]string
	for i, tx := range txs {
		bodies = append(bodies, f.delivery(t, []block{{hash: fmt.Sprintf("0xb%d", i), height: int64(10 + i), txs: []sim.WorldTx{tx}}}, nil))
		want = append(want, f.expected(t, tx))
	}
	require.NoError(t, f.sim.SetFaults(sim.Faults{PathPrefix: "/extended/v1/tx", ServerError: 1}))
	f.sim.ResetStats()

	for i, header := range []string{
		"X-Chainhook-Consumer-Secret: " + newSecret,
		"Authorization: Bearer " + newSecret,
		"x-chainhook-consumer-secret: " + oldSecret,
	} {
		code, resp, took := f.send(t, header, bodies[i])
		require.Equal(t, http.StatusOK, code, header)
		require.Equal(t, 1, resp.Inserted, header)
		sw, found := f.row(t, txs[i].TxID)
		require.True(t, found)
		require.Equal(t, competition.SourceChainhook, sw.Source)
		require.Equal(t, want[i], legsOf(sw), "the delivery's operations, netted")
		require.True(t, f.unconfirmed(t, txs[i].TxID), "recorded, waiting for a reader's confirmation")
		t.Logf("%s: recorded in %s with Hiro's details failing", strings.SplitN(header, ":", 2)[0], took)
	}
	for _, header := range []string{"", "X-Chainhook-Consumer-Secret: wrong-secret-0123456789abcdef0",
		"Authorization: Bearer " + newSecret + "x", "X-Chainhook-Consumer-Secret: " + oldSecret + "," + newSecret,
		"Authorization: " + newSecret} {
		code, _, _ := f.send(t, header, bodies[3])
		require.Equal(t, http.StatusUnauthorized, code, "header %q", header)
	}
	_, found := f.row(t, txs[3].TxID)
	require.False(t, found)
	require.Zero(t, f.sim.Stats().Total,
		"no Hiro request")
}

// TestChainhookTakesA20MiBDelivery: a busy block's delivery passes 1 MiB
// (teams set 32); one of 20 MiB is read as it arrives and recorded.
func TestChainhookTakesA20MiBDelivery(t *testing.T) {
	t.Parallel()
	// What is held is the size taken, not the speed: the delivery's work
	// gets a minute (5 s in the service), since under -race on a loaded
	// 2-core machine (make test) 8 MiB outlasted 5 s three times in a row
	// (1.3 s alone).
	f := newHookFixtureMax(t, newSecret, 0, func(o *api.Options) { o.ChainhookAnswerWithin = time.Minute })
	tx := f.worldTxs(t, 1)[0]
	var doc map[string]any
	require.NoError(t, json.Unmarshal(f.delivery(t, []block{{hash: "0xb1", height: 10, txs: []sim.WorldTx{tx}}}, nil), &doc))
	blk := doc["event"].(map[string]any)["apply"].([]any)[0].(map[string]any)
	// Strangers' calls to another contract, each with a 10 KiB print.
	filler := strings.Repeat("ab", 5<<10)
	// Under -race (make test) decoding is several times slower and 20 MiB
	// outlasts the answer's bound on a 2-core machine: the delivery is 8
	// MiB there, still past the old 5 MiB limit; 20 MiB without it.
	size := 20 << 20
	if raceDetector {
		size = 8 << 20
	}
	txs := blk["transactions"].([]any)
	for i := 0; ; i++ {
		txs = append(txs, map[string]any{
			"transaction_identifier": map[string]any{"hash": fmt.Sprintf("0x%064x", i+1)},
			"metadata": map[string]any{"type": "contract_call", "status": "success", "sender_address": "SP000000000000000000002Q6VF78",
				"canonical": true, "contract_identifier": "SP000000000000000000002Q6VF78.pox-4", "function_name": "stack-stx"},
			"operations": []any{map[string]any{"type": "contract_log", "status": "success",
				"metadata": map[string]any{"topic": "print", "value": "0x" + filler}}},
		})
		if i%100 == 0 {
			blk["transactions"] = txs
			b, err := json.Marshal(doc)
			require.NoError(t, err)
			if len(b) >= size {
				break
			}
		}
	}
	body, err := json.Marshal(doc)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(body), size)
	// A 503 is the receiver's "try again" (its answer bound passed),
	// and Chainhooks does: on a loaded machine under -race a first try
	// can outlast the bound.
	var (
		code int
		resp api.ChainhookResponse
		took time.Duration
	)
	for try := 1; try <= 3; try++ {
		if code, resp, took = f.send(t, "X-Chainhook-Consumer-Secret: "+newSecret, body); code != http.StatusServiceUnavailable {
			break
		}
		t.Logf("try %d: 503 after %s", try, took)
	}
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, 1, resp.Inserted)
	require.Equal(t, len(txs)-1, resp.Other)
	t.Logf("%d MiB, %d transactions: answered in %s", len(body)>>20, len(txs), took)

	small := newHookFixtureMax(t, newSecret, 1<<20)
	code, _, _ = small.send(t, "X-Chainhook-Consumer-Secret: "+newSecret, body)
	require.Equal(t, http.StatusRequestEntityTooLarge, code, "past PACER_CHAINHOOK_MAX_BYTES")
}

// TestChainhookRowConfirmedByTheReaders: a reader that meets a pushed
// swap verifies it against Hiro: one row, confirmed; a delivery whose
// amounts the chain contradicts is corrected (the chain wins), and one
// for a transaction the chain says failed is removed.
func TestChainhookRowConfirmedByTheReaders(t *testing.T) {
	t.Parallel()
	f := newHookFixtureMax(t, newSecret, 0)
	ctx := context.Background()
	txs := f.worldTxs(t, 2)
	good, altered := txs[0], txs[1]
	body := f.delivery(t, []block{{hash: "0xb1", height: 10, txs: []sim.WorldTx{good, altered}}}, nil)
	// The delivery doubles every amount of the second transaction.
	body = doubleAmounts(t, body, altered.TxID)
	failed := sim.WorldTx{}
	for _, tx := range f.world.Transactions() {
		if tx.Case == sim.CaseFailed && !tx.AppearsAt.After(worldAt) && tx.ContractID != "" {
			failed = tx
			break
		}
	}
	require.NotEmpty(t, failed.TxID)
	f.like[failed.TxID] = good
	f.like[failed.TxID] = sim.WorldTx{TxID: good.TxID, Sender: good.Sender}
	failedBody := f.delivery(t, []block{{hash: "0xb2", height: 11, txs: []sim.WorldTx{failed}}}, nil)
	wantGood, wantAltered := f.expected(t, good), f.expected(t, altered)

	code, resp, _ := f.send(t, "X-Chainhook-Consumer-Secret: "+newSecret, body)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, 2, resp.Inserted)
	code, resp, _ = f.send(t, "X-Chainhook-Consumer-Secret: "+newSecret, failedBody)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, 1, resp.Inserted, "the delivery says success")
	sw, _ := f.row(t, altered.TxID)
	require.NotEqual(t, wantAltered, legsOf(sw))

	f.sim.ResetStats()
	for _, tx := range []sim.WorldTx{good, altered, failed} {
		o := f.acts.FastVerifier.Verify(ctx, tx.TxID, competition.SourceSweep)
		switch tx.TxID {
		case failed.TxID:
			require.Equal(t, competition.ReasonTxFailed, o.Reason)
			require.Contains(t, o.Detail, "removed")
		case altered.TxID:
			require.Equal(t, competition.StatusAlreadyKnown, o.Status)
			require.Contains(t, o.Detail, "amount_in")
		default:
			// The test's deliveries give every block one timestamp, so
			// only the block's time may differ from the chain's.
			require.Equal(t, competition.StatusAlreadyKnown, o.Status)
			require.NotContains(t, o.Detail, "amount")
			require.NotContains(t, o.Detail, "token")
		}
	}
	require.Equal(t, 3, f.sim.Stats().Total, "each pushed row is read from Hiro once")
	for tx, want := range map[string][4]string{good.TxID: wantGood, altered.TxID: wantAltered} {
		sw, found := f.row(t, tx)
		require.True(t, found)
		require.Equal(t, want, legsOf(sw), "the chain's answer")
		require.Equal(t, competition.SourceChainhook, sw.Source, "one row, its first writer's")
		require.False(t, f.unconfirmed(t, tx))
	}
	_, found := f.row(t, failed.TxID)
	require.False(t, found, "the chain says it failed")

	// Confirmed rows are known again: no further request.
	f.sim.ResetStats()
	o := f.acts.FastVerifier.Verify(ctx, good.TxID, competition.SourceSweep)
	require.Equal(t, competition.StatusAlreadyKnown, o.Status)
	require.Zero(t, f.sim.Stats().Total)
	var n int
	require.NoError(t, f.st.Pool().QueryRow(ctx, `select count(*) from swaps`).Scan(&n))
	require.Equal(t, 2, n, "never two rows")
}

// doubleAmounts doubles the token_transfer amounts of txid in a delivery.
func doubleAmounts(t *testing.T, body []byte, txid string) []byte {
	t.Helper()
	var doc map[string]any
	require.NoError(t, json.Unmarshal(body, &doc))
	for _, b := range doc["event"].(map[string]any)["apply"].([]any) {
		for _, tx := range b.(map[string]any)["transactions"].([]any) {
			m := tx.(map[string]any)
			if m["transaction_identifier"].(map[string]any)["hash"] != txid {
				continue
			}
			for _, op := range m["operations"].([]any) {
				amount, ok := op.(map[string]any)["amount"].(map[string]any)
				if !ok {
					continue
				}
				v, _ := new(big.Int).SetString(amount["value"].(string), 10)
				amount["value"] = v.Mul(v, big.NewInt(2)).String()
			}
		}
	}
	out, err := json.Marshal(doc)
	require.NoError(t, err)
	return out
}

// TestChainhookReplayedRollbackChangesNothing: a captured rollback replayed
// after a reader put the swap back (Hiro showed it canonical past the
// hold) neither removes it again nor restarts its 30-minute hold, and a
// replayed apply of the rolled-back block does not re-arm it.
func TestChainhookReplayedRollbackChangesNothing(t *testing.T) {
	t.Parallel()
	f := newHookFixtureMax(t, newSecret, 0)
	ctx := context.Background()
	tx := f.worldTxs(t, 1)[0]
	onHiro, err := f.acts.Hiro.Tx(ctx, tx.TxID)
	require.NoError(t, err)
	b := block{hash: onHiro.BlockHash, height: onHiro.BlockHeight, txs: []sim.WorldTx{tx}}
	apply, rollback := f.delivery(t, []block{b}, nil), f.delivery(t, nil, []block{b})
	auth := "X-Chainhook-Consumer-Secret: " + newSecret

	_, resp, _ := f.send(t, auth, apply)
	require.Equal(t, 1, resp.Inserted)
	_, resp, _ = f.send(t, auth, rollback)
	require.Equal(t, 1, resp.SwapsRolledBack)
	// Past the hold, Hiro still shows it canonical in that block: a
	// reader puts it back.
	_, err = f.st.Pool().Exec(ctx, `update swap_rollbacks set rolled_back_at = now() - interval '31 minutes' where txid = $1`, tx.TxID)
	require.NoError(t, err)
	o := f.acts.FastVerifier.Verify(ctx, tx.TxID, competition.SourceSweep)
	require.Equal(t, competition.StatusInserted, o.Status)

	var heldSince time.Time
	require.NoError(t, f.st.Pool().QueryRow(ctx, `select rolled_back_at from swap_rollbacks where txid = $1`, tx.TxID).Scan(&heldSince))
	for _, body := range [][]byte{rollback, apply, rollback, rollback} {
		code, resp, _ := f.send(t, auth, body)
		require.Equal(t, http.StatusOK, code)
		require.Zero(t, resp.SwapsRolledBack)
	}
	_, found := f.row(t, tx.TxID)
	require.True(t, found, "the canonical swap stays")
	var now time.Time
	require.NoError(t, f.st.Pool().QueryRow(ctx, `select rolled_back_at from swap_rollbacks where txid = $1`, tx.TxID).Scan(&now))
	require.Equal(t, heldSince, now, "the hold is not restarted")
}
