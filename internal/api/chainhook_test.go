package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/api"
	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/competition"
	"github.com/pacer-dev/pacer/internal/sim"
)

const hookSecret = "s3cret-for-tests"

type hookFixture struct {
	*tradeFixture
	url string
	reg *prometheus.Registry
	// like maps a made-up transaction to the one whose operations it
	// takes.
	like map[string]sim.WorldTx
}

// newHookFixture serves the API with the chainhook endpoint on, over the
// simulated Hiro and a fresh schema of the real Postgres.
func newHookFixture(t *testing.T, secret string) *hookFixture {
	t.Helper()
	f := newTradeFixture(t)
	reg := prometheus.NewRegistry()
	srv := httptest.NewServer(api.New(api.Options{Store: f.st, Catalog: catalog.Default(),
		Verifier: f.acts.FastVerifier, ChainhookSecret: secret, Registerer: reg}))
	t.Cleanup(srv.Close)
	return &hookFixture{tradeFixture: f, url: srv.URL + api.ChainhookPath, reg: reg, like: map[string]sim.WorldTx{}}
}

// block is a block of a delivery: its hash, height and transactions.
type block struct {
	hash   string
	height int64
	txs    []sim.WorldTx
}

// delivery writes a Chainhooks 2.0 payload of the documented shape: each
// transaction's operations are its contract call and, from its events on
// the simulated Hiro, each transfer as two token_transfer operations (the
// sender's negative amount, the recipient's positive one). A transaction
// Hiro does not know takes the operations of f.like[its id], its sender
// standing for that one's. Build it before counting Hiro's requests.
func (f *hookFixture) delivery(t *testing.T, apply, rollback []block) []byte {
	t.Helper()
	side := func(bs []block) []any {
		out := []any{}
		for _, b := range bs {
			txs := []any{}
			for _, tx := range b.txs {
				txs = append(txs, map[string]any{
					"transaction_identifier": map[string]any{"hash": tx.TxID},
					"metadata": map[string]any{
						"type": "contract_call", "status": "success", "nonce": 1, "fee_rate": "3000",
						"sender_address": tx.Sender, "canonical": true, "microblock_canonical": true,
						"result":   map[string]any{"hex": "0x0703", "repr": "(ok true)"},
						"position": map[string]any{"index": 0},
					},
					"operations": f.operations(t, tx),
				})
			}
			out = append(out, map[string]any{
				"timestamp":               1778787000,
				"block_identifier":        map[string]any{"hash": b.hash, "index": b.height},
				"parent_block_identifier": map[string]any{"hash": "0x00", "index": b.height - 1},
				"transactions":            txs,
			})
		}
		return out
	}
	b, _ := json.Marshal(map[string]any{
		"event":     map[string]any{"apply": side(apply), "rollback": side(rollback), "chain": "stacks", "network": "mainnet"},
		"chainhook": map[string]any{"name": "pacer-competition-swaps", "uuid": "be4ab3ed-b606-4fe0-97c4-6c0b1ac9b185"},
	})
	return b
}

// operations are tx's operations as a delivery gives them.
func (f *hookFixture) operations(t *testing.T, tx sim.WorldTx) []any {
	t.Helper()
	ops := []any{map[string]any{
		"operation_identifier": map[string]any{"index": 0},
		"type":                 "contract_call", "status": "success",
		"account":  map[string]any{"address": tx.Sender},
		"metadata": map[string]any{"contract_identifier": tx.ContractID, "function_name": tx.FunctionName, "args": []any{}},
	}}
	id, sender := tx.TxID, tx.Sender
	if like, ok := f.like[id]; ok {
		id, sender = like.TxID, like.Sender
	}
	onHiro, err := f.acts.Hiro.Tx(context.Background(), id)
	require.NoError(t, err)
	account := func(a string) string {
		if a == sender {
			return tx.Sender
		}
		return a
	}
	for _, e := range onHiro.Events {
		if e.Asset == nil || e.Asset.AssetEventType != "transfer" {
			continue
		}
		currency := map[string]any{"symbol": "STX", "decimals": 6}
		if e.EventType != "stx_asset" {
			currency = map[string]any{"symbol": "", "decimals": 0,
				"metadata": map[string]any{"token_type": "ft", "asset_identifier": e.Asset.AssetID}}
		}
		ops = append(ops,
			map[string]any{"type": "token_transfer", "status": "success", "operation_identifier": map[string]any{"index": len(ops)},
				"account": map[string]any{"address": account(e.Asset.Sender)},
				"amount":  map[string]any{"value": "-" + e.Asset.Amount, "currency": currency}},
			map[string]any{"type": "token_transfer", "status": "success", "operation_identifier": map[string]any{"index": len(ops) + 1},
				"account": map[string]any{"address": account(e.Asset.Recipient)},
				"amount":  map[string]any{"value": e.Asset.Amount, "currency": currency}})
	}
	return ops
}

func (f *hookFixture) push(t *testing.T, auth string, body []byte) (int, api.ChainhookResponse, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out api.ChainhookResponse
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m), "every answer is JSON: %s", raw)
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out, string(raw)
}

func (f *hookFixture) ok(t *testing.T, body []byte) api.ChainhookResponse {
	t.Helper()
	code, resp, raw := f.push(t, "Bearer "+hookSecret, body)
	require.Equal(t, http.StatusOK, code, raw)
	return resp
}

// worldTxs returns n inserted-case transactions of distinct senders, mined
// before worldAt.
func (f *hookFixture) worldTxs(t *testing.T, n int) []sim.WorldTx {
	t.Helper()
	var out []sim.WorldTx
	senders := map[string]bool{}
	for _, tx := range f.world.Transactions() {
		if tx.Case == sim.CaseSwap && !tx.AppearsAt.After(worldAt) && !senders[tx.Sender] {
			senders[tx.Sender] = true
			out = append(out, tx)
			if len(out) == n {
				return out
			}
		}
	}
	require.Len(t, out, n, "the world has too few swaps")
	return out
}

// ledger is every table a delivery may change, as comparable text.
func (f *hookFixture) ledger(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, q := range map[string]string{
		"swaps":          `select coalesce(string_agg(txid || ' ' || source, ',' order by txid), '') from swaps`,
		"swap_rollbacks": `select coalesce(string_agg(txid || ' ' || block_hash, ',' order by txid, block_hash), '') from swap_rollbacks`,
		"rollup_dirty":   `select coalesce(string_agg(hour_start::text, ',' order by hour_start), '') from rollup_dirty`,
		"rejections":     `select coalesce(string_agg(txid || ' ' || reason, ',' order by txid), '') from swap_rejections`,
		"state":          `select coalesce(string_agg(deliveries::text, ','), '') from chainhook_state`,
	} {
		var s string
		require.NoError(t, f.st.Pool().QueryRow(context.Background(), q).Scan(&s))
		out[name] = s
	}
	return out
}

func (f *hookFixture) swapSources(t *testing.T) map[string]string {
	t.Helper()
	swaps, err := f.st.Swaps(context.Background())
	require.NoError(t, err)
	out := map[string]string{}
	for _, sw := range swaps {
		out[sw.TxID] = sw.Source
	}
	return out
}

func TestChainhookOffWithoutSecret(t *testing.T) {
	t.Parallel()
	f := newHookFixture(t, "")
	code, _, raw := f.push(t, "Bearer ", f.delivery(t, nil, nil))
	require.Equal(t, http.StatusNotFound, code, raw)
	code, _, _ = f.push(t, "", f.delivery(t, nil, nil))
	require.Equal(t, http.StatusNotFound, code)
	require.Empty(t, f.ledger(t)["state"])
}

func TestChainhookRefusesWrongSecret(t *testing.T) {
	t.Parallel()
	f := newHookFixture(t, hookSecret)
	tx := f.worldTxs(t, 1)[0]
	body := f.delivery(t, []block{{hash: "0xb1", height: 10, txs: []sim.WorldTx{tx}}}, nil)
	before := f.ledger(t)
	f.sim.ResetStats()
	for _, auth := range []string{"", "Bearer", "Bearer ", "Bearer wrong", hookSecret, "Bearer  " + hookSecret,
		"Basic " + hookSecret, "Bearer " + hookSecret + "x", "Bearer" + hookSecret} {
		code, _, raw := f.push(t, auth, body)
		require.Equal(t, http.StatusUnauthorized, code, "auth %q", auth)
		require.NotContains(t, raw, hookSecret, "never echoes the secret")
	}
	require.Equal(t, before, f.ledger(t), "nothing recorded")
	require.Zero(t, f.sim.Stats().Routes[sim.HiroTxMultipleRoute].Total, "no Hiro call")
	var hinted int
	require.NoError(t, f.st.Pool().QueryRow(context.Background(), `select count(*) from agent_ingest where hinted_at is not null`).Scan(&hinted))
	require.Zero(t, hinted, "no agent hinted")
	require.Equal(t, 9.0, counter(t, f.reg, "pacer_chainhook_pushes_total", "unauthorized"))
}

// TestChainhookSchemeIsCaseInsensitive: RFC 9110 makes the auth scheme
// case-insensitive, and a Chainhook configured with "bearer …" must work.
func TestChainhookSchemeIsCaseInsensitive(t *testing.T) {
	t.Parallel()
	f := newHookFixture(t, hookSecret)
	for _, scheme := range []string{"bearer", "BEARER", "Bearer"} {
		code, _, raw := f.push(t, scheme+" "+hookSecret, f.delivery(t, nil, nil))
		require.Equal(t, http.StatusOK, code, "%s: %s", scheme, raw)
	}
}

func TestChainhookRefusesBadBodies(t *testing.T) {
	t.Parallel()
	f := newHookFixtureMax(t, hookSecret, 5<<20)
	auth := "Bearer " + hookSecret
	before := f.ledger(t)

	// 10 MB: refused from its Content-Length, before a byte is read.
	code, _, _ := f.push(t, auth, bytes.Repeat([]byte(" "), 10<<20))
	require.Equal(t, http.StatusRequestEntityTooLarge, code)

	// 10 MB streamed without a length: refused once the bound is passed.
	var read int64
	pr, pw := io.Pipe()
	go func() {
		chunk := bytes.Repeat([]byte(" "), 64<<10)
		for read < 10<<20 {
			if _, err := pw.Write(chunk); err != nil {
				return
			}
			read += int64(len(chunk))
		}
		_ = pw.Close()
	}()
	req, err := http.NewRequest(http.MethodPost, f.url, pr)
	require.NoError(t, err)
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
		resp.Body.Close()
	}
	_ = pr.CloseWithError(io.ErrClosedPipe)

	for _, body := range []string{"", "garbage", "[]", `{"event":{"apply":{}}}`, `{"chainhook":{}}`,
		`{"event":{"apply":[{"block_identifier":{"hash":"0x01","index":"x"}}]}}`} {
		code, _, raw := f.push(t, auth, []byte(body))
		require.Equal(t, http.StatusBadRequest, code, "body %q: %s", body, raw)
		require.Contains(t, raw, `"error"`)
	}
	require.Equal(t, before, f.ledger(t), "nothing recorded")
}

func TestChainhookApplyInsertsWithSourceChainhook(t *testing.T) {
	t.Parallel()
	f := newHookFixture(t, hookSecret)
	ctx := context.Background()
	_, err := f.st.Pool().Exec(ctx, `update agent_ingest set next_run_at = now() + interval '1 hour'`)
	require.NoError(t, err)
	txs := f.worldTxs(t, 2)
	stranger := txs[1]
	stranger.Sender = "SP000000000000000000002Q6VF78"
	stranger.TxID = madeUp(t)
	f.like[stranger.TxID] = txs[1]
	body := f.delivery(t, []block{{hash: "0xb1", height: 10, txs: []sim.WorldTx{txs[0], stranger}}}, nil)
	f.sim.ResetStats()

	resp := f.ok(t, body)
	require.Equal(t, api.ChainhookResponse{Accepted: true, AppliedBlocks: 1, Candidates: 2, Agents: 1, Inserted: 1}, resp)
	require.Equal(t, map[string]string{txs[0].TxID: competition.SourceChainhook}, f.swapSources(t))
	require.Zero(t, f.sim.Stats().Routes[sim.HiroTxMultipleRoute].Total+f.sim.Stats().Routes[sim.HiroTxRoute].Total,
		"recorded from the delivery: no detail request")

	row, _, err := f.st.AgentIngestRow(ctx, txs[0].Sender)
	require.NoError(t, err)
	require.False(t, row.NextRunAt.After(time.Now()), "the agent is due now")
	var due int
	require.NoError(t, f.st.Pool().QueryRow(ctx, `select count(*) from agent_ingest where next_run_at <= now()`).Scan(&due))
	require.Equal(t, 1, due, "only that agent")

	// Duplicates change nothing and ask Hiro nothing.
	f.sim.ResetStats()
	before := f.ledger(t)
	for range 3 {
		resp = f.ok(t, body)
		require.Equal(t, 1, resp.AlreadyKnown)
	}
	after := f.ledger(t)
	require.Equal(t, "4", after["state"], "every accepted delivery is counted")
	delete(before, "state")
	delete(after, "state")
	require.Equal(t, before, after)
	require.Zero(t, f.sim.Stats().Routes[sim.HiroTxMultipleRoute].Total)
	require.Equal(t, 1.0, counter(t, f.reg, "pacer_chainhook_swaps_total", "push"))
	require.Equal(t, 1.0, histogramCount(t, f.reg, "pacer_chainhook_push_to_row_seconds"))
}

func TestChainhookFindsWhatPollingFoundFirst(t *testing.T) {
	t.Parallel()
	f := newHookFixture(t, hookSecret)
	tx := f.worldTxs(t, 1)[0]
	o := f.acts.FastVerifier.Verify(context.Background(), tx.TxID, competition.SourceSweep)
	require.Equal(t, competition.StatusInserted, o.Status)
	resp := f.ok(t, f.delivery(t, []block{{hash: "0xb1", height: 10, txs: []sim.WorldTx{tx}}}, nil))
	require.Equal(t, 1, resp.AlreadyKnown)
	require.Equal(t, competition.SourceSweep, f.swapSources(t)[tx.TxID], "one row, its first writer's")
	require.Equal(t, 1.0, counter(t, f.reg, "pacer_chainhook_swaps_total", "sweep"))
}

func TestChainhookRollbackAndReapply(t *testing.T) {
	t.Parallel()
	f := newHookFixture(t, hookSecret)
	ctx := context.Background()
	txs := f.worldTxs(t, 3)
	b1 := block{hash: "0xb1", height: 10, txs: txs[:2]}
	b2 := block{hash: "0xb2", height: 11, txs: txs[2:]}
	applyB1, applyB2 := f.delivery(t, []block{b1}, nil), f.delivery(t, []block{b2}, nil)
	f.ok(t, applyB1)
	f.ok(t, applyB2)
	require.Len(t, f.swapSources(t), 3)
	_, err := f.st.Pool().Exec(ctx, `update agent_ingest set next_run_at = now() + interval '1 hour'`)
	require.NoError(t, err)

	// A reorg: b1 rolled back, its replacement b1' holds none of its
	// transactions yet.
	reorg := f.delivery(t, []block{{hash: "0xc1", height: 10}}, []block{b1})
	resp := f.ok(t, reorg)
	require.Equal(t, 2, resp.SwapsRolledBack)
	require.Equal(t, map[string]string{txs[2].TxID: competition.SourceChainhook}, f.swapSources(t), "exactly the rolled-back swaps left")
	var kept int
	require.NoError(t, f.st.Pool().QueryRow(ctx, `select count(*) from swap_rollbacks where block_hash = '0xb1'`).Scan(&kept))
	require.Equal(t, 2, kept)
	for i, tx := range txs {
		row, _, err := f.st.AgentIngestRow(ctx, tx.Sender)
		require.NoError(t, err)
		require.Equal(t, i < 2, !row.NextRunAt.After(time.Now()), "the rolled-back swaps' agents are due, agent %d", i)
	}
	hours, err := f.st.DirtyHours(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, hours, "their hours are dirty")

	// Replays of the rollback change nothing.
	snapshot := f.ledger(t)
	f.ok(t, reorg)
	now := f.ledger(t)
	delete(snapshot, "state")
	delete(now, "state")
	require.Equal(t, snapshot, now)

	// The transactions are mined again in another block: restored.
	_, err = f.st.Pool().Exec(ctx, `delete from rollup_dirty`)
	require.NoError(t, err)
	reapply := f.delivery(t, []block{{hash: "0xc2", height: 11, txs: txs[:2]}}, nil)
	resp = f.ok(t, reapply)
	require.Equal(t, 2, resp.Inserted)
	require.Len(t, f.swapSources(t), 3)
	hours, err = f.st.DirtyHours(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, hours, "a restored swap marks its hour again")

	// Every delivery again, in another order: nothing changes. The stale
	// rollback of b1 leaves the transactions re-applied in c2 alone.
	snapshot = f.ledger(t)
	for _, body := range [][]byte{reorg, applyB2, reapply, applyB1, reorg} {
		f.ok(t, body)
	}
	now = f.ledger(t)
	delete(snapshot, "state")
	delete(now, "state")
	require.Equal(t, snapshot, now)
	require.Len(t, f.swapSources(t), 3)
	require.Equal(t, 2.0, counter(t, f.reg, "pacer_chainhook_rollbacks_total", "swaps"))
}

func TestChainhookJunkDoesNotStallTheAPI(t *testing.T) {
	t.Parallel()
	f := newHookFixture(t, hookSecret)
	junk := bytes.Repeat([]byte("{"), 4<<20)
	var wg sync.WaitGroup
	codes := make(chan int, 24)
	for i := range 24 {
		wg.Go(func() {
			auth := ""
			if i%2 == 0 {
				auth = "Bearer " + hookSecret
			}
			req, err := http.NewRequest(http.MethodPost, f.url, bytes.NewReader(junk))
			if err != nil {
				return
			}
			req.Header.Set("Authorization", auth)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes <- resp.StatusCode
		})
	}
	// Meanwhile, the API answers.
	base := strings.TrimSuffix(f.url, api.ChainhookPath)
	for range 5 {
		resp, err := http.Get(base + "/healthz")
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	tx := f.worldTxs(t, 1)[0]
	resp := f.ok(t, f.delivery(t, []block{{hash: "0xb1", height: 10, txs: []sim.WorldTx{tx}}}, nil))
	require.Equal(t, 1, resp.Inserted, "a real delivery still goes through")
	wg.Wait()
	close(codes)
	for c := range codes {
		require.Contains(t, []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusServiceUnavailable}, c)
	}
}

func counter(t *testing.T, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == label {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no %s{%s}", name, label)
	return 0
}

func histogramCount(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return float64(mf.GetMetric()[0].GetHistogram().GetSampleCount())
		}
	}
	t.Fatalf("no %s", name)
	return 0
}
