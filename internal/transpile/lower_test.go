package transpile_test

import (
	"context"
	"testing"

	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/sandbox"
	"github.com/codemode-mcp/codemode/internal/transpile"
)

// Syntax QuickJS does not parse, decorators and `using` declarations, is
// lowered by esbuild and runs, in TypeScript and in JavaScript; the
// well-known symbols the agent names for it are the ones the lowered code
// looks up.
func TestLoweredSyntaxRuns(t *testing.T) {
	for _, c := range []struct {
		name, src, result string
	}{
		{"class decorator", `
function tag(cls, ctx) { cls.tagged = ctx.kind + ":" + ctx.name; return cls; }
@tag class A {}
globalThis.__codemode_result__ = A.tagged;`, `"class:A"`},
		{"member decorators", `
const calls = [];
function logged(fn, ctx) { return function (...args) { calls.push(ctx.name); return fn.apply(this, args); }; }
function double(_, ctx) { return (v) => v * 2; }
function bump(target, ctx) { return { get() { return target.get.call(this) + 1; }, set(v) { target.set.call(this, v); } }; }
class Counter {
  @double step = 2;
  @bump accessor count = 0;
  @logged add() { this.count += this.step; return this.count; }
}
const c = new Counter();
c.add();
globalThis.__codemode_result__ = [c.add(), calls];`, `[11,["add","add"]]`},
		{"decorator metadata", `
function meta(_, ctx) { ctx.metadata.seen = true; }
@meta class A {}
globalThis.__codemode_result__ = A[Symbol.metadata].seen;`, `true`},
		{"using", `
const log = [];
function res(name) { return { [Symbol.dispose]() { log.push("dispose " + name); } }; }
{
  using a = res("a");
  using b = res("b");
  log.push("body");
}
globalThis.__codemode_result__ = log;`, `["body","dispose b","dispose a"]`},
		{"await using", `
const log = [];
{
  await using r = { async [Symbol.asyncDispose]() { await null; log.push("disposed"); } };
  log.push("body");
}
globalThis.__codemode_result__ = log;`, `["body","disposed"]`},
	} {
		for _, lang := range []string{"ts", "js"} {
			out, diags := transpile.Module(context.Background(), c.src, &transpile.Options{Lang: lang})
			if len(diags) > 0 {
				t.Errorf("%s (%s): %v", c.name, lang, diags)
				continue
			}
			res := sandbox.Run(context.Background(), out.Code, &sandbox.Options{Position: out.Position})
			if len(res.Diagnostics) > 0 || string(res.Result) != c.result {
				t.Errorf("%s (%s): result %s, want %s; diagnostics %+v", c.name, lang, res.Result, c.result, res.Diagnostics)
			}
		}
	}
}

// An error thrown by a decorator, or by a disposer, is located in the
// agent's code, not in the code esbuild added to lower it.
func TestLoweredSyntaxErrorPositions(t *testing.T) {
	for _, c := range []struct {
		name, src, path string
	}{
		{"decorator", "function no() {\n  throw new Error('no');\n}\n@no class A {}\n", "script.ts:2:13"},
		{"disposer", "{\n  using r = { [Symbol.dispose]() { null.x; } };\n}\n", "script.ts:2:36"},
	} {
		out, diags := transpile.Module(context.Background(), c.src, nil)
		if len(diags) > 0 {
			t.Errorf("%s: %v", c.name, diags)
			continue
		}
		res := sandbox.Run(context.Background(), out.Code, &sandbox.Options{Position: out.Position})
		if len(res.Diagnostics) == 0 {
			t.Errorf("%s: no diagnostics", c.name)
			continue
		}
		if d := res.Diagnostics[0]; d.Code != diag.UncaughtException || d.Path != c.path {
			t.Errorf("%s: got %s at %s (%s), want %s", c.name, d.Code, d.Path, d.Message, c.path)
		}
	}
}

// The shim for well-known symbols is a line of its own: positions after it
// still map to the agent's lines, with or without a hashbang.
func TestShimKeepsPositions(t *testing.T) {
	for _, c := range []struct {
		name, src string
		opts      *transpile.Options
		path      string
	}{
		{"module", "const r = { [Symbol.dispose]() {} };\n  null.x;\n", nil, "script.ts:2:3"},
		{"hashbang", "#!/usr/bin/env codemode\nconst r = { [Symbol.dispose]() {} };\n  null.x;\n", nil, "script.ts:3:3"},
		{"body", "const r = { [Symbol.dispose]() {} };\n  return null.x;\n", transpile.Body(), "script.ts:2:10"},
	} {
		if got := run(t, c.src, c.opts); got != c.path {
			t.Errorf("%s: path %s, want %s", c.name, got, c.path)
		}
	}
}
