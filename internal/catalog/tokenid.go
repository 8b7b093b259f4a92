package catalog

import (
	"regexp"
	"strings"

	"github.com/pacer-dev/pacer"
)

// stx is the id of the native token, the one id that is not a contract.
const stx = "stx"

// A Clarity name: a letter, then letters, digits, '-' or '_', 128 at most.
// Clarity allows a few more characters; token ids seen in swaps never use
// them, and every character let through here ends up in a URL and in SQL.
const name = `[A-Za-z][A-Za-z0-9_-]{0,127}`

// A standard principal (pacer.PrincipalPattern).
const principal = pacer.PrincipalPattern

var (
	clarityName       = regexp.MustCompile(`^` + name + `$`)
	standardPrincipal = regexp.MustCompile(`^` + principal + `$`)
	contractID        = regexp.MustCompile(`^` + principal + `\.` + name + `$`)
	tokenID           = regexp.MustCompile(`^` + principal + `\.` + name + `(?:::` + name + `)?$`)
)

// ValidTokenID reports whether id is "stx" or a contract id with an optional
// ::asset name (SPEC §4.1). Ids come from chain data and from API callers, and
// only valid ones ever reach an upstream URL or the database.
func ValidTokenID(id string) bool {
	return id == stx || tokenID.MatchString(id)
}

// validContractKey reports whether id is a contract id without ::asset, the
// shape of the data files' keys.
func validContractKey(id string) bool {
	return contractID.MatchString(id)
}

// ContractOf returns the contract that defines a token, its id without any
// ::asset suffix: the address Tenero knows it by and the key of the data
// files. "stx" stays "stx".
func ContractOf(tokenID string) string {
	contract, _, _ := strings.Cut(tokenID, "::")
	return contract
}

// ValidPrincipal reports whether s is a standard Stacks principal (an
// agent's address).
func ValidPrincipal(s string) bool { return pacer.ValidPrincipal(s) }
