package chainhook_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/catalog"
	"github.com/pacer-dev/pacer/internal/chainhook"
	"github.com/pacer-dev/pacer/internal/competition"
)

const (
	swapTx   = "0x09defc9a6cd9318b5c458389d4dd57597203ec539818aec0de3cfcfd7af0c2ab"
	opOnlyTx = "0x3333333333333333333333333333333333333333333333333333333333333333"
	agent    = "SPV2YDN4RZ506655KZK493YKM31JQPKJ9NN3QCX9"
	block1   = "0xa204da7c35d4a26a0b1f6c4c8a4c6b8e0f4c1d2e3f40516273849a5b6c7d8e9f"
)

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

func TestParseAndExtractApply(t *testing.T) {
	t.Parallel()
	p, err := chainhook.Parse(bytes.NewReader(readFile(t, "apply.json")))
	require.NoError(t, err)
	require.Equal(t, "mainnet", p.Event.Network)
	require.Equal(t, "be4ab3ed-b606-4fe0-97c4-6c0b1ac9b185", p.Chainhook.UUID)
	require.Len(t, p.Event.Apply, 1)
	require.Equal(t, block1, p.Event.Apply[0].BlockIdentifier.Hash, "hashes come back lower-case")

	ex, err := chainhook.Extract(p, catalog.Default())
	require.NoError(t, err)
	require.Empty(t, ex.RolledBack)
	// The failed call, the call off the allowlist and the token transfer
	// are no candidates (the failed call is a skip, said in the log); the
	// call named only by its operation is one, its id given the 0x it
	// lacked.
	type brief struct {
		TxID, Sender, ContractID, FunctionName string
		Block                                  chainhook.BlockRef
	}
	var got []brief
	for _, c := range ex.Applied {
		got = append(got, brief{c.TxID, c.Sender, c.ContractID, c.FunctionName, c.Block})
	}
	require.Equal(t, []brief{
		{TxID: swapTx, Sender: agent, ContractID: "SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.stableswap-stx-ststx-v-1-2",
			FunctionName: "swap-x-for-y", Block: chainhook.BlockRef{Hash: block1, Height: 3549902, Timestamp: 1778787000}},
		{TxID: opOnlyTx, Sender: "SP3FBR2AGK5H9QBDH3EEN6DF8EK8JY7RX8QJ5SVTE", ContractID: "SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.stableswap-stx-ststx-v-1-2",
			FunctionName: "swap-y-for-x", Block: chainhook.BlockRef{Hash: block1, Height: 3549902, Timestamp: 1778787000}},
	}, got)
	require.Equal(t, []chainhook.Skip{{TxID: "0x1111111111111111111111111111111111111111111111111111111111111111",
		Sender: agent, Reason: chainhook.SkipFailed, Status: "abort_by_response"}}, ex.Skipped)
}

func TestExtractRollback(t *testing.T) {
	t.Parallel()
	p, err := chainhook.Parse(bytes.NewReader(readFile(t, "reorg.json")))
	require.NoError(t, err)
	ex, err := chainhook.Extract(p, catalog.Default())
	require.NoError(t, err)
	require.Empty(t, ex.Applied)
	require.Equal(t, []chainhook.RolledBack{{Block: chainhook.BlockRef{Hash: block1, Height: 3549902, Timestamp: 1778787000},
		TxIDs: []string{swapTx}}}, ex.RolledBack)
}

func TestExtractSkipsRepeats(t *testing.T) {
	t.Parallel()
	var doc map[string]any
	require.NoError(t, json.Unmarshal(readFile(t, "apply.json"), &doc))
	ev := doc["event"].(map[string]any)
	ev["apply"] = append(ev["apply"].([]any), ev["apply"].([]any)[0])
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	p, err := chainhook.Parse(bytes.NewReader(b))
	require.NoError(t, err)
	ex, err := chainhook.Extract(p, catalog.Default())
	require.NoError(t, err)
	require.Len(t, ex.Applied, 2, "a block delivered twice gives its candidates once")
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	hash := strings.Repeat("ab", 32)
	tests := []struct {
		name     string
		give     string
		wantText string
	}{
		{name: "empty", give: ``, wantText: "not a JSON object"},
		{name: "garbage", give: `not json`, wantText: "not a JSON object"},
		{name: "array", give: `[]`, wantText: "JSON array"},
		{name: "string", give: `"x"`, wantText: "JSON string"},
		{name: "no event", give: `{"chainhook":{}}`, wantText: "missing event"},
		{name: "null event", give: `{"event":null}`, wantText: "missing event"},
		{name: "two values", give: `{"event":{}} {}`, wantText: "more than one JSON value"},
		{name: "trailing bracket", give: `{"event":{}}]`, wantText: "more than one JSON value"},
		{name: "truncated", give: `{"event":{"apply":[`, wantText: "not a JSON object"},
		{name: "apply not array", give: `{"event":{"apply":{}}}`, wantText: "event.apply"},
		{name: "index as string", give: `{"event":{"apply":[{"block_identifier":{"hash":"0x01","index":"7"}}]}}`, wantText: "block_identifier.index: JSON string where a number belongs"},
		{name: "fractional index", give: `{"event":{"apply":[{"block_identifier":{"hash":"0x01","index":7.5}}]}}`, wantText: "index"},
		{name: "negative index", give: `{"event":{"apply":[{"block_identifier":{"hash":"0x01","index":-1}}]}}`, wantText: "negative"},
		{name: "no block hash", give: `{"event":{"rollback":[{"block_identifier":{"index":1}}]}}`, wantText: "event.rollback[0].block_identifier.hash"},
		{name: "hash not hex", give: `{"event":{"apply":[{"block_identifier":{"hash":"0xzz","index":1}}]}}`, wantText: "block_identifier.hash"},
		{name: "short txid", give: `{"event":{"apply":[{"block_identifier":{"hash":"0x01","index":1},"transactions":[{"transaction_identifier":{"hash":"0xabc"}}]}]}}`, wantText: "transactions[0].transaction_identifier.hash"},
		{name: "sender as number", give: `{"event":{"apply":[{"block_identifier":{"hash":"0x01","index":1},"transactions":[{"transaction_identifier":{"hash":"` + hash + `"},"metadata":{"sender_address":5}}]}]}}`, wantText: "sender_address: JSON number where a string belongs"},
		{name: "canonical as string", give: `{"event":{"apply":[{"block_identifier":{"hash":"0x01","index":1},"transactions":[{"transaction_identifier":{"hash":"` + hash + `"},"metadata":{"canonical":"yes"}}]}]}}`, wantText: "canonical"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := chainhook.Parse(strings.NewReader(tt.give))
			require.Error(t, err)
			require.ErrorIs(t, err, chainhook.ErrPayload)
			require.Contains(t, err.Error(), tt.wantText)
		})
	}
}

func TestParseIgnoresUnknownFields(t *testing.T) {
	t.Parallel()
	p, err := chainhook.Parse(strings.NewReader(`{"event":{"apply":[],"novel":{"x":[1,2]}},"chainhook":{"uuid":"u","extra":true},"more":1}`))
	require.NoError(t, err)
	require.Empty(t, p.Event.Apply)
}

func TestParseBounds(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(`{"event":{"apply":[`)
	for i := range chainhook.MaxBlocks + 1 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"block_identifier":{"hash":"0x01","index":1}}`)
	}
	b.WriteString(`]}}`)
	_, err := chainhook.Parse(strings.NewReader(b.String()))
	require.ErrorIs(t, err, chainhook.ErrPayload)
	require.Contains(t, err.Error(), "blocks")
}

func TestExtractBadOperationMetadata(t *testing.T) {
	t.Parallel()
	hash := strings.Repeat("cd", 32)
	p, err := chainhook.Parse(strings.NewReader(`{"event":{"apply":[{"block_identifier":{"hash":"0x01","index":1},"transactions":[` +
		`{"transaction_identifier":{"hash":"` + hash + `"},"metadata":{"sender_address":"SP1","status":"success"},` +
		`"operations":[{"type":"contract_call","metadata":{"contract_identifier":7}}]}]}]}}`))
	require.NoError(t, err)
	_, err = chainhook.Extract(p, catalog.Default())
	require.ErrorIs(t, err, chainhook.ErrPayload)
	require.Contains(t, err.Error(), "operations[0].metadata")
}

func TestSpec(t *testing.T) {
	t.Parallel()
	pairs := catalog.Default().Pairs()
	require.NotEmpty(t, pairs)
	b, err := chainhook.Spec(chainhook.SpecOptions{Endpoint: "https://pacer.example/api/chainhook",
		Authorization: "Bearer " + chainhook.PlaceholderSecret, Pairs: pairs, Network: "mainnet"})
	require.NoError(t, err)
	var def struct {
		Version, Name, Chain, Network string
		Filters                       struct {
			Events []struct {
				Type               string `json:"type"`
				ContractIdentifier string `json:"contract_identifier"`
				FunctionName       string `json:"function_name"`
			} `json:"events"`
		} `json:"filters"`
		Action struct{ Type, URL string } `json:"action"`
	}
	require.NoError(t, json.Unmarshal(b, &def))
	require.Equal(t, "stacks", def.Chain)
	require.Equal(t, "mainnet", def.Network)
	require.Equal(t, "http_post", def.Action.Type)
	require.Equal(t, "https://pacer.example/api/chainhook", def.Action.URL)
	require.Len(t, def.Filters.Events, len(pairs), "one filter per allowlisted pair")
	for _, e := range def.Filters.Events {
		require.Equal(t, "contract_call", e.Type)
		require.True(t, catalog.Default().Allowed(e.ContractIdentifier, e.FunctionName))
	}

	start := int64(100)
	b, err = chainhook.Spec(chainhook.SpecOptions{Endpoint: "http://127.0.0.1:8080/api/chainhook",
		Authorization: "Bearer s3cret", Pairs: pairs, Network: "testnet", StartBlock: &start, Format: chainhook.FormatV1})
	require.NoError(t, err)
	var preds []struct {
		Networks map[string]struct {
			IfThis   map[string]string `json:"if_this"`
			ThenThat struct {
				HTTPPost map[string]string `json:"http_post"`
			} `json:"then_that"`
			StartBlock int64 `json:"start_block"`
		} `json:"networks"`
	}
	require.NoError(t, json.Unmarshal(b, &preds))
	require.Len(t, preds, len(pairs))
	n := preds[0].Networks["testnet"]
	require.Equal(t, "contract_call", n.IfThis["scope"])
	require.Equal(t, "Bearer s3cret", n.ThenThat.HTTPPost["authorization_header"])
	require.Equal(t, int64(100), n.StartBlock)

	for _, bad := range []chainhook.SpecOptions{
		{Endpoint: "ftp://x/api", Pairs: pairs, Network: "mainnet"},
		{Endpoint: "https://x/api", Pairs: pairs, Network: "devnet"},
		{Endpoint: "https://x/api", Network: "mainnet"},
		{Endpoint: "https://x/api", Pairs: pairs, Network: "mainnet", Format: "v3"},
		{Endpoint: "https://x/api", Pairs: pairs, Network: "mainnet", StartBlock: &start},
	} {
		_, err := chainhook.Spec(bad)
		require.Error(t, err, "%+v", bad)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(readFile(f, "apply.json"))
	f.Add(readFile(f, "reorg.json"))
	f.Add([]byte(`{"event":{}}`))
	f.Add([]byte(`{"event":{"apply":[{"block_identifier":{"hash":"0x01","index":1},"transactions":[{"transaction_identifier":{"hash":"0x` +
		strings.Repeat("0", 64) + `"},"metadata":{"sender_address":"SP1"},"operations":[{"type":"contract_call","metadata":[]}]}]}]}}`))
	allow := catalog.Default()
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := chainhook.Parse(bytes.NewReader(body))
		if err != nil {
			require.True(t, errors.Is(err, chainhook.ErrPayload), "every failure is a payload error: %v", err)
			return
		}
		ex, err := chainhook.Extract(p, allow)
		applied, rolled := ex.Applied, ex.RolledBack
		if err != nil {
			require.ErrorIs(t, err, chainhook.ErrPayload)
			return
		}
		require.LessOrEqual(t, len(p.Event.Apply)+len(p.Event.Rollback), chainhook.MaxBlocks)
		seen := map[string]bool{}
		for _, c := range applied {
			require.Len(t, c.TxID, 66)
			require.Equal(t, strings.ToLower(c.TxID), c.TxID)
			require.False(t, seen[c.TxID], "no candidate twice")
			seen[c.TxID] = true
			require.NotEmpty(t, c.Sender)
			require.True(t, allow.Allowed(c.ContractID, c.FunctionName))
		}
		for _, r := range rolled {
			require.True(t, strings.HasPrefix(r.Block.Hash, "0x"))
			for _, id := range r.TxIDs {
				require.Len(t, id, 66)
			}
		}
	})
}

// TestSwapFromOperations: the swap a delivery describes, built from its
// token_transfer operations (each one side of a transfer: the account's
// signed amount), against figures worked out by hand from apply.json: the
// agent sends 1,000,000 µSTX to the pool and receives 950,000 stSTX from
// it; its fee operation is no leg.
func TestSwapFromOperations(t *testing.T) {
	t.Parallel()
	p, err := chainhook.Parse(bytes.NewReader(readFile(t, "apply.json")))
	require.NoError(t, err)
	ex, err := chainhook.Extract(p, catalog.Default())
	require.NoError(t, err)
	require.Len(t, ex.Applied, 2)
	pool := "SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.stableswap-stx-ststx-v-1-2"
	ststx := "SP4SZE494VC2YC5JYG7AYFQ44F5Q4PYV7DVMDPBG.ststx-token::ststx"

	tx := ex.Applied[0].Tx
	require.Equal(t, block1, tx.BlockHash)
	require.Equal(t, int64(3549902), tx.BlockHeight)
	require.Equal(t, int64(1778787000), tx.BlockTime)
	require.True(t, tx.EventsComplete())
	sw, err := competition.ParseSwap(tx, catalog.Default())
	require.NoError(t, err)
	require.Equal(t, [4]string{"stx", "1000000", ststx, "950000"}, [4]string{sw.TokenIn, sw.AmountIn, sw.TokenOut, sw.AmountOut})
	var legs competition.Legs
	require.NoError(t, json.Unmarshal(sw.RawEventJSON, &legs))
	require.Equal(t, []competition.Leg{{AssetID: "stx", Amount: "1000000", Counterparty: pool}}, legs.LegsOut, "the pool's side pairs with the agent's")
	require.Equal(t, []competition.Leg{{AssetID: ststx, Amount: "950000", Counterparty: pool}}, legs.LegsIn)

	// Sides without their pair still net: 500 stSTX out, 510 µSTX in.
	sw, err = competition.ParseSwap(ex.Applied[1].Tx, catalog.Default())
	require.NoError(t, err)
	require.Equal(t, [4]string{ststx, "500", "stx", "510"}, [4]string{sw.TokenIn, sw.AmountIn, sw.TokenOut, sw.AmountOut})
}
