package hiro

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/hiro/openapi"
)

// Every field the client decodes from Hiro is one Hiro's published schema
// declares at that place, as a JSON type the Go field holds (the schemas:
// internal/hiro/openapi). A field read under another name, or as a number
// where Hiro sends a string, fails here instead of reading as zero.
//
// Named exceptions, each a reading that differs from the schema's letter and
// holds by Hiro's source:
var publishedReadingExceptions = map[string]string{
	// The schema says number; the server fills block_time from an integer
	// column (migrations/1600000000001_txs.ts, db-controller.ts: block_time
	// || burn_block_time), so the seconds are whole and int64 holds them.
	"BlockTime (block_time): read as integer (Go int64), Hiro publishes number": "integer column",
}

func TestTheClientReadsWhatHiroPublishes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		what string
		typ  reflect.Type
		def  string
	}{
		{"tx/multiple's answer", reflect.TypeFor[map[string]multipleEntry](), openapi.TxMultiple},
		{"a transaction (tx/multiple's result, the detail)", reflect.TypeFor[Tx](), openapi.Transaction},
		{"the feed's page", reflect.TypeFor[Page](), openapi.V1TxList},
		{"a v3 principal page", reflect.TypeFor[v3Page](), openapi.V3PrincipalTransactions},
	} {
		misread, err := openapi.Reads(tc.typ, tc.def)
		require.NoError(t, err)
		for _, m := range misread {
			if !excepted(m) {
				t.Errorf("%s (%s): %s", tc.what, tc.def, m)
			}
		}
	}
}

func excepted(misreading string) bool {
	for e := range publishedReadingExceptions {
		if strings.HasSuffix(misreading, "."+e) {
			return true
		}
	}
	return false
}
