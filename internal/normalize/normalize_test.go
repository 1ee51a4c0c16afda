package normalize

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/sandbox"
	"github.com/codemode-mcp/codemode/internal/transpile"
)

// runPrepared transpiles and runs prepared code in a sandbox without host
// modules, and returns the result and the diagnostics (the normaliser's
// info first, as the run layer reports them).
func runPrepared(t *testing.T, p *Prepared) (string, []diag.Diagnostic) {
	t.Helper()
	out, diags := transpile.Module(context.Background(), p.Code, p.Transpile)
	if len(diags) > 0 {
		return "", diags
	}
	res := sandbox.Run(context.Background(), out.Code, &sandbox.Options{Position: p.Position(out)})
	all := append(append([]diag.Diagnostic{}, p.Info...), res.Diagnostics...)
	if d := p.NoResult(context.Background(), res.Result, res.Diagnostics); d != nil {
		all = append(all, *d)
	}
	return string(res.Result), all
}

func errorsOf(ds []diag.Diagnostic) []diag.Diagnostic {
	var out []diag.Diagnostic
	for _, d := range ds {
		if d.Severity == diag.SeverityError {
			out = append(out, d)
		}
	}
	return out
}

func has(ds []diag.Diagnostic, code diag.Code, text string) bool {
	for _, d := range ds {
		if d.Code == code && (strings.Contains(d.Message, text) || strings.Contains(d.Hint, text)) {
			return true
		}
	}
	return false
}

// Every shape runs on its form and gives the value it means, with an info
// diagnostic that names the canonical form.
func TestShapes(t *testing.T) {
	for _, c := range []struct {
		name string
		mode Mode
		src  string
		want string
		info string // text of the NORMALIZED diagnostic, "" for none
	}{
		{"arrow with ;", Call, "async () => { const r = 20 + 22; return r; };", "42", "without a trailing `;`"},
		{"arrow expression", Call, "async () => 42", "42", ""},
		{"lone declaration on a call surface", Call, "async function run() { return 42 }", "42", ""},
		{"last expression", Body, "const a = 40;\nconsole.log(a);\na + 2", "42", "last expression"},
		{"bare value after console.log", Body, "console.log('x');\n42", "42", "last expression"},
		{"async IIFE", Body, "(async () => {\n  return 42;\n})();", "42", "last expression"},
		{"then chain", Body, "Promise.resolve(41).then((x) => x + 1)", "42", "last expression"},
		{"catch chain", Body, "Promise.reject(new Error('no')).catch((e) => e.message)", `"no"`, "last expression"},
		{"if/else tail", Body, "const x = 2;\nif (x > 1) {\n  'big'\n} else {\n  'small'\n}", `"big"`, "last expression"},
		{"try/catch tail", Body, "try {\n  JSON.parse('{')\n} catch (e) {\n  e.name\n}", `"SyntaxError"`, "last expression"},
		{"a return ran first", Body, "if (true) return 1;\n2", "1", "last expression"},
		{"lone declaration", Body, "async function run() {\n  return 42;\n}", "42", "call it yourself: return await run();"},
		{"lone arrow", Body, "async () => 42;", "42", "function expression"},
		{"export dropped", Body, "export const x = 42;\nreturn x;", "42", "`export` was dropped"},
		{"export default in a body", Body, "export default async function run() {\n  return 42;\n}", "42", "default export"},
		{"assigned, not returned", Body, "globalThis.__codemode_result__ = 42;", "42", ""},
		{"TypeScript body", Body, "interface P { n: number }\nconst p: P = { n: 42 };\np.n", "42", "last expression"},
		{"fence", Body, "```ts\nconst x: number = 42;\nreturn x;\n```", "42", "markdown fence"},
		{"fence after prose", Body, "Here is the script:\n\n```js\nreturn 42;\n```\nIt returns 42.", "42", "after some prose"},
		{"spec module", Module, "globalThis.__codemode_result__ = 42;", "42", ""},
		{"top-level return", Module, "const x: number = 41;\nif (x > 100) return 0;\nreturn x + 1;", "42", "top-level return"},
		{"empty return", Module, "globalThis.__codemode_result__ = 42;\nif (true) return\nglobalThis.__codemode_result__ = 0;", "42", "top-level return"},
		{"default export value", Module, "const x = 42;\nexport default x;", "42", "default export"},
		{"default export arrow", Module, "export default async () => 42;", "42", "default export"},
		{"default export declaration", Module, "export default async function main() {\n  return 42;\n}", "42", "default export"},
		{"default export with result set", Module, "globalThis.__codemode_result__ = 42;\nexport default 0;", "42", ""},
		{"default export with parameters", Module, "export default async (x) => 42;", "null", "default export"},
		{"lone arrow module", Module, "async () => {\n  return 42;\n};", "42", "only defines a function"},
		{"lone declaration module", Module, "async function run() {\n  return 42;\n}", "42", "await run()"},
		{"fenced module", Module, "```js\nglobalThis.__codemode_result__ = 42;\n```", "42", "markdown fence"},
		// pctx: the code declares run beside helpers and constants.
		{"entry function with helpers", Body, "const N = [20, 22];\nfunction sum(xs) { return xs.reduce((a, b) => a + b, 0); }\nasync function run() {\n  return sum(N);\n}", "42", "never calls it"},
		{"entry function named run among several", Body, "async function helper() { return 41; }\nasync function run() { return 1; }\nasync function main() { return 2; }", "1", "declares the function run"},
		{"entry function bound to a const", Body, "const main = async () => {\n  return 42;\n};", "42", "never calls it"},
		{"entry function bound to a const on a call surface", Call, "const run = async () => 42;", "42", "never calls it"},
		{"entry function on a call surface", Call, "const x = 41;\nasync function run() {\n  return x + 1;\n}", "42", "never calls it"},
		{"a scope parameter destructured", Call, "async ({ Math: m }) => m.max(40, 42)", "42", ""},
		// Bifrost: an object literal as the whole code, imports of modules
		// that do not exist and that the code never uses, escapes twice.
		{"object literal body", Body, "{a: 40, b: 2}", `{"a":40,"b":2}`, "object literal"},
		{"unused import dropped", Body, "import { something } from \"module\"; 40 + 2", "42", "was dropped"},
		{"unused imports and export", Body, "import a from \"a\"; import b from \"b\"; export const c = 1; 40 + 2", "42", "was dropped"},
		{"literal line breaks", Body, `const x = 40;\nreturn x + 2;`, "42", "literal \\n"},
		{"async generator", Body, "async function* g() { yield 40; yield 2; }\nlet s = 0;\nfor await (const x of g()) s += x;\ns", "42", "last expression"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := Prepare(context.Background(), c.src, &Options{Mode: c.mode})
			got, diags := runPrepared(t, p)
			if errs := errorsOf(diags); len(errs) > 0 {
				t.Fatalf("errors: %+v\ncode:\n%s", errs, p.Code)
			}
			if got != c.want {
				t.Fatalf("result %s, want %s\ncode:\n%s\n%+v", got, c.want, p.Code, diags)
			}
			if c.info == "" {
				if len(p.Info) > 0 {
					t.Fatalf("unexpected info %+v", p.Info)
				}
				return
			}
			if !has(p.Info, diag.Normalized, c.info) {
				t.Fatalf("no info mentioning %q: %+v", c.info, p.Info)
			}
		})
	}
}

// A tool call whose value the code uses without await (UTCP's calls are
// synchronous) is awaited where an await can go, with an info diagnostic,
// and reported by a warning where none can; a promise used as a promise
// (Promise.all, then) and a call whose value is unused keep their form.
func TestUnawaitedCalls(t *testing.T) {
	const srv = "const srv = { add: async ({ a, b }) => ({ result: a + b }), name: async () => 'Al' };\n"
	for _, c := range []struct {
		mode      Mode
		src, want string
		info      string // text of the NORMALIZED diagnostic
		warn      bool   // an UNAWAITED_PROMISE warning
	}{
		{Body, srv + "const r = srv.add({ a: 40, b: 2 });\nreturn r.result;", "42", "was used as r without await", false},
		{Body, srv + "const r = srv.add({ a: 40, b: 2 });\nconst n = srv.name();\nreturn { r, text: `${n} ${r.result}` };", `{"r":{"result":42},"text":"Al 42"}`, "was used as n without await", false},
		{Body, srv + "const n = srv.name();\nreturn n + '!';", `"Al!"`, "was used as n", false},
		{Module, srv + "const r = srv.add({ a: 40, b: 2 });\nexport default r.result;", "42", "was used as r", false},
		{Body, srv + "const r = srv.add({ a: 40, b: 2 });\nconsole.log('sum:', r);\nreturn JSON.stringify(r);", `"{\"result\":42}"`, "was used as r", false},
		{Body, srv + "const r = srv.add({ a: 40, b: 2 });\nreturn Object.keys(r);", `["result"]`, "was used as r", false},
		{Body, srv + "const p = srv.add({ a: 40, b: 2 });\nconst [r] = await Promise.all([p]);\nreturn r.result;", "42", "", false},
		{Body, srv + "const p = srv.add({ a: 40, b: 2 });\nreturn p.then((r) => r.result);", "42", "", false},
		{Body, srv + "return [1].map((x) => { const r = srv.add({ a: x, b: 1 }); return r.result; });", "[null]", "", true},
	} {
		p := Prepare(context.Background(), c.src, &Options{Mode: c.mode, Async: []string{"srv"}})
		got, diags := runPrepared(t, p)
		if errs := errorsOf(diags); len(errs) > 0 {
			t.Fatalf("%q: errors %+v\n%s", c.src, errs, p.Code)
		}
		if got != c.want {
			t.Errorf("%q: result %s, want %s\n%s", c.src, got, c.want, p.Code)
		}
		if has(diags, diag.Normalized, "without await") != (c.info != "") || c.info != "" && !has(diags, diag.Normalized, c.info) {
			t.Errorf("%q: info %q: %+v", c.src, c.info, diags)
		}
		if has(diags, diag.UnawaitedPromise, "") != c.warn {
			t.Errorf("%q: warning %v: %+v", c.src, c.warn, diags)
		}
	}
}

// Code that needs nothing of the normaliser runs as the agent wrote it:
// the same text, no analysis.
func TestPlainCodeUntouched(t *testing.T) {
	for _, c := range []struct {
		mode Mode
		src  string
	}{
		{Module, "globalThis.__codemode_result__ = 1"},
		{Call, "async () => 1"},
		{Body, "return 1"},
	} {
		p := Prepare(context.Background(), c.src, &Options{Mode: c.mode})
		if p.Code != c.src || p.Changed() || len(p.Info) > 0 {
			t.Errorf("%q was changed: %q %+v", c.src, p.Code, p.Info)
		}
	}
}

// Positions of runtime errors in reshaped code are the agent's.
func TestPositionsStayTheAgents(t *testing.T) {
	for _, c := range []struct {
		mode Mode
		src  string
		want string
	}{
		{Body, "import { x } from '@codemode/errors';\nconst a = 1;\nnull.foo;\nreturn a", "script.ts:3:"},
		{Body, "export const a: number = 1;\n\n\nnull.foo;\na", "script.ts:4:"},
		{Module, "const a = 1;\nif (a) {\n  null.foo;\n}\nreturn a", "script.ts:3:"},
		{Module, "export default async () => {\n  const x = 1;\n  null.foo;\n};", "script.ts:3:"},
		{Call, "async () => {\n  const x = 1;\n  null.foo;\n};", "script.ts:3:"},
	} {
		p := Prepare(context.Background(), c.src, &Options{Mode: c.mode})
		_, diags := runPrepared(t, p)
		errs := errorsOf(diags)
		if len(errs) != 1 || !strings.HasPrefix(errs[0].Path, c.want) {
			t.Errorf("%q: want an error at %s…, got %+v\ncode:\n%s", c.src, c.want, errs, p.Code)
		}
	}
}

// A syntax error is reported on the agent's own code, not on anything the
// normaliser made.
func TestSyntaxErrorsAreTheAgents(t *testing.T) {
	for _, mode := range []Mode{Module, Body, Call} {
		p := Prepare(context.Background(), "const a = 1;\nconst b = ;\nreturn a", &Options{Mode: mode})
		_, diags := transpile.Module(context.Background(), p.Code, p.Transpile)
		if len(diags) == 0 || diags[0].Code != diag.SyntaxError || !strings.HasPrefix(diags[0].Path, "script.ts:2:") || p.Changed() {
			t.Errorf("mode %d: %+v", mode, diags)
		}
	}
}

// NO_RESULT: a null result from code that looks like it meant a value gets
// a warning whose hint is the one-line fix.
func TestNoResult(t *testing.T) {
	for _, c := range []struct {
		mode Mode
		src  string
		hint string // "" for no warning
	}{
		{Module, "const r = await Promise.resolve(42);\nr * 2", "globalThis.__codemode_result__ = r * 2;"},
		{Module, "async function main() { return 1 }\nconst x = 1;", "globalThis.__codemode_result__ = await main();"},
		{Module, "const r = 42;", "globalThis.__codemode_result__ = r;"},
		{Module, "const main = async () => { return 1; };", "globalThis.__codemode_result__ = await main();"},
		{Module, "export default async (x) => x;", "export default async () =>"},
		{Body, "const r = 42;", "return r;"},
		{Body, "const helper = () => 1;\nconst r = 42;", "return r;"},
		{Body, "function f() {}\nf()", "return the value"},
		{Call, "async () => { const r = 1; }", "return <value>"},
		{Body, "async function run() { const r = 1; }", "return <value>"},
		{Module, "console.log('just logging')", ""},
		{Module, "globalThis.__codemode_result__ = null;", ""},
		{Body, "return null", ""},
		{Call, "null", ""},
	} {
		p := Prepare(context.Background(), c.src, &Options{Mode: c.mode})
		got, diags := runPrepared(t, p)
		if got != "null" {
			t.Fatalf("%q: result %s", c.src, got)
		}
		warned := has(diags, diag.NoResult, c.hint)
		if c.hint == "" {
			if has(diags, diag.NoResult, "") {
				t.Errorf("%q: unexpected NO_RESULT: %+v", c.src, diags)
			}
			continue
		}
		if !warned {
			t.Errorf("%q: want NO_RESULT with %q, got %+v", c.src, c.hint, diags)
		}
	}
}

// Code that ran as written (a call surface's function, a module that sets
// its result) and used a tool call's promise as its value ends with null:
// the warning names the missing await, not NO_RESULT's generic fix; an
// error reading a property of it on that line says the same.
func TestUnawaitedAfterRun(t *testing.T) {
	const srv = "const srv = { add: async ({ a, b }) => ({ result: a + b }) };\n"
	for _, c := range []struct {
		mode Mode
		src  string
	}{
		{Call, "async () => {\n  const r = srv.add({ a: 40, b: 2 });\n  return r.result;\n}"},
		{Module, srv + "const r = srv.add({ a: 40, b: 2 });\nglobalThis.__codemode_result__ = r.result;"},
	} {
		src := c.src
		p := Prepare(context.Background(), src, &Options{Mode: c.mode, Async: []string{"srv"}, Bind: bindSrv(c.mode)})
		got, diags := runPrepared(t, p)
		if got != "null" {
			t.Fatalf("%q: result %s", src, got)
		}
		if !has(diags, diag.UnawaitedPromise, "const r = await srv.add(...)") || has(diags, diag.NoResult, "") {
			t.Errorf("%q: want UNAWAITED_PROMISE naming the await, no NO_RESULT: %+v", src, diags)
		}
	}
	p := Prepare(context.Background(), "async () => {\n  const r = srv.add({ a: 1, b: 2 });\n  return r.result.x;\n}", &Options{Mode: Call, Async: []string{"srv"}, Bind: bindSrv(Call)})
	if d := p.Unawaited(context.Background(), 3); d == nil || !strings.Contains(d.Hint, "await srv.add") {
		t.Errorf("line 3: %+v", d)
	}
	if d := p.Unawaited(context.Background(), 2); d != nil {
		t.Errorf("line 2 uses nothing: %+v", d)
	}
}

// bindSrv declares srv for a form whose code cannot declare it first.
func bindSrv(m Mode) string {
	if m == Call {
		return "const srv = { add: async ({ a, b }) => ({ result: a + b }) };"
	}
	return ""
}

// The dynamic import equivalent to each form of import declaration.
func TestDynamicImport(t *testing.T) {
	for src, want := range map[string]string{
		`import "@codemode/m"; x()`:             `await import("@codemode/m");`,
		`import d from "m"; d()`:                `const { default: d } = await import("m");`,
		`import * as ns from "m"; ns.f()`:       `const ns = await import("m");`,
		`import { a, b as c } from "m"; a(c)`:   `const { a, b: c } = await import("m");`,
		`import d, { a } from "m"; d(a)`:        `const { default: d, a } = await import("m");`,
		`import d, * as ns from "m"; d(ns)`:     `const ns = await import("m"), { default: d } = ns;`,
		`import { "a-b" as ab } from "m"; ab()`: `const { "a-b": ab } = await import("m");`,
	} {
		p := Prepare(context.Background(), src+"\nreturn 1", &Options{Mode: Body, Lang: "js"})
		if !strings.Contains(p.Code, want) {
			t.Errorf("%s:\n%s\nwant %s", src, p.Code, want)
		}
	}
}

// back maps every offset of unchanged text in the edited string to the
// same character of the original, whatever the edits.
func TestEditsBack(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		n := 1 + r.IntN(60)
		orig := make([]byte, n)
		for i := range orig {
			orig[i] = byte('a' + r.IntN(26))
		}
		var ed edits
		for at := 0; at <= n; {
			at += r.IntN(8)
			if at > n {
				break
			}
			del := min(r.IntN(4), n-at)
			ed = append(ed, edit{at, del, strings.Repeat("#", r.IntN(5))})
			at += del + 1
		}
		ed.sort()
		got := ed.apply(string(orig))
		// Walk both strings in step over the unchanged runs.
		o, g := 0, 0
		for _, x := range ed {
			for o < x.at {
				if b := ed.back(g); b != o || got[g] != orig[o] {
					t.Fatalf("orig %q edits %+v: back(%d) = %d, want %d", orig, ed, g, b, o)
				}
				o, g = o+1, g+1
			}
			for range len(x.ins) {
				if b := ed.back(g); b != x.at {
					t.Fatalf("inserted text at %d maps to %d, want %d", g, b, x.at)
				}
				g++
			}
			o += x.del
		}
		for o < n {
			if b := ed.back(g); b != o {
				t.Fatalf("orig %q edits %+v: back(%d) = %d, want %d", orig, ed, g, b, o)
			}
			o, g = o+1, g+1
		}
	}
}

// Markdown fences: a script that starts with one, or has one after prose,
// loses exactly the lines around its code; a template literal holding a
// fence is code.
func TestFences(t *testing.T) {
	src := "```js\nconst s = `\n```\n`;\nreturn s.length\n```"
	f, first, ok := findFence(src)
	if !ok || !first {
		t.Fatal("no fence found")
	}
	if got := unfence(src, f); got != "     \nconst s = `\n   \n`;\nreturn s.length\n```"[:len(got)] && !strings.HasPrefix(got, "     \nconst s = `") {
		t.Fatalf("unfenced %q", got)
	}
	// Code that holds a fence (in a comment) but does not start with one is
	// left alone.
	p := Prepare(context.Background(), "/* usage:\n```js\nfoo()\n```\n*/\nreturn 11", &Options{Mode: Body})
	if got, _ := runPrepared(t, p); got != "11" || len(p.Info) > 0 {
		t.Fatalf("a fence in a comment: result %s, %+v", got, p.Info)
	}
}

// The parser or esbuild refusing the code never fails Prepare: the code is
// handed back as it is.
func TestUnreadableCodeIsHandedBack(t *testing.T) {
	for _, src := range []string{"const = ;", "return (", "}}}", "import {", strings.Repeat("(", 5000)} {
		p := Prepare(context.Background(), src, &Options{Mode: Body})
		if p.Code != src || p.Changed() {
			t.Errorf("%.20q changed", src)
		}
	}
}

func TestCalls(t *testing.T) {
	p := Prepare(context.Background(), "const a = 1;\nawait calc.addd({a});\nconsole?.info('x')", &Options{Mode: Body})
	calls := p.Calls(context.Background())
	b, _ := json.Marshal(calls)
	if len(calls) != 2 || calls[0] != (MemberCall{"calc", "addd", 2}) || calls[1] != (MemberCall{"console", "info", 3}) {
		t.Fatalf("calls %s", b)
	}
}

// An exported function is as lone as a plain one.
func TestExportedLoneFunction(t *testing.T) {
	for _, mode := range []Mode{Module, Body, Call} {
		p := Prepare(context.Background(), "export async function run() {\n  return 42;\n}", &Options{Mode: mode})
		if got, diags := runPrepared(t, p); got != "42" {
			t.Errorf("mode %d: result %s\n%s\n%+v", mode, got, p.Code, diags)
		}
	}
}

// sobek's parser reads an arrow function's parameter list again once it
// sees the arrow, so arrows nested in parameter lists cost 2^depth; the
// code it reads has no arrows (transpile.Options.Readable lowers them), and
// such a script is read like any other.
func TestNestedArrowParameters(t *testing.T) {
	src := strings.Repeat("(a = ", 40) + "1" + strings.Repeat(") => 0", 40) + ";\nreturn 42"
	a, why := analyze(context.Background(), src, "")
	if a == nil {
		t.Fatal(why)
	}
	if strings.Contains(a.js, "=>") {
		t.Fatalf("the code read has arrows:\n%.300s", a.js)
	}
	if got, _ := runPrepared(t, Prepare(context.Background(), src, &Options{Mode: Body})); got != "42" {
		t.Fatalf("result %s", got)
	}
}

// FunctionOnly (search) accepts a function, also followed by `;`, and
// leaves other statements to fail as what they are.
func TestFunctionOnly(t *testing.T) {
	o := &Options{Mode: Call, FunctionOnly: true}
	if got, _ := runPrepared(t, Prepare(context.Background(), "async () => 42;", o)); got != "42" {
		t.Errorf("arrow with ;: %s", got)
	}
	p := Prepare(context.Background(), "const s = 1;\nconsole.log(s)", o)
	if _, diags := transpile.Module(context.Background(), p.Code, p.Transpile); len(diags) == 0 || p.Changed() {
		t.Errorf("statements were accepted: %q", p.Code)
	}
}
