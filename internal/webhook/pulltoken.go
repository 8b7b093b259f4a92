package webhook

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
)

// PullTokenPrefix marks a pull token, so that one pasted in the wrong place
// (a signing-secret field) is recognised.
const PullTokenPrefix = "pull_"

// NewPullToken returns a fresh pull token: the credential of GET
// /api/deliveries/{id} (SPEC §10.2), issued with the subscriber, shown
// once, stored only as HashPullToken. It is apart from the signing secret
// on purpose: a captured pull then lets nobody forge the subscriber's
// webhooks.
func NewPullToken() string {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // crypto/rand.Read never fails
	return PullTokenPrefix + base64.RawURLEncoding.EncodeToString(key)
}

// HashPullToken is what pacer stores of a pull token. A token carries 256
// random bits, so one round of SHA-256 is enough: there is nothing to
// brute-force as there would be with a password.
func HashPullToken(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}
