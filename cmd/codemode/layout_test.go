package main

import (
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/codemode-mcp/codemode/"

// floors is the house of docs/ARCHITECTURE.md ("Layers"): a package imports
// only packages on floors below its own, so no import runs back up and
// there are no cycles. A new package gets a floor here (and a line in the
// document's table) before it builds: TestLayout fails until it has one.
var floors = map[string]int{
	"internal/admit": 0, "internal/buildinfo": 0, "internal/diag": 0, "internal/engine": 0,
	"internal/naming": 0, "internal/outer": 0, "internal/preview": 0, "internal/reexec": 0,
	"internal/schema": 0, "internal/store": 0,

	"internal/config": 1, "internal/scripts": 1, "internal/transpile": 1, "internal/typegen": 1,

	"internal/normalize": 2, "internal/redact": 2, "internal/testutil": 2,

	"internal/progress": 3, "internal/sandbox": 3, "internal/upstream": 3,

	"internal/builtin": 4, "internal/catalog": 4,

	"internal/builtin/state": 5, "internal/builtin/thoughtbox": 5, "internal/run": 5,

	"internal/builtin/builtintest": 6, "internal/metrics": 6, "internal/replay": 6,
	"internal/serve": 6, "internal/telemetry": 6, "internal/ui": 6,

	"internal/history": 7, "internal/proxy": 7,

	"internal/cli": 8,

	"cmd/codemode": 9, "cmd/codemode-bench": 9,
}

// testOnly are packages that only _test.go files may import.
var testOnly = []string{"internal/testutil", "internal/builtin/builtintest"}

// The layout is a house: every package has a floor and imports only from
// the floors below it, helpers for tests are imported by tests only, and
// every package opens with a doc comment that says what it is and where to
// start.
func TestLayout(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, top := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(dir string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			if name := d.Name(); name == "testdata" || strings.HasPrefix(name, ".") || name == "node_modules" {
				return filepath.SkipDir
			}
			pkg, err := build.ImportDir(dir, 0)
			if _, none := err.(*build.NoGoError); none {
				return nil
			}
			if err != nil {
				t.Errorf("%s: %v", dir, err)
				return nil
			}
			rel, _ := filepath.Rel(root, dir)
			rel = filepath.ToSlash(rel)
			seen[rel] = true
			floor, ok := floors[rel]
			if !ok {
				t.Errorf("%s has no floor: give it one in floors (cmd/codemode/layout_test.go) and in docs/ARCHITECTURE.md's Layers, one above the highest package it imports", rel)
				return nil
			}
			for _, imp := range pkg.Imports {
				dep, ok := strings.CutPrefix(imp, module)
				if !ok {
					continue
				}
				if slices.Contains(testOnly, dep) && !slices.Contains(testOnly, rel) {
					t.Errorf("%s imports %s, which only tests may import", rel, dep)
				}
				if f, known := floors[dep]; known && f >= floor {
					t.Errorf("%s (floor %d) imports %s (floor %d): a package imports only from the floors below it; move the shared part down, or the importer up", rel, floor, dep, f)
				}
			}
			checkDoc(t, dir, rel, pkg)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for p := range floors {
		if !seen[p] {
			t.Errorf("floors lists %s, which is not a package any more", p)
		}
	}
}

// checkDoc asserts the package's doc comment: present, and saying where to
// start (a command says what it is; its usage is where to start).
func checkDoc(t *testing.T, dir, rel string, pkg *build.Package) {
	t.Helper()
	fset := token.NewFileSet()
	var text string
	for _, name := range pkg.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			return
		}
		if f.Doc != nil {
			text += f.Doc.Text()
		}
	}
	switch {
	case text == "":
		t.Errorf("%s has no package doc comment: open one file with // Package %s ... saying what it is and where to start", rel, pkg.Name)
	case pkg.Name == "main":
		if !strings.HasPrefix(text, "Command ") {
			t.Errorf("%s's doc comment does not start with \"Command \": %q", rel, firstLine(text))
		}
	case !strings.HasPrefix(text, "Package "+pkg.Name+" "):
		t.Errorf("%s's doc comment does not start with \"Package %s \": %q", rel, pkg.Name, firstLine(text))
	case !slices.Contains(testOnly, rel) && !strings.Contains(strings.ToLower(text), "start"):
		t.Errorf("%s's doc comment does not say where to start (\"Start with ...\"): %q", rel, firstLine(text))
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
