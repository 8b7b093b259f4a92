package sim

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/catalog"
)

// allowlistDiff lists every way cat's allowlist differs from the world's:
// a pair one has and the other lacks, a provider-attribution contract, the
// provider address.
func allowlistDiff(cat *catalog.Catalog) []string {
	var diff []string
	contracts := map[string]bool{}
	for _, p := range cat.Pairs() {
		contracts[p.ContractID] = true
		if !(worldAllowlist{}).Allowed(p.ContractID, p.Function) {
			diff = append(diff, fmt.Sprintf("the catalog allows %s::%s, the world does not", p.ContractID, p.Function))
		}
	}
	for _, p := range allowPairs() {
		contracts[p.contract] = true
		if !cat.Allowed(p.contract, p.function) {
			diff = append(diff, fmt.Sprintf("the world allows %s::%s, the catalog does not", p.contract, p.function))
		}
	}
	for c := range worldProviderContracts {
		contracts[c] = true
	}
	for c := range contracts {
		if w, k := (worldAllowlist{}).ProviderAttribution(c), cat.ProviderAttribution(c); w != k {
			diff = append(diff, fmt.Sprintf("%s: provider attribution in the world %t, in the catalog %t", c, w, k))
		}
	}
	if cat.ProviderAddress() != worldProvider {
		diff = append(diff, fmt.Sprintf("provider address: the catalog's %s, the world's %s", cat.ProviderAddress(), worldProvider))
	}
	slices.Sort(diff)
	return diff
}

// The world's own allowlist and the one pacer ships say the same: 139
// pairs on 40 contracts, one provider-attribution contract.
func TestWorldAllowlistAgreesWithCatalog(t *testing.T) {
	t.Parallel()
	require.Empty(t, allowlistDiff(catalog.Default()))
	require.Len(t, allowPairs(), 139)
	require.Len(t, worldPairs, 40)
}

// A wrong pair planted in the catalog's data (what pacer judges by) is a
// disagreement with the world (what the ledger tests judge pacer by), so
// TestWorldAllowlistAgreesWithCatalog fails on it.
func TestAPlantedWrongPairDisagreesWithTheWorld(t *testing.T) {
	t.Parallel()
	tokens, err := os.ReadFile("../catalog/data/tokens.json")
	require.NoError(t, err)
	raw, err := os.ReadFile("../catalog/data/swap-allowlist.json")
	require.NoError(t, err)
	type entry struct {
		ContractID string   `json:"contract_id"`
		Functions  []string `json:"functions"`
	}
	type doc struct {
		Description                  string   `json:"description"`
		ProviderAttributionContracts []string `json:"provider_attribution_contracts"`
		ProviderAddress              string   `json:"provider_address"`
		Allowlist                    []entry  `json:"allowlist"`
	}
	for _, tc := range []struct {
		name  string
		plant func(*doc)
	}{
		{"a function renamed", func(d *doc) { d.Allowlist[0].Functions[0] = "swap-x-for-z" }},
		{"a function added", func(d *doc) { d.Allowlist[3].Functions = append(d.Allowlist[3].Functions, "add-liquidity") }},
		{"a function dropped", func(d *doc) { d.Allowlist[5].Functions = d.Allowlist[5].Functions[1:] }},
		{"a contract added", func(d *doc) {
			d.Allowlist = append(d.Allowlist, entry{"SP2C2YFP12AJZB4MABJBAJ55XECVS7E4PMMZ89YZR.arkadiko-swap-v2-1", []string{"swap-x-for-y"}})
		}},
		{"a contract's version off by one", func(d *doc) {
			d.Allowlist[1].ContractID = d.Allowlist[1].ContractID[:len(d.Allowlist[1].ContractID)-1] + "9"
		}},
		{"provider attribution moved", func(d *doc) { d.ProviderAttributionContracts = []string{d.Allowlist[0].ContractID} }},
		{"provider address changed", func(d *doc) { d.ProviderAddress = "SP2C2YFP12AJZB4MABJBAJ55XECVS7E4PMMZ89YZR" }},
	} {
		var d doc
		require.NoError(t, json.Unmarshal(raw, &d))
		tc.plant(&d)
		planted, err := json.Marshal(d)
		require.NoError(t, err)
		cat, err := catalog.Parse(tokens, planted)
		require.NoError(t, err, tc.name)
		require.NotEmpty(t, allowlistDiff(cat), "%s: the world did not notice", tc.name)
	}
}
