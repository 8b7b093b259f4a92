package competition

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/hiro"
)

const (
	agentAddr    = "SP4DXVEC16FS6QR7RBKGWZYJKTXPC81W49W0ATJE"
	poolAddr     = "SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M"
	stSTX        = "SP4SZE494VC2YC5JYG7AYFQ44F5Q4PYV7DVMDPBG.ststx-token::ststx"
	alex         = "SP3K8BC0PPEVCV7NZ6QSRWPQ2JE9E5B6N3PA0KBR9.alex-token::alex"
	providerAddr = "SP1M8KHCJXB3SBRQRDBCG3J3859AA1CN0AWDHN17B"
	stableswap   = "SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M.stableswap-stx-ststx-v-1-2"
	xykHelper    = "SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR.xyk-swap-helper-v-1-3"
	// u128 max: far beyond what an int64 or uint64 holds.
	u128Max = "340282366920938463463374607431768211455"
	welsh   = "SP3NE50GEXFG9SZGTT51P40X2CKYSZ5CC4ZTZ7A2G.welshcorgicoin-token::welshcorgicoin"
	sbtc    = "SM3VDXK3WZZSA84XXFKAFAF15NNZX32CTSG82JFQ4.sbtc-token::sbtc-token"
	u64Max  = "18446744073709551615"
)

// transfer builds one asset transfer event.
func transfer(eventType, assetID, from, to, amount string) hiro.Event {
	return hiro.Event{EventType: eventType, Asset: &hiro.Asset{
		AssetEventType: "transfer", AssetID: assetID, Sender: from, Recipient: to, Amount: amount,
	}}
}

func stxOut(amount string) hiro.Event { return transfer("stx_asset", "", agentAddr, poolAddr, amount) }
func ftIn(asset, amount string) hiro.Event {
	return transfer("fungible_token_asset", asset, poolAddr, agentAddr, amount)
}

// callTx is a successful swap call with the given events.
func callTx(events ...hiro.Event) hiro.Tx {
	return hiro.Tx{
		TxSummary: hiro.TxSummary{
			TxID:          "0x01",
			TxStatus:      "success",
			TxType:        "contract_call",
			SenderAddress: agentAddr,
			BurnBlockTime: 1778787000,
			ContractCall:  &hiro.ContractCall{ContractID: stableswap, FunctionName: "swap-x-for-y"},
		},
		EventCount: len(events),
		Events:     events,
	}
}

func TestParseSwapFixtures(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		giveFile string
		wantSwap Swap // RawEventJSON compared separately, as JSON
		wantRaw  string
	}{
		{
			name:     "stableswap STX for stSTX",
			giveFile: "hiro-tx-stableswap-stx-ststx.json",
			wantSwap: Swap{
				TxID:          "0x46bc5587ae56e5bd4453daa2bf63c2a9e0414953fd21a82eb44f2f926f0ee0e4",
				Sender:        agentAddr,
				ContractID:    stableswap,
				FunctionName:  "swap-x-for-y",
				TokenIn:       "stx",
				AmountIn:      "1000000",
				TokenOut:      stSTX,
				AmountOut:     "859839",
				BurnBlockTime: 1778787000,
				TxStatus:      "success",
			},
			wantRaw: `{
				"legsOut":[{"asset_id":"stx","amount":"1000000","counterparty":"` + poolAddr + `"}],
				"legsIn":[{"asset_id":"` + stSTX + `","amount":"859839","counterparty":"` + poolAddr + `"}],
				"netFlows":[{"asset_id":"stx","net":"-1000000"},{"asset_id":"` + stSTX + `","net":"859839"}]
			}`,
		},
		{
			name:     "xyk multi-hop: the intermediate token nets to zero",
			giveFile: "hiro-tx-xyk-multihop.json",
			wantSwap: Swap{
				TxID:          "0xdeadbeef",
				Sender:        agentAddr,
				ContractID:    xykHelper,
				FunctionName:  "swap-helper-c",
				TokenIn:       "stx",
				AmountIn:      "1000000",
				TokenOut:      stSTX,
				AmountOut:     "859839",
				BurnBlockTime: 1762547890,
				TxStatus:      "success",
			},
			// The provider contract lists no provider argument here.
			wantRaw: `{
				"legsOut":[
					{"asset_id":"stx","amount":"1000000","counterparty":"` + poolAddr + `"},
					{"asset_id":"` + alex + `","amount":"1","counterparty":"` + poolAddr + `"}
				],
				"legsIn":[
					{"asset_id":"` + alex + `","amount":"1","counterparty":"` + poolAddr + `"},
					{"asset_id":"` + stSTX + `","amount":"859839","counterparty":"` + poolAddr + `"}
				],
				"netFlows":[
					{"asset_id":"stx","net":"-1000000"},
					{"asset_id":"` + alex + `","net":"0"},
					{"asset_id":"` + stSTX + `","net":"859839"}
				]
			}`,
		},
		{
			name:     "xyk helper records its provider without the Clarity quote",
			giveFile: "hiro-tx-xyk-provider-attribution.json",
			wantSwap: Swap{
				TxID:          "0xdeadbeef",
				Sender:        agentAddr,
				ContractID:    xykHelper,
				FunctionName:  "swap-helper-a",
				TokenIn:       "stx",
				AmountIn:      "1000000",
				TokenOut:      stSTX,
				AmountOut:     "859839",
				BurnBlockTime: 1762547890,
				TxStatus:      "success",
			},
			wantRaw: `{
				"legsOut":[{"asset_id":"stx","amount":"1000000","counterparty":"` + poolAddr + `"}],
				"legsIn":[{"asset_id":"` + stSTX + `","amount":"859839","counterparty":"` + poolAddr + `"}],
				"netFlows":[{"asset_id":"stx","net":"-1000000"},{"asset_id":"` + stSTX + `","net":"859839"}],
				"provider":"` + providerAddr + `"
			}`,
		},
	}
	allow := loadAllowlist(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseSwap(loadTx(t, tt.giveFile), allow)
			require.NoError(t, err)
			require.JSONEq(t, tt.wantRaw, string(got.RawEventJSON))
			got.RawEventJSON = nil
			require.Equal(t, tt.wantSwap, got)
		})
	}
}

func TestParseSwapFixturesWithoutSwapLegs(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		giveFile string
	}{
		// The FT event moves tokens between two other parties.
		{name: "real mainnet call", giveFile: "hiro-tx-mainnet-with-events.json"},
		{name: "docs call with no events", giveFile: "hiro-tx-contract-call-no-events.json"},
		{name: "pending mempool tx", giveFile: "hiro-tx-mempool-pending.json"},
	}
	allow := loadAllowlist(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseSwap(loadTx(t, tt.giveFile), allow)
			require.ErrorIs(t, err, ErrNoTransferEvents)
		})
	}
}

func TestParseSwap(t *testing.T) {
	t.Parallel()

	withProvider := func(tx hiro.Tx, contract string, args ...hiro.FunctionArg) hiro.Tx {
		tx.ContractCall = &hiro.ContractCall{ContractID: contract, FunctionName: "swap-helper-a", FunctionArgs: args}
		return tx
	}
	provider := hiro.FunctionArg{Name: "provider", Type: "principal", Repr: "'" + providerAddr}

	tests := []struct {
		name          string
		giveTx        hiro.Tx
		wantErr       error
		wantTokenIn   string
		wantAmountIn  string
		wantTokenOut  string
		wantAmountOut string
		wantLegs      *Legs
	}{
		{
			name:          "amounts above 2^64 stay exact",
			giveTx:        callTx(stxOut(u128Max), ftIn(stSTX, u64Max+"0")),
			wantTokenIn:   "stx",
			wantAmountIn:  u128Max,
			wantTokenOut:  stSTX,
			wantAmountOut: "184467440737095516150",
		},
		{
			// Compared leg by leg, the 1e12 WELSH leg out would beat the
			// 5e6 µSTX leg, and the WELSH leg in the sBTC one: the old
			// parser recorded WELSH → WELSH.
			name: "a route through the agent: STX → WELSH → sBTC",
			giveTx: callTx(
				stxOut("5000000"),
				ftIn(welsh, "1000000000000"),
				transfer("fungible_token_asset", welsh, agentAddr, poolAddr, "1000000000000"),
				ftIn(sbtc, "2300"),
			),
			wantTokenIn:   "stx",
			wantAmountIn:  "5000000",
			wantTokenOut:  sbtc,
			wantAmountOut: "2300",
			wantLegs: &Legs{
				LegsOut: []Leg{
					{AssetID: "stx", Amount: "5000000", Counterparty: poolAddr},
					{AssetID: welsh, Amount: "1000000000000", Counterparty: poolAddr},
				},
				LegsIn: []Leg{
					{AssetID: welsh, Amount: "1000000000000", Counterparty: poolAddr},
					{AssetID: sbtc, Amount: "2300", Counterparty: poolAddr},
				},
				NetFlows: []NetFlow{{AssetID: "stx", Net: "-5000000"}, {AssetID: welsh, Net: "0"}, {AssetID: sbtc, Net: "2300"}},
			},
		},
		{
			name: "a fee in the input token nets with it",
			giveTx: callTx(
				stxOut("1000"), transfer("stx_asset", "", agentAddr, "SP000000000000000000002Q6VF78", "3"),
				ftIn(stSTX, "900"),
			),
			wantTokenIn:   "stx",
			wantAmountIn:  "1003",
			wantTokenOut:  stSTX,
			wantAmountOut: "900",
		},
		{
			name: "a partial refund of the input nets with it",
			giveTx: callTx(
				stxOut("1000"), ftIn(stSTX, "900"), transfer("stx_asset", "", poolAddr, agentAddr, "250"),
			),
			wantTokenIn:   "stx",
			wantAmountIn:  "750",
			wantTokenOut:  stSTX,
			wantAmountOut: "900",
		},
		{
			// SPEC §5.5: the largest net outflow, compared numerically.
			name: "two assets out on balance: the larger net outflow, numeric not lexical",
			giveTx: callTx(
				stxOut("9"), transfer("ft_transfer_event", alex, agentAddr, poolAddr, "10"),
				ftIn(stSTX, "99999999999999999999"),
			),
			wantTokenIn:   alex,
			wantAmountIn:  "10",
			wantTokenOut:  stSTX,
			wantAmountOut: "99999999999999999999",
		},
		{
			name:          "equal legs: the first wins",
			giveTx:        callTx(stxOut("5"), transfer("ft_transfer_event", alex, agentAddr, poolAddr, "5"), ftIn(stSTX, "7")),
			wantTokenIn:   "stx",
			wantAmountIn:  "5",
			wantTokenOut:  stSTX,
			wantAmountOut: "7",
		},
		{
			name:          "leading zeros are canonicalised",
			giveTx:        callTx(stxOut("000100"), ftIn(stSTX, "007")),
			wantTokenIn:   "stx",
			wantAmountIn:  "100",
			wantTokenOut:  stSTX,
			wantAmountOut: "7",
		},
		{
			name:    "zero is an amount, but nothing on balance",
			giveTx:  callTx(stxOut("100"), ftIn(stSTX, "0")),
			wantErr: ErrIncompleteEvents,
		},
		{
			name:    "a round trip of one token leaves nothing on balance",
			giveTx:  callTx(stxOut("100"), transfer("stx_asset", "", poolAddr, agentAddr, "100")),
			wantErr: ErrIncompleteEvents,
		},
		{
			name: "self-transfers and other parties' transfers are ignored",
			giveTx: callTx(
				transfer("stx_asset", "", agentAddr, agentAddr, "999999999"),
				stxOut("10"),
				transfer("fungible_token_asset", alex, poolAddr, "SP000000000000000000002Q6VF78", "888888888"),
				ftIn(stSTX, "9"),
			),
			wantTokenIn:   "stx",
			wantAmountIn:  "10",
			wantTokenOut:  stSTX,
			wantAmountOut: "9",
			wantLegs: &Legs{
				LegsOut:  []Leg{{AssetID: "stx", Amount: "10", Counterparty: poolAddr}},
				LegsIn:   []Leg{{AssetID: stSTX, Amount: "9", Counterparty: poolAddr}},
				NetFlows: []NetFlow{{AssetID: "stx", Net: "-10"}, {AssetID: stSTX, Net: "9"}},
			},
		},
		{
			name: "node-stream STX event names are STX",
			giveTx: callTx(
				transfer("stx_transfer_event", "", agentAddr, poolAddr, "3"),
				transfer("stx_transfer", "", agentAddr, poolAddr, "4"),
				ftIn(stSTX, "5"),
			),
			wantTokenIn:   "stx",
			wantAmountIn:  "7",
			wantTokenOut:  stSTX,
			wantAmountOut: "5",
		},
		{
			name: "STX events ignore a stray asset_id",
			giveTx: callTx(
				transfer("stx_asset", "SP1.fake::fake", agentAddr, poolAddr, "3"),
				ftIn(stSTX, "4"),
			),
			wantTokenIn:   "stx",
			wantAmountIn:  "3",
			wantTokenOut:  stSTX,
			wantAmountOut: "4",
		},
		{
			name: "mints, burns, NFTs and logs are not legs",
			giveTx: callTx(
				hiro.Event{EventType: "smart_contract_log"},
				hiro.Event{EventType: "fungible_token_asset", Asset: &hiro.Asset{AssetEventType: "mint", AssetID: alex, Recipient: agentAddr, Amount: "1000000000"}},
				hiro.Event{EventType: "fungible_token_asset", Asset: &hiro.Asset{AssetEventType: "burn", AssetID: alex, Sender: agentAddr, Amount: "not-checked"}},
				transfer("non_fungible_token_asset", "SP1.nft::nft", agentAddr, poolAddr, ""),
				stxOut("1"), ftIn(stSTX, "2"),
			),
			wantTokenIn:   "stx",
			wantAmountIn:  "1",
			wantTokenOut:  stSTX,
			wantAmountOut: "2",
		},
		{
			name:          "provider on an attribution contract",
			giveTx:        withProvider(callTx(stxOut("1"), ftIn(stSTX, "2")), xykHelper, hiro.FunctionArg{Name: "amount", Repr: "u1"}, provider),
			wantTokenIn:   "stx",
			wantAmountIn:  "1",
			wantTokenOut:  stSTX,
			wantAmountOut: "2",
			wantLegs: &Legs{
				LegsOut:  []Leg{{AssetID: "stx", Amount: "1", Counterparty: poolAddr}},
				LegsIn:   []Leg{{AssetID: stSTX, Amount: "2", Counterparty: poolAddr}},
				NetFlows: []NetFlow{{AssetID: "stx", Net: "-1"}, {AssetID: stSTX, Net: "2"}},
				Provider: providerAddr,
			},
		},
		{
			name:          "no provider kept for other contracts",
			giveTx:        withProvider(callTx(stxOut("1"), ftIn(stSTX, "2")), stableswap, provider),
			wantTokenIn:   "stx",
			wantAmountIn:  "1",
			wantTokenOut:  stSTX,
			wantAmountOut: "2",
			wantLegs: &Legs{
				LegsOut:  []Leg{{AssetID: "stx", Amount: "1", Counterparty: poolAddr}},
				LegsIn:   []Leg{{AssetID: stSTX, Amount: "2", Counterparty: poolAddr}},
				NetFlows: []NetFlow{{AssetID: "stx", Net: "-1"}, {AssetID: stSTX, Net: "2"}},
			},
		},
		{name: "no events", giveTx: callTx(), wantErr: ErrNoTransferEvents},
		{
			name:    "only self-transfers",
			giveTx:  callTx(transfer("stx_asset", "", agentAddr, agentAddr, "5")),
			wantErr: ErrNoTransferEvents,
		},
		{name: "only outbound", giveTx: callTx(stxOut("5")), wantErr: ErrIncompleteEvents},
		{name: "only inbound", giveTx: callTx(ftIn(stSTX, "5")), wantErr: ErrIncompleteEvents},
		{
			name:    "FT leg without an asset id",
			giveTx:  callTx(stxOut("5"), ftIn("", "5")),
			wantErr: ErrIncompleteEvents,
		},
		{
			name:    "no sender",
			giveTx:  func() hiro.Tx { tx := callTx(stxOut("5"), ftIn(stSTX, "5")); tx.SenderAddress = ""; return tx }(),
			wantErr: ErrIncompleteEvents,
		},
		{
			name:    "not a contract call",
			giveTx:  func() hiro.Tx { tx := callTx(stxOut("5"), ftIn(stSTX, "5")); tx.TxType = "token_transfer"; return tx }(),
			wantErr: ErrNotContractCall,
		},
		{
			name:    "contract call without its payload",
			giveTx:  func() hiro.Tx { tx := callTx(stxOut("5"), ftIn(stSTX, "5")); tx.ContractCall = nil; return tx }(),
			wantErr: ErrNotContractCall,
		},
		{
			// Any transfer the parser reads must be sound, not only the agent's.
			name:    "a bad amount between other parties still invalidates the tx",
			giveTx:  callTx(stxOut("5"), ftIn(stSTX, "5"), transfer("stx_asset", "", poolAddr, "SP2", "-1")),
			wantErr: ErrInvalidAmount,
		},
		{
			name:    "amount longer than Postgres numeric holds",
			giveTx:  callTx(stxOut(strings.Repeat("9", maxAmountDigits+1)), ftIn(stSTX, "5")),
			wantErr: ErrInvalidAmount,
		},
	}

	allow := loadAllowlist(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseSwap(tt.giveTx, allow)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.wantTokenIn, got.TokenIn)
			require.Equal(t, tt.wantAmountIn, got.AmountIn)
			require.Equal(t, tt.wantTokenOut, got.TokenOut)
			require.Equal(t, tt.wantAmountOut, got.AmountOut)
			require.Equal(t, tt.giveTx.SenderAddress, got.Sender)
			require.Empty(t, got.Source, "the caller sets the source")
			if tt.wantLegs != nil {
				var legs Legs
				require.NoError(t, json.Unmarshal(got.RawEventJSON, &legs))
				require.Equal(t, *tt.wantLegs, legs)
			}
		})
	}
}

func TestParseSwapInvalidAmounts(t *testing.T) {
	t.Parallel()

	allow := loadAllowlist(t)
	for _, giveAmount := range []string{"", "-1", "+1", "1.5", "1e6", "0x10", " 1", "1 ", "1_000", "１", "NaN"} {
		t.Run(giveAmount, func(t *testing.T) {
			t.Parallel()
			_, err := ParseSwap(callTx(stxOut("1"), ftIn(stSTX, giveAmount)), allow)
			require.ErrorIs(t, err, ErrInvalidAmount)
		})
	}
}

func TestFound(t *testing.T) {
	t.Parallel()
	allow := loadAllowlist(t)
	entry := func(id, typ, contract, fn string) hiro.Entry {
		e := hiro.Entry{TxID: id, TxType: typ}
		if contract != "" {
			e.ContractCall = &hiro.ContractCall{ContractID: contract, FunctionName: fn}
		}
		return e
	}
	tests := []struct {
		name      string
		giveEntry hiro.Entry
		want      bool
	}{
		{name: "allowlisted swap", giveEntry: entry("0x1", "contract_call", stableswap, "swap-x-for-y"), want: true},
		{name: "allowlisted contract, other function", giveEntry: entry("0x1", "contract_call", stableswap, "add-liquidity")},
		{name: "another contract", giveEntry: entry("0x1", "contract_call", "SP1.x", "swap-x-for-y")},
		{name: "not a contract call", giveEntry: entry("0x1", "token_transfer", stableswap, "swap-x-for-y")},
		{name: "no payload", giveEntry: entry("0x1", "contract_call", "", "")},
		{name: "no id", giveEntry: entry("", "contract_call", stableswap, "swap-x-for-y")},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, Found(tt.giveEntry, allow), tt.name)
	}
}

func TestFoundInPage(t *testing.T) {
	t.Parallel()

	call := func(id, contract, fn string) hiro.TxSummary {
		return hiro.TxSummary{TxID: id, TxType: "contract_call", ContractCall: &hiro.ContractCall{ContractID: contract, FunctionName: fn}}
	}
	tests := []struct {
		name      string
		givePage  hiro.Page
		wantFound []string
	}{
		{
			name:      "landing-page page: only the allowlisted call",
			givePage:  loadPage(t, "hiro-address-transactions-page.json"),
			wantFound: []string{"0xaaa"},
		},
		{name: "empty page", givePage: hiro.Page{}},
		{
			name: "contract must match with the function",
			givePage: hiro.Page{Results: []hiro.TxSummary{
				call("0x1", stableswap, "swap-helper-a"),
				call("0x2", xykHelper, "swap-helper-a"),
				call("0x3", stableswap+"-fake", "swap-x-for-y"),
			}},
			wantFound: []string{"0x2"},
		},
		{
			name: "order kept, repeats and broken entries dropped",
			givePage: hiro.Page{Results: []hiro.TxSummary{
				call("0x2", xykHelper, "swap-helper-b"),
				call("0x1", stableswap, "swap-y-for-x"),
				call("0x2", xykHelper, "swap-helper-b"),
				{TxID: "0x4", TxType: "contract_call"},
				{TxID: "0x5", TxType: "token_transfer", ContractCall: &hiro.ContractCall{ContractID: stableswap, FunctionName: "swap-x-for-y"}},
				call("", stableswap, "swap-x-for-y"),
			}},
			wantFound: []string{"0x2", "0x1"},
		},
	}
	allow := loadAllowlist(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.wantFound, FoundInPage(tt.givePage, allow))
		})
	}
}
