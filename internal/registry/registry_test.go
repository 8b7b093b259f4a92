package registry

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckSTX(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		give string
		ok   bool
	}{
		// Real mainnet addresses (the allowlist's deployers, the burn address).
		{"SP1PFR4V08H1RAZXREBGFFQ59WB739XM8VVGTFSEA", true},
		{"SM1793C4R5PZ4NS4VQ4WMP7SKKYVH8JZEWSZ9HCCR", true},
		{"SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M", true},
		{"SP000000000000000000002Q6VF78", true},
		{"SP1PFR4V08H1RAZXREBGFFQ59WB739XM8VVGTFSEB", false}, // one character off
		{"ST1PFR4V08H1RAZXREBGFFQ59WB739XM8VVGTFSEA", false}, // testnet
		{"sp1pfr4v08h1razxrebgffq59wb739xm8vvgtfsea", false},
		{"SP1PFR4V08H1RAZXREBGFFQ59WB739XM8VVGTFSE", false},
		{"", false},
		{"SPU", false},
	} {
		err := CheckSTX(tc.give)
		require.Equal(t, tc.ok, err == nil, "%s: %v", tc.give, err)
	}
}

func TestCheckBTC(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		give string
		ok   bool
	}{
		{"1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", true},
		{"3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy", true},
		{"bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4", true},                                 // BIP 173
		{"bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0", true},             // BIP 350
		{"bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t5", false},                                // checksum
		{"1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNb", false},                                        // checksum
		{"tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx", false},                                // testnet
		{"bc1zw508d6qejxtdg4y5r3zarvaryvaxxpcs", true},                                       // BIP 350 v2
		{"bc1pw508d6qejxtdg4y5r3zarvary0c5xw7kw508d6qejxtdg4y5r3zarvary0c5xw7kt5nd6y", true}, // BIP 350
		{"bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kemeawh", false},                                // v0 with bech32m
		{"", false},
	} {
		err := checkBTC(tc.give)
		require.Equal(t, tc.ok, err == nil, "%s: %v", tc.give, err)
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	t.Parallel()
	h := []byte("0123456789abcdefghij")
	require.NoError(t, CheckSTX(MainnetSP(h)))
	require.NoError(t, checkBTC(SegwitP2WPKH(h)))
	require.Equal(t, "SP000000000000000000002Q6VF78", MainnetSP(make([]byte, 20)))
	require.Equal(t, "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4",
		SegwitP2WPKH([]byte{0x75, 0x1e, 0x76, 0xe8, 0x19, 0x91, 0x96, 0xd4, 0x54, 0x94, 0x1c, 0x45, 0xd1, 0xb3, 0xa3, 0x23, 0xf1, 0x43, 0x3b, 0xd6}))
}

func recordErr(t *testing.T, err error) *RecordError {
	t.Helper()
	var re *RecordError
	require.True(t, errors.As(err, &re), "want a RecordError, got %v", err)
	return re
}

const (
	stxA = "SP1PFR4V08H1RAZXREBGFFQ59WB739XM8VVGTFSEA"
	stxB = "SPQC38PW542EQJ5M11CR25P7BS1CA6QT4TBXGB3M"
	btcA = "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4"
)

func TestReadAgentsNDJSON(t *testing.T) {
	t.Parallel()
	recs, err := ReadAgents(strings.NewReader(`{"stxAddress":"` + stxA + `","btcAddress":"` + btcA + `","displayName":"A","erc8004AgentId":7}

{"stxAddress":"` + stxB + `","erc8004AgentId":null}
`))
	require.NoError(t, err)
	require.Len(t, recs.Items, 2)
	require.Equal(t, []int{1, 3}, recs.Lines)
	require.Equal(t, int64(7), *recs.Items[0].ERC8004AgentID)
	require.Nil(t, recs.Items[1].ERC8004AgentID)

	for _, tc := range []struct {
		give      string
		wantLine  int
		wantField string
	}{
		{`{"stxAddress":"` + stxA + `"}` + "\n" + `{"stxAddress":"SPXXX"}`, 2, FieldSTX},
		{`{"stxAddress":"` + stxA + `","erc8004AgentId":-1}`, 1, FieldERC8004},
		{`{"stxAddress":"` + stxA + `","erc8004AgentId":1.5}`, 1, FieldERC8004},
		{`{"stxAddress":"` + stxA + `","btcAddress":"bc1qnope"}`, 1, FieldBTC},
		{`{"stxAddress":"` + stxA + `"}` + "\n" + `{"stxAddress":"` + stxA + `"}`, 2, FieldSTX},
		{`{"stxAddress":"` + stxA + `","color":"red"}`, 1, "color"},
		{`{"stxAddress":"` + stxA + `"}` + "\n\n" + `not json`, 3, ""},
	} {
		_, err := ReadAgents(strings.NewReader(tc.give))
		re := recordErr(t, err)
		require.Equal(t, tc.wantLine, re.Line, "%s: %v", tc.give, err)
		require.Equal(t, tc.wantField, re.Field, "%s: %v", tc.give, err)
	}
}

func TestReadAgentsCSV(t *testing.T) {
	t.Parallel()
	recs, err := ReadAgents(strings.NewReader("stxAddress,btcAddress,displayName,erc8004AgentId\n" +
		stxA + "," + btcA + ",\"A, the first\",7\n" + stxB + ",,,\n"))
	require.NoError(t, err)
	require.Len(t, recs.Items, 2)
	require.Equal(t, "A, the first", recs.Items[0].DisplayName)
	require.Equal(t, []int{2, 3}, recs.Lines)

	_, err = ReadAgents(strings.NewReader("stxAddress,erc8004AgentId\n" + stxA + ",1\n" + stxB + ",x\n"))
	re := recordErr(t, err)
	require.Equal(t, 3, re.Line)
	require.Equal(t, FieldERC8004, re.Field)

	_, err = ReadAgents(strings.NewReader("address\n" + stxA + "\n"))
	require.Equal(t, 1, recordErr(t, err).Line)
}

func TestReadClaims(t *testing.T) {
	t.Parallel()
	recs, err := ReadClaims(strings.NewReader("btcAddress,status\n" + btcA + ",verified\n"))
	require.NoError(t, err)
	require.Equal(t, []Claim{{BTCAddress: btcA, Status: "verified"}}, recs.Items)
	_, err = ReadClaims(strings.NewReader(`{"btcAddress":"` + btcA + `","status":"won"}`))
	re := recordErr(t, err)
	require.Equal(t, 1, re.Line)
	require.Equal(t, FieldStatus, re.Field)
}

// A display name may not carry bidirectional controls or zero-width
// characters (issue 41, item 13): "‮" reverses what a page shows after it
// and a zero-width space makes a name that reads as another agent's. The
// zero-width joiner of an emoji sequence stays.
func TestDisplayNamesRefuseInvisibleFormatCharacters(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"alice\u202egnp.exe", "al\u200bice", "\u2066alice\u2069", "\ufeffalice", "a\u200fb"} {
		_, err := ReadAgents(strings.NewReader(`{"stxAddress":"` + stxA + `","displayName":"` + name + `"}`))
		re := recordErr(t, err)
		require.Equal(t, FieldDisplayName, re.Field, "%q", name)
		require.Contains(t, re.Msg, "invisible format character", "%q", name)
	}
	recs, err := ReadAgents(strings.NewReader(`{"stxAddress":"` + stxA + `","displayName":"team 👩‍💻 Ünïcødé"}`))
	require.NoError(t, err)
	require.Equal(t, "team 👩\u200d💻 Ünïcødé", recs.Items[0].DisplayName)
}
