package transpile_test

import (
	"context"
	"strings"
	"testing"

	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/sandbox"
	"github.com/codemode-mcp/codemode/internal/transpile"
)

// The module is whitespace-minified (one line); errors the engine reports
// in it, at run time or when it compiles the module, still point at the
// agent's line and column.
func TestEnginePositionsMapToSource(t *testing.T) {
	for _, c := range []struct {
		name, src string
		opts      *transpile.Options
		code      diag.Code
		path      string
	}{
		{"type error in a function",
			"const a = 1;\nconst b: number = 2;\n\nfunction f(x: number) {\n  if (x > 1) {\n    null.boom;\n  }\n}\nf(a + b);\n",
			nil, diag.UncaughtException, "script.ts:6:5"},
		{"throw",
			"type T = { a: number };\n\n\nconst t: T = { a: 1 };\nthrow new Error('x');\n",
			nil, diag.UncaughtException, "script.ts:5:11"},
		{"function body",
			"const x = 1;\nreturn x.y.z;",
			transpile.Body(), diag.UncaughtException, "script.ts:2:10"},
		{"function to call",
			"async (c) => {\n  const q = 1;\n  return q.a.b;\n}",
			transpile.Call("", "1"), diag.UncaughtException, "script.ts:3:12"},
		{"syntax error found by the engine",
			"const a = 1;\nconst b = 2;\n  const r = /a{2,1}/;\n",
			nil, diag.SyntaxError, "script.ts:3:13"},
	} {
		out, diags := transpile.Module(c.src, c.opts)
		if len(diags) > 0 {
			t.Errorf("%s: %v", c.name, diags)
			continue
		}
		if strings.Count(out.Code, "\n") > 1 {
			t.Errorf("%s: code is not minified:\n%s", c.name, out.Code)
		}
		res := sandbox.Run(context.Background(), out.Code, &sandbox.Options{Position: out.Position})
		if len(res.Diagnostics) == 0 {
			t.Errorf("%s: no diagnostics", c.name)
			continue
		}
		if d := res.Diagnostics[0]; d.Code != c.code || d.Path != c.path {
			t.Errorf("%s: got %s at %s (%s), want %s at %s", c.name, d.Code, d.Path, d.Message, c.code, c.path)
		}
	}
}

// A script transpiled with minified local names (here for its 200 nested
// arrow functions) runs, and its functions and classes keep their names.
func TestMinifiedNamesRun(t *testing.T) {
	src := "function outer() {}\nclass Thing {}\nconst f = () => 1;\nconst g = " +
		strings.Repeat("x=>", 200) + "x;\n" +
		"globalThis.__codemode_result__ = [outer.name, Thing.name, f.name, typeof g];\n"
	out, diags := transpile.Module(src, nil)
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	if strings.Contains(out.Code, "function outer") {
		t.Fatalf("names are not minified: %.200s", out.Code)
	}
	res := sandbox.Run(context.Background(), out.Code, &sandbox.Options{Position: out.Position})
	if len(res.Diagnostics) > 0 || string(res.Result) != `["outer","Thing","f","function"]` {
		t.Fatalf("result %s, diagnostics %+v", res.Result, res.Diagnostics)
	}
}
