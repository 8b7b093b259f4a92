package evidence

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// sleepExceptions are the default tests (no build tag: make test runs them)
// allowed to call time.Sleep, by file and enclosing function, each with why
// the sleep is not synchronization. Anything else that sleeps fails
// TestNoSleepAsSynchronizationInDefaultTests: wait on a condition instead
// (require.Eventually, a channel, a counter a hook bumps).
var sleepExceptions = map[string]string{
	"activities/heartbeat_test.go:TestProgressFromAnEndedBatchKeepsTheRunGoing": "" +
		"the activity under test does 6 s of work in 100 ms batches: the SDK throttles heartbeats by wall " +
		"time (0.8 × the heartbeat timeout), so the work's duration is the input, not a wait",
	"activities/sweep_test.go:TestSweepVisitsCutShortResume": "" +
		"sleeps until the run's NextDueAt, as the workflow's timer would, against a budget of 1 s wall-clock " +
		"windows: the wait is the schedule under test",
	"worker/fastpath_test.go:TestFastPathStormDoesNotStarveTheSweep": "" +
		"paces a storm of requests (20 clients, one each 3 s): the load's rate is the input",
	"internal/api/readbounds_test.go:TestOneClientsReadFloodLeavesAnotherAnswered": "" +
		"paces a flood and a reader at fixed rates: the rates are the input",
	"worker/push_test.go:measurePush": "" +
		"polls in a loop whose condition is the wait (the rollback seen, the ledgers equal the world's) " +
		"while the simulated chain's clock runs",
	"workflows/keepstate_test.go:TestStoppingRejectsChanges": "" +
		"the fake activity takes 50 ms of real time so that the test environment delivers the stop " +
		"update while the activity runs (it skips virtual time only when nothing runs)",
}

// TestNoSleepAsSynchronizationInDefaultTests is the grep of issue 40: every
// time.Sleep in a test file without a build tag, by enclosing function,
// must be a named exception above; an exception that no longer sleeps
// must go.
func TestNoSleepAsSynchronizationInDefaultTests(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	found := map[string][]string{} // file:func → positions
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		if buildTagged(f) {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Sleep" {
					if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "time" {
						key := filepath.ToSlash(rel) + ":" + fn.Name.Name
						found[key] = append(found[key], fset.Position(call.Pos()).String())
					}
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(found))
	for k := range found {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if _, ok := sleepExceptions[k]; !ok {
			t.Errorf("%s sleeps in a default test (%s): wait on a condition, or name it in sleepExceptions with why it is not synchronization", k, strings.Join(found[k], ", "))
		}
	}
	for k := range sleepExceptions {
		if _, ok := found[k]; !ok {
			t.Errorf("sleepExceptions names %s, which no longer sleeps: drop it", k)
		}
	}
	t.Logf("%d default-test functions sleep, each a named exception", len(found))
}

func buildTagged(f *ast.File) bool {
	for _, g := range f.Comments {
		if g.Pos() >= f.Package {
			break
		}
		for _, c := range g.List {
			if strings.HasPrefix(c.Text, "//go:build") {
				return true
			}
		}
	}
	return false
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test")
		}
		dir = parent
	}
}
