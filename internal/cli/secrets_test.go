package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// envInUsage finds the [ENV] a flag's usage names as its default's source.
var envInUsage = regexp.MustCompile(`\[([A-Z][A-Z0-9_]+)\]`)

// secretVar says which of those variables hold a secret. A new secret
// setting (say PACER_CHAINHOOK_SECRET) is covered as soon as its flag
// names its variable.
var secretVar = regexp.MustCompile(`KEY|SECRET|TOKEN|PASSWORD`)

// TestHelpShowsNoSecret sets every secret variable the flags name to a
// marker, and DATABASE_URL to a URL with a password in its user info and in
// its query, then reads the --help of every command.
func TestHelpShowsNoSecret(t *testing.T) {
	// Not parallel: it sets environment variables.
	const marker = "MARKER7c1e5a"
	var commands [][]string
	var walk func(cmd *cobra.Command, path []string)
	walk = func(cmd *cobra.Command, path []string) {
		commands = append(commands, path)
		visit := func(f *pflag.Flag) {
			for _, m := range envInUsage.FindAllStringSubmatch(f.Usage, -1) {
				if secretVar.MatchString(m[1]) && !strings.HasSuffix(m[1], "_FILE") {
					t.Setenv(m[1], marker+"-"+m[1])
				}
			}
		}
		cmd.LocalFlags().VisitAll(visit)
		cmd.PersistentFlags().VisitAll(visit)
		for _, sub := range cmd.Commands() {
			walk(sub, append(append([]string{}, path...), sub.Name()))
		}
	}
	walk(Command(), nil)
	for _, name := range []string{"TENERO_API_KEY", "HIRO_API_KEY"} {
		require.Equal(t, marker+"-"+name, os.Getenv(name), "%s is named by a flag and set", name)
	}
	tests := []struct{ name, give string }{
		{"url user info and query", "postgres://pacer:" + marker + "-pw@db.internal:5432/pacer?sslmode=require&sslpassword=" + marker + "-q"},
		{"url with an escaped password", "postgresql://pacer:" + marker + "%40x@db.internal/pacer"},
		{"key=value form", "host=db.internal user=pacer password='" + marker + " x' sslpassword=" + marker + "-q dbname=pacer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("DATABASE_URL", tt.give)
			for _, path := range commands {
				code, stdout, stderr := run(append(path, "--help")...)
				require.Equal(t, 0, code, "%v: %s", path, stderr)
				require.NotContains(t, stdout+stderr, marker, "pacer %s --help", strings.Join(path, " "))
			}
			_, stdout, _ := run("--help")
			require.Contains(t, stdout, "db.internal", "the rest of the URL is still shown")
			require.Contains(t, stdout, redacted)
		})
	}
	t.Logf("figures: %d commands' --help read for each of %d database URLs with passwords, with the secret variables set; 0 leaks", len(commands), len(tests))
}

func TestRedactDatabaseURL(t *testing.T) {
	t.Parallel()
	tests := []struct{ give, want string }{
		{"postgres://postgres@127.0.0.1:5432/pacer?sslmode=disable", "postgres://postgres@127.0.0.1:5432/pacer?sslmode=disable"},
		{"postgres://u:p@h/db", "postgres://u:xxxxx@h/db"},
		{"postgres://u:p@h/db?password=q&sslmode=disable", "postgres://u:xxxxx@h/db?password=xxxxx&sslmode=disable"},
		{"host=h password=p dbname=d", "host=h password=xxxxx dbname=d"},
		{"host=h PASSWORD = 'a b\\' c' dbname=d", "host=h PASSWORD = xxxxx dbname=d"},
		{"postgres://u:p@h:notaport/db", "(set, not shown)"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, redactDatabaseURL(tt.give), tt.give)
	}
}

func TestAPIKeyFromFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	good := write("good", "  k3y-from-file\n")
	tests := []struct {
		name, giveKey, giveFile, want, wantErr string
	}{
		{name: "no file: the flag or environment", giveKey: "k", want: "k"},
		{name: "nothing", want: ""},
		{name: "file, trimmed", giveFile: good, want: "k3y-from-file"},
		{name: "both", giveKey: "k", giveFile: good, wantErr: "give TENERO_API_KEY or TENERO_API_KEY_FILE, not both"},
		{name: "missing", giveFile: filepath.Join(dir, "absent"), wantErr: "no such file"},
		{name: "empty", giveFile: write("empty", "\n"), wantErr: "is empty"},
		{name: "two lines", giveFile: write("two", "k3y-secret-one\nk3y-secret-two\n"), wantErr: "one line"},
		{name: "huge", giveFile: write("huge", strings.Repeat("k", maxKeyFile+1)), wantErr: "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := apiKey(tt.giveKey, tt.giveFile, "TENERO_API_KEY", "TENERO_API_KEY_FILE")
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.NotContains(t, err.Error(), "k3y", "an error quotes the file")
				var ue *UsageError
				require.ErrorAs(t, err, &ue)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestKeyOverPlainHTTP(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, giveURL, giveKey string
		giveAllow              bool
		wantErr                bool
		wantWarn               bool
	}{
		{name: "https", giveURL: "https://api.hiro.so", giveKey: "k"},
		{name: "http without a key", giveURL: "http://api.hiro.so"},
		{name: "http to 127.0.0.1", giveURL: "http://127.0.0.1:8090", giveKey: "k"},
		{name: "http to 127.9.9.9", giveURL: "http://127.9.9.9:8090", giveKey: "k"},
		{name: "http to ::1", giveURL: "http://[::1]:8090", giveKey: "k"},
		{name: "http to localhost", giveURL: "http://LocalHost:8090", giveKey: "k"},
		{name: "http to a host", giveURL: "http://api.hiro.so", giveKey: "k", wantErr: true},
		{name: "http to a name that looks local", giveURL: "http://localhost.attacker.example", giveKey: "k", wantErr: true},
		{name: "http to a private address", giveURL: "http://10.0.0.8", giveKey: "k", wantErr: true},
		{name: "allowed", giveURL: "http://pacer-sim:8090", giveKey: "k", giveAllow: true, wantWarn: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			core, logs := observer.New(zap.WarnLevel)
			err := keyTransport("hiro-base-url", "HIRO_API_KEY", tt.giveURL, tt.giveKey, tt.giveAllow, zap.New(core))
			if tt.wantErr {
				require.ErrorIs(t, err, errPlaintextKey)
				require.ErrorContains(t, err, envAllowPlaintextKeys)
				var ue *UsageError
				require.ErrorAs(t, err, &ue)
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, tt.wantWarn, logs.FilterMessage("config.plaintext_api_key").Len() == 1)
		})
	}
}

// The refusal comes before anything is opened or dialled: exit 2, one line.
func TestWorkerRefusesAKeyOverPlainHTTP(t *testing.T) {
	t.Setenv("HIRO_API_KEY", "k3y-plain")
	t.Setenv("HIRO_BASE_URL", "http://api.hiro.so")
	code, stdout, stderr := run("worker", "--temporal-address", "127.0.0.1:1", "--database-url", "postgres://127.0.0.1:1/x")
	require.Equal(t, 2, code, stderr)
	require.Empty(t, stdout)
	require.Contains(t, stderr, "cleartext")
	require.NotContains(t, stderr, "k3y-plain")
}
