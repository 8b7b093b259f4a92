// Command hiro-schemas cuts, from the Stacks Blockchain API's published
// OpenAPI document, the JSON schemas of the answers pacer reads, and writes
// them as one JSON Schema document (internal/hiro/openapi/testdata/
// stacks-blockchain-api/schemas.json). The schemas are copied as published;
// the few answers the document leaves out (its deprecated routes are hidden
// from it, and the WebSocket notifications are not HTTP routes) are
// composed here from the published schemas exactly as the server's source
// composes them, each with the file it follows.
//
//	go run ./scripts/hiro-schemas -openapi openapi.yaml -commit <sha> > internal/hiro/openapi/testdata/stacks-blockchain-api/schemas.json
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"go.yaml.in/yaml/v3"
)

const repo = "github.com/hirosystems/stacks-blockchain-api"

func main() {
	file := flag.String("openapi", "openapi.yaml", "the repository's openapi.yaml")
	commit := flag.String("commit", "", "the commit it was read at")
	flag.Parse()
	if err := run(*file, *commit); err != nil {
		fmt.Fprintln(os.Stderr, "hiro-schemas:", err)
		os.Exit(1)
	}
}

func run(file, commit string) error {
	raw, err := os.ReadFile(file) //nolint:gosec // G304: the operator names the openapi.yaml to cut

	if err != nil {
		return err
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	response := func(path string) (any, error) {
		return at(doc, "paths", path, "get", "responses", "200", "content", "application/json", "schema")
	}
	defs := map[string]any{}
	provenance := map[string]string{}
	for name, path := range map[string]string{
		"tx_multiple":               "/extended/v1/tx/multiple",
		"v3_principal_transactions": "/extended/v3/principals/{principal}/transactions",
	} {
		s, err := response(path)
		if err != nil {
			return err
		}
		defs[name] = s
		provenance[name] = "openapi.yaml: paths." + path + ".get.responses.200 (application/json), verbatim"
	}
	// The confirmed transaction: TransactionFound.result's first branch
	// (TransactionSchema; the second is MempoolTransactionSchema).
	tx, err := at(defs["tx_multiple"], "additionalProperties", "anyOf", 0, "properties", "result", "anyOf", 0)
	if err != nil {
		return err
	}
	defs["transaction"] = tx
	provenance["transaction"] = "openapi.yaml: tx/multiple's TransactionFound.result.anyOf[0] (TransactionSchema, src/api/schemas/v1/entities/transactions.ts), verbatim"
	block, err := at(doc, "paths", "/extended/v1/search/{id}", "get", "responses", "200", "content", "application/json", "schema",
		"properties", "result", "anyOf", 1, "properties", "metadata")
	if err != nil {
		return err
	}
	if t, _ := at(block, "title"); t != "Block" {
		return fmt.Errorf("search's block metadata is titled %v, not Block: the document moved", t)
	}
	defs["block"] = block
	provenance["block"] = "openapi.yaml: /extended/v1/search/{id}'s block result metadata (BlockSchema, src/api/schemas/v1/entities/block.ts), verbatim"

	integer := map[string]any{"type": "integer"}
	// The feed, GET /extended/v1/tx (deprecated, so hidden from the
	// document): TransactionResultsSchema = PaginatedResponse(TransactionSchema)
	// (src/api/schemas/v1/responses/responses.ts, src/api/schemas/v1/util.ts).
	defs["v1_tx_list"] = map[string]any{
		"type": "object", "required": []any{"limit", "offset", "total", "results"},
		"properties": map[string]any{"limit": integer, "offset": integer, "total": integer,
			"results": map[string]any{"type": "array", "items": map[string]any{"$ref": "#/$defs/transaction"}}},
	}
	provenance["v1_tx_list"] = "composed: src/api/routes/v1/tx.ts GET / answers TransactionResultsSchema = PaginatedResponse(TransactionSchema) (src/api/schemas/v1/responses/responses.ts, src/api/schemas/v1/util.ts)"
	// WebSocket notifications (src/api/routes/ws/channels/ws-rpc-channel.ts,
	// jsonrpc-lite's notification): {"jsonrpc":"2.0","method":…,"params":…}.
	notification := func(method string, params any) any {
		return map[string]any{
			"type": "object", "required": []any{"jsonrpc", "method", "params"},
			"properties": map[string]any{"jsonrpc": map[string]any{"const": "2.0"}, "method": map[string]any{"const": method}, "params": params},
		}
	}
	defs["ws_block"] = notification("block", map[string]any{"$ref": "#/$defs/block"})
	provenance["ws_block"] = "composed: ws-rpc-channel.ts processBlockUpdate sends jsonRpcNotification('block', Block)"
	str := map[string]any{"type": "string"}
	defs["ws_address_tx_update"] = notification("address_tx_update", map[string]any{
		// {address, tx_id, tx_status, tx_type, ...AddressTransactionWithTransfers}
		"type":     "object",
		"required": []any{"address", "tx_id", "tx_status", "tx_type", "tx", "stx_sent", "stx_received", "stx_transfers"},
		"properties": map[string]any{
			"address": str, "tx_id": str, "tx_status": str, "tx_type": str,
			"tx":       map[string]any{"$ref": "#/$defs/transaction"},
			"stx_sent": str, "stx_received": str,
			"stx_transfers": map[string]any{"type": "array", "items": map[string]any{
				"type": "object", "required": []any{"amount"},
				"properties": map[string]any{"amount": str, "sender": str, "recipient": str}}},
			"ft_transfers": map[string]any{"type": "array", "items": map[string]any{
				"type": "object", "required": []any{"amount", "asset_identifier"},
				"properties": map[string]any{"amount": str, "asset_identifier": str, "sender": str, "recipient": str}}},
			"nft_transfers": map[string]any{"type": "array", "items": map[string]any{
				"type": "object", "required": []any{"value", "asset_identifier"},
				"properties": map[string]any{"asset_identifier": str, "sender": str, "recipient": str,
					"value": map[string]any{"type": "object", "required": []any{"hex", "repr"}, "properties": map[string]any{"hex": str, "repr": str}}}}},
		},
	})
	provenance["ws_address_tx_update"] = "composed: ws-rpc-channel.ts processAddressUpdate sends {address, tx_id, tx_status, tx_type, ...AddressTransactionWithTransfersSchema} (src/api/schemas/v1/entities/addresses.ts), tx = TransactionSchema"

	out := map[string]any{
		"$schema":  "https://json-schema.org/draft/2020-12/schema",
		"$comment": fmt.Sprintf("Cut by scripts/hiro-schemas from %s openapi.yaml at commit %s (info.version %v); see PROVENANCE.md", repo, commit, must(at(doc, "info", "version"))),
		"x-source": map[string]any{"repository": repo, "commit": commit, "path": "openapi.yaml", "definitions": provenance},
		"$defs":    defs,
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	return enc.Encode(out)
}

func must(v any, err error) any {
	if err != nil {
		return "?"
	}
	return v
}

// at walks v by object keys and array indexes.
func at(v any, path ...any) (any, error) {
	for i, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok || m[k] == nil {
				return nil, fmt.Errorf("no %v in the document (at %v)", k, path[:i+1])
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				return nil, fmt.Errorf("no index %d in the document (at %v)", k, path[:i+1])
			}
			v = a[k]
		}
	}
	return v, nil
}
