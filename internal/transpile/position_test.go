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
		out, diags := transpile.Module(context.Background(), c.src, c.opts)
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

// A script of 200 nested arrow functions that shadow each other's
// parameter (a case esbuild's renamer is slow on) compiles, keeps the
// agent's names and runs.
func TestNestedArrowsRun(t *testing.T) {
	src := "function outer() {}\nclass Thing {}\nconst f = () => 1;\nconst g = " +
		strings.Repeat("x=>", 200) + "x;\n" +
		"globalThis.__codemode_result__ = [outer.name, Thing.name, f.name, typeof g];\n"
	out, diags := transpile.Module(context.Background(), src, nil)
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	if !strings.Contains(out.Code, "function outer") {
		t.Fatalf("names are not kept: %.200s", out.Code)
	}
	res := sandbox.Run(context.Background(), out.Code, &sandbox.Options{Position: out.Position})
	if len(res.Diagnostics) > 0 || string(res.Result) != `["outer","Thing","f","function"]` {
		t.Fatalf("result %s, diagnostics %+v", res.Result, res.Diagnostics)
	}
}

// The engine counts columns in code points, the source map in UTF-16 code
// units: after an emoji on the line (one code point, two units), an error
// the engine reports, at run time or when it compiles the module, is still
// at the agent's column, counted in UTF-16 code units like syntax errors
// found by Module. Each script is checked against the same script with
// ASCII of the same UTF-16 length ("ab" for 😀, "e" for é).
func TestEngineColumnsCountUTF16(t *testing.T) {
	for _, c := range []struct {
		name, src string
		opts      *transpile.Options
		path      string
	}{
		{"runtime", `const s = "😀😀😀😀😀😀"; null.x;`, nil, "script.ts:1:27"},
		{"runtime, é", `const s = "éééééé"; null.x;`, nil, "script.ts:1:21"},
		{"runtime, line 2", "const a = 1;\nconst s = `😀😀😀😀😀😀${a}`; null.x;", nil, "script.ts:2:31"},
		{"runtime, body", `const s = "😀😀😀😀😀😀"; return null.x;`, transpile.Body(), ""},
		{"runtime, call", `async () => { const s = "😀😀😀😀😀😀"; return null.x; }`, transpile.Call("", ""), ""},
		{"engine syntax error", `const s = "😀😀😀😀😀😀"; const r = /a{2,1}/;`, nil, ""},
	} {
		ascii := strings.NewReplacer("é", "e", "😀", "ab").Replace(c.src)
		got, want := run(t, c.src, c.opts), run(t, ascii, c.opts)
		if got == "" || got != want || c.path != "" && got != c.path {
			t.Errorf("%s: path %q, want %q (as for %q)", c.name, got, want, ascii)
		}
	}
}

// run transpiles and runs src, and returns the path of its first
// diagnostic.
func run(t *testing.T, src string, opts *transpile.Options) string {
	t.Helper()
	out, diags := transpile.Module(context.Background(), src, opts)
	if len(diags) > 0 {
		t.Errorf("%q: %v", src, diags)
		return ""
	}
	res := sandbox.Run(context.Background(), out.Code, &sandbox.Options{Position: out.Position})
	if len(res.Diagnostics) == 0 {
		t.Errorf("%q: no diagnostics", src)
		return ""
	}
	return res.Diagnostics[0].Path
}
