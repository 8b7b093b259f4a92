package registry

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"math/big"
	"strings"
)

// c32Alphabet is the Crockford base-32 alphabet of Stacks addresses.
const c32Alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// Mainnet address versions: SP (single signature) and SM (multisig).
const (
	versionSP = 22
	versionSM = 20
)

var (
	errC32Form     = errors.New("not a mainnet Stacks address (SP… or SM… in c32)")
	errC32Checksum = errors.New("the address's checksum does not match (a typo?)")
)

// CheckSTX accepts a mainnet standard principal, SP… or SM…, in its
// canonical c32check form with a valid checksum.
func CheckSTX(s string) error {
	if len(s) < 5 || len(s) > 41 || s[0] != 'S' || (s[1] != 'P' && s[1] != 'M') {
		return errC32Form
	}
	version := byte(strings.IndexByte(c32Alphabet, s[1]))
	payload, ok := c32Decode(s[2:])
	if !ok || len(payload) != 24 {
		return errC32Form
	}
	if want := c32Checksum(version, payload[:20]); !bytes.Equal(want, payload[20:]) {
		return errC32Checksum
	}
	// Only the canonical spelling: one address, one string.
	if EncodeSTX(version, payload[:20]) != s {
		return errC32Form
	}
	return nil
}

// EncodeSTX is the c32check address of a version and a 20-byte hash.
func EncodeSTX(version byte, hash160 []byte) string {
	payload := append(append([]byte{}, hash160...), c32Checksum(version, hash160)...)
	return "S" + string(c32Alphabet[version]) + c32Encode(payload)
}

// MainnetSP is the SP address of a 20-byte hash (the simulator's agents).
func MainnetSP(hash160 []byte) string { return EncodeSTX(versionSP, hash160) }

func c32Checksum(version byte, data []byte) []byte {
	first := sha256.Sum256(append([]byte{version}, data...))
	second := sha256.Sum256(first[:])
	return second[:4]
}

// c32Encode writes each leading zero byte as one '0', the rest as a
// base-32 number, as c32check does.
func c32Encode(b []byte) string {
	zeros := 0
	for zeros < len(b) && b[zeros] == 0 {
		zeros++
	}
	n := new(big.Int).SetBytes(b)
	var digits []byte
	base, mod := big.NewInt(32), new(big.Int)
	for n.Sign() > 0 {
		n.DivMod(n, base, mod)
		digits = append(digits, c32Alphabet[mod.Int64()])
	}
	out := strings.Repeat("0", zeros)
	for i := len(digits) - 1; i >= 0; i-- {
		out += string(digits[i])
	}
	return out
}

func c32Decode(s string) ([]byte, bool) {
	zeros := 0
	for zeros < len(s) && s[zeros] == '0' {
		zeros++
	}
	n := new(big.Int)
	for i := zeros; i < len(s); i++ {
		d := strings.IndexByte(c32Alphabet, s[i])
		if d < 0 {
			return nil, false
		}
		n.Lsh(n, 5).Or(n, big.NewInt(int64(d)))
	}
	return append(make([]byte, zeros), n.Bytes()...), true
}

var errBTC = errors.New("not a mainnet Bitcoin address (1…, 3… or bc1…, with a valid checksum)")

// checkBTC accepts a mainnet Bitcoin address: base58check P2PKH or P2SH,
// or a segwit address (bech32 for version 0, bech32m above).
func checkBTC(s string) error {
	switch {
	case strings.HasPrefix(s, "bc1"):
		if checkSegwit(s) {
			return nil
		}
	case strings.HasPrefix(s, "1") || strings.HasPrefix(s, "3"):
		if checkBase58(s) {
			return nil
		}
	}
	return errBTC
}

const base58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

func checkBase58(s string) bool {
	if len(s) < 26 || len(s) > 35 {
		return false
	}
	n := new(big.Int)
	zeros := 0
	for zeros < len(s) && s[zeros] == '1' {
		zeros++
	}
	for i := 0; i < len(s); i++ {
		d := strings.IndexByte(base58Alphabet, s[i])
		if d < 0 {
			return false
		}
		n.Mul(n, big.NewInt(58)).Add(n, big.NewInt(int64(d)))
	}
	b := append(make([]byte, zeros), n.Bytes()...)
	if len(b) != 25 || (b[0] != 0x00 && b[0] != 0x05) {
		return false
	}
	first := sha256.Sum256(b[:21])
	second := sha256.Sum256(first[:])
	return bytes.Equal(second[:4], b[21:])
}

const bech32Alphabet = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"

const (
	bech32Const  = 1
	bech32mConst = 0x2bc830a3
)

func bech32Polymod(values []byte) uint32 {
	gen := [5]uint32{0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3}
	chk := uint32(1)
	for _, v := range values {
		top := chk >> 25
		chk = (chk&0x1ffffff)<<5 ^ uint32(v)
		for i := range 5 {
			if (top>>i)&1 == 1 {
				chk ^= gen[i]
			}
		}
	}
	return chk
}

// checkSegwit verifies a lower-case mainnet segwit address (BIP 173, 350).
func checkSegwit(s string) bool {
	if len(s) < 14 || len(s) > 90 || strings.ToLower(s) != s {
		return false
	}
	data := make([]byte, 0, len(s)-3)
	for i := 3; i < len(s); i++ {
		d := strings.IndexByte(bech32Alphabet, s[i])
		if d < 0 {
			return false
		}
		data = append(data, byte(d))
	}
	if len(data) < 7 {
		return false
	}
	values := append([]byte{3, 3, 0, 2, 3}, data...) // "bc" expanded
	sum := bech32Polymod(values)
	version := data[0]
	program, ok := convertBits(data[1:len(data)-6], 5, 8)
	if !ok || len(program) < 2 || len(program) > 40 || version > 16 {
		return false
	}
	if version == 0 {
		return sum == bech32Const && (len(program) == 20 || len(program) == 32)
	}
	return sum == bech32mConst
}

func convertBits(in []byte, from, to uint) ([]byte, bool) {
	var acc, bits uint
	var out []byte
	maxv := uint(1)<<to - 1
	for _, v := range in {
		acc = acc<<from | uint(v)
		bits += from
		for bits >= to {
			bits -= to
			out = append(out, byte(acc>>bits&maxv))
		}
	}
	if bits >= from || (acc<<(to-bits))&maxv != 0 {
		return nil, false
	}
	return out, true
}

// SegwitP2WPKH is the bech32 address of a 20-byte witness program (the
// simulator's claims).
func SegwitP2WPKH(program []byte) string {
	data := []byte{0}
	conv, _ := convertBitsPad(program)
	data = append(data, conv...)
	values := append([]byte{3, 3, 0, 2, 3}, data...)
	values = append(values, 0, 0, 0, 0, 0, 0)
	mod := bech32Polymod(values) ^ bech32Const
	for i := range 6 {
		data = append(data, byte(mod>>(5*(5-i))&31))
	}
	var b strings.Builder
	b.WriteString("bc1")
	for _, d := range data {
		b.WriteByte(bech32Alphabet[d])
	}
	return b.String()
}

func convertBitsPad(in []byte) ([]byte, bool) {
	var acc, bits uint
	var out []byte
	for _, v := range in {
		acc = acc<<8 | uint(v)
		bits += 8
		for bits >= 5 {
			bits -= 5
			out = append(out, byte(acc>>bits&31))
		}
	}
	if bits > 0 {
		out = append(out, byte(acc<<(5-bits)&31))
	}
	return out, true
}
