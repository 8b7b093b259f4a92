package openapi

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEverySchemaCompiles(t *testing.T) {
	t.Parallel()
	for _, def := range []string{TxMultiple, Transaction, V1TxList, V3PrincipalTransactions, Block, WSBlock, WSAddressTxUpdate} {
		_, err := schema(def)
		require.NoError(t, err, def)
	}
}

// The cut is Hiro's: a mainnet answer (internal/hiro/testdata's capture,
// from a version before v9 added vm_error, so given vm_error: null) keeps
// it, as a tx/multiple answer and a feed page too, and answers that break
// it are refused. (Hiro's older documentation examples, the other
// fixtures, lack fields v9 requires.)
func TestHirosAnswersKeepTheirSchemas(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../testdata/tx-mainnet-with-events.json")
	require.NoError(t, err)
	mainnet := func() map[string]any {
		var m map[string]any
		require.NoError(t, json.Unmarshal(raw, &m))
		m["vm_error"] = nil
		return m
	}
	encode := func(v any) []byte {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		return b
	}
	m := mainnet()
	require.NoError(t, Validate(Transaction, encode(m)))
	require.NoError(t, Validate(TxMultiple, encode(map[string]any{m["tx_id"].(string): map[string]any{"found": true, "result": m}})))
	require.NoError(t, Validate(V1TxList, encode(map[string]any{"limit": 50, "offset": 0, "total": 1, "results": []any{m}})))

	// The hand-written v3 page (internal/hiro/testdata/README.md) is in
	// the shape Hiro publishes.
	v3, err := os.ReadFile("../testdata/principal-transactions-v3.json")
	require.NoError(t, err)
	require.NoError(t, Validate(V3PrincipalTransactions, v3))

	for name, broken := range map[string]func(map[string]any){
		"block_height a string": func(m map[string]any) { m["block_height"] = "5" },
		"tx_id gone":            func(m map[string]any) { delete(m, "tx_id") },
		"an unknown tx_type":    func(m map[string]any) { m["tx_type"] = "swap" },
		"an event's amount a number": func(m map[string]any) {
			for _, e := range m["events"].([]any) {
				if a, ok := e.(map[string]any)["asset"].(map[string]any); ok {
					a["amount"] = 5
				}
			}
		},
	} {
		b := mainnet()
		broken(b)
		require.Error(t, Validate(Transaction, encode(b)), name)
	}
}

// Reads finds a field read under a name Hiro does not publish, or as a
// JSON type Hiro does not send there, however deep.
func TestReadsFindsAPlantedMisreading(t *testing.T) {
	t.Parallel()
	type call struct {
		ContractID   string `json:"contract_id"`
		FunctionName string `json:"function_name"`
	}
	type good struct {
		TxID         string `json:"tx_id"`
		BlockHeight  int64  `json:"block_height"`
		Canonical    *bool  `json:"canonical"`
		ContractCall *call  `json:"contract_call"`
		Events       []struct {
			EventIndex int `json:"event_index"`
		} `json:"events"`
		Raw json.RawMessage `json:"-"`
	}
	got, err := Reads(reflect.TypeFor[good](), Transaction)
	require.NoError(t, err)
	require.Empty(t, got)
	got, err = Reads(reflect.TypeFor[map[string]struct {
		Found  bool            `json:"found"`
		Result json.RawMessage `json:"result"`
	}](), TxMultiple)
	require.NoError(t, err)
	require.Empty(t, got)

	for name, tc := range map[string]struct {
		typ  reflect.Type
		want string
	}{
		"a renamed field": {reflect.TypeFor[struct {
			TxID string `json:"txid"`
		}](), `no "txid"`},
		"a number read as a string": {reflect.TypeFor[struct {
			BlockHeight string `json:"block_height"`
		}](), "read as string"},
		"a string read as a number": {reflect.TypeFor[struct {
			Fee int64 `json:"fee_rate"`
		}](), "read as integer"},
		"deep in a nested object": {reflect.TypeFor[struct {
			ContractCall *struct {
				Function string `json:"function"`
			} `json:"contract_call"`
		}](), `no "function"`},
		"deep in an array": {reflect.TypeFor[struct {
			Events []struct {
				Index string `json:"event_index"`
			} `json:"events"`
		}](), "read as string"},
	} {
		got, err := Reads(tc.typ, Transaction)
		require.NoError(t, err)
		require.Len(t, got, 1, name)
		require.True(t, strings.Contains(got[0], tc.want), "%s: %s", name, got[0])
	}
}
