package transpile

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/codemode-mcp/codemode/internal/diag"
)

func TestTypeScriptIsStripped(t *testing.T) {
	out, diags := Module(context.Background(), "interface P { a: number }\nconst p: P = { a: 1 };\nglobalThis.__codemode_result__ = p.a as number;\n", nil)
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
	out, diags := Module(context.Background(), "const x = 1;\nglobalThis.__codemode_result__ = x;", nil)
	if len(diags) > 0 || out == nil {
		t.Fatalf("diags: %v", diags)
	}
}

func TestSyntaxErrorPosition(t *testing.T) {
	_, diags := Module(context.Background(), "const a = 1;\nconst b: number = ;\n", nil)
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
	_, diags := Module(context.Background(), "const a = 1;\nreturn 42", nil)
	if len(diags) == 0 || !strings.Contains(diags[0].Hint, "__codemode_result__") || diags[0].Path != "script.ts:2:1" {
		t.Fatalf("got %+v", diags)
	}
}

func TestPositionMapsToSource(t *testing.T) {
	src := "type T = { a: number };\n\n\nconst t: T = { a: 1 };\nthrow new Error('x');\n"
	out, diags := Module(context.Background(), src, nil)
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
	out, diags := Module(context.Background(), "const x = 2;\nreturn x * 21;", Body())
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	if !strings.Contains(out.Code, "__codemode_result__") {
		t.Fatal(out.Code)
	}
	_, diags = Module(context.Background(), "const x = ;", Body())
	if len(diags) == 0 || diags[0].Path != "script.ts:1:11" {
		t.Fatalf("wrapped error position: %+v", diags)
	}
}

func TestCall(t *testing.T) {
	out, diags := Module(context.Background(), "async (catalog) => catalog.servers.length", Call(`import { catalog } from "@x";`, "catalog"))
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	if !strings.Contains(out.Code, "(catalog)") || !strings.Contains(out.Code, "__codemode_result__") {
		t.Fatal(out.Code)
	}
}

func TestImportInsideFunctionForm(t *testing.T) {
	_, diags := Module(context.Background(), "import { get_sum } from \"@codemode/servers/everything\";\nreturn await get_sum({ a: 1, b: 2 });", Body())
	if len(diags) == 0 || !strings.Contains(diags[0].Hint, "await import(") || strings.Contains(diags[0].Message, "__codemode_result__") {
		t.Fatalf("got %+v", diags)
	}
}

func TestUnusedImportIsKept(t *testing.T) {
	out, diags := Module(context.Background(), `import { nope } from "@codemode/servers/github";
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
		_, diags := Module(context.Background(), c.src, c.opts)
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
// line N of src, or a part of it, cut where it is marked with "…".
func checkFrame(t *testing.T, name, src, msg string) {
	t.Helper()
	lines := strings.Split(src, "\n")
	for _, l := range strings.Split(msg, "\n")[1:] {
		n, text, ok := strings.Cut(strings.TrimLeft(l, " "), " | ")
		i, err := strconv.Atoi(n)
		if !ok || err != nil || i < 1 || i > len(lines) {
			t.Errorf("%s: code frame line %q is not in the script", name, l)
			continue
		}
		line := strings.TrimRight(lines[i-1], " \t")
		part, cutStart := strings.CutPrefix(text, "…")
		part, cutEnd := strings.CutSuffix(part, "…")
		switch {
		case !cutStart && !cutEnd && part != line,
			!cutStart && !strings.HasPrefix(line, part),
			!cutEnd && !strings.HasSuffix(line, part),
			!strings.Contains(line, part):
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
		_, diags := Module(context.Background(), c.src, c.opts)
		if len(diags) == 0 || diags[0].Path != c.path || strings.HasPrefix(diags[0].Message, "Unexpected end of script") {
			t.Errorf("%q: got %+v, want %s", c.src, diags, c.path)
		}
	}
}

// Positions in the wrapper's code map to the end of the agent's code.
func TestPositionInWrapper(t *testing.T) {
	src := "const x = 2;\nreturn x * 21;\n"
	out, diags := Module(context.Background(), src, Body())
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

// Columns count UTF-16 code units, as the engine's positions do once
// Output.Position has mapped them (see TestEngineColumnsCountUTF16), not
// the bytes esbuild counts: "é" is one unit (two bytes), "😀" two (four
// bytes). Each script with such characters is checked against the same
// script with ASCII of the same UTF-16 length in their place.
func TestSyntaxErrorColumnsCountUTF16(t *testing.T) {
	for _, c := range []struct {
		name, src string
		opts      *Options
		path      string
	}{
		{"é", `const s = "ééééé"; const = 2;`, nil, "script.ts:1:26"},
		{"emoji", `const s = "😀"; const = 2;`, nil, "script.ts:1:23"},
		{"emoji, line 2", "const a = '😀';\nconst s = \"😀😀\"; const = 2;", nil, "script.ts:2:25"},
		{"emoji, body", `const s = "😀"; const = 2;`, Body(), "script.ts:1:23"},
		{"emoji, call", `async () => { const s = "😀"; const = 2; }`, Call("", ""), "script.ts:1:37"},
		{"emoji, cut off", `const s = "😀" + (`, nil, "script.ts:1:19"},
		{"emoji, too deep", `const s = "😀"; x = ` + strings.Repeat("[", 1010), nil, ""},
	} {
		ascii := strings.NewReplacer("é", "e", "😀", "ab").Replace(c.src)
		_, diags := Module(context.Background(), c.src, c.opts)
		_, want := Module(context.Background(), ascii, c.opts)
		if len(diags) == 0 || len(want) == 0 {
			t.Errorf("%s: no diagnostics: %v, %v", c.name, diags, want)
			continue
		}
		d := diags[0]
		if d.Path != want[0].Path || c.path != "" && d.Path != c.path {
			t.Errorf("%s: path %s, want %s (as for %q)", c.name, d.Path, want[0].Path, ascii)
		}
		checkFrame(t, c.name, c.src, d.Message)
	}
}

// A code frame quotes at most codeFrameWidth characters of a line, around
// the error, and esbuild's own text at most maxQuoted: a one-line script
// would otherwise be quoted whole in a message of tens of kilobytes.
func TestLongLinesAreCut(t *testing.T) {
	long := "const a = [" + strings.Repeat("12345,", 13000) + ",;"
	for _, c := range []struct {
		name, src string
		opts      *Options
		near      string // what the frame must show
	}{
		{"79 KB array", long, nil, ",;"},
		{"79 KB array, body", long, Body(), ",;"},
		{"long line, error at its start", "const = [" + strings.Repeat("'é😀', ", 5000) + "];", nil, "const = ["},
		{"long line, cut off", "f(" + strings.Repeat("'é😀', ", 5000), nil, "'é😀', "},
		{"long token", `a "` + strings.Repeat("x", 5000) + `" b`, nil, `a "xxx`},
		{"long name", "let " + strings.Repeat("é", 5000) + " = 1; let " + strings.Repeat("é", 5000) + " = 2;", nil, "= 1; let"},
		{"too deep", strings.Repeat("x", 5000) + strings.Repeat("(", 1010), nil, "(((("},
	} {
		_, diags := Module(context.Background(), c.src, c.opts)
		if len(diags) == 0 {
			t.Errorf("%s: no diagnostics", c.name)
			continue
		}
		d := diags[0]
		msg, frame, _ := strings.Cut(d.Message, "\n")
		if n := utf8.RuneCountInString(msg); n > maxQuoted {
			t.Errorf("%s: message of %d characters: %.300s", c.name, n, msg)
		}
		if n := utf8.RuneCountInString(frame); n > codeFrameWidth+20 {
			t.Errorf("%s: code frame of %d characters: %.300s", c.name, n, frame)
		}
		if !strings.Contains(frame, "…") || !strings.Contains(frame, c.near) || !utf8.ValidString(d.Message) {
			t.Errorf("%s: code frame %q does not show %q, cut with …", c.name, frame, c.near)
		}
		if len(d.Hint) > 2*maxQuoted {
			t.Errorf("%s: hint of %d bytes", c.name, len(d.Hint))
		}
		checkFrame(t, c.name, c.src, d.Message)
	}
}

// With Lang set, the source is parsed as that language only: valid
// JavaScript that TypeScript reads differently keeps its meaning, and
// positions are reported in the file of that language.
func TestLangIsForced(t *testing.T) {
	src := "const f=1,T=2,x=3; globalThis.__codemode_result__ = f < T > (x);"
	out, diags := Module(context.Background(), src, &Options{Lang: "js"})
	if len(diags) > 0 || out.Lang != "js" || out.File != "script.js" {
		t.Fatalf("js: %+v %v", out, diags)
	}
	if !strings.Contains(out.Code, "f<T>x") {
		t.Errorf("js: not comparisons: %s", out.Code)
	}
	if out, _ := Module(context.Background(), src, nil); out == nil || out.Lang != "ts" || strings.Contains(out.Code, "f<T>x") {
		t.Errorf("default: expected a TypeScript generic call, got %+v", out)
	}
	// TypeScript syntax is an error in JavaScript, located in script.js.
	_, diags = Module(context.Background(), "const a = 1;\nconst b: number = 2;", &Options{Lang: "js"})
	if len(diags) == 0 || diags[0].Path != "script.js:2:8" {
		t.Errorf("js syntax error: %+v", diags)
	}
	_, diags = Module(context.Background(), "const a = 1;\nconst b = ;", &Options{Lang: "ts"})
	if len(diags) == 0 || diags[0].Path != "script.ts:2:11" {
		t.Errorf("ts syntax error: %+v", diags)
	}
	_, diags = Module(context.Background(), strings.Repeat("[", 1010), &Options{Lang: "js"})
	if len(diags) == 0 || !strings.HasPrefix(diags[0].Path, "script.js:") {
		t.Errorf("js error at the end: %+v", diags)
	}
	defer func() {
		if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), `"javascript"`) {
			t.Errorf("Lang javascript: panic %v", p)
		}
	}()
	Module(context.Background(), src, &Options{Lang: "javascript"})
}

func TestLangOf(t *testing.T) {
	for name, want := range map[string]string{
		"a.js": "js", "dir.ts/a.mjs": "js", "A.CJS": "js",
		"a.ts": "ts", "x/a.mts": "ts", "a.cts": "ts",
		"-": "", "script": "", "a.tsx": "", "a.json": "",
	} {
		if got := LangOf(name); got != want {
			t.Errorf("LangOf(%q) = %q, want %q", name, got, want)
		}
	}
}

// Syntax the sandbox cannot run and esbuild cannot lower is refused with
// a message that does not talk about esbuild's target, and a hint naming
// what to write instead.
func TestUnsupportedSyntaxHints(t *testing.T) {
	for _, c := range []struct {
		src, path, hint string
	}{
		{`import defer * as ns from "@codemode/servers/x";`, "script.ts:1:8", "plain import"},
		{`const ns = await import.source("@codemode/servers/x");`, "script.ts:1:25", "plain import"},
		{"function d(v) { return v }\nclass A { m(@d p) {} }", "script.ts:2:13", "decorate the class, a method or a field"},
	} {
		_, diags := Module(context.Background(), c.src, nil)
		if len(diags) == 0 {
			t.Errorf("%q: no diagnostics", c.src)
			continue
		}
		d := diags[0]
		if d.Code != diag.SyntaxError || d.Path != c.path || !strings.Contains(d.Hint, c.hint) || strings.Contains(d.Message, "target environment") {
			t.Errorf("%q: got %s %q %q, want %s and a hint with %q", c.src, d.Path, d.Message, d.Hint, c.path, c.hint)
		}
	}
}

// Scripts that name a well-known symbol the engine lacks get a shim on a
// line before their code (after a hashbang); it moves no position.
func TestSymbolShim(t *testing.T) {
	out, diags := Module(context.Background(), "#!/usr/bin/env codemode\nconst x = { [Symbol.dispose]() {} };", nil)
	if len(diags) > 0 || !strings.HasPrefix(out.Code, "#!/usr/bin/env codemode\n"+`Symbol.dispose??=Symbol.for("Symbol.dispose");`+"\n") {
		t.Fatalf("%v %+v", diags, out)
	}
	if out, _ := Module(context.Background(), "const x = Symbol.iterator;", nil); strings.Contains(out.Code, "??=") {
		t.Errorf("shim without a symbol that needs it: %s", out.Code)
	}
	for _, c := range []struct {
		src  string
		opts *Options
		path string
	}{
		{"Symbol.dispose; const = 1;", nil, "script.ts:1:23"},
		{"Symbol.dispose;\nconst b = ", nil, "script.ts:2:10"},
		{"Symbol.asyncDispose; const = 1;", Body(), "script.ts:1:28"},
	} {
		_, diags := Module(context.Background(), c.src, c.opts)
		if len(diags) == 0 || diags[0].Path != c.path || strings.Contains(diags[0].Message, "??=") {
			t.Errorf("%q: got %+v, want %s", c.src, diags, c.path)
		}
	}
}
