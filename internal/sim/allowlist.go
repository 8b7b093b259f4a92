package sim

import (
	"slices"
	"strings"
)

// The simulator's world judges which calls are competition swaps by its
// own statement of the competition's allowlist (the organisers' published
// list, /work/shared/data/swap-allowlist.json when this was written), not
// by pacer's catalog: the world is the oracle the ledger tests hold pacer
// to, so it must not read what it judges. TestWorldAllowlistAgreesWithCatalog
// holds the two to each other: a pair wrong in either fails it.
var worldPairs = map[string][]string{
	"SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR.router-stableswap-xyk-multihop-v-1-2":   {"swap-helper-a", "swap-helper-b", "swap-helper-c", "swap-helper-d", "swap-helper-e", "swap-helper-f", "swap-helper-g", "swap-helper-h", "swap-helper-i"},
	"SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR.stableswap-core-v-1-2":                  {"swap-x-for-y", "swap-y-for-x"},
	"SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR.stableswap-core-v-1-3":                  {"swap-x-for-y", "swap-y-for-x"},
	"SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR.stableswap-core-v-1-4":                  {"swap-x-for-y", "swap-y-for-x"},
	"SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR.wrapper-alex-v-2-2":                     {"swap-helper", "swap-helper-a", "swap-helper-b", "swap-helper-c"},
	"SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR.wrapper-arkadiko-v-1-2":                 {"swap-x-for-y", "swap-y-for-x"},
	"SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR.wrapper-velar-path-v-1-2":               {"swap-curve", "swap-ststx", "swap-univ2v2", "swap-usdh"},
	"SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR.wrapper-velar-v-1-2":                    {"swap-helper-a", "swap-helper-b"},
	"SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR.xyk-core-v-1-1":                         {"swap-x-for-y", "swap-y-for-x"},
	"SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR.xyk-core-v-1-2":                         {"swap-x-for-y", "swap-y-for-x"},
	"SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR.xyk-swap-helper-v-1-3":                  {"swap-helper-a", "swap-helper-b", "swap-helper-c", "swap-helper-d", "swap-helper-e"},
	"SM1FKXGNZJWSTWDWXQZJNF7B5TV5ZB235JTCXYXKD.dlmm-swap-router-v-1-1":                 {"swap-multi", "swap-simple-multi", "swap-x-for-y-same-multi", "swap-x-for-y-simple-multi", "swap-x-for-y-simple-range-multi", "swap-y-for-x-same-multi", "swap-y-for-x-simple-multi", "swap-y-for-x-simple-range-multi"},
	"SM1FKXGNZJWSTWDWXQZJNF7B5TV5ZB235JTCXYXKD.dlmm-swap-router-v-1-2":                 {"swap-multi", "swap-simple-multi", "swap-x-for-y-same-multi", "swap-x-for-y-simple-multi", "swap-x-for-y-simple-range-multi", "swap-y-for-x-same-multi", "swap-y-for-x-simple-multi", "swap-y-for-x-simple-range-multi"},
	"SP1PFR4V08H1RAZXREBGFFQ59WB739XM8VVGTFSEA.dlmm-core-v-1-1":                        {"swap-x-for-y", "swap-y-for-x"},
	"SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.router-stx-ststx-bitflow-alex-v-1-1":     {"swap-helper-a", "swap-helper-b"},
	"SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.router-stx-ststx-bitflow-alex-v-1-2":     {"swap-helper-a", "swap-helper-b"},
	"SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.router-stx-ststx-bitflow-alex-v-2-1":     {"swap-helper-a", "swap-helper-b"},
	"SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.router-stx-ststx-bitflow-arkadiko-v-1-1": {"swap-helper-a", "swap-helper-b"},
	"SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.router-stx-ststx-bitflow-velar-v-1-1":    {"swap-helper-a", "swap-helper-b"},
	"SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.router-stx-ststx-bitflow-velar-v-1-2":    {"swap-helper-a", "swap-helper-b"},
	"SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.router-stx-ststx-bitflow-xyk-v-1-1":      {"swap-helper-a", "swap-helper-b"},
	"SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.router-stx-usda-arkadiko-alex-v-1-1":     {"swap-helper-a", "swap-helper-b"},
	"SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.router-velar-alex-v-1-1":                 {"swap-helper-a", "swap-helper-b", "swap-helper-c", "swap-helper-d", "swap-helper-e", "swap-helper-f", "swap-helper-g", "swap-helper-h", "swap-helper-i", "swap-helper-j", "swap-helper-k", "swap-helper-l", "swap-helper-m", "swap-helper-n", "swap-helper-o", "swap-helper-p"},
	"SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.router-velar-alex-v-1-2":                 {"swap-helper-a", "swap-helper-b", "swap-helper-c", "swap-helper-d", "swap-helper-e", "swap-helper-f", "swap-helper-g", "swap-helper-h", "swap-helper-i", "swap-helper-j", "swap-helper-k", "swap-helper-l", "swap-helper-m", "swap-helper-n", "swap-helper-o", "swap-helper-p"},
	"SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.router-xyk-alex-v-1-1":                   {"swap-helper-a", "swap-helper-b"},
	"SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.router-xyk-alex-v-1-2":                   {"swap-helper-a", "swap-helper-b"},
	"SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.router-xyk-arkadiko-v-1-1":               {"swap-helper-a", "swap-helper-b"},
	"SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.router-xyk-velar-v-1-1":                  {"swap-helper-a", "swap-helper-b"},
	"SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.stableswap-abtc-xbtc-v-1-2":              {"swap-x-for-y", "swap-y-for-x"},
	"SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.stableswap-aeusdc-susdt-v-1-2":           {"swap-x-for-y", "swap-y-for-x"},
	"SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.stableswap-stx-ststx-v-1-2":              {"swap-x-for-y", "swap-y-for-x"},
	"SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.stableswap-usda-aeusdc-v-1-2":            {"swap-x-for-y", "swap-y-for-x"},
	"SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.stableswap-usda-aeusdc-v-1-4":            {"swap-x-for-y", "swap-y-for-x"},
	"SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.stableswap-usda-susdt-v-1-2":             {"swap-x-for-y", "swap-y-for-x"},
	"SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.wrapper-alex-v-1-1":                      {"swap-helper-a", "swap-helper-b"},
	"SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.wrapper-alex-v-2-1":                      {"swap-helper", "swap-helper-a", "swap-helper-b", "swap-helper-c"},
	"SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.wrapper-arkadiko-v-1-1":                  {"swap-x-for-y", "swap-y-for-x"},
	"SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.wrapper-velar-multihop-v-1-1":            {"swap-3", "swap-4", "swap-5"},
	"SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.wrapper-velar-path-v-1-1":                {"swap-curve", "swap-ststx", "swap-univ2v2", "swap-usdh"},
	"SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.wrapper-velar-v-1-1":                     {"swap-helper-a", "swap-helper-b"},
}

// worldProviderContracts are the contracts whose swaps name a liquidity
// provider in their arguments; worldProvider is the provider the
// competition credits them to.
var worldProviderContracts = map[string]bool{
	"SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR.xyk-swap-helper-v-1-3": true,
}

const worldProvider = "SP1M8KHCJXB3SBRQRDBCG3J3859AA1CN0AWDHN17B"

// worldAllowlist is the world's eligibility judge (competition.Allowlist).
type worldAllowlist struct{}

// Allowed reports whether a call of function on contractID counts; both
// must match exactly.
func (worldAllowlist) Allowed(contractID, function string) bool {
	return slices.Contains(worldPairs[contractID], function)
}

// ProviderAttribution reports whether contractID's swaps name a provider.
func (worldAllowlist) ProviderAttribution(contractID string) bool {
	return worldProviderContracts[contractID]
}

// allowPair is one allowlisted (contract, function) pair.
type allowPair struct{ contract, function string }

// allowPairs returns every pair, sorted by contract then function (the
// chain draws its swap kinds in this order, so it is part of each seed's
// world).
func allowPairs() []allowPair {
	var out []allowPair
	for contract, fns := range worldPairs {
		for _, fn := range fns {
			out = append(out, allowPair{contract, fn})
		}
	}
	slices.SortFunc(out, func(a, b allowPair) int {
		if c := strings.Compare(a.contract, b.contract); c != 0 {
			return c
		}
		return strings.Compare(a.function, b.function)
	})
	return out
}
