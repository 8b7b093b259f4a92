package chainhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/pacer-dev/pacer/internal/catalog"
)

// Spec formats: the Chainhooks 2.0 definition Hiro's hosted service
// registers, and the chainhook 1.x predicate a self-hosted chainhook node
// or Clarinet's devnet registers.
const (
	FormatV2 = "v2"
	FormatV1 = "v1"
)

// PlaceholderSecret stands for the secret in a spec printed without it.
const PlaceholderSecret = "<PACER_CHAINHOOK_SECRET>"

// SpecName is the name the definition registers under.
const SpecName = "pacer-competition-swaps"

// SpecOptions are what a definition needs.
type SpecOptions struct {
	// Endpoint is pacer's POST /api/chainhook URL as Hiro reaches it.
	Endpoint string
	// Authorization is the header value Chainhooks sends
	// ("Bearer <secret>"). A 2.0 definition has no field for it: Hiro
	// sends its consumer secret, which the operator sets as
	// PACER_CHAINHOOK_SECRET; a 1.x predicate carries it.
	Authorization string
	Pairs         []catalog.Pair
	// Network is mainnet or testnet.
	Network string
	// StartBlock, when set, is the first block a 1.x predicate scans.
	StartBlock *int64
	// Format is FormatV2 (the default) or FormatV1.
	Format string
}

// Spec builds the definition that makes Chainhooks deliver every call of an
// allowlisted pair to the endpoint, indented for people to read.
func Spec(o SpecOptions) ([]byte, error) {
	u, err := url.Parse(o.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("endpoint %q: want an http(s) URL", o.Endpoint)
	}
	if o.Network != "mainnet" && o.Network != "testnet" {
		return nil, fmt.Errorf("network %q: want mainnet or testnet", o.Network)
	}
	if len(o.Pairs) == 0 {
		return nil, errors.New("no allowlisted pairs to filter on")
	}
	if o.StartBlock != nil && *o.StartBlock < 0 {
		return nil, fmt.Errorf("start block %d is negative", *o.StartBlock)
	}
	var doc any
	switch o.Format {
	case "", FormatV2:
		if o.StartBlock != nil {
			return nil, errors.New("a 2.0 definition starts at the chain tip: backfill with Hiro's evaluate endpoint, or use the v1 format")
		}
		doc = specV2(o)
	case FormatV1:
		doc = specV1(o)
	default:
		return nil, fmt.Errorf("format %q: want v2 or v1", o.Format)
	}
	// Without HTML escaping, so the placeholder reads <…>, not \u003c….
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

type v2Definition struct {
	Version string    `json:"version"`
	Name    string    `json:"name"`
	Chain   string    `json:"chain"`
	Network string    `json:"network"`
	Filters v2Filters `json:"filters"`
	Action  v2Action  `json:"action"`
	Options v2Options `json:"options"`
}

type v2Filters struct {
	Events []v2Event `json:"events"`
}

type v2Event struct {
	Type               string `json:"type"`
	ContractIdentifier string `json:"contract_identifier"`
	FunctionName       string `json:"function_name"`
}

type v2Action struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

type v2Options struct {
	EnableOnRegistration bool `json:"enable_on_registration"`
	DecodeClarityValues  bool `json:"decode_clarity_values"`
}

func specV2(o SpecOptions) v2Definition {
	d := v2Definition{Version: "1", Name: SpecName, Chain: "stacks", Network: o.Network,
		Action:  v2Action{Type: "http_post", URL: o.Endpoint},
		Options: v2Options{EnableOnRegistration: true, DecodeClarityValues: true}}
	for _, p := range o.Pairs {
		d.Filters.Events = append(d.Filters.Events, v2Event{Type: TypeContractCall, ContractIdentifier: p.ContractID, FunctionName: p.Function})
	}
	return d
}

// A 1.x predicate has one if_this per predicate: one predicate per pair.
type v1Predicate struct {
	Chain    string               `json:"chain"`
	UUID     string               `json:"uuid"`
	Name     string               `json:"name"`
	Version  int                  `json:"version"`
	Networks map[string]v1Network `json:"networks"`
}

type v1Network struct {
	IfThis     v1IfThis   `json:"if_this"`
	ThenThat   v1ThenThat `json:"then_that"`
	StartBlock *int64     `json:"start_block,omitempty"`
}

type v1IfThis struct {
	Scope              string `json:"scope"`
	ContractIdentifier string `json:"contract_identifier"`
	Method             string `json:"method"`
}

type v1ThenThat struct {
	HTTPPost struct {
		URL                 string `json:"url"`
		AuthorizationHeader string `json:"authorization_header"`
	} `json:"http_post"`
}

func specV1(o SpecOptions) []v1Predicate {
	preds := make([]v1Predicate, 0, len(o.Pairs))
	for i, p := range o.Pairs {
		n := v1Network{IfThis: v1IfThis{Scope: TypeContractCall, ContractIdentifier: p.ContractID, Method: p.Function},
			StartBlock: o.StartBlock}
		n.ThenThat.HTTPPost.URL = o.Endpoint
		n.ThenThat.HTTPPost.AuthorizationHeader = o.Authorization
		preds = append(preds, v1Predicate{Chain: "stacks", UUID: fmt.Sprintf("%s-%d", SpecName, i+1),
			Name: SpecName + " " + p.ContractID + "::" + p.Function, Version: 1,
			Networks: map[string]v1Network{o.Network: n}})
	}
	return preds
}
