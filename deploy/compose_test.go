// Package deploy_test checks docker-compose.yml, the Dockerfile and the
// Prometheus configuration without a Docker engine: that they parse, that
// every service, image, volume and scrape target they name exists, and that
// what they hand pacer (environment, command lines) is what pacer reads. A
// typo in a variable name or a flag fails here rather than in production.
package deploy_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/pacer-dev/pacer/internal/cli"
	"github.com/pacer-dev/pacer/worker"
)

// root is the repository root, seen from this package's directory.
const root = ".."

type composeFile struct {
	Name     string             `yaml:"name"`
	Services map[string]service `yaml:"services"`
	Volumes  map[string]any     `yaml:"volumes"`
}

type service struct {
	Image           string            `yaml:"image"`
	Build           any               `yaml:"build"`
	Command         []string          `yaml:"command"`
	Entrypoint      []string          `yaml:"entrypoint"`
	Environment     map[string]string `yaml:"environment"`
	DependsOn       yaml.Node         `yaml:"depends_on"`
	Expose          []string          `yaml:"expose"`
	Ports           []string          `yaml:"ports"`
	Volumes         []string          `yaml:"volumes"`
	Profiles        []string          `yaml:"profiles"`
	StopGracePeriod string            `yaml:"stop_grace_period"`
	Healthcheck     map[string]any    `yaml:"healthcheck"`
}

// isPacer tells pacer's own services: the ones built from this repository.
func (s service) isPacer() bool { return s.Build != nil }

// dependsOn returns the services s waits for and the condition of each;
// compose takes a list (condition service_started) or a map.
func (s service) dependsOn(t *testing.T) map[string]string {
	t.Helper()
	deps := map[string]string{}
	switch s.DependsOn.Kind {
	case 0:
	case yaml.SequenceNode:
		var names []string
		require.NoError(t, s.DependsOn.Decode(&names))
		for _, n := range names {
			deps[n] = "service_started"
		}
	case yaml.MappingNode:
		var m map[string]struct {
			Condition string `yaml:"condition"`
		}
		require.NoError(t, s.DependsOn.Decode(&m))
		for n, d := range m {
			deps[n] = d.Condition
			if d.Condition == "" {
				deps[n] = "service_started"
			}
		}
	default:
		t.Fatalf("depends_on is neither a list nor a map")
	}
	return deps
}

// containerPorts are the ports other services may reach s on.
func (s service) containerPorts() []string {
	ports := slices.Clone(s.Expose)
	for _, p := range s.Ports {
		parts := strings.Split(p, ":")
		ports = append(ports, strings.Split(parts[len(parts)-1], "/")[0])
	}
	return ports
}

var interpolation = regexp.MustCompile(`\$\{([A-Z0-9_]+)(:?-([^}]*))?\}`)

// resolve interpolates ${VAR:-default} the way compose does with VAR unset.
func resolve(s string) string {
	return interpolation.ReplaceAllStringFunc(s, func(m string) string {
		return interpolation.FindStringSubmatch(m)[3]
	})
}

func loadCompose(t *testing.T) composeFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	require.NoError(t, err)
	var c composeFile
	require.NoError(t, yaml.Unmarshal(b, &c), "docker-compose.yml must parse")
	require.NotEmpty(t, c.Services)
	return c
}

func TestComposeNamesOnlyWhatExists(t *testing.T) {
	t.Parallel()
	c := loadCompose(t)
	for _, name := range []string{"postgres", "temporal", "temporal-ui", "pacer-worker-1", "pacer-worker-2", "pacer-api", "prometheus"} {
		require.Contains(t, c.Services, name, "the production shape has %s", name)
	}
	for name, s := range c.Services {
		require.NotEmpty(t, s.Image, "%s: an image", name)
		if !s.isPacer() {
			repo, tag, ok := strings.Cut(s.Image, ":")
			require.True(t, ok && tag != "" && tag != "latest", "%s: image %s is pinned to a version", name, s.Image)
			require.NotEmpty(t, repo)
		}
		for dep, cond := range s.dependsOn(t) {
			require.Contains(t, c.Services, dep, "%s depends on a service that exists", name)
			require.NotEqual(t, name, dep)
			require.Contains(t, []string{"service_started", "service_healthy", "service_completed_successfully"}, cond, "%s → %s", name, dep)
			if cond == "service_healthy" {
				require.NotEmpty(t, c.Services[dep].Healthcheck, "%s waits for %s to be healthy: it needs a healthcheck", name, dep)
			}
			require.Empty(t, c.Services[dep].Profiles, "%s depends on %s, which runs only in a profile", name, dep)
		}
		for _, v := range s.Volumes {
			source, _, ok := strings.Cut(v, ":")
			require.True(t, ok, "%s: volume %q", name, v)
			if strings.HasPrefix(source, ".") {
				_, err := os.Stat(filepath.Join(root, source))
				require.NoError(t, err, "%s mounts %s from the repository", name, source)
			} else {
				require.Contains(t, c.Volumes, source, "%s: named volume %s is declared", name, source)
			}
		}
	}
}

// pacerEnvNames are the environment variables pacer's commands read: the
// first argument of every env lookup in internal/cli.
func pacerEnvNames(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(root, "internal", "cli", "*.go"))
	require.NoError(t, err)
	lookups := []string{"env", "envInt", "envDuration", "Getenv", "LookupEnv"}
	var names []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		require.NoError(t, err)
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			var fn string
			switch f := call.Fun.(type) {
			case *ast.Ident:
				fn = f.Name
			case *ast.SelectorExpr:
				fn = f.Sel.Name
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !slices.Contains(lookups, fn) || !ok || lit.Kind != token.STRING {
				return true
			}
			name, err := strconv.Unquote(lit.Value)
			require.NoError(t, err)
			names = append(names, name)
			return true
		})
	}
	// The lookup is found, not guessed: these must be among them.
	for _, known := range []string{"DATABASE_URL", "PACER_HTTP_ADDR", "PACER_METRICS_ADDR", "TENERO_API_KEY", "TEMPORAL_ADDRESS"} {
		require.Contains(t, names, known)
	}
	return names
}

// sdkEnvNames are the variables the Temporal SDK's environment
// configuration reads (names ending in _ are prefixes), taken from the
// source of the version in go.mod.
func sdkEnvNames(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "go.temporal.io/sdk/contrib/envconfig")
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err, "go list the envconfig module")
	dir := strings.TrimSpace(string(out))
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
		require.NoError(t, err)
		ast.Inspect(file, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && regexp.MustCompile(`^TEMPORAL_[A-Z_]+$`).MatchString(s) {
					names = append(names, s)
				}
			}
			return true
		})
	}
	for _, known := range []string{"TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_API_KEY", "TEMPORAL_TLS", "TEMPORAL_PROFILE"} {
		require.Contains(t, names, known)
	}
	return names
}

// readByPacer reports whether pacer (or the SDK inside it) reads name.
func readByPacer(name string, pacerNames, sdkNames []string) bool {
	if slices.Contains(pacerNames, name) || slices.Contains(sdkNames, name) {
		return true
	}
	for _, prefix := range sdkNames {
		if strings.HasSuffix(prefix, "_") && strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

func TestComposeGivesPacerWhatPacerReads(t *testing.T) {
	t.Parallel()
	c := loadCompose(t)
	pacerNames, sdkNames := pacerEnvNames(t), sdkEnvNames(t)
	var kinds []string
	for name, s := range c.Services {
		if !s.isPacer() {
			continue
		}
		for key, value := range s.Environment {
			require.True(t, readByPacer(key, pacerNames, sdkNames), "%s sets %s, which pacer does not read", name, key)
			if strings.HasSuffix(key, "_API_KEY") || strings.HasSuffix(key, "_PASSWORD") {
				require.Regexp(t, `^\$\{[A-Z0-9_]+(:-)?\}$`, value, "%s: %s comes from the environment, never from the file", name, key)
			}
		}
		env := func(key string) string { return resolve(s.Environment[key]) }

		// Temporal and Postgres are services of this file, on their ports.
		host, port, err := net.SplitHostPort(env("TEMPORAL_ADDRESS"))
		require.NoError(t, err, "%s: TEMPORAL_ADDRESS", name)
		require.Contains(t, c.Services, host, "%s: TEMPORAL_ADDRESS names a service", name)
		require.Contains(t, c.Services[host].containerPorts(), port)
		require.Contains(t, s.dependsOn(t), "postgres", "%s waits for Postgres", name)
		db, err := url.Parse(env("DATABASE_URL"))
		require.NoError(t, err, "%s: DATABASE_URL", name)
		require.Contains(t, c.Services, db.Hostname(), "%s: DATABASE_URL names a service", name)
		pg := c.Services[db.Hostname()]
		require.Contains(t, pg.containerPorts(), db.Port())
		require.Equal(t, "/"+resolve(pg.Environment["POSTGRES_DB"]), db.Path, "%s: the database compose creates", name)
		require.Equal(t, resolve(pg.Environment["POSTGRES_USER"]), db.User.Username())
		password, _ := db.User.Password()
		require.Equal(t, resolve(pg.Environment["POSTGRES_PASSWORD"]), password)

		// The command line parses against pacer's real commands and flags.
		require.NotEmpty(t, s.Command, "%s: a command", name)
		root := cli.Command()
		sub, args, err := root.Find(s.Command)
		require.NoError(t, err, "%s: command %v", name, s.Command)
		require.NotEqual(t, root, sub, "%s: a subcommand", name)
		require.NoError(t, sub.ParseFlags(args), "%s: flags of %v", name, s.Command)
		require.Empty(t, sub.Flags().Args(), "%s: no stray arguments in %v", name, s.Command)
		kinds = append(kinds, sub.Name())

		// Whatever serves /metrics listens beyond loopback, on a port the
		// service exposes.
		switch sub.Name() {
		case "worker":
			require.Equal(t, "", sub.Flag("http").Value.String(), "%s: workers run without the API", name)
			requireListensOn(t, name, s, env("PACER_METRICS_ADDR"))
			require.NotEmpty(t, s.StopGracePeriod, "%s: stop_grace_period", name)
			grace, err := time.ParseDuration(s.StopGracePeriod)
			require.NoError(t, err)
			require.Greater(t, grace, worker.StopTimeout, "%s: SIGKILL only after the worker's stop timeout", name)
		case "serve":
			requireListensOn(t, name, s, env("PACER_HTTP_ADDR"))
		}
	}
	require.Equal(t, 2, strings.Count(strings.Join(kinds, " "), "worker"), "two workers")
	require.Contains(t, kinds, "serve")
}

func requireListensOn(t *testing.T, name string, s service, addr string) {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err, "%s listens on %q", name, addr)
	require.Contains(t, []string{"", "0.0.0.0", "::"}, host, "%s: reachable from other containers", name)
	require.Contains(t, s.containerPorts(), port, "%s: exposes its port", name)
}

// listenPort is the port a service's /metrics answers on.
func listenPort(t *testing.T, s service) string {
	t.Helper()
	for _, key := range []string{"PACER_METRICS_ADDR", "PACER_HTTP_ADDR"} {
		if addr := resolve(s.Environment[key]); addr != "" {
			_, port, err := net.SplitHostPort(addr)
			require.NoError(t, err)
			return port
		}
	}
	return ""
}

type promConfig struct {
	RuleFiles     []string `yaml:"rule_files"`
	ScrapeConfigs []struct {
		JobName       string `yaml:"job_name"`
		MetricsPath   string `yaml:"metrics_path"`
		StaticConfigs []struct {
			Targets []string `yaml:"targets"`
		} `yaml:"static_configs"`
	} `yaml:"scrape_configs"`
}

func TestPrometheusScrapesWhatComposeRuns(t *testing.T) {
	t.Parallel()
	c := loadCompose(t)
	b, err := os.ReadFile(filepath.Join(root, "deploy", "prometheus.yml"))
	require.NoError(t, err)
	var p promConfig
	require.NoError(t, yaml.Unmarshal(b, &p))

	scraped := map[string]bool{}
	var jobs []string
	for _, sc := range p.ScrapeConfigs {
		jobs = append(jobs, sc.JobName)
		for _, st := range sc.StaticConfigs {
			for _, target := range st.Targets {
				host, port, err := net.SplitHostPort(target)
				require.NoError(t, err, "job %s: target %q", sc.JobName, target)
				s, ok := c.Services[host]
				require.True(t, ok, "job %s scrapes %s, a service of docker-compose.yml", sc.JobName, host)
				require.Contains(t, s.containerPorts(), port, "job %s: %s exposes %s", sc.JobName, host, port)
				if s.isPacer() {
					require.Equal(t, listenPort(t, s), port, "job %s: %s serves /metrics on that port", sc.JobName, host)
				}
				scraped[host] = true
			}
		}
	}
	for name, s := range c.Services {
		if s.isPacer() && len(s.Profiles) == 0 {
			require.True(t, scraped[name], "Prometheus scrapes %s", name)
		}
	}

	// Rule files are mounted into the Prometheus container, and their
	// alerts use metric names pacer has and jobs the config defines.
	names := pacerMetricNames(t)
	for _, rf := range p.RuleFiles {
		var source string
		for _, v := range c.Services["prometheus"].Volumes {
			if parts := strings.Split(v, ":"); len(parts) >= 2 && parts[1] == rf {
				source = parts[0]
			}
		}
		require.NotEmpty(t, source, "rule file %s is mounted into prometheus", rf)
		b, err := os.ReadFile(filepath.Join(root, source))
		require.NoError(t, err)
		var rules struct {
			Groups []struct {
				Rules []struct {
					Alert string `yaml:"alert"`
					Expr  string `yaml:"expr"`
				} `yaml:"rules"`
			} `yaml:"groups"`
		}
		require.NoError(t, yaml.Unmarshal(b, &rules))
		require.NotEmpty(t, rules.Groups)
		for _, g := range rules.Groups {
			for _, r := range g.Rules {
				for _, m := range regexp.MustCompile(`pacer_[a-z_]+`).FindAllString(r.Expr, -1) {
					require.Contains(t, names, m, "alert %s: metric %s", r.Alert, m)
				}
				for _, m := range regexp.MustCompile(`job="([^"]+)"`).FindAllStringSubmatch(r.Expr, -1) {
					require.Contains(t, jobs, m[1], "alert %s: job %s", r.Alert, m[1])
				}
			}
		}
	}
}

// pacerMetricNames are the metric names internal/metrics defines, with the
// series names a histogram adds.
func pacerMetricNames(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "internal", "metrics", "*.go"))
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range regexp.MustCompile(`(?:Name:\s*|NewDesc\()"(pacer_[a-z_]+)"`).FindAllSubmatch(b, -1) {
			n := string(m[1])
			names = append(names, n, n+"_bucket", n+"_sum", n+"_count")
		}
	}
	require.Contains(t, names, "pacer_price_oldest_age_seconds")
	return names
}

func TestDockerfileBuildsASmallNonRootImage(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	require.NoError(t, err)
	lines := strings.Split(string(b), "\n")
	var froms []int
	for i, l := range lines {
		if strings.HasPrefix(strings.ToUpper(strings.TrimSpace(l)), "FROM ") {
			froms = append(froms, i)
		}
	}
	require.GreaterOrEqual(t, len(froms), 2, "multi-stage")
	final := lines[froms[len(froms)-1]:]
	finalText := strings.Join(final, "\n")
	require.Contains(t, string(b), "CGO_ENABLED=0", "a static binary")
	require.Regexp(t, `(?m)^USER\s+(\S+)`, finalText)
	user := regexp.MustCompile(`(?m)^USER\s+(\S+)`).FindStringSubmatch(finalText)[1]
	require.NotContains(t, []string{"root", "0", "0:0", "root:root"}, user, "the final stage runs as non-root")
	require.Regexp(t, `(?m)^ENTRYPOINT \[".*pacer"\]`, finalText)

	pacerNames, sdkNames := pacerEnvNames(t), sdkEnvNames(t)
	for _, m := range regexp.MustCompile(`(?m)(?:^ENV\s+|\\\n\s+)([A-Z][A-Z0-9_]*)=`).FindAllStringSubmatch(finalText, -1) {
		require.True(t, readByPacer(m[1], pacerNames, sdkNames), "the Dockerfile sets %s, which pacer does not read", m[1])
	}

	ignore, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	require.NoError(t, err)
	for _, must := range []string{".git", "bin/"} {
		require.Contains(t, strings.Fields(string(ignore)), must, ".dockerignore keeps %s out of the build context", must)
	}
}
