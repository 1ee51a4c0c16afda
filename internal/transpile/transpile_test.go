package transpile

import (
	"strconv"
	"strings"
	"testing"

	"github.com/codemode-mcp/codemode/internal/diag"
)

func TestTypeScriptIsStripped(t *testing.T) {
	out, diags := Module("interface P { a: number }\nconst p: P = { a: 1 };\nglobalThis.__codemode_result__ = p.a as number;\n", nil)
	if len(diags) > 0 {
		t.Fatalf("diags: %v", diags)
	}
	if out.Lang != "ts" || strings.Contains(out.Code, "interface") || strings.Contains(out.Code, ": P") {
		t.Fatalf("not stripped (%s):\n%s", out.Lang, out.Code)
	}
}

func TestJavaScriptFallback(t *testing.T) {
	// `a < b > c` parses differently as TS (generic call) only in rare cases;
	// this one is plain JS that TS also accepts.
	out, diags := Module("const x = 1;\nglobalThis.__codemode_result__ = x;", nil)
	if len(diags) > 0 || out == nil {
		t.Fatalf("diags: %v", diags)
	}
}

func TestSyntaxErrorPosition(t *testing.T) {
	_, diags := Module("const a = 1;\nconst b: number = ;\n", nil)
	if len(diags) == 0 {
		t.Fatal("no diagnostics")
	}
	d := diags[0]
	if d.Code != diag.SyntaxError || !strings.HasPrefix(d.Path, "script.ts:2:") {
		t.Fatalf("got %+v", d)
	}
}

func TestTopLevelReturnIsAnError(t *testing.T) {
	// esbuild accepts a top-level return; a module must not.
	_, diags := Module("const a = 1;\nreturn 42", nil)
	if len(diags) == 0 || !strings.Contains(diags[0].Hint, "__codemode_result__") || diags[0].Path != "script.ts:2:1" {
		t.Fatalf("got %+v", diags)
	}
}

func TestPositionMapsToSource(t *testing.T) {
	src := "type T = { a: number };\n\n\nconst t: T = { a: 1 };\nthrow new Error('x');\n"
	out, diags := Module(src, nil)
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	// Find the line of `throw` in the output and map it back.
	lines := strings.Split(out.Code, "\n")
	for i, l := range lines {
		if c := strings.Index(l, "throw"); c >= 0 {
			if got := out.Position(i+1, c+1); got != "script.ts:5:1" {
				t.Fatalf("Position = %q, want script.ts:5:1\n%s", got, out.Code)
			}
			return
		}
	}
	t.Fatal("no throw in output")
}

func TestWrap(t *testing.T) {
	out, diags := Module("const x = 2;\nreturn x * 21;", Body())
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	if !strings.Contains(out.Code, "__codemode_result__") {
		t.Fatal(out.Code)
	}
	_, diags = Module("const x = ;", Body())
	if len(diags) == 0 || diags[0].Path != "script.ts:1:11" {
		t.Fatalf("wrapped error position: %+v", diags)
	}
}

func TestCall(t *testing.T) {
	out, diags := Module("async (catalog) => catalog.servers.length", Call(`import { catalog } from "@x";`, "catalog"))
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	if !strings.Contains(out.Code, "(catalog)") || !strings.Contains(out.Code, "__codemode_result__") {
		t.Fatal(out.Code)
	}
}

func TestImportInsideFunctionForm(t *testing.T) {
	_, diags := Module("import { get_sum } from \"@codemode/servers/everything\";\nreturn await get_sum({ a: 1, b: 2 });", Body())
	if len(diags) == 0 || !strings.Contains(diags[0].Hint, "await import(") || strings.Contains(diags[0].Message, "__codemode_result__") {
		t.Fatalf("got %+v", diags)
	}
}

func TestUnusedImportIsKept(t *testing.T) {
	out, diags := Module(`import { nope } from "@codemode/servers/github";
import type { SearchResults } from "@codemode/discovery";
const x: SearchResults | null = null;`, nil)
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	if !strings.Contains(out.Code, `import"@codemode/servers/github"`) || strings.Contains(out.Code, "@codemode/discovery") {
		t.Fatalf("imports:\n%s", out.Code)
	}
}

// A script cut off before its end makes esbuild fail in code the agent did
// not write (the wrapper, or nothing at all): the error is reported at the
// end of the agent's code, saying what is missing, with a code frame of the
// agent's last line only.
func TestCutOffScriptErrorAtItsEnd(t *testing.T) {
	for _, c := range []struct {
		name, src string
		opts      *Options
		path, msg string
	}{
		{"module", "globalThis.__codemode_result__ = (", nil,
			"script.ts:1:35", "Unexpected end of script\n  1 | globalThis.__codemode_result__ = ("},
		{"module, trailing lines", "const a = 1;\nfoo(a,\n\n", nil,
			"script.ts:2:7", "Unexpected end of script\n  2 | foo(a,"},
		{"module, string", "const a = 1;\nconst s = 'abc", nil,
			"script.ts:2:15", "Unexpected end of script: unterminated string literal\n  2 | const s = 'abc"},
		{"body", "globalThis.__codemode_result__ = (", Body(),
			"script.ts:1:35", "Unexpected end of script\n  1 | globalThis.__codemode_result__ = ("},
		{"body, block", "if (a) {\n  b();\n", Body(),
			"script.ts:2:7", "Unexpected end of script\n  2 |   b();"},
		{"body, extra brace", "return 1;\n}", Body(),
			"script.ts:2:2", `Unexpected end of script: expected ")"` + "\n  2 | }"},
		{"call", "async (c) => {{", Call("", "catalog"),
			"script.ts:1:16", "Unexpected end of script\n  1 | async (c) => {{"},
		{"call with imports", "async (c) => {\n  return c.x(", Call(`import { catalog as c } from "@x";`, "await c()"),
			"script.ts:2:14", "Unexpected end of script\n  2 |   return c.x("},
	} {
		_, diags := Module(c.src, c.opts)
		if len(diags) != 1 {
			t.Errorf("%s: %d diagnostics: %+v", c.name, len(diags), diags)
			continue
		}
		d := diags[0]
		if d.Code != diag.SyntaxError || d.Path != c.path || d.Message != c.msg || !strings.Contains(d.Hint, "close every") {
			t.Errorf("%s: got %s %q %q, want %s %q", c.name, d.Path, d.Message, d.Hint, c.path, c.msg)
		}
		checkFrame(t, c.name, c.src, d.Message)
	}
}

// checkFrame checks that every code frame line ("  N | text") in msg is
// line N of src.
func checkFrame(t *testing.T, name, src, msg string) {
	t.Helper()
	lines := strings.Split(src, "\n")
	for _, l := range strings.Split(msg, "\n")[1:] {
		n, text, ok := strings.Cut(strings.TrimLeft(l, " "), " | ")
		i, err := strconv.Atoi(n)
		if !ok || err != nil || i < 1 || i > len(lines) || strings.TrimRight(lines[i-1], " \t") != text {
			t.Errorf("%s: code frame line %q is not in the script", name, l)
		}
	}
}

// Errors in the agent's code keep esbuild's message and position, also on
// the last line and under a wrapper.
func TestErrorInScriptKeepsItsPosition(t *testing.T) {
	for _, c := range []struct {
		src  string
		opts *Options
		path string
	}{
		{"const a = 1;\nconst b = a +;", nil, "script.ts:2:14"},
		{"const a = 1;\nconst b = a +;", Body(), "script.ts:2:14"},
		{"async (c) => { return c. }", Call("", ""), "script.ts:1:26"},
	} {
		_, diags := Module(c.src, c.opts)
		if len(diags) == 0 || diags[0].Path != c.path || strings.HasPrefix(diags[0].Message, "Unexpected end of script") {
			t.Errorf("%q: got %+v, want %s", c.src, diags, c.path)
		}
	}
}

// Positions in the wrapper's code map to the end of the agent's code.
func TestPositionInWrapper(t *testing.T) {
	src := "const x = 2;\nreturn x * 21;\n"
	out, diags := Module(src, Body())
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	// The code ends with the wrapper's suffix: "…})();".
	i := strings.LastIndex(out.Code, "})()")
	if i < 0 || strings.Contains(out.Code[:i], "\n") {
		t.Fatalf("unexpected code %q", out.Code)
	}
	if got := out.Position(1, i+2); got != "script.ts:2:15" {
		t.Errorf("suffix: Position = %s, want script.ts:2:15", got)
	}
	if got := out.Position(1, 1); got != "script.ts:2:15" {
		t.Errorf("prefix: Position = %s, want script.ts:2:15", got)
	}
	j := strings.Index(out.Code, "x*21")
	if got := out.Position(1, j+1); got != "script.ts:2:8" {
		t.Errorf("code: Position = %s, want script.ts:2:8", got)
	}
}
