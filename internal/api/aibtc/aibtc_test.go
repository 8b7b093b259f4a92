package aibtc

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/store"
)

// jsonFields are the JSON names of a struct's fields.
func jsonFields(v any) []string {
	var out []string
	rt := reflect.TypeOf(v)
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		out = append(out, name)
	}
	return slices.Sorted(slices.Values(out))
}

// The descriptions ?docs=1 answers name exactly the fields the answers
// carry: a field added to a shape and not described fails here.
func TestDocsDescribeEveryField(t *testing.T) {
	for _, tt := range []struct {
		give any
		want map[string]any
	}{
		{Row{}, RowFields}, {Status{}, StatusFields}, {Allowlist{}, AllowlistFields},
		{Round{}, RoundFields}, {Result{}, ResultFields}, {Reward{}, RewardFields},
	} {
		require.Equal(t, jsonFields(tt.give), slices.Sorted(maps.Keys(tt.want)), "%T", tt.give)
	}
	for _, route := range []string{RouteTrades, RouteStatus, RouteAllowlist, RouteRounds, RouteRound, RouteResult} {
		d, ok := Docs(route)
		require.True(t, ok, route)
		require.Equal(t, Prefix+route, d.Endpoint)
		_, err := json.Marshal(d)
		require.NoError(t, err)
	}
	_, ok := Docs("/leaderboard")
	require.False(t, ok)
}

// Amounts are written as JSON integers with every digit, past 2^53 and
// 2^64; a JavaScript client reading them gets a number, as before.
func TestRowAmountsExact(t *testing.T) {
	b, err := json.Marshal(FromTrade(store.TradeRow{TxID: "0x1", AmountIn: "9007199254740993",
		AmountOut: "340282366920938463463374607431768211457", Source: "sweep", TxStatus: "success"}))
	require.NoError(t, err)
	require.Contains(t, string(b), `"amount_in":9007199254740993,`)
	require.Contains(t, string(b), `"amount_out":340282366920938463463374607431768211457,`)
	require.Contains(t, string(b), `"source":"cron"`)
	require.Contains(t, string(b), `"scored_value":null,"scored_at":null`)
}

// A cursor goes round; the landing page's own (base64url of {"t","x"},
// with or without padding) reads too; anything else is ErrCursor.
func TestCursor(t *testing.T) {
	k := store.TradeKey{BurnBlockTime: 1762547890, TxID: "0xabcdef"}
	got, err := DecodeCursor(EncodeCursor(k))
	require.NoError(t, err)
	require.Equal(t, k, got)
	// The example of the landing page's own ?docs=1.
	got, err = DecodeCursor("eyJ0IjoxNzYyNTQ3ODkwLCJ4IjoiMHhhYmNkZWYifQ")
	require.NoError(t, err)
	require.Equal(t, k, got)
	for _, bad := range []string{"", "!!", "bm90LWpzb24", "eyJ0IjoxfQ", "eyJ4IjoiMHgxIn0"} {
		_, err := DecodeCursor(bad)
		require.ErrorIs(t, err, ErrCursor, bad)
	}
}
