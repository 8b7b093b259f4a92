package evidence

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var figureRow = regexp.MustCompile("^\\| `([a-z0-9][a-z0-9_.-]*)` \\|")

// TestDocsQuoteOnlyCheckedFigures: every figure docs/benchmarks.md's table
// names is printed by a check in the code (its name a string literal in a
// Go file), so the table cannot list a figure no command produces.
func TestDocsQuoteOnlyCheckedFigures(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	f, err := os.Open(filepath.Join(root, "docs", "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var names []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## The figures"
			continue
		}
		if m := figureRow.FindStringSubmatch(line); in && m != nil {
			names = append(names, m[1])
		}
	}
	if len(names) == 0 {
		t.Fatal(`docs/benchmarks.md has no "## The figures" table`)
	}
	var source strings.Builder
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasPrefix(path, filepath.Join(root, "internal", "evidence")) {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			source.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	code := source.String()
	for _, n := range names {
		if !strings.Contains(code, `"`+n+`"`) {
			t.Errorf("docs/benchmarks.md lists figure %s, which no check prints (no %q in the code)", n, n)
		}
	}
	t.Logf("%d figures in the table, each printed by a check", len(names))
}
