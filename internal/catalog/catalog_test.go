package catalog_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/catalog"
)

func TestDefaultStaticBase(t *testing.T) {
	t.Parallel()
	c := catalog.Default()
	require.Same(t, c, catalog.Default(), "parsed once")
	require.Equal(t, []string{"stx", sbtc, ststx}, c.StaticBase())

	// Callers get a copy: changing it must not change the catalog.
	base := c.StaticBase()
	base[0] = "mutated"
	require.Equal(t, "stx", c.StaticBase()[0])
}

func TestDefaultPeg(t *testing.T) {
	t.Parallel()
	tests := []struct {
		give         string
		wantOK       bool
		wantDecimals int
		wantName     string
	}{
		{give: usdcx, wantOK: true, wantDecimals: 6, wantName: "USDCx"},
		{give: usdcx + "::usdcx-token", wantOK: true, wantDecimals: 6, wantName: "USDCx"},
		{give: susdt + "::bridged-usdt", wantOK: true, wantDecimals: 8, wantName: "sUSDT"},
		{give: "SP2C2YFP12AJZB4MABJBAJ55XECVS7E4PMMZ89YZR.usda-token::usda", wantOK: true, wantDecimals: 6, wantName: "USDA"},
		{give: "stx"},
		{give: sbtc},
		{give: ""},
		// Pegs are keyed by the whole contract id, not a prefix of it.
		{give: "SP120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNE.usdcx-v2"},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			t.Parallel()
			peg, ok := catalog.Default().Peg(tt.give)
			require.Equal(t, tt.wantOK, ok)
			require.Equal(t, tt.wantDecimals, peg.Decimals)
			require.Equal(t, tt.wantName, peg.Name)
		})
	}
}

func TestDefaultDecimals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		give   string
		want   int
		wantOK bool
	}{
		{give: "stx", want: 6, wantOK: true},
		{give: sbtc, want: 8, wantOK: true},
		{give: "SM3VDXK3WZZSA84XXFKAFAF15NNZX32CTSG82JFQ4.sbtc-token", want: 8, wantOK: true},
		{give: ststx, want: 6, wantOK: true},
		{give: susdt + "::bridged-usdt", want: 8, wantOK: true}, // from the pegs
		{give: "SP1AY6K3PQV5MRT6R4S671NWW2FRVPKM0BR162CT6.leo-token::leo"},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			t.Parallel()
			got, ok := catalog.Default().Decimals(tt.give)
			require.Equal(t, tt.wantOK, ok)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestTokenSet(t *testing.T) {
	t.Parallel()
	// The static base, then every peg (sorted): pegs cost no upstream call.
	base := []string{"stx", sbtc, ststx,
		"SP120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNE.usdcx",
		"SP2C2YFP12AJZB4MABJBAJ55XECVS7E4PMMZ89YZR.usda-token",
		"SP3K8BC0PPEVCV7NZ6QSRWPQ2JE9E5B6N3PA0KBR9.token-aeusdc",
		"SP3K8BC0PPEVCV7NZ6QSRWPQ2JE9E5B6N3PA0KBR9.token-susdt",
		"SP3Y2ZSH8P7D50B0VBTSX11S7XSG24M1VB9YFQA4K.token-aeusdc",
	}
	withBase := func(ids ...string) []string { return append(slices.Clone(base), ids...) }
	leo := "SP1AY6K3PQV5MRT6R4S671NWW2FRVPKM0BR162CT6.leo-token::leo"
	welsh := "SP3NE50GEXFG9SZGTT51P40X2CKYSZ5CC4ZTZ7A2G.welshcorgicoin-token::welshcorgicoin"

	// many returns n distinct valid ids.
	many := func(n int) []string {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("SP%038d.token-%d", 0, i)
		}
		return ids
	}

	tests := []struct {
		name       string
		giveTraded []string
		want       []string
	}{
		{name: "nothing traded", giveTraded: nil, want: base},
		{name: "traded after the base, in order", giveTraded: []string{welsh, leo}, want: withBase(welsh, leo)},
		{name: "base ids not repeated", giveTraded: []string{sbtc, leo, "stx"}, want: withBase(leo)},
		{name: "repeats dropped", giveTraded: []string{leo, welsh, leo}, want: withBase(leo, welsh)},
		{name: "unknown dropped", giveTraded: []string{"unknown", leo}, want: withBase(leo)},
		{
			name:       "malformed dropped",
			giveTraded: []string{"", "STX", "sp3ne50gexfg9szgtt51p40x2ckysz5cc4ztz7a2g.x", leo + " ", "x'; drop table swaps; --", welsh},
			want:       withBase(welsh),
		},
		{name: "pegs not repeated, suffixed pegs kept", giveTraded: []string{usdcx, susdt + "::bridged-usdt"}, want: withBase(susdt + "::bridged-usdt")},
		{name: "at most 50 traded", giveTraded: many(60), want: withBase(many(50)...)},
		{
			// Skipped ids do not use up the 50.
			name:       "cap counts only kept ids",
			giveTraded: append([]string{"unknown", sbtc, "bad id"}, many(50)...),
			want:       withBase(many(50)...),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, catalog.Default().TokenSet(tt.giveTraded))
		})
	}
}

func TestAllowed(t *testing.T) {
	t.Parallel()
	const (
		xyk    = "SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR.xyk-core-v-1-2"
		helper = "SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR.xyk-swap-helper-v-1-3"
		dlmm   = "SM1FKXGNZJWSTWDWXQZJNF7B5TV5ZB235JTCXYXKD.dlmm-swap-router-v-1-2"
	)
	tests := []struct {
		giveContract string
		giveFunction string
		want         bool
	}{
		{giveContract: xyk, giveFunction: "swap-x-for-y", want: true},
		{giveContract: xyk, giveFunction: "swap-y-for-x", want: true},
		{giveContract: helper, giveFunction: "swap-helper-e", want: true},
		{giveContract: dlmm, giveFunction: "swap-y-for-x-simple-range-multi", want: true},
		{giveContract: "SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.wrapper-alex-v-2-1", giveFunction: "swap-helper", want: true},

		{giveContract: xyk, giveFunction: "add-liquidity"},
		{giveContract: xyk, giveFunction: "swap-helper-a"}, // another contract's function
		{giveContract: helper, giveFunction: "swap-helper-f"},
		{giveContract: xyk, giveFunction: "SWAP-X-FOR-Y"},
		{giveContract: xyk, giveFunction: ""},
		{giveContract: strings.ToLower(xyk), giveFunction: "swap-x-for-y"},
		{giveContract: xyk + "::token", giveFunction: "swap-x-for-y"},
		{giveContract: "SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR.xyk-core-v-1-9", giveFunction: "swap-x-for-y"},
		{giveContract: "", giveFunction: ""},
	}
	for _, tt := range tests {
		t.Run(tt.giveContract+"/"+tt.giveFunction, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, catalog.Default().Allowed(tt.giveContract, tt.giveFunction))
		})
	}
}

func TestProviderAttribution(t *testing.T) {
	t.Parallel()
	c := catalog.Default()
	require.True(t, c.ProviderAttribution("SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR.xyk-swap-helper-v-1-3"))
	require.False(t, c.ProviderAttribution("SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR.xyk-core-v-1-2"))
	require.False(t, c.ProviderAttribution(""))
	require.Equal(t, "SP1M8KHCJXB3SBRQRDBCG3J3859AA1CN0AWDHN17B", c.ProviderAddress())
}

// Minimal valid documents, for tests that change one thing.
const (
	goodTokens = `{
 "static_base": ["stx", "SP4SZE494VC2YC5JYG7AYFQ44F5Q4PYV7DVMDPBG.ststx-token::ststx"],
 "stablecoin_pegs": {"SP120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNE.usdcx": {"decimals": 6, "name": "USDCx"}},
 "known_decimals": {"stx": 6}
}`
	goodAllowlist = `{
 "provider_attribution_contracts": ["SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR.xyk-swap-helper-v-1-3"],
 "provider_address": "SP1M8KHCJXB3SBRQRDBCG3J3859AA1CN0AWDHN17B",
 "allowlist": [
  {"contract_id": "SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR.xyk-swap-helper-v-1-3", "functions": ["swap-helper-a"]}
 ]
}`
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		giveTokens    string
		giveAllowlist string
		wantErr       string // empty: no error
	}{
		{name: "valid", giveTokens: goodTokens, giveAllowlist: goodAllowlist},
		{name: "tokens not JSON", giveTokens: `{`, giveAllowlist: goodAllowlist, wantErr: "parse tokens.json"},
		{name: "tokens trailing data", giveTokens: goodTokens + `{}`, giveAllowlist: goodAllowlist, wantErr: "after the JSON document"},
		{name: "tokens wrong type", giveTokens: `{"static_base": "stx"}`, giveAllowlist: goodAllowlist, wantErr: "parse tokens.json"},
		{name: "empty static base", giveTokens: `{"static_base": []}`, giveAllowlist: goodAllowlist, wantErr: "static_base is empty"},
		{name: "malformed static id", giveTokens: `{"static_base": ["stx", "not a token"]}`, giveAllowlist: goodAllowlist, wantErr: `malformed token id "not a token"`},
		{name: "duplicate static id", giveTokens: `{"static_base": ["stx", "stx"]}`, giveAllowlist: goodAllowlist, wantErr: "listed twice"},
		{
			name:          "peg key with asset",
			giveTokens:    `{"static_base": ["stx"], "stablecoin_pegs": {"SP120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNE.usdcx::usdcx": {"decimals": 6}}}`,
			giveAllowlist: goodAllowlist,
			wantErr:       "not a contract id without ::asset",
		},
		{
			name:          "negative peg decimals",
			giveTokens:    `{"static_base": ["stx"], "stablecoin_pegs": {"SP120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNE.usdcx": {"decimals": -1}}}`,
			giveAllowlist: goodAllowlist,
			wantErr:       "negative decimals",
		},
		{name: "bad decimals key", giveTokens: `{"static_base": ["stx"], "known_decimals": {"STX": 6}}`, giveAllowlist: goodAllowlist, wantErr: `key "STX"`},
		{name: "allowlist not JSON", giveTokens: goodTokens, giveAllowlist: `[]`, wantErr: "parse swap-allowlist.json"},
		{name: "empty allowlist", giveTokens: goodTokens, giveAllowlist: `{"allowlist": []}`, wantErr: "allowlist is empty"},
		{
			name:          "malformed contract",
			giveTokens:    goodTokens,
			giveAllowlist: `{"allowlist": [{"contract_id": "SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR", "functions": ["f"]}]}`,
			wantErr:       "malformed contract id",
		},
		{
			name:       "duplicate contract",
			giveTokens: goodTokens,
			giveAllowlist: `{"allowlist": [
				{"contract_id": "SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR.a", "functions": ["f"]},
				{"contract_id": "SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR.a", "functions": ["g"]}]}`,
			wantErr: "listed twice",
		},
		{
			name:          "no functions",
			giveTokens:    goodTokens,
			giveAllowlist: `{"allowlist": [{"contract_id": "SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR.a", "functions": []}]}`,
			wantErr:       "has no functions",
		},
		{
			name:          "malformed function",
			giveTokens:    goodTokens,
			giveAllowlist: `{"allowlist": [{"contract_id": "SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR.a", "functions": ["swap x"]}]}`,
			wantErr:       "malformed function name",
		},
		{
			name:       "attribution outside allowlist",
			giveTokens: goodTokens,
			giveAllowlist: `{"provider_attribution_contracts": ["SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR.b"],
				"provider_address": "SP1M8KHCJXB3SBRQRDBCG3J3859AA1CN0AWDHN17B",
				"allowlist": [{"contract_id": "SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR.a", "functions": ["f"]}]}`,
			wantErr: "not in the allowlist",
		},
		{
			name:       "attribution without provider address",
			giveTokens: goodTokens,
			giveAllowlist: `{"provider_attribution_contracts": ["SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR.a"],
				"allowlist": [{"contract_id": "SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR.a", "functions": ["f"]}]}`,
			wantErr: "malformed provider_address",
		},
		{
			name:       "provider address is a contract",
			giveTokens: goodTokens,
			giveAllowlist: `{"provider_address": "SP1M8KHCJXB3SBRQRDBCG3J3859AA1CN0AWDHN17B.x",
				"allowlist": [{"contract_id": "SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR.a", "functions": ["f"]}]}`,
			wantErr: "malformed provider_address",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := catalog.Parse([]byte(tt.giveTokens), []byte(tt.giveAllowlist))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.Nil(t, c)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, c)
		})
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	c, err := catalog.Load(fstest.MapFS{
		"tokens.json":         {Data: []byte(goodTokens)},
		"swap-allowlist.json": {Data: []byte(goodAllowlist)},
	})
	require.NoError(t, err)
	require.Equal(t, []string{"stx", ststx}, c.StaticBase())
	require.True(t, c.Allowed("SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR.xyk-swap-helper-v-1-3", "swap-helper-a"))

	_, err = catalog.Load(fstest.MapFS{"tokens.json": {Data: []byte(goodTokens)}})
	require.ErrorContains(t, err, "swap-allowlist.json")
}

func TestContractsAreThePairsContracts(t *testing.T) {
	c := catalog.Default()
	var want []string
	for _, p := range c.Pairs() {
		if !slices.Contains(want, p.ContractID) {
			want = append(want, p.ContractID)
		}
	}
	require.Equal(t, want, c.Contracts())
	for _, id := range want {
		require.True(t, c.HasContract(id), id)
	}
	require.False(t, c.HasContract("SP000000000000000000002Q6VF78.not-allowlisted"))
}
