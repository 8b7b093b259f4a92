// Package openapi holds pacer's reading of Hiro, and the simulator's
// imitation of it, to Hiro's own published schemas: the answers the Stacks
// Blockchain API's openapi.yaml declares, cut into
// testdata/stacks-blockchain-api/schemas.json by scripts/hiro-schemas (its
// repository, commit and the place of each schema in PROVENANCE.md). Tests
// use it two ways: Validate holds an answer (the simulator's, a fixture's)
// to the schema, and Reads holds a Go type pacer decodes an answer into to
// it, field by field, so a field read under the wrong name or as the wrong
// JSON type is a failing test, not a zero value at run time.
package openapi

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The answers the document holds, by name ($defs).
const (
	TxMultiple              = "tx_multiple"               // GET /extended/v1/tx/multiple
	Transaction             = "transaction"               // one confirmed transaction (TransactionSchema)
	V1TxList                = "v1_tx_list"                // GET /extended/v1/tx, the feed (deprecated)
	V3PrincipalTransactions = "v3_principal_transactions" // GET /extended/v3/principals/{principal}/transactions
	Block                   = "block"                     // BlockSchema (v1)
	WSBlock                 = "ws_block"                  // the WebSocket's "block" notification
	WSAddressTxUpdate       = "ws_address_tx_update"      // the WebSocket's "address_tx_update" notification
)

//go:embed testdata/stacks-blockchain-api/schemas.json
var schemasJSON []byte

const resource = "stacks-blockchain-api.json"

var load = sync.OnceValues(func() (map[string]any, error) {
	var doc map[string]any
	if err := json.Unmarshal(schemasJSON, &doc); err != nil {
		return nil, fmt.Errorf("openapi: schemas.json: %w", err)
	}
	return doc, nil
})

var compiled sync.Map // def → *jsonschema.Schema

func schema(def string) (*jsonschema.Schema, error) {
	if s, ok := compiled.Load(def); ok {
		return s.(*jsonschema.Schema), nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemasJSON))
	if err != nil {
		return nil, fmt.Errorf("openapi: schemas.json: %w", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(resource, doc); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	s, err := c.Compile(resource + "#/$defs/" + def)
	if err != nil {
		return nil, fmt.Errorf("openapi: %s: %w", def, err)
	}
	compiled.Store(def, s)
	return s, nil
}

// Validate reports how body breaks the schema of def (nil when it keeps it).
func Validate(def string, body []byte) error {
	s, err := schema(def)
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("openapi: %s: not JSON: %w", def, err)
	}
	if err := s.Validate(v); err != nil {
		return fmt.Errorf("openapi: %s: %w", def, err)
	}
	return nil
}

// Reads lists every way typ, decoded with encoding/json from an answer of
// def, misreads it: a field whose JSON name no branch of the schema
// declares at that place, or whose Go type cannot hold the JSON types the
// schema allows there. Fields typed json.RawMessage or with their own
// UnmarshalJSON are not followed (their reading is checked where it
// happens). An empty list means every field pacer reads is one Hiro
// publishes, as the type Hiro publishes.
func Reads(typ reflect.Type, def string) ([]string, error) {
	doc, err := load()
	if err != nil {
		return nil, err
	}
	defs, _ := doc["$defs"].(map[string]any)
	s, ok := defs[def]
	if !ok {
		return nil, fmt.Errorf("openapi: no schema %q", def)
	}
	r := reader{defs: defs}
	r.read(typ, []any{s}, typ.Name())
	return r.misreadings, nil
}

type reader struct {
	defs        map[string]any
	misreadings []string
}

var (
	rawMessage  = reflect.TypeFor[json.RawMessage]()
	unmarshaler = reflect.TypeFor[json.Unmarshaler]()
)

// branches flattens schemas into their alternatives (anyOf, oneOf, $ref).
func (r *reader) branches(schemas []any) []map[string]any {
	var out []map[string]any
	for _, s := range schemas {
		m, ok := s.(map[string]any)
		if !ok {
			continue
		}
		if ref, ok := m["$ref"].(string); ok {
			out = append(out, r.branches([]any{r.defs[strings.TrimPrefix(ref, "#/$defs/")]})...)
			continue
		}
		alts, _ := m["anyOf"].([]any)
		if oneOf, ok := m["oneOf"].([]any); ok {
			alts = append(alts, oneOf...)
		}
		if alts != nil {
			out = append(out, r.branches(alts)...)
			continue
		}
		if parts, ok := m["allOf"].([]any); ok {
			m = r.merge(m, r.branches(parts))
		}
		out = append(out, m)
	}
	return out
}

// merge is m with the properties of all its allOf parts (each a branch
// already): an object that is every part at once.
func (r *reader) merge(m map[string]any, parts []map[string]any) map[string]any {
	out := map[string]any{}
	props := map[string]any{}
	for k, v := range m {
		if k != "allOf" {
			out[k] = v
		}
	}
	if own, ok := m["properties"].(map[string]any); ok {
		for k, v := range own {
			props[k] = v
		}
	}
	for _, p := range parts {
		if out["type"] == nil && p["type"] != nil {
			out["type"] = p["type"]
		}
		if ps, ok := p["properties"].(map[string]any); ok {
			for k, v := range ps {
				props[k] = v
			}
		}
	}
	out["properties"] = props
	return out
}

// types is the JSON types a branch allows ("" for any).
func types(b map[string]any) []string {
	switch t := b["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	if c, ok := b["const"]; ok {
		return []string{jsonType(c)}
	}
	if e, ok := b["enum"].([]any); ok && len(e) > 0 {
		return []string{jsonType(e[0])}
	}
	return []string{""}
}

func jsonType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case nil:
		return "null"
	}
	return ""
}

func (r *reader) misread(path, format string, args ...any) {
	r.misreadings = append(r.misreadings, path+": "+fmt.Sprintf(format, args...))
}

// read checks t against the alternatives schemas offer at path.
func (r *reader) read(t reflect.Type, schemas []any, path string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessage || reflect.PointerTo(t).Implements(unmarshaler) || t.Kind() == reflect.Interface {
		return
	}
	bs := r.branches(schemas)
	var want string
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		want = "object"
	case reflect.Slice, reflect.Array:
		want = "array"
	case reflect.String:
		want = "string"
	case reflect.Bool:
		want = "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		want = "integer"
	case reflect.Float32, reflect.Float64:
		want = "number"
	default:
		r.misread(path, "Go %s has no JSON reading", t)
		return
	}
	var fit []map[string]any
	var offered []string
	for _, b := range bs {
		for _, ty := range types(b) {
			if ty == "" || ty == want || (want == "number" && ty == "integer") {
				fit = append(fit, b)
				break
			}
		}
		offered = append(offered, types(b)...)
	}
	if len(fit) == 0 {
		slices.Sort(offered)
		r.misread(path, "read as %s (Go %s), Hiro publishes %s", want, t, strings.Join(slices.Compact(offered), " or "))
		return
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		var items []any
		for _, b := range fit {
			if it, ok := b["items"]; ok {
				items = append(items, it)
			}
		}
		if len(items) > 0 {
			r.read(t.Elem(), items, path+"[]")
		}
	case reflect.Map:
		var values []any
		for _, b := range fit {
			if ap, ok := b["additionalProperties"].(map[string]any); ok {
				values = append(values, ap)
			}
		}
		if len(values) == 0 {
			r.misread(path, "read as a map, Hiro publishes no additionalProperties there")
			return
		}
		r.read(t.Elem(), values, path+"{}")
	case reflect.Struct:
		r.fields(t, fit, path)
	}
}

// fields checks each field t decodes against the objects' properties.
func (r *reader) fields(t reflect.Type, objects []map[string]any, path string) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				r.fields(ft, objects, path)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		var props []any
		for _, o := range objects {
			if ps, ok := o["properties"].(map[string]any); ok {
				if p, ok := ps[name]; ok {
					props = append(props, p)
				}
			}
		}
		at := path + "." + f.Name + " (" + name + ")"
		if len(props) == 0 {
			r.misread(at, "Hiro publishes no %q here", name)
			continue
		}
		r.read(f.Type, props, at)
	}
}
