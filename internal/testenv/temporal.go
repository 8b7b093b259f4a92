package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"
)

// TemporalAddressEnv names a running Temporal server for tests to use
// instead of starting their own dev server.
const TemporalAddressEnv = "PACER_TEST_TEMPORAL_ADDRESS"

// Temporal is a Temporal server for a test binary.
type Temporal struct {
	HostPort string
	server   *testsuite.DevServer
}

// Stop ends the dev server this binary started, if any.
func (t *Temporal) Stop() {
	if t.server != nil {
		_ = t.server.Stop()
	}
}

// StartTemporal finds or starts the Temporal server for a test binary (call
// it from TestMain): PACER_TEST_TEMPORAL_ADDRESS when set, else a fresh
// in-memory dev server from the repository's bin/temporal (make test
// installs it). It never downloads anything.
func StartTemporal(ctx context.Context) (*Temporal, error) {
	if addr := os.Getenv(TemporalAddressEnv); addr != "" {
		return &Temporal{HostPort: addr}, nil
	}
	bin, err := temporalBinary()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{
		ExistingPath:  bin,
		ClientOptions: &client.Options{Namespace: "default"},
		LogLevel:      "error",
	})
	if err != nil {
		return nil, fmt.Errorf("start temporal dev server from %s: %w", bin, err)
	}
	return &Temporal{HostPort: srv.FrontendHostPort(), server: srv}, nil
}

// StartPersistentTemporal starts a dev server from bin/temporal on hostPort
// that keeps its state in dbFile, so a test can stop it and start it again
// on the same address with the same workflows.
func StartPersistentTemporal(ctx context.Context, hostPort, dbFile string) (*Temporal, error) {
	bin, err := temporalBinary()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{
		ExistingPath:  bin,
		ClientOptions: &client.Options{HostPort: hostPort, Namespace: "default"},
		DBFilename:    dbFile,
		LogLevel:      "error",
	})
	if err != nil {
		return nil, fmt.Errorf("start temporal dev server on %s: %w", hostPort, err)
	}
	return &Temporal{HostPort: srv.FrontendHostPort(), server: srv}, nil
}

// TemporalBinary returns the path of the repository's bin/temporal.
func TemporalBinary() (string, error) { return temporalBinary() }

func temporalBinary() (string, error) {
	if p := os.Getenv("PACER_TEST_TEMPORAL_BIN"); p != "" {
		return p, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, "bin", "temporal")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("no Temporal CLI at %s: run `make test` (it installs it) or set %s to a running server", p, TemporalAddressEnv)
	}
	return p, nil
}

// moduleRoot walks up from the working directory (a package directory under
// go test) to the directory holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// PacerBinary builds cmd/pacer once per test binary and returns its path,
// for tests that must run, kill and restart real worker processes. Under
// -short (make test-short, the developer's loop) such a test is skipped, by
// name in the -v output: these are the minutes of make test, which runs them.
func PacerBinary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: runs the pacer binary on the real stack (make test runs it)")
	}
	buildOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "pacer-bin-")
		if err != nil {
			buildErr = err
			return
		}
		buildPath = filepath.Join(dir, "pacer")
		// A build ID that names a build: a versioned worker refuses
		// to start without one (the toolchain may stamp no revision:
		// GOFLAGS=-buildvcs=false).
		//nolint:gosec // G204: a test builds pacer from its own source
		cmd := exec.Command("go", "build", "-ldflags", "-X github.com/pacer-dev/pacer/worker.commit=testbuild", "-o", buildPath, "./cmd/pacer")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/pacer: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatalf("%v", buildErr)
	}
	return buildPath
}
