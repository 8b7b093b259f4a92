package cli

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap"
)

// redacted stands for a secret in anything pacer shows; the same mark as
// url.URL.Redacted.
const redacted = "xxxxx"

// dsnPassword finds password=… (and sslpassword=…) in a key=value
// connection string, quoted or not.
var dsnPassword = regexp.MustCompile(`(?i)(\b\w*password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)

// redactDatabaseURL is what --help may show of a Postgres connection
// string: everything but its passwords, from the user info and from query
// parameters such as ?password= or ?sslpassword=, in URL or key=value form.
// A URL that does not parse is not shown at all.
func redactDatabaseURL(s string) string {
	if !strings.HasPrefix(s, "postgres://") && !strings.HasPrefix(s, "postgresql://") {
		return dsnPassword.ReplaceAllString(s, "${1}"+redacted)
	}
	u, err := url.Parse(s)
	if err != nil {
		return "(set, not shown)"
	}
	q := u.Query()
	for k := range q {
		if strings.Contains(strings.ToLower(k), "password") {
			q.Set(k, redacted)
		}
	}
	u.RawQuery = q.Encode()
	return u.Redacted()
}

// flagEnv finds the variable a flag's usage names as its default's source.
var flagEnv = regexp.MustCompile(`\[([A-Z][A-Z0-9_]*)\]`)

// secretEnv names the variables that hold a secret (a key, a secret, a
// token, a password), not a file holding one.
var secretEnv = regexp.MustCompile(`(KEY|SECRET|TOKEN|PASSWORD)$`)

// hideSecretDefaults blanks the shown default of every flag of cmd and its
// subcommands whose variable holds a secret, so that a secret setting added
// later is hidden in --help as soon as its usage names its variable.
func hideSecretDefaults(cmd *cobra.Command) {
	hide := func(f *pflag.Flag) {
		if m := flagEnv.FindStringSubmatch(f.Usage); m != nil && secretEnv.MatchString(m[1]) {
			f.DefValue = ""
		}
	}
	cmd.LocalFlags().VisitAll(hide)
	cmd.PersistentFlags().VisitAll(hide)
	for _, sub := range cmd.Commands() {
		hideSecretDefaults(sub)
	}
}

// maxKeyFile bounds a key file: a key is a line, not a document.
const maxKeyFile = 4 << 10

// apiKey resolves one upstream's key from the flag or environment value and
// the key file. Both at once is ambiguous and refused. The file holds the
// key alone (surrounding white space and a final newline are dropped); no
// error quotes its content.
func apiKey(key, file, keyEnv, fileEnv string) (string, error) {
	if file == "" {
		return key, nil
	}
	if key != "" {
		return "", usagef("give %s or %s, not both", keyEnv, fileEnv)
	}
	f, err := os.Open(file) //nolint:gosec // G304: the operator names the key file; reading it is the point
	if err != nil {
		return "", usagef("%s: %w", fileEnv, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return "", usagef("%s: read %s: %w", fileEnv, file, err)
	}
	if len(b) > maxKeyFile {
		return "", usagef("%s: %s is larger than %d bytes; it must hold the key alone", fileEnv, file, maxKeyFile)
	}
	k := strings.TrimSpace(string(b))
	if k == "" {
		return "", usagef("%s: %s is empty", fileEnv, file)
	}
	if strings.ContainsFunc(k, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return "", usagef("%s: %s must hold the key alone, on one line", fileEnv, file)
	}
	return k, nil
}

// errPlaintextKey refuses to send an API key over plain HTTP to another host.
var errPlaintextKey = errors.New("would send an API key in cleartext")

// keyTransport checks that key does not travel unencrypted: an http:// base
// URL is fine for a loopback host (the simulator, a local proxy) and
// refused for any other unless allow is set, in which case it is logged.
// Host names other than localhost are not resolved: a name is not proof of
// a loopback address.
func keyTransport(flag, keyEnv, baseURL, key string, allow bool, log *zap.Logger) error {
	if key == "" {
		return nil
	}
	u, err := url.Parse(baseURL)
	if err != nil || u.Scheme != "http" || isLoopback(u.Hostname()) {
		return nil
	}
	if !allow {
		return &UsageError{Err: fmt.Errorf("--%s %s %w (%s) to a host that is not loopback: use https://, or set %s=true (--%s) to send it anyway",
			flag, u.Redacted(), errPlaintextKey, keyEnv, envAllowPlaintextKeys, flagAllowPlaintextKeys)}
	}
	log.Warn("config.plaintext_api_key", zap.String("flag", flag), zap.String("host", u.Host),
		zap.String("why", keyEnv+" goes over plain HTTP because "+envAllowPlaintextKeys+" is set"))
	return nil
}

const (
	envAllowPlaintextKeys  = "PACER_ALLOW_PLAINTEXT_KEYS"
	flagAllowPlaintextKeys = "allow-plaintext-keys"
)

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
