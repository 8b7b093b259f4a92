package cli

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/pacer-dev/pacer/activities"
	"github.com/pacer-dev/pacer/internal/api"
	"github.com/pacer-dev/pacer/internal/chainhook"
)

// chainhookConfig is Chainhooks push's configuration (SPEC §11) beyond the
// consumer secret(s).
type chainhookConfig struct {
	maxBytesRaw string
	maxBytes    int64
	apiURL      string
	publicURL   string
	replayMax   int64
}

func (h *chainhookConfig) bind(c *config, fs *pflag.FlagSet) {
	fs.StringVar(&h.maxBytesRaw, "chainhook-max-bytes", env("PACER_CHAINHOOK_MAX_BYTES", "32MiB"),
		"the largest chainhook delivery body read (a busy block's passes 1 MiB): bytes, or with KiB, MiB, KB or MB [PACER_CHAINHOOK_MAX_BYTES]")
	fs.StringVar(&h.apiURL, "chainhook-api-url", env("PACER_CHAINHOOK_API_URL", chainhook.DefaultPlatformURL),
		"Hiro's Chainhooks platform API (its routes under /me/), with HIRO_API_KEY [PACER_CHAINHOOK_API_URL]")
	fs.StringVar(&h.publicURL, "public-url", env("PACER_PUBLIC_URL", ""),
		"pacer's public API as Hiro reaches it; the hook posts to it + /api/chainhook [PACER_PUBLIC_URL]")
	fs.Int64Var(&h.replayMax, "chainhook-replay-max", c.envInt("PACER_CHAINHOOK_REPLAY_MAX", activities.DefaultChainhookReplayMax),
		"the longest gap of the hook's (in blocks) replayed with the platform's evaluate; a longer one is left to the readers [PACER_CHAINHOOK_REPLAY_MAX]")
}

func (h *chainhookConfig) validate(secrets string, manage bool) error {
	// Zero values are the defaults (a config built without its flags).
	n, err := int64(0), error(nil)
	if h.maxBytesRaw != "" {
		n, err = parseBytes(h.maxBytesRaw)
	}
	if err != nil || (n != 0 && n < 1<<10) {
		return usagef("PACER_CHAINHOOK_MAX_BYTES (--chainhook-max-bytes) %q: want a size of at least 1KiB, e.g. 32MiB", h.maxBytesRaw)
	}
	h.maxBytes = n
	for i, s := range api.ChainhookSecrets(secrets) {
		if len(s) < api.MinChainhookSecret {
			// Never the secret itself, only its place and length.
			return usagef("PACER_CHAINHOOK_SECRET (--chainhook-secret): secret %d is %d characters; each must be at least %d (try: openssl rand -hex 24)",
				i+1, len(s), api.MinChainhookSecret)
		}
	}
	if h.replayMax < 0 {
		return usagef("PACER_CHAINHOOK_REPLAY_MAX (--chainhook-replay-max) must not be negative (got %d)", h.replayMax)
	}
	for name, u := range map[string]string{"chainhook-api-url": h.apiURL, "public-url": h.publicURL} {
		if u == "" {
			continue
		}
		if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return usagef("--%s %q must be an http:// or https:// URL", name, u)
		}
	}
	if manage && h.publicURL == "" {
		return usagef("PACER_CHAINHOOK_MANAGE=1 needs PACER_PUBLIC_URL (--public-url): where Hiro reaches pacer")
	}
	return nil
}

// parseBytes reads 33554432, 32MiB, 32MB, 512KiB or 512KB.
func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"KB", 1000}, {"MB", 1000 * 1000}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<40)/mult {
		return 0, fmt.Errorf("size %q", s)
	}
	return n * mult, nil
}

// chainhookNetwork is the network the hook watches: testnet when Hiro's
// base URL is a testnet one.
func (c *config) chainhookNetwork() string {
	if strings.Contains(c.hiroBaseURL, "testnet") {
		return "testnet"
	}
	return "mainnet"
}

// chainhookActivities is the chainhook task's configuration.
func (c *config) chainhookActivities() activities.ChainhookConfig {
	return activities.ChainhookConfig{APIURL: c.hook.apiURL, APIKey: c.hiroAPIKey, PublicURL: c.hook.publicURL,
		Network: c.chainhookNetwork(), ReplayMax: c.hook.replayMax}
}
