package redact

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/codemode-mcp/codemode/internal/testutil"
)

// clipOK lists the files that may call diag.Cut, the cut that knows nothing
// of secrets, and why: the text they clip never reaches the model.
var clipOK = map[string]string{
	"internal/redact/redact.go":     "the redactor itself, after redacting",
	"internal/config/parse.go":      "configuration errors, for the operator",
	"internal/serve/stdio_guard.go": "log lines about a client's input, on stderr",
}

// Text bound for the model is clipped by the Redactor, which redacts before
// it cuts; a clip anywhere else would cut a secret in two first, and the
// half left would escape redaction (issue 18: an isError text cut at 2,000
// bytes, a stderr tail at 1,024, a 401 body at 512). This test keeps the
// order structural: a new call of diag.Cut outside clipOK fails here.
func TestOnlyTheRedactorClips(t *testing.T) {
	root := testutil.Root()
	fset := token.NewFileSet()
	for _, dir := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			name := ""
			for _, imp := range f.Imports {
				if p, _ := strconv.Unquote(imp.Path.Value); p == "github.com/codemode-mcp/codemode/internal/diag" {
					name = "diag"
					if imp.Name != nil {
						name = imp.Name.Name
					}
				}
			}
			if name == "" {
				return nil
			}
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Cut" {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == name {
					if _, ok := clipOK[rel]; !ok {
						t.Errorf("%s: diag.Cut clips without redacting: clip text bound for the model with redact.Redactor's Clip, Cut or Tail (a nil *Redactor clips too), or add the file to clipOK saying why its text never reaches the model", fset.Position(sel.Pos()))
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
