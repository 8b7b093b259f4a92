package catalog_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/catalog"
)

const (
	sbtc  = "SM3VDXK3WZZSA84XXFKAFAF15NNZX32CTSG82JFQ4.sbtc-token::sbtc-token"
	ststx = "SP4SZE494VC2YC5JYG7AYFQ44F5Q4PYV7DVMDPBG.ststx-token::ststx"
	usdcx = "SP120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNE.usdcx"
	susdt = "SP3K8BC0PPEVCV7NZ6QSRWPQ2JE9E5B6N3PA0KBR9.token-susdt"
	// A 39-character hash, to cover the middle of the accepted range.
	addr39 = "SP2C2YFP12AJZB4MABJBAJ55XECVS7E4PMMZ89YZR"
)

func TestValidTokenID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		give string
		want bool
	}{
		{give: "stx", want: true},
		{give: sbtc, want: true},
		{give: ststx, want: true},
		{give: usdcx, want: true},
		{give: addr39 + ".usda-token", want: true},
		{give: "ST" + strings.Repeat("1", 38) + ".a", want: true},
		{give: "SN" + strings.Repeat("Z", 40) + ".a_b-c::d_e-f", want: true},
		{give: "SM" + strings.Repeat("0", 40) + "." + "a" + strings.Repeat("b", 127), want: true},
		{give: "SP" + strings.Repeat("0", 38) + ".t::" + "a" + strings.Repeat("b", 127), want: true},

		{give: "", want: false},
		{give: "unknown", want: false},
		{give: "STX", want: false},
		{give: "stx::stx", want: false},
		{give: " stx", want: false},
		{give: "stx\n", want: false},
		{give: usdcx + "\n", want: false},
		{give: usdcx + " ", want: false},
		{give: "SP120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNE", want: false},            // no contract
		{give: "SP120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNE.", want: false},           // empty contract name
		{give: "sp120sbrbqj00mcws7tm5r8wjnttkd5k0hfrc2cne.usdcx", want: false},      // lowercase principal
		{give: "SX120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNE.usdcx", want: false},      // bad version letter
		{give: "SP120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNI.usdcx", want: false},      // I is not c32
		{give: "SP120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNO.usdcx", want: false},      // O is not c32
		{give: "SP120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNL.usdcx", want: false},      // L is not c32
		{give: "SP120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNU.usdcx", want: false},      // U is not c32
		{give: "SP" + strings.Repeat("0", 37) + ".a", want: false},                  // hash too short
		{give: "SP" + strings.Repeat("0", 41) + ".a", want: false},                  // hash too long
		{give: "SP120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNE.1usdcx", want: false},     // name starts with a digit
		{give: "SP120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNE.-usdcx", want: false},     // name starts with '-'
		{give: "SP120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNE.usd cx", want: false},     // space
		{give: "SP120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNE.usdcx::", want: false},    // empty asset
		{give: "SP120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNE.usdcx:a", want: false},    // one colon
		{give: "SP120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNE.a::b::c", want: false},    // two assets
		{give: "SP120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNE.a.b", want: false},        // two dots
		{give: "SP120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNE.usdcx/../x", want: false}, // path
		{give: "SP120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNE.usdcx?x=1", want: false},  // query
		{give: "stx'; drop table token_prices; --", want: false},
		{give: "SP120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNE.a' or '1'='1", want: false},
		{give: "S\u0420120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNE.usdcx", want: false}, // Cyrillic Er
		{give: "SP120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNE.usd\u0441x", want: false}, // Cyrillic Es
		{give: "\uff53\uff54\uff58", want: false},                                   // fullwidth "stx"
		{give: "SP120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNE.usdcx\x00", want: false},
		{give: "SM" + strings.Repeat("0", 40) + "." + "a" + strings.Repeat("b", 128), want: false},    // name of 129
		{give: "SP" + strings.Repeat("0", 38) + ".t::" + "a" + strings.Repeat("b", 128), want: false}, // asset of 129
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, catalog.ValidTokenID(tt.give))
		})
	}
}

func TestContractOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		give string
		want string
	}{
		{give: "stx", want: "stx"},
		{give: sbtc, want: "SM3VDXK3WZZSA84XXFKAFAF15NNZX32CTSG82JFQ4.sbtc-token"},
		{give: usdcx, want: usdcx},
		{give: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, catalog.ContractOf(tt.give))
		})
	}
}
