package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/api/openapi"
	"github.com/pacer-dev/pacer/internal/competition"
)

// openAPISchemas compiles the response schemas of the OpenAPI document
// (OpenAPI 3.1's schemas are JSON Schema 2020-12).
type openAPISchemas struct {
	doc map[string]any
	c   *jsonschema.Compiler
}

func newOpenAPISchemas(t *testing.T) *openAPISchemas {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(openapi.Document))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("openapi.json", doc))
	return &openAPISchemas{doc: doc.(map[string]any), c: c}
}

func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// schema is the JSON schema of path's method's answer with code.
func (o *openAPISchemas) schema(t *testing.T, method, path string, code int) *jsonschema.Schema {
	t.Helper()
	op, ok := o.doc["paths"].(map[string]any)[path].(map[string]any)[method].(map[string]any)
	require.True(t, ok, "%s %s is not documented", method, path)
	resp, ok := op["responses"].(map[string]any)[strconv.Itoa(code)].(map[string]any)
	require.True(t, ok, "%s %s documents no %d", method, path, code)
	loc := "openapi.json#/paths/" + pointerEscape(path) + "/" + method + "/responses/" + strconv.Itoa(code)
	if ref, ok := resp["$ref"].(string); ok {
		loc = "openapi.json" + ref
	}
	sch, err := o.c.Compile(loc + "/content/application~1json/schema")
	require.NoError(t, err)
	return sch
}

// What pacer answers holds to what GET /api/openapi.json says of it: each
// documented read's answer, success and error, validates against its
// operation's response schema.
func TestOpenAPISchemasHoldTheAnswers(t *testing.T) {
	t.Parallel()
	f := newBoardFixture(t)
	ctx := context.Background()
	agent, other := stxAddr(41), stxAddr(42)
	f.exec(t, `insert into token_prices (token_id, price_usd, decimals, source, fetched_at) values ('stx', 1.85, 6, 'tenero', now())`)
	f.exec(t, `insert into agents (stx_address, btc_address, erc8004_agent_id) values ($1, 'bc1qa', 5), ($2, null, 5)`, agent, other)
	for i, sender := range []string{agent, other, agent} {
		_, err := f.st.InsertSwap(ctx, competition.Swap{TxID: "0x" + strings.Repeat("0", 63) + strconv.Itoa(i+1), Sender: sender,
			ContractID: "SP1.pool", FunctionName: "swap", TokenIn: "stx", AmountIn: "9007199254740993", TokenOut: tokA,
			AmountOut: "12", BurnBlockTime: 1_778_700_600 + int64(i), TxStatus: "success", Source: "sweep"})
		require.NoError(t, err)
	}
	o := newOpenAPISchemas(t)
	for _, tt := range []struct {
		give     string
		path     string
		wantCode int
	}{
		{"/", "/", 200},
		{"/healthz", "/healthz", 200},
		{"/readyz", "/readyz", 200},
		{"/readyz?scope=nope", "/readyz", 400},
		{"/api/prices?tokens=stx,SP3K8BC0PPEVCV7NZ6QSRWPQ2JE9E5B6N3PA0KBR9.tok-a", "/api/prices", 200},
		{"/api/prices?token=stx", "/api/prices", 200},
		{"/api/prices?tokens=%%%", "/api/prices", 400},
		{"/api/competition/leaderboard", "/api/competition/leaderboard", 200},
		{"/api/competition/leaderboard?by=identity&sort=pnl&limit=1", "/api/competition/leaderboard", 200},
		{"/api/competition/leaderboard?sort=nope", "/api/competition/leaderboard", 400},
		{"/api/competition/trades?limit=2", "/api/competition/trades", 200},
		{"/api/competition/trades?address=" + agent, "/api/competition/trades", 200},
		{"/api/competition/trades?limit=0", "/api/competition/trades", 400},
		{"/api/competition/status?address=" + agent, "/api/competition/status", 200},
		{"/api/competition/status?address=" + stxAddr(43), "/api/competition/status", 200},
		{"/api/competition/status", "/api/competition/status", 400},
		{"/api/competition/allowlist", "/api/competition/allowlist", 200},
		{"/api/competition/tracked-tokens", "/api/competition/tracked-tokens", 200},
		{"/api/rollups?period=hour&from=2026-05-13T00:00:00Z&to=2026-05-14T00:00:00Z", "/api/rollups", 200},
		{"/api/rollups?period=week", "/api/rollups", 400},
	} {
		resp, err := http.Get(f.srv.URL + tt.give)
		require.NoError(t, err)
		body, err := jsonschema.UnmarshalJSON(resp.Body)
		resp.Body.Close()
		require.NoError(t, err, tt.give)
		require.Equal(t, tt.wantCode, resp.StatusCode, tt.give)
		if err := o.schema(t, "get", tt.path, resp.StatusCode).Validate(body); err != nil {
			b, _ := json.Marshal(body)
			t.Errorf("GET %s: the answer does not hold to the OpenAPI document: %v\n%s", tt.give, err, b)
		}
	}
}
