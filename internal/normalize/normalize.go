// Package normalize turns the code agents write into the code a surface
// runs, and says what it changed.
//
// Models write the shapes they have seen: a script inside a markdown fence,
// Cloudflare's `async () => { ... };` (a trailing `;` and all), pctx's
// `async function run() { ... }`, a last expression as the value (`1 + 1`,
// `main().catch(...)`), static imports and `export` keywords in a function
// body, a top-level `return` or an `export default` in a module. Every
// surface runs its code through [Prepare], which reshapes what it must for
// that surface and records each change as an `info` diagnostic (code
// NORMALIZED) that shows the surface's canonical form, so that the model
// learns it. After the run, [Prepared.NoResult] warns (NO_RESULT) when the
// result is null although the code looks like it meant to produce one.
//
// The normaliser reads the code as a syntax tree (see analyze.go), never
// with patterns over its text, and only when it must: code that transpiles
// as it is and needs nothing of it runs unchanged, with no more work than
// before. Positions in diagnostics stay in the agent's own source
// ([Prepared.Position]).
//
// Start with [Prepare].
package normalize

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/grafana/sobek/ast"

	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/transpile"
)

// Mode is the form a surface runs code in.
type Mode uint8

const (
	// Module is codemode_run's form: an ES module (the spec's semantics),
	// with two extensions: a script with a top-level `return` runs as the
	// body of an async function whose return value is the result, and a
	// module with a default export (or that is a lone function) and no
	// __codemode_result__ has the default export's value as its result
	// (awaited, and called if it is a function without parameters).
	Module Mode = iota
	// Body is the form of executeToolCode and codemode_execute: the body of
	// an async function whose return value is the result. When no `return`
	// runs, the value of the last expression statement is the result.
	Body
	// Call is the form of execute and search: an expression, usually an
	// async arrow function, that Options.Finish calls; code that is not an
	// expression runs as in Body and its value goes to Finish.
	Call
)

// Options describe a surface's form.
type Options struct {
	Mode Mode
	// Lang is "ts", "js" or "" (TypeScript, then JavaScript), as in
	// transpile.Options.
	Lang string
	// Imports are import declarations put before the code, and Bind
	// statements run before it, at the top of the module: neither may
	// contain a line break (the agent's lines keep their numbers).
	Imports, Bind string
	// Finish is a JavaScript function applied to the code's value, whose
	// (awaited) return value is the result; its second argument is true
	// when the code ran as a function body (its value is what it returned)
	// rather than as an expression. For Call the default calls a function
	// value (with the global object as its argument, see callFinish) and
	// returns any other value as it is; for Body and Module the value is
	// the result as it is, except that a lone function is called.
	Finish string
	// Async names the objects whose methods are tools (a surface's server
	// globals, tb, mcp), or the functions that are tools (the step
	// surface's globals): a call of one whose value the code uses without
	// await is awaited (names imported from @codemode/servers/* count
	// too).
	Async []string
	// FunctionOnly, for Call, accepts only code that is a function: an
	// expression, or a lone function written as a statement (a trailing
	// `;`); other statements are not run as a function body but left to
	// fail as what they are (search takes a function of the catalog).
	FunctionOnly bool
}

// callFinish calls a function value with the global object as its
// argument, the scope it runs in: a function written for a runtime that
// passes its tools in (async ({ codemode }) => ...) finds them there, and
// one that takes no parameter ignores it (Cloudflare's calls it with
// none).
const callFinish = `(async (f) => typeof f === "function" ? await f(globalThis) : await f)`

// defaultName holds the value of an export default expression.
const defaultName = "__codemode_default__"

// Prepared is code ready to transpile: the agent's code, or the code the
// normaliser made of it.
type Prepared struct {
	// Code and Transpile are what to pass to transpile.Module.
	Code      string
	Transpile *transpile.Options
	// Info lists what the normaliser changed, as info diagnostics, and
	// what it found wrong but could not change, as warnings
	// (UNAWAITED_PROMISE).
	Info []diag.Diagnostic

	opts  Options
	plain *transpile.Options // the surface's form of the code as the agent wrote it, for Plain
	src   string             // the agent's code, unfenced
	a     *analysis          // set when Code was made from the analysis
	ed    edits              // Code = ed applied to a.js
	// What was done, for NoResult.
	body  bool   // ran as a function body
	lone  string // "expr" or the name of a lone function declaration that was called
	dflt  string // the name holding the default export's value
	tails bool   // last expression statements were returned
}

// Prepare prepares src for a surface of the given form. It never fails: code
// it cannot read is returned as it is, for transpile to report on.
func Prepare(ctx context.Context, src string, opts *Options) *Prepared {
	var o Options
	if opts != nil {
		o = *opts
	}
	p := &Prepared{opts: o, src: src}
	plain := p.plainOptions()
	text := src
	f, first, fenced := findFence(src)
	if fenced && first {
		text = unfence(src, f)
		p.info("", "the code was inside a markdown fence (```); it ran without the fence lines", "send only the code, without ``` lines")
	}
	// A function body is always read (its last expression may be its
	// value), so transpiling it as it is first would be wasted work,
	// unless a fence after prose must be told from code.
	var diags []diag.Diagnostic
	if o.Mode != Body || fenced && !first {
		_, diags = transpile.Module(ctx, text, plain)
	}
	if len(diags) > 0 && fenced && !first {
		if t := unfence(src, f); t != text {
			if _, d := transpile.Module(ctx, t, plain); len(d) == 0 || !isSyntax(d) {
				text, diags = t, d
				p.info("", "the code was inside a markdown fence (```) after some prose; only the fenced code ran", "send only the code, without prose or ``` lines")
			}
		}
	}
	if t, d, fixed := unescapeBreaks(ctx, text, plain, diags, o.Mode == Body); fixed {
		text, diags = t, d
		p.info("", "the code had no line breaks but literal \\n sequences (escaped twice); they ran as line breaks", "send the code with real line breaks")
	}
	p.src, p.Code, p.Transpile = text, text, plain
	p.plain = plain
	ok := len(diags) == 0
	switch o.Mode {
	case Module:
		if ok && strings.Contains(text, "__codemode_result__") {
			return p // spec form: nothing to do
		}
		if !ok && !onlyTopLevelReturns(diags) {
			return p // a syntax error: transpile reports it
		}
	case Call:
		if ok {
			return p // an expression: Finish calls it
		}
	}
	var known []diag.Diagnostic
	if o.Mode == Module && !ok {
		known = diags // the top-level returns, where esbuild found them
	}
	a, _ := analyze(ctx, text, o.Lang, known...)
	if a == nil {
		if o.Mode == Body {
			// Not statements: perhaps one expression that a statement
			// cannot start with, such as an object literal ({a: 1} reads
			// as a block).
			expr := expressionOptions(o)
			if _, d := transpile.Module(ctx, text, expr); len(d) == 0 {
				p.Transpile, p.plain = expr, expr
				p.info("", "the code is one expression that a statement cannot start with (an object literal reads as a block); its value is the result", "`return` the value: return { ... };")
			}
			return p
		}
		if o.Mode == Call && !ok {
			// Not an expression, and not readable: report on it as a
			// function body, the other form the surface takes.
			p.Transpile = bodyOptions(o, p.callFinish())
			p.plain = p.Transpile
		}
		return p
	}
	p.reshape(a, ok)
	return p
}

// isAsync reports whether name is one of Options.Async.
func (p *Prepared) isAsync(name string) bool { return slices.Contains(p.opts.Async, name) }

// callFinish is Options.Finish, or callFinish for Call.
func (p *Prepared) callFinish() string {
	if p.opts.Finish == "" && p.opts.Mode == Call {
		return callFinish
	}
	return p.opts.Finish
}

// isSyntax reports whether diags are syntax errors.
func isSyntax(diags []diag.Diagnostic) bool {
	return len(diags) > 0 && diags[0].Code == diag.SyntaxError
}

func onlyTopLevelReturns(diags []diag.Diagnostic) bool {
	for _, d := range diags {
		if !strings.Contains(d.Message, "Top-level return") {
			return false
		}
	}
	return len(diags) > 0
}

// plainOptions is the surface's wrapper for code as the agent wrote it.
func (p *Prepared) plainOptions() *transpile.Options {
	o := p.opts
	switch o.Mode {
	case Body:
		return bodyOptions(o, o.Finish)
	case Call:
		finish := o.Finish
		if finish == "" {
			finish = callFinish
		}
		return &transpile.Options{Lang: o.Lang,
			Prefix: o.Imports + o.Bind + "globalThis.__codemode_result__ = await " + finish + "(",
			Suffix: "\n);\n"}
	}
	if o.Imports != "" || o.Bind != "" || o.Lang != "" {
		return &transpile.Options{Lang: o.Lang, Prefix: o.Imports + o.Bind}
	}
	return plainModule
}

// plainModule is the spec's form: a module as it is. Shared: never modified.
var plainModule = &transpile.Options{}

// bodyOptions runs code as the body of an async function. Its return value
// goes through finish (if any) and becomes the result, unless it is
// undefined: then the result is whatever the code assigned to
// __codemode_result__ itself, if anything.
func bodyOptions(o Options, finish string) *transpile.Options {
	open, close := "", ""
	if finish != "" {
		open, close = finish+"(await ", ", true)"
	}
	return &transpile.Options{Lang: o.Lang,
		Prefix: o.Imports + o.Bind + "{const __codemode_value__ = await " + open + "(async () => {",
		Suffix: "\n})()" + close + "; if (__codemode_value__ !== undefined) globalThis.__codemode_result__ = __codemode_value__;}\n"}
}

// expressionOptions runs code that is one expression as a function body's
// return value.
func expressionOptions(o Options) *transpile.Options {
	open, close := "(", "\n)"
	if o.Finish != "" {
		open, close = o.Finish+"(await (", "\n), true)"
	}
	return &transpile.Options{Lang: o.Lang,
		Prefix: o.Imports + o.Bind + "{const __codemode_value__ = await " + open,
		Suffix: close + "; if (__codemode_value__ !== undefined) globalThis.__codemode_result__ = __codemode_value__;}\n"}
}

// unescapeBreaks repairs code sent escaped twice: no line break, but `\n`
// sequences where the breaks were, which the parser refuses. It returns the
// code with real line breaks if that reads, and its diagnostics as the
// surface's form; fixed is false, and nothing is transpiled, for any other
// code. diags are the form's diagnostics for text, unless body is set: then
// the form was not tried yet.
func unescapeBreaks(ctx context.Context, text string, form *transpile.Options, diags []diag.Diagnostic, body bool) (string, []diag.Diagnostic, bool) {
	if strings.ContainsAny(text, "\n\r\u2028\u2029") || !strings.Contains(text, `\n`) {
		return text, diags, false
	}
	tried := diags
	if body {
		_, tried = transpile.Module(ctx, text, form)
	}
	if !isSyntax(tried) || onlyTopLevelReturns(tried) {
		return text, diags, false
	}
	t := strings.NewReplacer(`\r\n`, "\n", `\n`, "\n", `\t`, "\t").Replace(text)
	_, d := transpile.Module(ctx, t, form)
	if isSyntax(d) && !onlyTopLevelReturns(d) {
		return text, diags, false
	}
	if body {
		d = nil // a body is read again whatever happens
	}
	return t, d, true
}

// info records a change.
func (p *Prepared) info(path, msg, hint string) {
	p.Info = append(p.Info, diag.Diagnostic{Severity: diag.SeverityInfo, Code: diag.Normalized, Message: msg, Hint: hint, Path: path})
}

// reshape makes Code from the analysis, or leaves the plain code if nothing
// needs changing.
func (p *Prepared) reshape(a *analysis, plainOK bool) {
	o := p.opts
	body := o.Mode != Module || a.ret
	var ed edits
	real := p.statements(a)
	canonical := p.canonicalReturn()

	// A default export (the first; a module has at most one).
	dflt := -1
	for i, st := range a.top {
		if st.kind == kDefault && (st.decl >= 0 || st.name != "") {
			dflt = i
			break
		}
	}
	// A lone function: the code is one function and nothing else.
	lone := -1
	if len(real) == 1 && !a.ret && dflt < 0 {
		if st := a.top[real[0]]; st.kind == kExpr && st.fn || st.kind == kFunc && st.name != "" {
			lone = real[0]
		}
	}
	// An entry function, on the function-body surfaces: the code only
	// declares things, and one of the functions it declares is never called
	// (pctx's `async function run()` beside its helpers and constants). A
	// module keeps its semantics: NO_RESULT says to call it.
	entry := -1
	if body && lone < 0 && !a.ret && dflt < 0 && !(o.Mode == Call && o.FunctionOnly) {
		entry = entryFunction(a, real)
	}
	useDefault := dflt >= 0 && !(o.Mode == Module && !body && a.sets)
	if o.Mode == Module && !body && a.sets {
		lone, entry = -1, -1 // the script sets its result itself
	}

	if o.Mode == Call && o.FunctionOnly && lone < 0 {
		return // not a function: transpile reports the expression form's error
	}
	// Tool calls whose values are used without await (UTCP's calls are
	// synchronous, and its scripts write them so): awaited.
	var aw []unawaited
	for _, u := range a.unawaitedCalls(p.isAsync) {
		if !u.fixed {
			// In a function that is not async, no await can go: the
			// value stays a promise, and the run would go on with its
			// undefined fields.
			p.Info = append(p.Info, diag.Diagnostic{Severity: diag.SeverityWarning, Code: diag.UnawaitedPromise, Path: a.origin(u.use),
				Message: u.name + " holds the promise of " + u.call + "(...), not its result (the function around it is not async, so it cannot be awaited there), and the code uses it as a value",
				Hint:    "make the function async and await the call, e.g. await Promise.all(items.map(async (x) => { const " + u.name + " = await " + u.call + "(...); ... }))"})
			continue
		}
		aw = append(aw, u)
		ed = append(ed, edit{u.at, 0, "await "})
		p.info(a.origin(u.use), "the value of "+u.call+"(...) was used as "+u.name+" without await, when it was still a promise; the call was awaited",
			"tool calls are async: const "+u.name+" = await "+u.call+"(...)")
	}
	finish := p.callFinish()
	if body {
		p.body = true
		if a.ret && o.Mode == Module {
			p.info("", "the script has a top-level return, so it ran as the body of an async function whose return value is the result", "")
		}
		for _, st := range a.top {
			switch st.kind {
			case kImport:
				if spec := importSpecifier(st.node.(*ast.ImportDeclaration)); !strings.HasPrefix(spec, "@codemode/") && !a.usesImport(st.node.(*ast.ImportDeclaration)) {
					// Bifrost dropped imports; code written for it imports
					// what it never uses. What it does use fails below, with
					// the module's name.
					ed = append(ed, edit{st.start, st.end - st.start, strings.Repeat("\n", strings.Count(a.js[st.start:st.end], "\n"))})
					p.info(a.origin(st.at), "an import of "+strconv.Quote(spec)+" was dropped: only @codemode/* modules exist, and the code uses nothing it imports", "leave it out")
					continue
				}
				gen := dynamicImport(st.node.(*ast.ImportDeclaration))
				ed = append(ed, edit{st.start, st.end - st.start, gen + strings.Repeat("\n", strings.Count(a.js[st.start:st.end], "\n"))})
				hint := "write " + gen
				if spec := importSpecifier(st.node.(*ast.ImportDeclaration)); !strings.HasPrefix(spec, "@codemode/") {
					hint = `import servers as "@codemode/servers/<serverId>"`
				}
				p.info(a.origin(st.at), "a static import ran as "+strings.TrimSuffix(gen, ";")+" (import declarations cannot appear in a function body)", hint)
			case kExport:
				if st.decl >= 0 {
					ed = append(ed, edit{st.at, st.decl - st.at, ""})
				} else {
					ed = append(ed, edit{st.start, st.end - st.start, strings.Repeat("\n", strings.Count(a.js[st.start:st.end], "\n"))})
				}
				p.info(a.origin(st.at), "`export` was dropped: a function body exports nothing", "leave out `export`; "+canonical)
			}
		}
		substantive := len(ed) > 0
		for _, r := range a.rets {
			text := "return "
			if !strings.HasSuffix(a.js[r.at:r.at+r.n], " ") && !strings.HasSuffix(a.js[r.at:r.at+r.n], "=") {
				text = "return"
			}
			ed = append(ed, edit{r.at, r.n, text})
		}
		switch {
		case useDefault:
			st := a.top[dflt]
			name := p.bindDefault(a, st, &ed)
			ed = append(ed, edit{len(a.js), 0, "\n;return await (async (d) => typeof d === \"function\" && d.length === 0 ? await d() : d)(" + name + ");"})
			p.info(a.origin(st.at), "the default export's value is the result (called, as it takes no parameters)", canonical)
		case entry >= 0:
			st := a.top[entry]
			// Called after everything else is declared, as pctx does.
			ed = append(ed, edit{len(a.js), 0, "\n;return await " + st.name + "();"})
			p.lone = st.name
			p.info(a.origin(st.at), "the code declares the function "+st.name+" and never calls it; it was called last and its return value is the result", p.loneHint(st))
		case lone >= 0:
			st := a.top[lone]
			ed = append(ed, edit{st.at, 0, "return "})
			p.lone = "expr"
			if st.kind == kFunc {
				p.lone = st.name
			}
			if finish == "" {
				finish = callFinish
			}
			what := "the code is a function expression"
			if st.kind == kFunc {
				what = "the code only declares the function " + st.name
			} else if strings.HasSuffix(strings.TrimSpace(p.src), ";") && o.Mode == Call {
				what = "the code is a function followed by `;`"
			}
			p.info(a.origin(st.at), what+"; it was called and its return value is the result", p.loneHint(st))
		default:
			for _, t := range a.tail {
				ed = append(ed, edit{t, 0, "return "})
			}
			if len(a.tail) > 0 {
				p.tails = true
				p.info(a.origin(a.tail[0]), "the value of the last expression is the result when no return runs before it", "end with `return <value>`")
			}
		}
		substantive = substantive || useDefault || lone >= 0 || entry >= 0 || len(a.tail) > 0 || len(aw) > 0
		if !substantive && plainOK && o.Mode != Module {
			return // plain code runs as it is
		}
		p.set(a, ed, bodyOptions(o, finish))
		return
	}

	// A module that stays a module.
	var call string
	switch {
	case useDefault:
		st := a.top[dflt]
		name := p.bindDefault(a, st, &ed)
		call, p.dflt = `typeof d === "function" && d.length === 0`, name
		p.info(a.origin(st.at), "the module's default export is its result (awaited; called, if it is a function without parameters)", "")
		p.finishModule(a, ed, name, call)
	case len(aw) > 0 && lone < 0:
		o := *p.plainOptions()
		p.set(a, ed, &o)
	case lone >= 0:
		st := a.top[lone]
		name := st.name
		if st.kind == kExpr {
			ed = append(ed, edit{st.at, 0, "const " + defaultName + " = "})
			name = defaultName
			p.lone = "expr"
		} else {
			p.lone = name
		}
		call = `typeof d === "function"`
		p.info(a.origin(st.at), "the script only defines a function; it was called and its return value is the result", p.loneHint(st))
		p.finishModule(a, ed, name, call)
	}
}

// entryNames are the names an entry function goes by, most likely first,
// when a script declares several functions it never calls.
var entryNames = []string{"run", "main"}

// entryFunction returns the index in a.top of the function a script that
// only declares things means to run: the one function (declared, or bound
// to a const) never named again, if it is the last statement, or the one
// called run or main. -1 if there is none, or if a statement other than a
// declaration does something.
func entryFunction(a *analysis, real []int) int {
	var uncalled []int
	for _, i := range real {
		st := a.top[i]
		switch st.kind {
		case kFunc:
			if st.name != "" && a.refs[st.name] <= 1 && st.params == 0 {
				uncalled = append(uncalled, i)
			}
		case kVar:
			// const run = async () => { ... }
			if st.fn && st.name != "" && a.refs[st.name] <= 1 && st.params == 0 {
				uncalled = append(uncalled, i)
			}
		case kClass, kExport:
		default:
			return -1
		}
	}
	// The last statement, as the code's conclusion, or one named as entry
	// functions are: an uncalled helper before a declaration the code ends
	// with is no entry (the code forgot its return; NO_RESULT says so).
	if len(uncalled) == 1 && uncalled[0] == real[len(real)-1] {
		return uncalled[0]
	}
	for _, name := range entryNames {
		for _, i := range uncalled {
			if a.top[i].name == name {
				return i
			}
		}
	}
	return -1
}

// finishModule ends a module with the call that makes its default value the
// result, unless the script assigned one.
func (p *Prepared) finishModule(a *analysis, ed edits, name, call string) {
	if p.dflt == "" {
		p.dflt = name
	}
	suffix := "\n;await (async (d) => { const v = await (" + call + " ? d() : d); if (typeof v !== \"function\" && globalThis.__codemode_result__ === undefined) globalThis.__codemode_result__ = v; })(" + name + ");\n"
	o := *p.plainOptions()
	o.Lang = "js"
	o.Suffix += suffix
	p.set(a, ed, &o)
}

// bindDefault rewrites `export default x` so that a name holds x, and
// returns the name.
func (p *Prepared) bindDefault(a *analysis, st stmt, ed *edits) string {
	if st.decl < 0 { // export { name as default }
		if p.body {
			*ed = append(*ed, edit{st.start, st.end - st.start, strings.Repeat("\n", strings.Count(a.js[st.start:st.end], "\n"))})
		}
		return st.name
	}
	if st.name != "" { // export default function f() {} / class C {}: keep the declaration
		*ed = append(*ed, edit{st.at, st.decl - st.at, ""})
		return st.name
	}
	*ed = append(*ed, edit{st.at, st.decl - st.at, "const " + defaultName + " = "})
	return defaultName
}

// set makes Code from the analysis's JavaScript with ed applied.
func (p *Prepared) set(a *analysis, ed edits, o *transpile.Options) {
	ed.sort()
	p.a, p.ed = a, ed
	p.Code = ed.apply(a.js)
	t := *o
	t.Lang = "js"
	p.Transpile = &t
}

// statements returns the indices of the top-level statements that do
// something: not imports, not empty statements.
func (p *Prepared) statements(a *analysis) []int {
	var out []int
	for i, st := range a.top {
		list := st.kind == kExport && st.decl < 0 // export { a, b }: esbuild's, for `export const a`
		if st.kind != kImport && st.kind != kEmpty && !list {
			out = append(out, i)
		}
	}
	return out
}

// canonicalReturn says how the surface's code hands back its result.
func (p *Prepared) canonicalReturn() string {
	if p.opts.Mode == Module {
		return "assign the result to globalThis.__codemode_result__"
	}
	return "`return` the result"
}

// loneHint shows the canonical form of a lone function for the surface.
func (p *Prepared) loneHint(st stmt) string {
	switch p.opts.Mode {
	case Module:
		if st.kind == kFunc {
			return "call it yourself: globalThis.__codemode_result__ = await " + st.name + "();"
		}
		return "write the function's body at the top level and assign globalThis.__codemode_result__"
	case Body:
		if st.kind == kFunc {
			return "call it yourself: return await " + st.name + "();"
		}
		return "write the function's body itself, ending with `return <value>`"
	}
	return "send the function without a trailing `;`: async () => { ... }"
}

// Position returns the function that maps a position in out (the
// transpiled Code) to "file:line:col" in the agent's source.
func (p *Prepared) Position(out *transpile.Output) func(line, col int) string {
	if p.a == nil {
		return out.Position
	}
	return func(line, col int) string {
		return p.MapPath(out.Position(line, col))
	}
}

// MapPath maps a "file:line:col" path in Code to the agent's source.
func (p *Prepared) MapPath(path string) string {
	if p.a == nil || path == "" {
		return path
	}
	off, ok := offsetOf(p.Code, path)
	if !ok {
		return path
	}
	return p.a.origin(p.ed.back(off))
}

// Plain returns the agent's code as it is (without a markdown fence), in
// the surface's form: what to run if the reshaped Code does not transpile.
func (p *Prepared) Plain() *Prepared {
	if p.a == nil {
		return p
	}
	return &Prepared{Code: p.src, Transpile: p.plain, Info: p.fenceInfo(), opts: p.opts, src: p.src}
}

// fenceInfo is the info about a markdown fence, if any: the only change the
// plain code keeps.
func (p *Prepared) fenceInfo() []diag.Diagnostic {
	var out []diag.Diagnostic
	for _, d := range p.Info {
		if strings.Contains(d.Message, "markdown fence") {
			out = append(out, d)
		}
	}
	return out
}

// Changed reports whether Code differs from the agent's code (beyond a
// markdown fence).
func (p *Prepared) Changed() bool { return p.a != nil }

// MemberCall is a call obj.member(...) in the code, at Line of the agent's
// source; Object is a name or a dotted path of names (tb.session).
type MemberCall struct {
	Object, Member string
	Line           int
}

// Calls returns the obj.member(...) calls of the code (nil if it cannot be
// read): with an error's line, they tell what "not a function" was called.
func (p *Prepared) Calls(ctx context.Context) []MemberCall {
	a, _ := analyze(ctx, p.src, p.opts.Lang)
	if a == nil {
		return nil
	}
	out := make([]MemberCall, len(a.call))
	for i, c := range a.call {
		out[i] = MemberCall(c)
	}
	return out
}

// ReadsAt returns the names of the properties the code reads with a dot
// (x.name) on line of the agent's source (nil if it cannot be read): with
// an error's line, they tell what was read of undefined.
func (p *Prepared) ReadsAt(ctx context.Context, line int) []string {
	a, _ := analyze(ctx, p.src, p.opts.Lang)
	if a == nil {
		return nil
	}
	return a.read[line]
}

// Unawaited returns an UNAWAITED_PROMISE warning if the code, as it ran,
// declares a tool call's value without await and uses it as a value on
// the given line of the agent's source (any line if line is 0): code the
// normaliser ran as written (a call surface's function, a module that sets
// its result), whose promise's fields were undefined. With an error on
// that line ("cannot read property"), or a null result, the missing await
// is the fix. nil otherwise, and for code the normaliser awaited or warned
// about already.
func (p *Prepared) Unawaited(ctx context.Context, line int) *diag.Diagnostic {
	if p.a != nil {
		return nil
	}
	a, _ := analyze(ctx, p.src, p.opts.Lang)
	if a == nil {
		return nil
	}
	return p.unawaited(a, line)
}

func (p *Prepared) unawaited(a *analysis, line int) *diag.Diagnostic {
	if p.a != nil {
		return nil // the reshaped code awaited them, or said why not
	}
	for _, u := range a.unawaitedCalls(p.isAsync) {
		if line != 0 && a.originLine(u.use) != line {
			continue
		}
		return &diag.Diagnostic{Severity: diag.SeverityWarning, Code: diag.UnawaitedPromise, Path: a.origin(u.use),
			Message: u.name + " holds the promise of " + u.call + "(...), not its result, and the code uses it as a value (a promise's fields are undefined)",
			Hint:    "tool calls are async: const " + u.name + " = await " + u.call + "(...)"}
	}
	return nil
}

// NoResult returns a NO_RESULT warning if a run of the code ended without
// error and with a null result although the code looks like it meant to
// produce a value: a final expression statement or declaration, a function
// never called, a default export that was not used. Otherwise nil.
func (p *Prepared) NoResult(ctx context.Context, result json.RawMessage, diags []diag.Diagnostic) *diag.Diagnostic {
	if strings.TrimSpace(string(result)) != "null" {
		return nil
	}
	for _, d := range diags {
		if d.Severity == diag.SeverityError {
			return nil
		}
	}
	a, _ := analyze(ctx, p.src, p.opts.Lang)
	if a == nil {
		return nil
	}
	if d := p.unawaited(a, 0); d != nil {
		return d
	}
	if p.opts.Mode == Module && !p.body && a.sets && p.dflt == "" {
		return nil // it assigns its result itself; null is its value
	}
	warn := func(off int, msg, hint string) *diag.Diagnostic {
		return &diag.Diagnostic{Severity: diag.SeverityWarning, Code: diag.NoResult, Message: msg, Hint: hint, Path: a.origin(off)}
	}
	ret := p.canonicalFix
	switch {
	case p.dflt != "" && p.lone == "":
		st := p.defaultStmt(a)
		return warn(st.at, "the default export gave no value: a function with parameters is not called, and one that returns nothing gives undefined",
			"export a function without parameters that returns the value: export default async () => { ...; return value; }")
	case p.lone != "":
		st := a.top[p.statements(a)[0]]
		for _, s := range a.top {
			if (s.kind == kFunc || s.kind == kVar && s.fn) && s.name == p.lone {
				st = s
			}
		}
		return warn(st.at, "the function ran but returned nothing (undefined)", "end the function with `return <value>`")
	}
	real := p.statements(a)
	if len(real) == 0 {
		return nil
	}
	if p.opts.Mode == Call && !p.body {
		// An expression: its value was the result, or it was a function
		// that Finish called.
		if st := a.top[real[0]]; len(real) == 1 && st.kind == kExpr && st.fn {
			return warn(st.at, "the function ran but returned nothing (undefined)", "end the function with `return <value>`")
		}
		return nil
	}
	// A function declared and never called: the last statement, or one
	// named as entry functions are.
	for _, i := range real {
		st := a.top[i]
		if (st.kind == kFunc || st.kind == kVar && st.fn) && st.name != "" && a.refs[st.name] <= 1 &&
			(i == real[len(real)-1] || slices.Contains(entryNames, st.name)) {
			return warn(st.at, "the function "+st.name+" is declared but never called, so nothing ran", ret("await "+st.name+"()"))
		}
	}
	last := a.top[real[len(real)-1]]
	switch last.kind {
	case kExpr:
		if last.console || last.fn {
			return nil
		}
		text := statementText(a, last)
		if p.tails {
			return warn(last.at, "the last expression ("+text+") evaluated to undefined, so the result is null",
				"return the value you want, e.g. return await <tool call>")
		}
		return warn(last.at, "the script ends with an expression ("+text+") whose value is discarded", ret(text))
	case kVar:
		if last.name != "" {
			return warn(last.at, "the script's last statement declares "+last.name+" but the result is null", ret(last.name))
		}
	}
	return nil
}

// canonicalFix is the one line that makes expr the result on this surface.
func (p *Prepared) canonicalFix(expr string) string {
	if p.opts.Mode == Module && !p.body {
		return "globalThis.__codemode_result__ = " + expr + ";"
	}
	return "return " + expr + ";"
}

func (p *Prepared) defaultStmt(a *analysis) stmt {
	for _, st := range a.top {
		if st.kind == kDefault {
			return st
		}
	}
	return stmt{}
}

// statementText is an expression statement's text (as esbuild printed it),
// on one line and clipped, without its semicolon.
func statementText(a *analysis, st stmt) string {
	s := strings.TrimSpace(a.js[st.at:st.end])
	s = strings.TrimSuffix(s, ";")
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 100 {
		s = string(r[:97]) + "…"
	}
	return s
}
