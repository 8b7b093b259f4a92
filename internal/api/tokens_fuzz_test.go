package api_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/api"
	"github.com/pacer-dev/pacer/internal/catalog"
)

// FuzzParseTokens feeds arbitrary ?tokens= lists to the parser. What it
// accepts is a non-empty, duplicate-free list of at most 100 valid ids, each
// one of the list's items; what it refuses gets a short error in valid UTF-8
// whatever the input held, because the error is echoed to the caller.
func FuzzParseTokens(f *testing.F) {
	for _, s := range []string{
		stx, stx + "," + sbtc + "," + leo, stx + "," + stx, " stx , ", ",,", "", "stx,bitcoin",
		"stx'; drop table swaps; --", "\xff\xfe", "stx," + strings.Repeat("a", 5000), strings.Repeat("stx,", 150),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, list string) {
		ids, err := api.ParseTokens(list)
		if err != nil {
			require.Nil(t, ids)
			require.True(t, utf8.ValidString(err.Error()), "error %q", err)
			require.LessOrEqual(t, len(err.Error()), 400)
			return
		}
		require.NotEmpty(t, ids)
		require.LessOrEqual(t, len(ids), api.MaxTokensPerRequest)
		items := map[string]bool{}
		for _, item := range strings.Split(list, ",") {
			items[strings.TrimSpace(item)] = true
		}
		seen := map[string]bool{}
		for _, id := range ids {
			require.True(t, catalog.ValidTokenID(id), "%q", id)
			require.True(t, items[id], "%q is not one of the items", id)
			require.False(t, seen[id], "%q twice", id)
			seen[id] = true
		}
	})
}
