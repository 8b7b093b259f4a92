package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func run(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestBadArgumentsExitTwoWithOneLine(t *testing.T) {
	// Not parallel: one case sets environment variables.
	tests := []struct {
		name    string
		give    []string
		env     map[string]string
		wantErr string
	}{
		{name: "unknown command", give: []string{"frobnicate"}, wantErr: `unknown command "frobnicate"`},
		{name: "unknown flag", give: []string{"status", "--nope"}, wantErr: "unknown flag: --nope"},
		{name: "extra argument", give: []string{"status", "now"}, wantErr: "unknown command"},
		{name: "pause without a time", give: []string{"pause"}, wantErr: `give "until"`},
		{name: "pause with both", give: []string{"pause", "--for", "1m", "--until", "2030-01-01T00:00:00Z"}, wantErr: "not both"},
		{name: "pause negative", give: []string{"pause", "--for", "-1m"}, wantErr: "must be positive"},
		{name: "pause in the past", give: []string{"pause", "--until", "2001-01-01T00:00:00Z"}, wantErr: "not in the future"},
		{name: "pause bad time", give: []string{"pause", "--until", "tomorrow"}, wantErr: "not an RFC3339 time"},
		{name: "refresh without task", give: []string{"refresh"}, wantErr: "accepts 1 arg"},
		{name: "refresh unknown task", give: []string{"refresh", "prices"}, wantErr: `unknown task "prices"`},
		{name: "refresh two tasks", give: []string{"refresh", "tenero", "all"}, wantErr: "accepts 1 arg"},
		{name: "prices bad id", give: []string{"prices", "x'; drop table swaps"}, wantErr: "malformed token id"},
		{name: "bad duration flag", give: []string{"status", "--tenero-every", "soon"}, wantErr: "invalid argument"},
		{name: "cadence too short", give: []string{"status", "--tenero-every", "1s"}, wantErr: "at least 1m"},
		{name: "bad base url", give: []string{"status", "--tenero-base-url", "ftp://x"}, wantErr: "must start with http"},
		{name: "bad env duration", give: []string{"status"}, env: map[string]string{"PACER_TENERO_EVERY": "abc"}, wantErr: "PACER_TENERO_EVERY"},
		{name: "bad env integer", give: []string{"status"}, env: map[string]string{"COMPETITION_START": "soon"}, wantErr: "COMPETITION_START"},
		{name: "status bad interval", give: []string{"status", "--watch", "--every", "0s"}, wantErr: "--every"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			code, stdout, stderr := run(tt.give...)
			require.Equal(t, 2, code, "stderr: %s", stderr)
			require.Empty(t, stdout)
			require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
			require.True(t, strings.HasPrefix(stderr, "pacer: "), stderr)
			require.Contains(t, stderr, tt.wantErr)
		})
	}
}

func TestHelpHidesSecrets(t *testing.T) {
	t.Setenv("TENERO_API_KEY", "sekrit-tenero")
	t.Setenv("HIRO_API_KEY", "sekrit-hiro")
	code, stdout, _ := run("--help")
	require.Equal(t, 0, code)
	require.Contains(t, stdout, "tenero-api-key")
	require.NotContains(t, stdout, "sekrit")
}
