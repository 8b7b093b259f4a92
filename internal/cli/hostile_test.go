package cli

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// hostileArgs are command lines that must each end in one line on stderr
// naming the problem and exit code 2, before anything is dialled or opened:
// no panic, no stack trace, no output on stdout.
var hostileArgs = []struct {
	name    string
	give    []string
	wantErr string
}{
	{name: "pause overflowing duration", give: []string{"pause", "--for", "9999999999h"}, wantErr: `"for" is not a Go duration`},
	{name: "pause 30 days and a second", give: []string{"pause", "--for", "720h1s"}, wantErr: "more than"},
	{name: "pause far future", give: []string{"pause", "--until", "9999-12-31T23:59:59Z"}, wantErr: "more than"},
	{name: "pause empty for", give: []string{"pause", "--for", ""}, wantErr: `give "until"`},
	{name: "pause zero", give: []string{"pause", "--for", "0s"}, wantErr: "must be positive"},
	{name: "pause unicode digits", give: []string{"pause", "--for", "１０m"}, wantErr: "not a Go duration"},
	{name: "pause month 13", give: []string{"pause", "--until", "2026-13-01T00:00:00Z"}, wantErr: "not an RFC3339 time"},
	{name: "pause no zone", give: []string{"pause", "--until", "2030-01-01T00:00:00"}, wantErr: "not an RFC3339 time"},
	{name: "pause newline", give: []string{"pause", "--for", "10m\nrm -rf /"}, wantErr: "not a Go duration"},
	{name: "pause positional", give: []string{"pause", "10m"}, wantErr: "unknown command"},
	{name: "refresh empty task", give: []string{"refresh", ""}, wantErr: `unknown task ""`},
	{name: "refresh shell", give: []string{"refresh", "tenero; rm -rf /"}, wantErr: "unknown task"},
	{name: "refresh upper case", give: []string{"refresh", "ALL"}, wantErr: "unknown task"},
	{name: "refresh look-alike", give: []string{"refresh", "tеnero"}, wantErr: "unknown task"},
	{name: "refresh control characters", give: []string{"refresh", "all\x1b[2J"}, wantErr: "unknown task"},
	{name: "refresh huge", give: []string{"refresh", strings.Repeat("a", 100_000)}, wantErr: "unknown task"},
	{name: "prices empty id", give: []string{"prices", ""}, wantErr: "malformed token id"},
	{name: "prices sql", give: []string{"prices", "stx", "x' or '1'='1"}, wantErr: "malformed token id"},
	{name: "prices newline", give: []string{"prices", "stx\nSP000"}, wantErr: "malformed token id"},
	{name: "prices nul", give: []string{"prices", "stx\x00"}, wantErr: "malformed token id"},
	{name: "status every negative", give: []string{"status", "--watch", "--every", "-1s"}, wantErr: "--every"},
	{name: "status every garbage", give: []string{"status", "--every", "often"}, wantErr: "invalid argument"},
	{name: "json flag with value", give: []string{"status", "--json=maybe"}, wantErr: "invalid argument"},
	{name: "cadence overflow", give: []string{"status", "--sweep-every", "99999999999h"}, wantErr: "invalid argument"},
	{name: "cadence negative", give: []string{"status", "--tenero-every", "-5m"}, wantErr: "teneroEvery -5m0s"},
	{name: "competition start not a number", give: []string{"status", "--competition-start", "1e9"}, wantErr: "invalid argument"},
	{name: "hiro per minute not a number", give: []string{"status", "--hiro-per-minute", "lots"}, wantErr: "invalid argument"},
	{name: "base url javascript", give: []string{"status", "--hiro-base-url", "javascript:alert(1)"}, wantErr: "must start with http"},
	{name: "base url file", give: []string{"status", "--tenero-base-url", "file:///etc/passwd"}, wantErr: "must start with http"},
	{name: "base url empty", give: []string{"status", "--tenero-base-url", ""}, wantErr: "must start with http"},
	{name: "worker log level", give: []string{"worker", "--log-level", "loud"}, wantErr: "log level"},
	{name: "worker log format", give: []string{"worker", "--log-format", "xml"}, wantErr: "log format"},
	{name: "worker extra argument", give: []string{"worker", "now"}, wantErr: "unknown command"},
	{name: "serve empty address", give: []string{"serve", "--http", ""}, wantErr: "--http must not be empty"},
	{name: "unknown command unicode", give: []string{"stätus"}, wantErr: "unknown command"},
	{name: "unknown shorthand", give: []string{"status", "-z"}, wantErr: "unknown shorthand flag"},
	{name: "flag without value", give: []string{"pause", "--for"}, wantErr: "flag needs an argument"},
	{name: "subscriber without url", give: []string{"subscribers", "add"}, wantErr: "--url: required"},
	{name: "subscriber update nothing", give: []string{"subscribers", "update", "sub_aaaaaaaaaaaaaaaa"}, wantErr: "nothing to change"},
	{name: "subscriber update bad id", give: []string{"subscribers", "update", "x", "--events", "daily"}, wantErr: "not a subscriber id"},
	{name: "subscriber disable long reason", give: []string{"subscribers", "disable", "sub_aaaaaaaaaaaaaaaa", "--reason", strings.Repeat("r", 600)}, wantErr: "--reason"},
	{name: "recover without from", give: []string{"deliveries", "recover", "--subscriber", "sub_aaaaaaaaaaaaaaaa"}, wantErr: "--from"},
	{name: "recover bad status", give: []string{"deliveries", "recover", "--subscriber", "sub_aaaaaaaaaaaaaaaa", "--from", "2026-11-01T00:00:00Z", "--status", "lost"}, wantErr: "--statuses"},
	{name: "audit bad since", give: []string{"audit", "--since", "yesterday"}, wantErr: "--since"},
	{name: "audit bad limit", give: []string{"audit", "--limit", "0"}, wantErr: "--limit"},
	{name: "subscriber ftp url", give: []string{"subscribers", "add", "--url", "ftp://a.example/x"}, wantErr: "http or https"},
	{name: "subscriber credentials", give: []string{"subscribers", "add", "--url", "https://u:p@a.example/x"}, wantErr: "credentials"},
	{name: "subscriber javascript", give: []string{"subscribers", "add", "--url", "javascript:alert(1)"}, wantErr: "http or https"},
	{name: "subscriber bad event", give: []string{"subscribers", "add", "--url", "https://a.example/", "--events", "weekly"}, wantErr: "--events"},
	{name: "subscriber no event", give: []string{"subscribers", "add", "--url", "https://a.example/", "--events", ","}, wantErr: "--events"},
	{name: "subscriber bad token", give: []string{"subscribers", "add", "--url", "https://a.example/", "--tokens", "x'; drop"}, wantErr: "--tokens"},
	{name: "subscriber bad agent", give: []string{"subscribers", "add", "--url", "https://a.example/", "--agents", "SPnope"}, wantErr: "--agents"},
	{name: "subscriber remove bad id", give: []string{"subscribers", "remove", "../etc"}, wantErr: "not a subscriber id"},
	{name: "subscriber test no id", give: []string{"subscribers", "test"}, wantErr: "accepts 1 arg"},
	{name: "subscribers alone", give: []string{"subscribers"}, wantErr: "subcommand"},
	{name: "deliveries bad status", give: []string{"deliveries", "list", "--status", "lost"}, wantErr: "--status"},
	{name: "deliveries bad limit", give: []string{"deliveries", "list", "--limit", "0"}, wantErr: "--limit"},
	{name: "redeliver bad id", give: []string{"deliveries", "redeliver", "sub_x-hourly-1"}, wantErr: "not a delivery id"},
	{name: "day tz unknown", give: []string{"status", "--day-tz", "Mars/Olympus"}, wantErr: "PACER_DAY_TZ"},
	{name: "day tz local", give: []string{"status", "--day-tz", "Local"}, wantErr: "PACER_DAY_TZ"},
	{name: "ladder garbage", give: []string{"status", "--delivery-ladder", "1m,soon"}, wantErr: "PACER_DELIVERY_LADDER"},
	{name: "operator token short", give: []string{"status", "--operator-token", "alice:short"}, wantErr: "at least 16"},
	{name: "operator names twice", give: []string{"status", "--operator-token", "a:0123456789abcdef,a:0123456789abcdefX"}, wantErr: "given twice"},
	{name: "trusted proxies garbage", give: []string{"status", "--trusted-proxies", "10.0.0.0/99"}, wantErr: "PACER_TRUSTED_PROXIES"},
	{name: "chainhook secret short", give: []string{"status", "--chainhook-secret", "hunter2"}, wantErr: "at least 24"},
	{name: "ladder negative", give: []string{"status", "--delivery-ladder", "-1m"}, wantErr: "PACER_DELIVERY_LADDER"},
}

func TestHostileArgumentsExitTwoWithOneLine(t *testing.T) {
	t.Parallel()
	for _, tt := range hostileArgs {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := run(tt.give...)
			require.Equal(t, 2, code, "stderr: %.300s", stderr)
			require.Empty(t, stdout)
			require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %.300q", stderr)
			require.True(t, strings.HasPrefix(stderr, "pacer: "), "%.300s", stderr)
			require.Contains(t, stderr, tt.wantErr)
			require.NotContains(t, stderr, "goroutine", "a stack trace")
			require.NotContains(t, stderr, "\x1b[2J", "a terminal escape reached the terminal")
		})
	}
	t.Logf("figures: %d hostile command lines, each exit 2 with one line", len(hostileArgs))
}
