package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacer-dev/pacer/internal/testenv"
)

var (
	makeOnce sync.Once
	madeBin  string
	makeErr  error
)

// madeBinary runs make build into a temporary directory, once.
func madeBinary(t *testing.T) string {
	t.Helper()
	makeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pacer-make-")
		if err != nil {
			makeErr = err
			return
		}
		cmd := exec.Command("make", "build", "BIN="+dir)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			makeErr = err
			madeBin = string(out)
			return
		}
		madeBin = filepath.Join(dir, "pacer")
	})
	require.NoError(t, makeErr, madeBin)
	return madeBin
}

// version runs bin's pacer version --json with env.
func version(t *testing.T, bin string, env ...string) map[string]any {
	t.Helper()
	cmd := exec.Command(bin, "version", "--json")
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
	out, err := cmd.Output()
	require.NoError(t, err)
	var v map[string]any
	require.NoError(t, json.Unmarshal(out, &v), string(out))
	return v
}

func git(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = root
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

// SPEC §3.5: make build bakes the commit, and pacer version prints it as
// the build ID the binary registers under, with its module versions.
func TestMakeBuildBakesTheCommit(t *testing.T) {
	t.Parallel()
	head, err := git(t, "rev-parse", "--short=12", "HEAD")
	require.NoError(t, err, "make build needs a checkout")
	_, dirtyErr := git(t, "diff", "--quiet", "HEAD")
	v := version(t, madeBinary(t))
	commit, _ := v["commit"].(string)
	if dirtyErr == nil {
		require.Equal(t, head, commit)
	} else {
		require.Regexp(t, "^"+head+`-dirty-[0-9a-f]{8}$`, commit, "a dirty tree's build says so, with a hash of its changes")
	}
	require.Equal(t, commit, v["buildId"])
	require.Equal(t, "pacer."+commit, v["deploymentVersion"])
	require.Equal(t, true, v["namesBuild"])
	deps, _ := json.Marshal(v["dependencies"])
	require.Contains(t, string(deps), `"path":"go.temporal.io/sdk"`)

	v = version(t, madeBinary(t), "PACER_BUILD_ID=release-7")
	require.Equal(t, "release-7", v["buildId"], "PACER_BUILD_ID overrides it")
	require.Equal(t, commit, v["commit"])
}

// SPEC §3.5: a versioned worker whose build ID names no build refuses to
// start, with one line and exit code 2, before it connects to anything
// (the addresses here answer nothing: a worker that tried would exit 1).
func TestWorkerRefusesABuildIDThatNamesNoBuild(t *testing.T) {
	t.Parallel()
	// A binary built with no commit at all: no baked one, no VCS stamp.
	bare := filepath.Join(t.TempDir(), "pacer")
	cmd := exec.Command("go", "build", "-buildvcs=false", "-o", bare, "./cmd/pacer")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	require.Equal(t, "", version(t, bare)["buildId"])

	made := madeBinary(t)
	for _, tt := range []struct {
		name string
		bin  string
		env  []string
	}{
		{"no commit", bare, nil},
		{"dev", made, []string{"PACER_BUILD_ID=dev"}},
		{"local", made, []string{"PACER_BUILD_ID=local"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(tt.bin, "worker", "--temporal-address", "127.0.0.1:1", "--database-url", "postgres://127.0.0.1:1/x")
			cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, tt.env...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, stderr.String())
			require.Equal(t, 2, exit.ExitCode(), stderr.String())
			require.Empty(t, stdout.String())
			require.Equal(t, 1, strings.Count(stderr.String(), "\n"), "one line: %q", stderr.String())
			require.Regexp(t, `^pacer: build ID "[a-z]*" names no build`, stderr.String())
		})
	}

	// Unversioned, the same worker goes on (and fails on the database).
	cmd = exec.Command(made, "worker", "--versioning=false", "--temporal-address", "127.0.0.1:1", "--database-url", "postgres://127.0.0.1:1/x")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "PACER_BUILD_ID=dev"}
	out, err = cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 1, exit.ExitCode(), string(out))
	require.NotContains(t, string(out), "names no build")
}

// The image bakes the commit the same way: the Dockerfile takes it as a
// build argument (.git is not in the build context), passes it to the
// symbol make build sets, and compose hands it over.
func TestImageBakesTheCommit(t *testing.T) {
	t.Parallel()
	symbol := regexp.MustCompile(`-X (\S+)=`)
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	m := symbol.FindSubmatch(mk)
	require.NotNil(t, m, "make build sets a symbol")
	df, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	require.NoError(t, err)
	build := regexp.MustCompile(`(?m)^FROM .* AS build$`).FindIndex(df)
	require.NotNil(t, build, "a build stage")
	stage := string(df[build[1]:])
	require.Regexp(t, `(?m)^ARG PACER_COMMIT\b`, stage, "the build stage declares the argument")
	require.Contains(t, stage, "-X "+string(m[1])+"=${PACER_COMMIT}", "the image's go build bakes it where make build does")

	c := loadCompose(t)
	for name, s := range c.Services {
		if !s.isPacer() {
			continue
		}
		b, ok := s.Build.(map[string]any)
		require.True(t, ok, "%s: build with arguments", name)
		args, _ := b["args"].(map[string]any)
		require.Equal(t, "${PACER_COMMIT:-}", args["PACER_COMMIT"], "%s: compose passes PACER_COMMIT", name)
		require.Empty(t, resolve(s.Environment["PACER_BUILD_ID"]), "%s: no placeholder build ID", name)
	}
}

// pacer dev runs one build at a time: it starts under the build ID "dev"
// that a worker refuses.
func TestDevRunsUnderAnyBuildID(t *testing.T) {
	t.Parallel()
	srv, err := testenv.StartTemporal(context.Background())
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	free := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer l.Close()
		return l.Addr().String()
	}
	cmd := exec.Command(madeBinary(t), "dev", "--temporal-address", srv.HostPort, "--state-dir", t.TempDir(),
		"--http", free(), "--admin", free(), "--sim-addr", free(), "--sim-chain-volume", "0", "--log-format", "console")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "PACER_BUILD_ID=dev", "DATABASE_URL=" + testenv.PostgresURL(t),
		"PACER_WORKFLOW_ID=" + t.Name(), "PACER_TASK_QUEUE=" + t.Name(), "PACER_DEPLOYMENT_NAME=" + t.Name()}
	var out testenv.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	require.Eventually(t, func() bool {
		select {
		case err := <-exited:
			exited <- err
			return true
		default:
		}
		return strings.Contains(out.String(), "worker.started") && strings.Contains(out.String(), t.Name()+".dev")
	}, 2*time.Minute, 100*time.Millisecond)
	require.NotContains(t, out.String(), "names no build", out.String())
	require.Contains(t, out.String(), t.Name()+".dev", "a worker of version dev started:\n%s", out.String())
}
