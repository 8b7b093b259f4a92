// Package catalog holds the facts pacer ships with rather than fetches: the
// tokens whose prices are always refreshed, the stablecoins priced at 1 USD,
// known decimals, and the allowlist of swap contracts that count for the
// trading competition. The data is embedded from data/*.json.
package catalog

import (
	"bytes"
	"cmp"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"sync"
)

//go:embed data/*.json
var data embed.FS

// File names inside the data directory.
const (
	tokensFile    = "tokens.json"
	allowlistFile = "swap-allowlist.json"
)

// MaxTraded is how many traded tokens the price refresh adds to the static
// base (SPEC §4.1).
const MaxTraded = 50

// Peg is a stablecoin priced at 1 USD without asking Tenero, which answers 404
// or a price of 0 for them.
type Peg struct {
	Decimals int    `json:"decimals"`
	Name     string `json:"name"`
}

// Catalog is the parsed data. It is read-only after Parse, so one value is
// shared by every goroutine.
type Catalog struct {
	staticBase []string
	// pegs and decimals are keyed by contract id, without ::asset.
	pegs     map[string]Peg
	decimals map[string]int
	// allowed maps a contract id to its function names that count as swaps.
	allowed           map[string]map[string]bool
	providerContracts map[string]bool
	providerAddress   string
}

// Default returns the catalog embedded in the binary, parsed on first use.
// The embedded files are checked by this package's tests, so a failure here
// is a build that should never have shipped: it panics.
func Default() *Catalog { return embedded() }

var embedded = sync.OnceValue(func() *Catalog {
	sub, err := fs.Sub(data, "data")
	if err == nil {
		var c *Catalog
		if c, err = Load(sub); err == nil {
			return c
		}
	}
	panic(fmt.Sprintf("catalog: embedded data: %v", err))
})

// Load parses tokens.json and swap-allowlist.json from the root of fsys.
func Load(fsys fs.FS) (*Catalog, error) {
	tokens, err := fs.ReadFile(fsys, tokensFile)
	if err != nil {
		return nil, fmt.Errorf("load catalog: %w", err)
	}
	allowlist, err := fs.ReadFile(fsys, allowlistFile)
	if err != nil {
		return nil, fmt.Errorf("load catalog: %w", err)
	}
	return Parse(tokens, allowlist)
}

type tokensDoc struct {
	StaticBase     []string       `json:"static_base"`
	StablecoinPegs map[string]Peg `json:"stablecoin_pegs"`
	KnownDecimals  map[string]int `json:"known_decimals"`
}

type allowlistDoc struct {
	ProviderAttributionContracts []string `json:"provider_attribution_contracts"`
	ProviderAddress              string   `json:"provider_address"`
	Allowlist                    []struct {
		ContractID string   `json:"contract_id"`
		Functions  []string `json:"functions"`
	} `json:"allowlist"`
}

// Parse builds a catalog from the contents of tokens.json and
// swap-allowlist.json. It rejects data that would quietly change what pacer
// prices or counts: malformed ids, duplicates, missing sections.
func Parse(tokens, allowlist []byte) (*Catalog, error) {
	var td tokensDoc
	if err := decode(tokens, &td); err != nil {
		return nil, fmt.Errorf("parse %s: %w", tokensFile, err)
	}
	var ad allowlistDoc
	if err := decode(allowlist, &ad); err != nil {
		return nil, fmt.Errorf("parse %s: %w", allowlistFile, err)
	}

	c := &Catalog{
		staticBase:        make([]string, 0, len(td.StaticBase)),
		pegs:              make(map[string]Peg, len(td.StablecoinPegs)),
		decimals:          make(map[string]int, len(td.KnownDecimals)),
		allowed:           make(map[string]map[string]bool, len(ad.Allowlist)),
		providerContracts: make(map[string]bool, len(ad.ProviderAttributionContracts)),
		providerAddress:   ad.ProviderAddress,
	}

	if len(td.StaticBase) == 0 {
		return nil, fmt.Errorf("parse %s: static_base is empty", tokensFile)
	}
	for _, id := range td.StaticBase {
		if !ValidTokenID(id) {
			return nil, fmt.Errorf("parse %s: static_base: malformed token id %q", tokensFile, id)
		}
		if slices.Contains(c.staticBase, id) {
			return nil, fmt.Errorf("parse %s: static_base: %q listed twice", tokensFile, id)
		}
		c.staticBase = append(c.staticBase, id)
	}
	for id, peg := range td.StablecoinPegs {
		if !validContractKey(id) {
			return nil, fmt.Errorf("parse %s: stablecoin_pegs: key %q is not a contract id without ::asset", tokensFile, id)
		}
		if peg.Decimals < 0 {
			return nil, fmt.Errorf("parse %s: stablecoin_pegs: %s: negative decimals", tokensFile, id)
		}
		c.pegs[id] = peg
	}
	for id, d := range td.KnownDecimals {
		if id != stx && !validContractKey(id) {
			return nil, fmt.Errorf("parse %s: known_decimals: key %q is not stx or a contract id without ::asset", tokensFile, id)
		}
		if d < 0 {
			return nil, fmt.Errorf("parse %s: known_decimals: %s: negative decimals", tokensFile, id)
		}
		c.decimals[id] = d
	}

	if len(ad.Allowlist) == 0 {
		return nil, fmt.Errorf("parse %s: allowlist is empty", allowlistFile)
	}
	for _, entry := range ad.Allowlist {
		if !validContractKey(entry.ContractID) {
			return nil, fmt.Errorf("parse %s: malformed contract id %q", allowlistFile, entry.ContractID)
		}
		if _, dup := c.allowed[entry.ContractID]; dup {
			return nil, fmt.Errorf("parse %s: %s listed twice", allowlistFile, entry.ContractID)
		}
		if len(entry.Functions) == 0 {
			return nil, fmt.Errorf("parse %s: %s has no functions", allowlistFile, entry.ContractID)
		}
		fns := make(map[string]bool, len(entry.Functions))
		for _, fn := range entry.Functions {
			if !clarityName.MatchString(fn) {
				return nil, fmt.Errorf("parse %s: %s: malformed function name %q", allowlistFile, entry.ContractID, fn)
			}
			fns[fn] = true
		}
		c.allowed[entry.ContractID] = fns
	}
	for _, id := range ad.ProviderAttributionContracts {
		// Attribution reads the arguments of a swap the sweep already
		// accepted, so a contract outside the allowlist would be dead data.
		if c.allowed[id] == nil {
			return nil, fmt.Errorf("parse %s: provider attribution contract %s is not in the allowlist", allowlistFile, id)
		}
		c.providerContracts[id] = true
	}
	if (c.providerAddress != "" || len(c.providerContracts) > 0) && !standardPrincipal.MatchString(c.providerAddress) {
		return nil, fmt.Errorf("parse %s: malformed provider_address %q", allowlistFile, c.providerAddress)
	}
	return c, nil
}

// decode reads one JSON document, refusing trailing data that would hint at a
// broken edit.
func decode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("unexpected data after the JSON document")
	}
	return nil
}

// StaticBase returns the tokens refreshed first on every run, in file order.
func (c *Catalog) StaticBase() []string { return slices.Clone(c.staticBase) }

// Peg reports whether tokenID is a pegged stablecoin. The id may carry an
// ::asset suffix or not: swaps record it, the data file does not.
func (c *Catalog) Peg(tokenID string) (Peg, bool) {
	p, ok := c.pegs[ContractOf(tokenID)]
	return p, ok
}

// PegIDs lists the pegged stablecoins' contract ids, sorted.
func (c *Catalog) PegIDs() []string { return slices.Sorted(maps.Keys(c.pegs)) }

// Decimals returns a token's decimals when the catalog knows them, from
// known_decimals or the pegs. The id may carry an ::asset suffix or not.
func (c *Catalog) Decimals(tokenID string) (int, bool) {
	key := ContractOf(tokenID)
	if d, ok := c.decimals[key]; ok {
		return d, true
	}
	if p, ok := c.pegs[key]; ok {
		return p.Decimals, true
	}
	return 0, false
}

// TokenSet is the price refresh's work list (SPEC §4.1): the static base
// first, so a run cut short by a rate limit still refreshes it, then every
// peg (priced at 1 USD without an upstream call, so always kept fresh), then
// up to MaxTraded of traded, most traded first, skipping malformed ids (the
// "unknown" placeholder among them) and repeats.
func (c *Catalog) TokenSet(traded []string) []string {
	pegs := slices.Sorted(maps.Keys(c.pegs))
	set := make([]string, 0, len(c.staticBase)+len(pegs)+min(len(traded), MaxTraded))
	set = append(set, c.staticBase...)
	set = append(set, pegs...)
	seen := make(map[string]bool, cap(set))
	for _, id := range set {
		seen[id] = true
	}
	added := 0
	for _, id := range traded {
		if added == MaxTraded {
			break
		}
		if seen[id] || !ValidTokenID(id) {
			continue
		}
		seen[id] = true
		set = append(set, id)
		added++
	}
	return set
}

// Allowed reports whether a call of function on contractID counts as a
// competition swap. Both must match exactly.
func (c *Catalog) Allowed(contractID, function string) bool {
	return c.allowed[contractID][function]
}

// ProviderAttribution reports whether swaps through contractID name a
// liquidity provider in their `provider` argument, which the sweep records.
func (c *Catalog) ProviderAttribution(contractID string) bool {
	return c.providerContracts[contractID]
}

// ProviderAddress returns the allowlist file's provider_address: the provider
// the competition credits swaps through the attribution contracts to.
func (c *Catalog) ProviderAddress() string { return c.providerAddress }

// KnownDecimals returns every decimals fact the catalog holds (known_decimals
// and the pegs), keyed by contract id without ::asset, "stx" included.
func (c *Catalog) KnownDecimals() map[string]int {
	out := make(map[string]int, len(c.decimals)+len(c.pegs))
	for id, p := range c.pegs {
		out[id] = p.Decimals
	}
	maps.Copy(out, c.decimals)
	return out
}

// Contracts returns the contracts of the allowlist, sorted: the lists
// the sweep's reconciler reads.
func (c *Catalog) Contracts() []string { return slices.Sorted(maps.Keys(c.allowed)) }

// HasContract reports whether any function of contractID is allowlisted.
func (c *Catalog) HasContract(contractID string) bool { return len(c.allowed[contractID]) > 0 }

// Pair is one allowlisted (contract, function) pair.
type Pair struct{ ContractID, Function string }

// Pairs returns every allowlisted pair, sorted, for filters that must name
// them all (the chainhook definition).
func (c *Catalog) Pairs() []Pair {
	var pairs []Pair
	for contract, fns := range c.allowed {
		for fn := range fns {
			pairs = append(pairs, Pair{ContractID: contract, Function: fn})
		}
	}
	slices.SortFunc(pairs, func(a, b Pair) int {
		return cmp.Or(strings.Compare(a.ContractID, b.ContractID), strings.Compare(a.Function, b.Function))
	})
	return pairs
}
