package catalog_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/catalog"
)

// FuzzValidTokenID compares the validator with a reference written without
// regular expressions, straight from SPEC §4.1: "stx", or S[PMTN] and 38–40
// c32 characters, a dot, a contract name, and an optional ::asset name.
func FuzzValidTokenID(f *testing.F) {
	for _, s := range []string{
		"stx", "STX", "stx::stx", sbtc, ststx, usdcx, susdt, addr39 + ".usda-token",
		"SP" + strings.Repeat("0", 37) + ".a", "SP" + strings.Repeat("0", 41) + ".a",
		usdcx + "::", usdcx + ":a", usdcx + "::a::b", usdcx + ".b", usdcx + "\n",
		"SP120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNI.usdcx", "S\u0420120SBRBQJ00MCWS7TM5R8WJNTTKD5K0HFRC2CNE.usdcx",
		"stx'; drop table token_prices; --", usdcx + "/../x", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		require.Equal(t, referenceTokenID(id), catalog.ValidTokenID(id), "%q", id)
	})
}

func referenceTokenID(id string) bool {
	if id == "stx" {
		return true
	}
	principal, rest, ok := strings.Cut(id, ".")
	if !ok || !referencePrincipal(principal) {
		return false
	}
	contract, asset, hasAsset := strings.Cut(rest, "::")
	return referenceName(contract) && (!hasAsset || referenceName(asset))
}

// referencePrincipal: 'S', a version letter, then the c32 hash and checksum.
func referencePrincipal(p string) bool {
	const c32 = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	if len(p) < 2+38 || len(p) > 2+40 || p[0] != 'S' || !strings.ContainsRune("PMTN", rune(p[1])) {
		return false
	}
	for i := 2; i < len(p); i++ {
		if strings.IndexByte(c32, p[i]) < 0 {
			return false
		}
	}
	return true
}

// referenceName: an ASCII letter, then up to 127 letters, digits, '-' or '_'.
func referenceName(n string) bool {
	if len(n) == 0 || len(n) > 128 {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		letter := ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
		if !letter && (i == 0 || !(('0' <= c && c <= '9') || c == '-' || c == '_')) {
			return false
		}
	}
	return true
}
