// Package webhook is how pacer talks to its subscribers (SPEC §10.2, §10.3):
// secrets and ids, endpoint validation, the retry ladder, and one signed
// POST as Standard Webhooks (https://www.standardwebhooks.com), signed by
// the standard-webhooks library itself so that any receiver using it
// verifies what pacer sends.
//
// Nothing here logs. Errors and outcomes never carry a secret, a URL or a
// response body: a URL's query may hold a subscriber's token, and a body is
// the subscriber's to show, not pacer's.
package webhook

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// SecretPrefix marks a signing secret, as Standard Webhooks libraries expect.
const SecretPrefix = "whsec_"

// secretBytes is the key length: Standard Webhooks asks for 24 to 64 bytes.
const secretBytes = 32

// NewSecret returns a fresh signing secret, "whsec_" + base64 of 32 random
// bytes.
func NewSecret() string {
	key := make([]byte, secretBytes)
	_, _ = rand.Read(key) // crypto/rand.Read never fails
	return SecretPrefix + base64.StdEncoding.EncodeToString(key)
}

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewSubscriberID returns a fresh subscriber id, "sub_" + 16 base-32
// characters (80 random bits).
func NewSubscriberID() string {
	b := make([]byte, 10)
	_, _ = rand.Read(b)
	return "sub_" + idEncoding.EncodeToString(b)
}

// subscriberIDPattern is what NewSubscriberID makes.
var subscriberIDPattern = regexp.MustCompile(`^sub_[a-z2-7]{16}$`)

// ValidSubscriberID reports whether id has the shape of a subscriber id.
func ValidSubscriberID(id string) bool { return subscriberIDPattern.MatchString(id) }

// DeliveryID is the id of the delivery of one (subscriber, event, period),
// sent as webhook-id. It is derived, not drawn: the same triple always has
// the same id, so a retry, a crash between a POST and its record, or a
// second emission can never give a period a second id, and a subscriber
// can name any period it missed to GET /api/deliveries/{id}.
func DeliveryID(subscriberID, event string, periodStart time.Time) string {
	return subscriberID + "-" + event + "-" + periodStart.UTC().Format("20060102T1504Z")
}

var deliveryIDPattern = regexp.MustCompile(`^sub_[a-z2-7]{16}-(hourly|daily)-[0-9]{8}T[0-9]{4}Z(-c[1-9][0-9]{0,8})?$`)

// ValidDeliveryID reports whether id has the shape DeliveryID makes, or
// that of a correction of it (the id, "-c", the correction's number).
func ValidDeliveryID(id string) bool { return deliveryIDPattern.MatchString(id) }

// MaxURLLength bounds a subscriber's URL.
const MaxURLLength = 2048

// ErrBadURL is wrapped by every URL rejection.
var ErrBadURL = errors.New("bad subscriber URL")

// ValidateURL checks a subscriber's endpoint: an absolute http or https URL
// with a host, without credentials (they would be sent to and logged by
// every proxy on the way; a subscriber authenticates pacer by the
// signature instead) and without a fragment. It returns the URL in its
// canonical form. The error never repeats the URL, which may hold a token.
func ValidateURL(raw string) (string, error) {
	if len(raw) > MaxURLLength {
		return "", fmt.Errorf("%w: longer than %d bytes", ErrBadURL, MaxURLLength)
	}
	if strings.TrimSpace(raw) != raw || raw == "" {
		return "", fmt.Errorf("%w: empty or surrounded by white space", ErrBadURL)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("%w: does not parse as a URL", ErrBadURL)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("%w: the scheme must be http or https", ErrBadURL)
	case u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return "", fmt.Errorf("%w: no host", ErrBadURL)
	case u.User != nil:
		return "", fmt.Errorf("%w: credentials in the URL are not allowed (receivers check the signature instead)", ErrBadURL)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return "", fmt.Errorf("%w: a fragment is never sent; remove it", ErrBadURL)
	}
	if p := u.Port(); p != "" && (len(p) > 5 || p == "0") {
		return "", fmt.Errorf("%w: bad port", ErrBadURL)
	}
	return u.String(), nil
}
