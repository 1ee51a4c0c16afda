package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"modernc.org/quickjs"

	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/engine"
	"github.com/codemode-mcp/codemode/internal/testutil"
)

// Hostile scripts (codemode-spec §11). Every table entry is one attack with
// an assertion that fails if the attack works; TestAttacks runs them all,
// in parallel, then checks that the process is still healthy and that no
// goroutine was left behind.

// attack is one hostile script and what the sandbox must make of it.
type attack struct {
	name string
	code string
	// opts returns the run's options; nil means a fresh testHost and the
	// table's limits.
	opts func() *Options
	// run replaces the plain Run, for attacks that need a context or a host
	// of their own (cancellation, say).
	run   func(t *testing.T) *Result
	check func(t *testing.T, res *Result)
}

// loopLimits keep the cases that end at the timeout short. The other
// tables get calmLimits: they must end on their own, and a loaded test
// machine must not turn them into timeouts (-race makes the engine much
// slower).
var (
	loopLimits = Limits{Timeout: 400 * time.Millisecond, MaxMemoryBytes: 32 << 20}
	calmLimits = Limits{Timeout: roomy, MaxMemoryBytes: 32 << 20}
)

func withLimits(l Limits) func() *Options {
	return func() *Options { return newTestHost().options(l) }
}

// --- code generation from strings (§3.5, §11) -------------------------------

// evalSource is what every code-generation attack tries to compile and run.
// It is valid both as a script and as a function body, so a SyntaxError
// would mean it reached the compiler.
const evalSource = `globalThis.pwned = true; console.log("PWNED");`

// codegen wraps attempt (statements, await allowed) so that the result says
// whether it threw and whether evalSource ran.
func codegen(name, attempt string) attack {
	src, _ := json.Marshal(evalSource)
	code := fmt.Sprintf(`const S = %s;
let outcome = "no exception";
try {
  await (async () => { %s })();
} catch (e) {
  outcome = (e && e.name) || String(e);
}
// Let anything the attempt scheduled run before the verdict.
await new Promise((r) => setTimeout(r, 5));
globalThis.__codemode_result__ = { outcome, pwned: globalThis.pwned === true };
`, src, attempt)
	return attack{name: name, code: code, check: notEvaluated}
}

// notEvaluated: the string never ran, and the attempt threw a TypeError,
// EvalError or ReferenceError, or the CodemodeError of an import the host
// refused (or, for a static import, the run failed to link). A SyntaxError
// would mean the string was compiled.
func notEvaluated(t *testing.T, res *Result) {
	t.Helper()
	for _, l := range res.Logs {
		if strings.Contains(l.Message, "PWNED") {
			t.Fatalf("code from a string ran: %s", logString(res))
		}
	}
	if res.Failed() {
		return // it did not even link
	}
	var out struct {
		Outcome string
		Pwned   bool
	}
	if err := json.Unmarshal(res.Result, &out); err != nil {
		t.Fatalf("result %s: %v", res.Result, err)
	}
	if out.Pwned {
		t.Fatal("code from a string ran (globalThis.pwned is set)")
	}
	switch out.Outcome {
	case "TypeError", "EvalError", "ReferenceError", "CodemodeError":
	default:
		t.Errorf("the attempt ended with %q, want a TypeError, EvalError, ReferenceError or CodemodeError", out.Outcome)
	}
}

// failsToLink: a static import that must fail the run with IMPORT_FAILURE,
// before any of the agent's code runs.
func failsToLink(t *testing.T, res *Result) {
	t.Helper()
	wantDiag(t, res, diag.ImportFailure)
	if len(res.Logs) != 0 {
		t.Errorf("agent code ran although its imports failed: %s", logString(res))
	}
}

var codegenAttacks = []attack{
	codegen("eval", `eval(S);`),
	codegen("indirect eval", `(0, globalThis["ev" + "al"])(S);`),
	codegen("eval through Reflect.get", `Reflect.get(globalThis, "eval")(S);`),
	codegen("Function call", `Function(S)();`),
	codegen("new Function", `new Function(S)();`),
	codegen("new Function with parameters", `new Function("a", "b", S)(1, 2);`),
	codegen("function constructor", `(function () {}).constructor(S)();`),
	codegen("arrow constructor", `(() => {}).constructor(S)();`),
	codegen("method constructor", `({ m() {} }).m.constructor(S)();`),
	codegen("getter constructor", `Object.getOwnPropertyDescriptor({ get x() { return 1; } }, "x").get.constructor(S)();`),
	codegen("AsyncFunction constructor", `await (async () => {}).constructor(S)();`),
	codegen("GeneratorFunction constructor", `(function* () {}).constructor(S)().next();`),
	codegen("AsyncGeneratorFunction constructor", `await (async function* () {}).constructor(S)().next();`),
	codegen("getPrototypeOf(function).constructor", `Object.getPrototypeOf(function () {}).constructor(S)();`),
	codegen("getPrototypeOf(async function).constructor", `await Object.getPrototypeOf(async function () {}).constructor(S)();`),
	codegen("getPrototypeOf(generator).constructor", `Object.getPrototypeOf(function* () {}).constructor(S)().next();`),
	codegen("getPrototypeOf(async generator).constructor", `await Object.getPrototypeOf(async function* () {}).constructor(S)().next();`),
	codegen("generator prototype chain", `Object.getPrototypeOf(Object.getPrototypeOf((function* () {})())).constructor.constructor(S)().next();`),
	codegen("Reflect.construct", `Reflect.construct(Function, [S])();`),
	codegen("Reflect.construct with a newTarget", `Reflect.construct((async () => {}).constructor, [S], Function)();`),
	codegen("Reflect.apply", `Reflect.apply(Function.prototype.constructor, null, [S])();`),
	codegen("constructor.call", `Function.prototype.constructor.call(null, S)();`),
	codegen("constructor.apply", `Function.prototype.constructor.apply(null, [S])();`),
	codegen("descriptor of Function.prototype.constructor", `Object.getOwnPropertyDescriptor(Function.prototype, "constructor").value(S)();`),
	codegen("class constructor", `(class {}).constructor(S)();`),
	codegen("class extends Function", `class F extends Function {} new F(S)();`),
	codegen("class extends AsyncFunction", `class F extends (async () => {}).constructor {} await new F(S)();`),
	codegen("class extends GeneratorFunction", `class F extends (function* () {}).constructor {} new F(S)().next();`),
	codegen("bound function constructor", `(function () {}).bind(null).constructor(S)();`),
	codegen("bound Function", `Function.bind(null, S)()();`),
	codegen("Proxy around Function", `new Proxy(Function, {})(S)();`),
	codegen("Proxy construct trap", `new (new Proxy(function () {}, { construct: (t, a) => new t.constructor(...a) }))(S);`),
	// Array species: map() constructs its result with the constructor's
	// @@species, here the Function constructor.
	codegen("Symbol.species of an array", `const a = [S]; a.constructor = { [Symbol.species]: Function }; a.map((x) => x)();`),
	codegen("Symbol.species of a promise", `class P extends Promise { static get [Symbol.species]() { return Function; } } P.resolve(1).then(() => {});`),
	codegen("built-in method constructor", `Math.max.constructor(S)();`),
	codegen("Object constructor chain", `({}).constructor.constructor(S)();`),
	codegen("String constructor chain", `"".constructor.constructor(S)();`),
	codegen("Symbol constructor chain", `Symbol.constructor(S)();`),
	codegen("Error constructor chain", `new Error().constructor.constructor(S)();`),
	codegen("Promise constructor chain", `Promise.resolve().constructor.constructor(S)();`),
	codegen("Iterator helper constructor", `Iterator.prototype.map.constructor(S)();`),
	codegen("console.log constructor", `console.log.constructor(S)();`),
	codegen("setTimeout constructor", `setTimeout.constructor(S)();`),
	codegen("URL method constructor", `new URL("https://a.example").toString.constructor(S)();`),
	codegen("TextDecoder constructor chain", `TextDecoder.constructor(S)();`),
	codegen("@codemode/errors class constructor", `(await import("@codemode/errors")).ToolCallError.constructor(S)();`),
	codegen("server function constructor", `(await import("@codemode/servers/x")).ping.constructor(S)();`),
	codegen("redefine Function.prototype.constructor", `Object.defineProperty(Function.prototype, "constructor", { value: function () {} });`),
	codegen("assign Function.prototype.constructor", `Function.prototype.constructor = function () {};`),
	codegen("delete Function.prototype.constructor", `delete Function.prototype.constructor;`),
	codegen("redefine the AsyncFunction constructor", `Object.defineProperty(Object.getPrototypeOf(async () => {}), "constructor", { value: 1 });`),
	codegen("setTimeout with a string", `setTimeout(S, 0);`),
	codegen("setTimeout with a String object", `setTimeout(new String(S), 0);`),
	codegen("setTimeout with an object that converts to code", `setTimeout({ toString: () => S }, 0);`),
	codegen("import a data: URL", `await import("data:text/javascript," + encodeURIComponent(S));`),
	codegen("import node:fs", `await import("node:fs");`),
	codegen("import fs", `await import("fs");`),
	codegen("import an https URL", `await import("https://example.com/x.js");`),
	codegen("import a relative file", `await import("./x.js");`),
	codegen("dynamic import of @codemode/internal", `await import("@codemode/internal");`),
	codegen("import @codemode/internal by another name", `await import("@codemode/servers/../internal");`),
	codegen("import the agent module again", `await import("<agent>");`),
	{name: "static import of @codemode/internal", check: failsToLink,
		code: `import { call } from "@codemode/internal"; console.log("PWNED", typeof call);`},
	{name: "re-export of @codemode/internal", check: failsToLink,
		code: `export * from "@codemode/internal"; console.log("PWNED");`},
	{name: "static import of node:fs", check: failsToLink,
		code: `import * as fs from "node:fs"; console.log("PWNED", fs);`},
	{name: "static import of a data: URL", check: failsToLink,
		code: `import x from "data:text/javascript,export default 1"; console.log("PWNED", x);`},
	{name: "internal after a legitimate import", check: failsToLink,
		code: `import { ping } from "@codemode/servers/x"; import { call } from "@codemode/internal"; console.log("PWNED");`},
}

// --- reaching the host through the realm ------------------------------------

var hostReachAttacks = []attack{
	{
		// A strict-mode function's caller is never exposed, so a timer
		// callback cannot climb to the bootstrap's fire().
		name: "caller of a timer callback",
		code: `let outcome;
await new Promise((r) => setTimeout(function cb() {
  try { outcome = typeof cb.caller; } catch (e) { outcome = e.name; }
  r();
}, 0));
let callee;
try { callee = typeof (function () { return arguments.callee; })(); } catch (e) { callee = e.name; }
globalThis.__codemode_result__ = { outcome, callee };`,
		check: func(t *testing.T, res *Result) {
			wantResult(t, res, `{"outcome":"TypeError","callee":"TypeError"}`)
		},
	},
	{
		// The bootstrap's handoff and host functions are gone, under any
		// name and through any reflection.
		name: "host functions by reflection",
		code: `const names = Reflect.ownKeys(globalThis).map(String);
const found = names.filter((k) => /^__cm|handoff|install|settle/.test(k));
for (const k of ["__cm_handoff", "__cm_call", "__cm_install"]) {
  if (Object.getOwnPropertyDescriptor(globalThis, k) !== undefined || k in globalThis) found.push(k);
}
globalThis.__codemode_result__ = found;`,
		check: func(t *testing.T, res *Result) { wantResult(t, res, `[]`) },
	},
	{
		// Replace every way of calling a function and check the bootstrap
		// never hands one of its own functions to agent code while it
		// serves a host call, a timer, the console, URL and TextDecoder.
		name: "call/apply/bind hijack",
		code: `import { ping, fail } from "@codemode/servers/x";
const leaked = [];
const rapply = Reflect.apply;
const ours = new Set();
const spy = (orig) => { const f = function (...a) { if (!ours.has(this)) leaked.push(String(this && this.name)); return rapply(orig, this, a); }; ours.add(f); return f; };
Function.prototype.call = spy(Function.prototype.call);
Function.prototype.apply = spy(Function.prototype.apply);
Function.prototype.bind = spy(Function.prototype.bind);
Reflect.apply = function (f, t, a) { leaked.push("Reflect.apply:" + String(f && f.name)); return rapply(f, t, a); };
const r = (x) => x; ours.add(r);
await ping(1);
try { await fail(1); } catch (e) {}
await new Promise((res) => { const cb = (x) => res(x); ours.add(cb); setTimeout(cb, 0, 1); });
console.log("x", { a: 1 }, new Error("e"));
new TextDecoder().decode(new TextEncoder().encode("é"), { stream: true });
new URL("https://a.example/?a=1").searchParams.append("b", "2");
globalThis.__codemode_result__ = leaked;`,
		check: func(t *testing.T, res *Result) { wantResult(t, res, `[]`) },
	},
}

// --- prototype pollution and the host's report (§11) ------------------------

// pollutionAttacks pollute the realm and check that what the host reports
// (diagnostics, logs, results and errors of host calls) is still the truth.
var pollutionAttacks = []attack{
	{
		name: "Object.prototype pollution and an uncaught host error",
		code: `import { fail } from "@codemode/servers/x";
Object.prototype.isError = false;
Object.prototype.errorClass = "SandboxLimitError";
Object.prototype.hint = "polluted hint";
Object.prototype.name = "Polluted";
Object.prototype.toJSON = function () { return "polluted"; };
await fail(1);`,
		check: wantHostErrorDiagnostic,
	},
	{
		name: "Error.prototype overridden and an uncaught host error",
		code: `import { fail } from "@codemode/servers/x";
Error.prototype.name = "Hacked";
Error.prototype.toString = () => "hacked";
Object.defineProperty(Error.prototype, "message", { get() { return "hacked"; }, configurable: true });
Object.defineProperty(Error.prototype, "stack", { get() { return "hacked"; }, configurable: true });
await fail(1);`,
		check: wantHostErrorDiagnostic,
	},
	{
		// instanceof consults @@hasInstance, which agent code can define
		// on Error (not frozen); the host's classification must not.
		name: "Error[Symbol.hasInstance] hijack and an uncaught host error",
		code: `import { fail } from "@codemode/servers/x";
Object.defineProperty(Error, Symbol.hasInstance, { value: () => false });
await fail(1);`,
		check: wantHostErrorDiagnostic,
	},
	{
		name: "Error[Symbol.hasInstance] hijack and console.log of a host error",
		code: `import { fail } from "@codemode/servers/x";
let caught;
try { await fail(1); } catch (e) { caught = e; }
Object.defineProperty(Error, Symbol.hasInstance, { value: () => false });
console.log(caught);`,
		check: func(t *testing.T, res *Result) {
			wantOK(t, res)
			if len(res.Logs) != 1 || !strings.HasPrefix(res.Logs[0].Message, "ToolCallError: "+failMessage) {
				t.Errorf("log of a host error: %s", logString(res))
			}
		},
	},
	{
		// Inherited accessor keys turn every descriptor literal
		// ({ value, ... }) into an invalid one.
		name: "Object.prototype.get pollution and a caught host error",
		code: `import { fail } from "@codemode/servers/x";
import { ToolCallError } from "@codemode/errors";
Object.prototype.get = function () { return 1; };
let out;
try { await fail(1); out = "no error"; } catch (e) { out = { cls: e instanceof ToolCallError, name: e.name, message: e.message, hint: e.hint, serverId: e.serverId }; }
delete Object.prototype.get;
globalThis.__codemode_result__ = out;`,
		check: wantCaughtHostError,
	},
	{
		name: "Object.prototype setters for error fields",
		code: `import { fail } from "@codemode/servers/x";
import { ToolCallError } from "@codemode/errors";
for (const k of ["hint", "serverId", "toolName", "message", "class", "fields"]) {
  Object.defineProperty(Object.prototype, k, { get() { return "fake"; }, set(v) {}, configurable: true });
}
let out;
try { await fail(1); out = "no error"; } catch (e) { out = { cls: e instanceof ToolCallError, name: e.name, message: e.message, hint: e.hint, serverId: e.serverId }; }
for (const k of ["hint", "serverId", "toolName", "message", "class", "fields"]) delete Object.prototype[k];
globalThis.__codemode_result__ = out;`,
		check: wantCaughtHostError,
	},
	{
		name: "Array.prototype pollution and the console",
		code: `Array.prototype.join = () => "hijacked";
Array.prototype.push = () => 0;
Array.prototype[Symbol.iterator] = function* () { yield "hijacked"; };
Array.prototype.map = () => ["hijacked"];
String.prototype.concat = () => "hijacked";
console.log("a", 1, { b: [2, 3] }, [4]);
console.warn();`,
		check: func(t *testing.T, res *Result) {
			wantOK(t, res)
			wantLogs(t, res, "log: a 1 {\"b\":[2,3]} [4]", "warn: ")
		},
	},
	{
		name: "global constructors replaced and the console",
		code: `globalThis.String = () => "hijacked";
globalThis.JSON = { stringify: () => "hijacked", parse: () => "hijacked" };
globalThis.Object = function () { return {}; };
globalThis.Error = function () {};
console.log("s", 2, { c: 3 }, null);`,
		check: func(t *testing.T, res *Result) {
			wantOK(t, res)
			wantLogs(t, res, `log: s 2 {"c":3} null`)
		},
	},
	{
		name: "JSON.stringify and JSON.parse replaced",
		code: `import { ping } from "@codemode/servers/x";
JSON.stringify = () => '"hijacked"';
JSON.parse = () => "hijacked";
const v = await ping({ a: [1, "two"] });
globalThis.__codemode_result__ = { v, ok: v.a[1] === "two" };`,
		check: func(t *testing.T, res *Result) {
			wantResult(t, res, `{"v":{"a":[1,"two"]},"ok":true}`)
		},
	},
	{
		name: "Promise.prototype.then, catch and finally replaced",
		code: `import { ping } from "@codemode/servers/x";
Promise.prototype.then = function () { throw new Error("then hijacked"); };
Promise.prototype.catch = function () { throw new Error("catch hijacked"); };
Promise.prototype.finally = function () { throw new Error("finally hijacked"); };
const v = await ping(41);
globalThis.__codemode_result__ = v + 1;`,
		check: func(t *testing.T, res *Result) { wantResult(t, res, `42`) },
	},
	{
		// The host watches the agent module's promise with then(), which
		// looks up the promise's constructor and its @@species. A
		// successful script must still be reported as a success.
		name: "Promise species hijack",
		code: `try { Promise.prototype.constructor = { get [Symbol.species]() { throw new Error("species hijack"); } }; } catch (e) {}
globalThis.__codemode_result__ = "fine";`,
		check: func(t *testing.T, res *Result) { wantResult(t, res, `"fine"`) },
	},
	{
		// A sandbox may also refuse the redefinition; either way the
		// script's success is reported as such.
		name: "Promise[Symbol.species] hijack",
		code: `try { Object.defineProperty(Promise, Symbol.species, { get() { throw new Error("species hijack"); } }); } catch (e) {}
await null;
globalThis.__codemode_result__ = "fine";`,
		check: func(t *testing.T, res *Result) { wantResult(t, res, `"fine"`) },
	},
	{
		name: "Object and Reflect functions replaced before a host error",
		code: `import { fail } from "@codemode/servers/x";
import { ToolCallError } from "@codemode/errors";
Object.keys = () => [];
Object.defineProperty = () => { throw new Error("hijacked"); };
Object.create = () => { throw new Error("hijacked"); };
Object.freeze = (x) => x;
Reflect.apply = () => { throw new Error("hijacked"); };
let out;
try { await fail(1); out = "no error"; } catch (e) { out = { cls: e instanceof ToolCallError, name: e.name, message: e.message, hint: e.hint, serverId: e.serverId }; }
const fired = await new Promise((r) => setTimeout((a, b) => r(a + b), 0, 1, 2));
globalThis.__codemode_result__ = Object.assign(out, { fired });`,
		check: func(t *testing.T, res *Result) {
			wantResult(t, res, fmt.Sprintf(`{"cls":true,"name":"ToolCallError","message":%q,"hint":%q,"serverId":"x","fired":3}`, failMessage, failHint))
		},
	},
	{
		// A tool result is untrusted input: a "__proto__" key is data.
		name: "__proto__ keys in a tool result",
		code: `import { proto } from "@codemode/servers/x";
const v = await proto();
globalThis.__codemode_result__ = {
  polluted: ({}).polluted !== undefined || Object.prototype.polluted !== undefined,
  protoIsObject: Object.getPrototypeOf(v) === Object.prototype,
  ownProto: Object.prototype.hasOwnProperty.call(v, "__proto__"),
  ok: v.ok,
  keys: Object.keys(v),
};`,
		check: func(t *testing.T, res *Result) {
			wantResult(t, res, `{"polluted":false,"protoIsObject":true,"ownProto":true,"ok":1,"keys":["__proto__","constructor","ok"]}`)
		},
	},
	{
		name: "__proto__ keys in a host error's fields",
		code: `import { protoFail } from "@codemode/servers/x";
import { ToolCallError } from "@codemode/errors";
let out;
try { await protoFail(); } catch (e) {
  out = { cls: e instanceof ToolCallError, protoOK: Object.getPrototypeOf(e) === ToolCallError.prototype,
    polluted: ({}).polluted !== undefined || e.polluted !== undefined, toolName: e.toolName };
}
globalThis.__codemode_result__ = out;`,
		check: func(t *testing.T, res *Result) {
			wantResult(t, res, `{"cls":true,"protoOK":true,"polluted":false,"toolName":"protoFail"}`)
		},
	},
	{
		// The payload of a generated tool function is [serverId, toolName,
		// input]; toJSON on Array.prototype must not redirect the call to
		// another server or tool.
		name: "Array.prototype.toJSON reroutes a tool call",
		opts: func() *Options { return routeHost.options(calmLimits) },
		code: `import { tool } from "@codemode/servers/x";
Array.prototype.toJSON = function () { return ["other-server", "delete_everything", {}]; };
await tool({ route: 1 });`,
		check: func(t *testing.T, res *Result) {
			wantOK(t, res)
			found := false
			for _, p := range routeHost.toolPayloads() {
				if strings.Contains(p, `"route":1`) || strings.Contains(p, "delete_everything") {
					found = true
					if !jsonEqual([]byte(p), []byte(`["x","tool",{"route":1}]`)) {
						t.Errorf("the host received %s, want [\"x\",\"tool\",{\"route\":1}]", p)
					}
				}
			}
			if !found {
				t.Error("the tool call did not reach the host")
			}
		},
	},
	{
		// An import failure the script caught earlier must not relabel a
		// later, unrelated exception as IMPORT_FAILURE.
		name: "caught import failure, then an unrelated exception",
		code: `try { await import("@codemode/servers/nope"); } catch (e) {}
throw new Error("e");`,
		check: func(t *testing.T, res *Result) {
			d := wantDiag(t, res, diag.UncaughtException)
			if !strings.Contains(d.Message, "Error: e") {
				t.Errorf("message %q", d.Message)
			}
		},
	},
}

// routeHost records the payloads of the rerouting attack (a package-level
// host so that its check can read them).
var routeHost = newTestHost()

// wantHostErrorDiagnostic: an uncaught ToolCallError from the host is
// reported as exactly that, whatever the script did to the realm.
func wantHostErrorDiagnostic(t *testing.T, res *Result) {
	t.Helper()
	d := wantDiag(t, res, diag.UncaughtException)
	if d.ErrorClass != diag.ToolCallError {
		t.Errorf("errorClass %q, want ToolCallError: %s", d.ErrorClass, diagString(res))
	}
	if want := "ToolCallError: " + failMessage; !strings.Contains(d.Message, want) {
		t.Errorf("message %q does not contain %q", d.Message, want)
	}
	if d.Hint != failHint {
		t.Errorf("hint %q, want %q", d.Hint, failHint)
	}
}

// wantCaughtHostError: the script caught the host's ToolCallError with its
// real fields.
func wantCaughtHostError(t *testing.T, res *Result) {
	t.Helper()
	wantResult(t, res, fmt.Sprintf(`{"cls":true,"name":"ToolCallError","message":%q,"hint":%q,"serverId":"x"}`, failMessage, failHint))
}

// wantLogs compares the logs, as "level: message", with want.
func wantLogs(t *testing.T, res *Result, want ...string) {
	t.Helper()
	var got []string
	for _, l := range res.Logs {
		got = append(got, string(l.Level)+": "+l.Message)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("logs\n got %q\nwant %q", got, want)
	}
}

// --- tampering with the binding layer (§11) ---------------------------------

// bindingPrelude imports everything the binding attacks tamper with and
// defines attempt(), which records the name of what each try threw.
const bindingPrelude = `import * as ns from "@codemode/servers/x";
import { ping, fail, __meta__ } from "@codemode/servers/x";
import * as errors from "@codemode/errors";
import { CodemodeError, ToolCallError, SandboxLimitError } from "@codemode/errors";
const outcomes = {};
function attempt(name, f) {
  try { f(); outcomes[name] = "no exception"; } catch (e) { outcomes[name] = e.name; }
}
// intact reports whether the bindings still work as the host made them.
async function intact() {
  let err;
  try { await fail(1); } catch (e) { err = e; }
  return (await ping(7)) === 7 && ns.ping === ping && typeof ping === "function" &&
    err instanceof ToolCallError && err instanceof CodemodeError && err instanceof Error &&
    err.name === "ToolCallError" && err.hint === "ask nicely" && err.serverId === "x" &&
    __meta__.serverId === "x" && __meta__.tools.length === 2 && __meta__.tools[0].toolName === "ping" &&
    ToolCallError.prototype.name === "ToolCallError" && Object.getPrototypeOf(ToolCallError.prototype) === CodemodeError.prototype;
}
`

// binding builds an attack that runs attempts (calls of attempt()) and then
// checks that every attempt threw a TypeError and the bindings are intact.
func binding(name, attempts string) attack {
	return attack{
		name: name,
		code: bindingPrelude + attempts + `
globalThis.__codemode_result__ = { outcomes, intact: await intact() };`,
		check: func(t *testing.T, res *Result) {
			wantOK(t, res)
			var out struct {
				Outcomes map[string]string
				Intact   bool
			}
			if err := json.Unmarshal(res.Result, &out); err != nil {
				t.Fatal(err)
			}
			if len(out.Outcomes) == 0 {
				t.Fatal("no attempt was made")
			}
			for k, v := range out.Outcomes {
				if v != "TypeError" {
					t.Errorf("%s: %s, want TypeError", k, v)
				}
			}
			if !out.Intact {
				t.Error("the bindings were changed")
			}
		},
	}
}

var bindingAttacks = []attack{
	binding("assign to an import namespace", `
attempt("assign", () => { ns.ping = () => 7; });
attempt("assign new", () => { ns.extra = 1; });
attempt("define", () => Object.defineProperty(ns, "ping", { value: () => 7 }));
attempt("delete", () => { delete ns.ping; });
attempt("setPrototypeOf", () => Object.setPrototypeOf(ns, { ping: () => 7 }) && undefined);
attempt("assign to the errors namespace", () => { errors.ToolCallError = class {}; });
`),
	binding("assign to an imported binding", `
attempt("ping", () => { ping = () => 7; });
attempt("ToolCallError", () => { ToolCallError = class {}; });
`),
	binding("tamper with exported functions", `
attempt("assign call", () => { ping.call = () => 7; });
attempt("define name", () => Object.defineProperty(ping, "name", { value: "x" }));
attempt("setPrototypeOf", () => Object.setPrototypeOf(ping, null));
attempt("add a property", () => { fail.extra = 1; });
`),
	binding("tamper with @codemode/errors classes", `
attempt("prototype name", () => { ToolCallError.prototype.name = "X"; });
attempt("static property", () => { CodemodeError.extra = 1; });
attempt("define hasInstance", () => Object.defineProperty(ToolCallError, Symbol.hasInstance, { value: () => true }));
attempt("setPrototypeOf class", () => Object.setPrototypeOf(ToolCallError, function () {}));
attempt("setPrototypeOf prototype", () => Object.setPrototypeOf(ToolCallError.prototype, {}));
attempt("prototype method", () => { CodemodeError.prototype.toString = () => "x"; });
attempt("replace prototype", () => { SandboxLimitError.prototype = {}; });
`),
	binding("tamper with a host error", `
let e; try { await fail(1); } catch (x) { e = x; }
attempt("hint", () => { e.hint = "other"; });
attempt("serverId", () => { e.serverId = "y"; });
attempt("delete hint", () => { delete e.hint; });
attempt("define hint", () => Object.defineProperty(e, "hint", { value: "other" }));
if (e.hint !== "ask nicely" || e.serverId !== "x") outcomes.changed = "changed";
`),
	binding("tamper with a deep-frozen __meta__", `
attempt("assign", () => { __meta__.serverId = "y"; });
attempt("push", () => __meta__.tools.push({ toolName: "evil" }));
attempt("nested", () => { __meta__.tools[0].toolName = "evil"; });
attempt("define", () => Object.defineProperty(__meta__, "serverId", { value: "y" }));
attempt("delete", () => { delete __meta__.tools; });
attempt("setPrototypeOf", () => Object.setPrototypeOf(__meta__, { serverId: "y" }));
attempt("replace", () => { __meta__ = {}; });
Object.freeze(__meta__); // freezing again is harmless
`),
}

// --- exhaustion: loops, memory, recursion, floods ---------------------------

// timesOut: the wall-clock timeout stopped the script.
func timesOut(t *testing.T, res *Result) {
	t.Helper()
	if !res.TimedOut {
		t.Errorf("TimedOut is false: %s", diagString(res))
	}
	wantLimit(t, res, "timeoutMs")
}

// cancelsTimers: the script finished with timers still waiting; the run
// ends at once with its result, the timers cancelled (see cancelTimers).
func cancelsTimers(want string) func(*testing.T, *Result) {
	return func(t *testing.T, res *Result) {
		t.Helper()
		// Waiting for the timers instead would end at the timeout, result
		// lost.
		if string(res.Result) != want || res.Failed() {
			t.Errorf("result %s after %v, want %s: %s", res.Result, res.Duration, want, diagString(res))
		}
		if len(res.Diagnostics) != 1 || res.Diagnostics[0].Code != diag.TimersCancelled || res.Diagnostics[0].Severity != diag.SeverityInfo {
			t.Errorf("want one TIMERS_CANCELLED info: %s", diagString(res))
		}
	}
}

// stopsAtALimit: a flood whose memory grows may meet either limit first.
func stopsAtALimit(t *testing.T, res *Result) {
	t.Helper()
	if res.OutOfMemory {
		wantLimit(t, res, "maxMemoryBytes")
		return
	}
	timesOut(t, res)
}

// memoryBounded: the run failed because the script wanted too much memory,
// as SANDBOX_LIMIT or as an engine RangeError/InternalError about a length.
func memoryBounded(t *testing.T, res *Result) {
	t.Helper()
	if res.TimedOut {
		t.Fatalf("the memory bomb ran until the timeout instead of hitting a limit: %s", diagString(res))
	}
	if res.OutOfMemory {
		wantLimit(t, res, "maxMemoryBytes")
		return
	}
	if res.TooLong {
		// An array method over more elements than memory could hold
		// (filling an array no memory limit could fit, say).
		wantLimit(t, res, "Array.prototype.")
		return
	}
	if !res.Failed() {
		t.Fatalf("the memory bomb succeeded: result %s", res.Result)
	}
	d := res.Diagnostics[0]
	for _, s := range []string{"RangeError", "too long", "invalid array length", "Invalid array length", "out of memory"} {
		if strings.Contains(d.Message, s) {
			return
		}
	}
	t.Errorf("unexpected failure: %s", diagString(res))
}

// memoryOrTime: memoryBounded, or, on a slow machine, the timeout came
// first (either limit ends it).
func memoryOrTime(t *testing.T, res *Result) {
	t.Helper()
	if res.TimedOut {
		timesOut(t, res)
		return
	}
	memoryBounded(t, res)
}

func failsWith(code diag.Code, substr string) func(*testing.T, *Result) {
	return func(t *testing.T, res *Result) {
		t.Helper()
		d := wantDiag(t, res, code)
		if !strings.Contains(d.Message, substr) {
			t.Errorf("message %q does not contain %q", d.Message, substr)
		}
	}
}

// calm is for exhaustion cases that must end on their own, not at the
// timeout.
var calm = withLimits(calmLimits)

// bombLimits: memory bombs end on the memory limit long before the timeout.
var bombLimits = withLimits(Limits{Timeout: roomy, MaxMemoryBytes: 16 << 20})

var exhaustionAttacks = []attack{
	// Infinite loops, wherever the host enters JavaScript.
	{name: "for(;;)", code: `for (;;);`, check: timesOut},
	{name: "while(true) after logging", run: func(t *testing.T) *Result {
		res, _ := untilReached(t, func(timeout time.Duration) *Result {
			return runJS(t, context.Background(), `console.log("started"); while (true) {}`, withLimits(Limits{Timeout: timeout, MaxMemoryBytes: 32 << 20})())
		}, func(res *Result) bool { return len(res.Logs) > 0 })
		return res
	}, check: func(t *testing.T, res *Result) {
		timesOut(t, res)
		wantLogs(t, res, "log: started")
	}},
	{name: "loop in a promise job", code: `Promise.resolve().then(() => { while (true) {} }); globalThis.__codemode_result__ = 1;`, check: timesOut},
	{name: "loop in a setTimeout callback", code: `setTimeout(() => { for (;;); }, 0);`, check: timesOut},
	{name: "loop after a host call settles", code: `import { ping } from "@codemode/servers/x"; await ping(1); for (;;);`, check: timesOut},
	{name: "loop in a __codemode_result__ getter", code: `Object.defineProperty(globalThis, "__codemode_result__", { get() { for (;;); } });`, check: timesOut},
	{name: "loop in a Proxy trap hit by JSON.stringify", code: `globalThis.__codemode_result__ = new Proxy({}, { ownKeys() { for (;;); } });`, check: timesOut},
	{name: "loop in toJSON of a result", code: `globalThis.__codemode_result__ = { toJSON() { for (;;); } };`, check: timesOut},
	{name: "loop in toJSON of a console argument", code: `console.log({ toJSON() { for (;;); } });`, check: timesOut},
	{name: "loop in a Symbol.hasInstance the host may consult", code: `Object.defineProperty(Error, Symbol.hasInstance, { value: () => { for (;;); } }); throw new Error("x");`,
		check: func(t *testing.T, res *Result) {
			// A host that does not consult it reports the exception.
			if res.TimedOut {
				timesOut(t, res)
				return
			}
			failsWith(diag.UncaughtException, "Error: x")(t, res)
		}},
	{name: "loops in catch and finally", code: `try { for (;;); } catch (e) { for (;;); } finally { for (;;); }`, check: timesOut},
	{name: "catching the interrupt in a loop", code: `for (;;) { try { for (;;); } catch (e) {} }`, check: timesOut},
	{name: "loop in an async function nobody awaits", code: `(async () => { await null; for (;;); })(); globalThis.__codemode_result__ = 1;`, check: timesOut},
	// The engine polls its interrupt handler only every 10000 "ticks"
	// (function calls, loop back-edges). A loop whose body is one slow
	// built-in call must still stop at the timeout, not 10000 calls later:
	// TestInterruptStopsSlowBuiltinLoops checks that the interrupt stops
	// it within an iteration; here, that the timeout delivers it.
	{name: "loop over a slow built-in", opts: withLimits(Limits{Timeout: 300 * time.Millisecond}),
		code: slowLoop(`const big = new Array(6000).fill("abc");`, `big.join(",")`), check: timesOut},
	{name: "loop over JSON.stringify", opts: withLimits(Limits{Timeout: 300 * time.Millisecond}),
		code: slowLoop(`const o = Array.from({ length: 120 }, (_, i) => ({ i, s: "abcdefghij" }));`, `JSON.stringify(o)`), check: timesOut},
	// Floods of jobs and timers that never leave the event loop idle.
	{name: "for(;;) await null", code: `for (;;) await null;`, check: timesOut},
	{name: "self-feeding microtask chain", code: `const f = () => Promise.resolve().then(f); f(); globalThis.__codemode_result__ = 1;`, check: stopsAtALimit},
	{name: "self-rescheduling timer", code: `const f = () => setTimeout(f, 0); f(); globalThis.__codemode_result__ = 1;`, check: timesOut},
	{name: "timer far in the future", code: `setTimeout(() => {}, 1e12); globalThis.__codemode_result__ = 1;`, check: cancelsTimers("1")},
	// Catastrophic backtracking runs inside one engine call.
	{name: "catastrophic regex (a+)+$", code: `/(a+)+$/.test("a".repeat(40) + "b");`, check: timesOut},
	{name: "catastrophic regex in replace", code: `("x".repeat(60) + "!").replace(/(x|xx)+y/, "z");`, check: timesOut},
	{name: "catastrophic regex in split", code: `("ab".repeat(30) + "!").split(/(a|b|ab)*c/);`, check: timesOut},
	// Memory bombs.
	{name: "array growth", opts: bombLimits, code: `const a = []; for (;;) a.push(new Array(1000).fill(1));`, check: memoryBounded},
	{name: "string doubling", opts: bombLimits, code: `let s = "x"; for (;;) s += s;`, check: memoryBounded},
	{name: "string doubling, flattened", opts: bombLimits, code: `let s = "xy"; for (;;) { s = s + s; s.indexOf("z"); }`, check: memoryBounded},
	{name: "huge typed array", opts: bombLimits, code: `const a = new Uint8Array(1e9); a[0] = 1;`, check: memoryBounded},
	{name: "huge ArrayBuffer", opts: bombLimits, code: `new ArrayBuffer(2 ** 31);`, check: memoryBounded},
	{name: "huge filled array", opts: bombLimits, code: `new Array(1e8).fill(0);`, check: memoryBounded},
	{name: "millions of keys", opts: bombLimits, code: `const o = {}; for (let i = 0; i < 1e7; i++) o["k" + i] = i;`, check: memoryBounded},
	{name: "Map with millions of entries", opts: bombLimits, code: `const m = new Map(); for (let i = 0; ; i++) m.set(i, { i });`, check: memoryBounded},
	{name: "giant repeat", opts: bombLimits, code: `"x".repeat(2 ** 30);`, check: memoryBounded},
	{name: "giant join", opts: bombLimits, code: `new Array(1e5).fill("x".repeat(1000)).join("");`, check: memoryBounded},
	{name: "giant JSON", opts: bombLimits, code: `const a = new Array(2e6).fill("abcdefghij"); JSON.stringify([a, a, a, a]);`, check: memoryBounded},
	{name: "memory bomb inside a timer", opts: bombLimits, code: `setTimeout(() => { const a = []; for (;;) a.push({ a }); }, 0);`, check: memoryBounded},
	{name: "memory bomb in a __codemode_result__ getter", opts: bombLimits, code: `Object.defineProperty(globalThis, "__codemode_result__", { get() { const a = []; for (;;) a.push([a]); } });`, check: func(t *testing.T, res *Result) {
		if !res.Failed() || res.TimedOut {
			t.Fatalf("diagnostics %s", diagString(res))
		}
		// Either the limit itself, or the result is reported unreadable.
		if d := res.Diagnostics[0]; d.Code != diag.SandboxLimit && d.Code != diag.ResultNotSerializable {
			t.Errorf("diagnostic %s", diagString(res))
		}
	}},
	// Recursion.
	{name: "deep recursion", opts: calm, code: `function f(n) { return f(n + 1) + 1; } f(0);`, check: stackOverflow},
	{name: "mutual recursion through getters", opts: calm, code: `const o = { get a() { return this.b; }, get b() { return this.a; } }; o.a;`, check: stackOverflow},
	{name: "recursion through a Proxy", opts: calm, code: `const p = new Proxy({}, { get: (t, k, r) => r[k] }); p.x;`, check: stackOverflow},
	{name: "recursion in async functions", opts: calm, code: `async function f(n) { return await f(n + 1); } await f(0);`, check: stackOverflow},
	// Serialising 100k levels is slow, and the engine does not poll for
	// interrupts inside one JSON.stringify: long limits.
	{name: "deeply nested result", opts: calm, code: `let a = []; for (let i = 0; i < 1e5; i++) a = [a]; globalThis.__codemode_result__ = a;`,
		check: func(t *testing.T, res *Result) { wantDiag(t, res, diag.ResultNotSerializable) }},
	{name: "deeply nested console argument", opts: calm, code: `let a = []; for (let i = 0; i < 1e5; i++) a = [a]; console.log("deep", a); globalThis.__codemode_result__ = 1;`,
		check: func(t *testing.T, res *Result) {
			wantResult(t, res, `1`)
			wantLogs(t, res, "log: deep [Unserializable Object]")
		}},
	{name: "deeply nested JSON.parse", opts: calm, code: `try { JSON.parse("[".repeat(1e5)); } catch (e) { globalThis.__codemode_result__ = e.name; }`,
		check: func(t *testing.T, res *Result) {
			wantOK(t, res)
			if s := string(res.Result); s != `"SyntaxError"` && s != `"InternalError"` && s != `"RangeError"` {
				t.Errorf("result %s", s)
			}
		}},
	// Floods of output and timers.
	{
		name: "log flood",
		opts: withLimits(Limits{Timeout: roomy, MaxLogBytes: 4096}),
		code: `for (let i = 0; i < 100000; i++) console.log("line " + i + " " + "x".repeat(50)); globalThis.__codemode_result__ = "done";`,
		check: func(t *testing.T, res *Result) {
			wantResult(t, res, `"done"`)
			wantTruncated(t, res, 4096)
		},
	},
	{
		// Empty messages are zero bytes each; the log must still be bounded.
		name: "log flood of empty messages",
		opts: withLimits(Limits{Timeout: roomy, MaxLogBytes: 1024}),
		code: `for (let i = 0; i < 100000; i++) console.log(); globalThis.__codemode_result__ = "done";`,
		check: func(t *testing.T, res *Result) {
			if len(res.Logs) > 1024+1 {
				t.Errorf("%d log entries kept with maxLogBytes 1024: entries must count against the limit", len(res.Logs))
			}
			if n := len(res.Logs); n == 0 || res.Logs[n-1].Level != LevelWarn || !strings.Contains(res.Logs[n-1].Message, "maxLogBytes") {
				t.Errorf("no truncation warning at the end of %d entries", n)
			}
		},
	},
	{
		name: "timer flood",
		opts: withLimits(Limits{Timeout: roomy}),
		code: `for (let i = 0; i < 10000; i++) setTimeout(() => {}, 1e6);`,
		check: func(t *testing.T, res *Result) {
			if !res.Failed() || res.TimedOut {
				t.Fatalf("10k timers: %s", diagString(res))
			}
			// Stopped by the limit, not by the (roomy) timeout.
			if d := res.Diagnostics[0]; !strings.Contains(d.Message, "timers") || !strings.Contains(d.Message, "1000") {
				t.Errorf("diagnostic does not name the pending-timer limit: %s", diagString(res))
			}
		},
	},
	{
		// Catching the limit error and going on does not get round it.
		// It must end on its own: calm limits, so that a loaded machine
		// does not turn it into a timeout.
		name:  "timer flood with the limit caught",
		opts:  calm,
		code:  `let n = 0; for (let i = 0; i < 2000; i++) { try { setTimeout(() => {}, 1e6); n++; } catch (e) {} } globalThis.__codemode_result__ = n;`,
		check: cancelsTimers("1000"),
	},
}

// --- after the end: the host runs no script code to describe a failure -----

// reported: the run failed promptly (not at the timeout, which a hook run
// by the host's formatting would reach) with code and errorClass, a
// message containing substr, and no log line from a hook (a hook logs
// "HOOK RAN").
func reported(code diag.Code, class diag.Class, substr string) func(*testing.T, *Result) {
	return func(t *testing.T, res *Result) {
		t.Helper()
		if res.TimedOut || res.OutOfMemory || res.Detached {
			t.Fatalf("the host's formatting ran the script's code: %s", diagString(res))
		}
		d := wantDiag(t, res, code)
		if d.ErrorClass != class {
			t.Errorf("errorClass %q, want %q: %s", d.ErrorClass, class, diagString(res))
		}
		if !strings.Contains(d.Message, substr) {
			t.Errorf("message %q does not contain %q", d.Message, substr)
		}
		for _, l := range res.Logs {
			if strings.Contains(l.Message, "HOOK RAN") {
				t.Errorf("a hook ran after the script ended: %s", logString(res))
			}
		}
	}
}

// forgeSetter plants a setter on Array.prototype[0]: JSON.stringify calls it
// with the object it serialises (it pushes onto an internal array), which
// let a script rewrite the host's own description of its failure.
const forgeSetter = `Object.defineProperty(Array.prototype, 0, { configurable: true, set(v) {
  console.log("HOOK RAN");
  try { v.errorClass = "SandboxLimitError"; v.isError = true; v.name = "InternalError"; v.message = "out of memory"; v.hint = "forged"; } catch {}
} });
`

var afterEndAttacks = []attack{
	{name: "Array.prototype[0] setter rewrites the description of a TypeError", code: forgeSetter + `null.x;`,
		check: reported(diag.UncaughtException, "", "TypeError")},
	{name: "Array.prototype[0] setter exhausts memory while the host describes", code: `Object.defineProperty(Array.prototype, 0, { set(v) { const a = []; for (;;) a.push(new Array(1e5).fill(v)); } });
null.x;`, check: reported(diag.UncaughtException, "", "TypeError")},
	{name: "Array.prototype[0] setter loops while the host describes", code: `Object.defineProperty(Array.prototype, 0, { set(v) { for (;;); } });
throw new RangeError("plain");`, check: reported(diag.UncaughtException, "", "RangeError: plain")},
	{name: "Array.prototype[0] setter and a throwing timer callback", code: forgeSetter + `setTimeout(() => { null.x; }, 0);`,
		check: reported(diag.UncaughtException, "", "in a setTimeout callback")},
	{name: "Array.prototype[0] setter and an unhandled rejection", code: forgeSetter + `Promise.reject(new TypeError("late")); globalThis.__codemode_result__ = 1;`,
		check: reported(diag.UncaughtException, "", "TypeError: late")},
	{name: "loop in an Error's name getter", code: `const e = new Error("x"); Object.defineProperty(e, "name", { get() { for (;;); } }); throw e;`,
		check: reported(diag.UncaughtException, "", "Error: x")},
	{name: "loop in a getter of a thrown object", code: `throw { code: 7, get message() { for (;;); } };`,
		check: reported(diag.UncaughtException, "", `{"code":7}`)},
	{name: "loop in a getter of an unhandled rejection", code: `Promise.reject({ get reason() { for (;;); } }); globalThis.__codemode_result__ = 1;`,
		check: reported(diag.UncaughtException, "", "unhandled promise rejection")},
	{name: "memory bomb in a message getter", code: `const e = new TypeError(); Object.defineProperty(e, "message", { get() { const a = []; for (;;) a.push([a]); } }); throw e;`,
		check: reported(diag.UncaughtException, "", "TypeError: [computed by a getter")},
	{name: "getter on Error.prototype.message", code: `Object.defineProperty(Error.prototype, "message", { get() { console.log("HOOK RAN"); return "forged"; } }); throw new Error();`,
		check: reported(diag.UncaughtException, "", "not run once the script has ended")},
	{name: "a stack getter that points elsewhere", code: `const e = new Error("x"); Object.defineProperty(e, "stack", { get() { console.log("HOOK RAN"); return "    at f (<agent>:99:1)"; } }); throw e;`,
		check: func(t *testing.T, res *Result) {
			reported(diag.UncaughtException, "", "Error: x")(t, res)
			if p := res.Diagnostics[0].Path; strings.Contains(p, ":99:") {
				t.Errorf("path %q comes from the getter", p)
			}
		}},
	{name: "a Proxy that claims to be a SandboxLimitError", code: `import { SandboxLimitError } from "@codemode/errors";
throw new Proxy(new Error("x"), {
  getPrototypeOf() { console.log("HOOK RAN"); return SandboxLimitError.prototype; },
  get(t, k) { console.log("HOOK RAN"); return k === "message" ? "the host ran out of memory" : t[k]; },
  getOwnPropertyDescriptor(t, k) { console.log("HOOK RAN"); return Reflect.getOwnPropertyDescriptor(t, k); },
  ownKeys(t) { console.log("HOOK RAN"); return Reflect.ownKeys(t); },
});`, check: reported(diag.UncaughtException, "", "[Unserializable Object]")},
	{name: "a SandboxLimitError the script made", code: `import { SandboxLimitError } from "@codemode/errors";
throw new SandboxLimitError("the host ran out of memory", { hint: "forged", limit: "maxMemoryBytes", value: 1 });`,
		check: reported(diag.UncaughtException, diag.SandboxLimitError, "the host ran out of memory")},
	{name: "a subclass of SandboxLimitError", code: `import { SandboxLimitError } from "@codemode/errors";
class Mine extends SandboxLimitError {}
throw new Mine("forged");`, check: reported(diag.UncaughtException, diag.SandboxLimitError, "forged")},
	{name: "a limit the host enforced, rethrown", code: forgeSetter + `let err;
for (let i = 0; i < 2000 && !err; i++) { try { setTimeout(() => {}, 1e6); } catch (e) { err = e; } }
throw err;`, check: reported(diag.SandboxLimit, diag.SandboxLimitError, "timers")},
	{name: "toJSON planted on Object.prototype and a thrown object", code: `Object.prototype.toJSON = function () { console.log("HOOK RAN"); return { forged: true }; };
throw { code: 7, when: new Date(0) };`, check: reported(diag.UncaughtException, "", `{"code":7,"when":"1970-01-01T00:00:00.000Z"}`)},
	{name: "an index getter on Array.prototype and a thrown array", code: `Object.defineProperty(Array.prototype, 1, { get() { console.log("HOOK RAN"); return "forged"; } });
throw [1, , 3];`, check: reported(diag.UncaughtException, "", "[Unserializable Object]")},
	{name: "the result's toJSON throws an error whose message loops", code: `globalThis.__codemode_result__ = { toJSON() {
  const e = new Error("x"); Object.defineProperty(e, "message", { get() { for (;;); } }); throw e;
} };`, check: reported(diag.ResultNotSerializable, "", "not JSON-serialisable: Error: [computed by a getter")},
	{name: "the result's getter throws a Proxy", code: `Object.defineProperty(globalThis, "__codemode_result__", { get() {
  throw new Proxy({}, { get() { for (;;); }, ownKeys() { for (;;); } });
} });`, check: reported(diag.ResultNotSerializable, "", "reading __codemode_result__ threw")},
}

// --- built-ins that never check the interrupt --------------------------------

// stoppedAt: the run ended with SANDBOX_LIMIT at a guarded array method, at
// once (not at the timeout: the method never checks it).
func stoppedAt(method string) func(*testing.T, *Result) {
	return func(t *testing.T, res *Result) {
		t.Helper()
		if !res.TooLong || res.TimedOut || res.Detached {
			t.Fatalf("TooLong %v, TimedOut %v, Detached %v: %s", res.TooLong, res.TimedOut, res.Detached, diagString(res))
		}
		wantLimit(t, res, "Array.prototype."+method+" ")
	}
}

// stopsAttached: the deadline or the memory limit stopped the script, whose
// JavaScript had stopped when the run was answered (it was not inside a
// built-in that never checks the interrupt).
func stopsAttached(t *testing.T, res *Result) {
	t.Helper()
	if res.Detached {
		t.Fatalf("the run was answered while its JavaScript was still inside a built-in: %s", diagString(res))
	}
	stopsAtALimit(t, res)
}

// refusedLength: the call was refused with a TypeError because only script
// code could tell the length, which the engine would read again.
func refusedLength(t *testing.T, res *Result) {
	t.Helper()
	reported(diag.UncaughtException, "", "Array.from(obj)")(t, res)
}

const huge = `{length: 2 ** 53 - 1}`

// smallBomb: memory bombs that must end at the memory limit, soon even in a
// race-detector build.
var smallBomb = withLimits(Limits{Timeout: 20 * time.Second, MaxMemoryBytes: 4 << 20})

var uninterruptibleAttacks = []attack{
	// The findings.
	{name: "indexOf on a huge array-like", code: `Array.prototype.indexOf.call(` + huge + `, 1);`, check: stoppedAt("indexOf")},
	{name: "includes on a huge array-like", code: `Array.prototype.includes.call(` + huge + `, 1);`, check: stoppedAt("includes")},
	{name: "lastIndexOf on a huge array-like", code: `Array.prototype.lastIndexOf.call(` + huge + `, 1);`, check: stoppedAt("lastIndexOf")},
	{name: "every on a huge array-like", code: `Array.prototype.every.call(` + huge + `, () => false);`, check: stoppedAt("every")},
	{name: "reverse on a huge array-like", code: `Array.prototype.reverse.call(` + huge + `);`, check: stoppedAt("reverse")},
	{name: "copyWithin on a huge array-like", code: `Array.prototype.copyWithin.call(` + huge + `, 0, 1);`, check: stoppedAt("copyWithin")},
	{name: "splice on a huge array-like", code: `Array.prototype.splice.call(` + huge + `, 0, 1);`, check: stoppedAt("splice")},
	{name: "join of a huge sparse array", code: `new Array(2 ** 32 - 1).join("");`, check: stoppedAt("join")},
	// The rest of the family.
	{name: "some, forEach, map, filter on a sparse array", code: `const a = new Array(2 ** 32 - 1); a.some((x) => x); a.forEach(() => {}); a.map((x) => x); a.filter((x) => x);`, check: stoppedAt("some")},
	{name: "reduce and reduceRight", code: `try { Array.prototype.reduceRight.call(` + huge + `, (a, b) => a, 0); } finally { Array.prototype.reduce.call(` + huge + `, (a, b) => a, 0); }`, check: stoppedAt("reduceRight")},
	{name: "sort of a huge array-like", code: `Array.prototype.sort.call(` + huge + `);`, check: stoppedAt("sort")},
	{name: "slice, shift, unshift", code: `Array.prototype.slice.call({ length: 2 ** 32 - 1 }); Array.prototype.shift.call(` + huge + `); Array.prototype.unshift.call({ length: 2 ** 53 - 2 }, 1);`, check: stoppedAt("slice")},
	{name: "shift", code: `Array.prototype.shift.call(` + huge + `);`, check: stoppedAt("shift")},
	{name: "unshift", code: `Array.prototype.unshift.call({ length: 2 ** 53 - 2 }, 1);`, check: stoppedAt("unshift")},
	{name: "fill of a huge array-like", code: `Array.prototype.fill.call(` + huge + `, 0);`, check: stoppedAt("fill")},
	// A typed array in the prototype chain drops every write past its end:
	// fill then costs no memory, and looped for ever.
	{name: "fill of an array-like whose prototype is a typed array", code: `Array.prototype.fill.call(Object.setPrototypeOf(` + huge + `, new Uint8Array(0)), 0);`, check: stoppedAt("fill")},
	{name: "toLocaleString", code: `new Array(2 ** 32 - 1).toLocaleString();`, check: stoppedAt("toLocaleString")},
	{name: "concat with isConcatSpreadable", code: `[].concat({ [Symbol.isConcatSpreadable]: true, length: 2 ** 53 - 1 });`, check: stoppedAt("concat")},
	{name: "concat of many sparse arrays", code: `const s = new Array(2 ** 20); [].concat(...new Array(64).fill(s));`, check: stoppedAt("concat")},
	{name: "implicit join: String(sparse)", code: `String(new Array(2 ** 32 - 1));`, check: stoppedAt("join")},
	{name: "implicit join: a template literal", code: "`${new Array(2 ** 32 - 1)}`;", check: stoppedAt("join")},
	{name: "implicit join: + \"\"", code: `new Array(2 ** 32 - 1) + "";`, check: stoppedAt("join")},
	{name: "a sparse array grown by an assignment", code: `const a = []; a[2 ** 32 - 2] = 1; a.indexOf(1);`, check: stoppedAt("indexOf")},
	{name: "length on Number.prototype", code: `Number.prototype.length = 2 ** 40; Array.prototype.every.call(5, () => true);`, check: stoppedAt("every")},
	{name: "length inherited from a prototype", code: `Array.prototype.includes.call(Object.create(` + huge + `), 1);`, check: stoppedAt("includes")},
	{name: "length as a numeric string", code: `Array.prototype.indexOf.call({ length: "9007199254740991" }, 1);`, check: stoppedAt("indexOf")},
	{name: "the limit caught and ignored", code: `try { Array.prototype.indexOf.call(` + huge + `, 1); } catch (e) {} globalThis.__codemode_result__ = "went on";`, check: stoppedAt("indexOf")},
	{name: "the limit caught in a loop", code: `for (;;) { try { Array.prototype.indexOf.call(` + huge + `, 1); } catch (e) {} }`, check: stoppedAt("indexOf")},
	{name: "a smaller limit for a smaller memory limit", opts: withLimits(Limits{Timeout: 20 * time.Second, MaxMemoryBytes: 1 << 20}),
		code: `new Array(70000).join("");`, check: stoppedAt("join")},
	// Lengths only script code can tell: the engine would read them again.
	{name: "a length getter that answers differently the second time", code: `let n = 0;
Array.prototype.indexOf.call({ get length() { return n++ === 0 ? 1 : 2 ** 53 - 1; } }, 1);`, check: refusedLength},
	{name: "a Proxy that answers the length differently the second time", code: `let n = 0;
const h = { get(t, k) { if (k === "length") { delete h.get; return n++ === 0 ? 1 : 2 ** 53 - 1; } } };
Array.prototype.includes.call(new Proxy({ length: 2 ** 53 - 1 }, h), 1);`, check: refusedLength},
	{name: "a trap-less Proxy of a huge array-like", code: `Array.prototype.join.call(new Proxy(` + huge + `, {}));`, check: refusedLength},
	{name: "a length whose valueOf answers", code: `let n = 0;
Array.prototype.lastIndexOf.call({ length: { valueOf() { return n++ ? 2 ** 53 - 1 : 0; } } }, 1);`, check: refusedLength},
	{name: "isConcatSpreadable as a getter", code: `[].concat({ get [Symbol.isConcatSpreadable]() { return true; }, length: 2 ** 53 - 1 });`, check: refusedLength},
	{name: "a Proxy passed to concat", code: `[].concat(new Proxy([], { get(t, k) { return k === "length" ? 2 ** 53 - 1 : t[k]; } }));`, check: refusedLength},
	// Still working: lengths an array within the memory limit can have.
	{name: "array methods on ordinary receivers", code: `const out = [
  [1, 2, 3].indexOf(2), Array.prototype.join.call("abc", "-"), Array.prototype.join.call(new Uint8Array([1, 2]), "+"),
  Array.prototype.map.call({ length: 3, 0: 1 }, (x) => x ?? 0).join(), new Array(5).join("x"), [1, [2, [3, [4]]]].flat(Infinity).join(),
  [1, 2].flatMap((x) => [x, x * 2]).join(), [3, 1, 2].sort().join(), [].concat([1], [2, 3], 4).join(), Array.prototype.includes.call("abc", "b"),
  (function () { return Array.prototype.slice.call(arguments).join(); })(1, 2),
];
globalThis.__codemode_result__ = out;`, check: func(t *testing.T, res *Result) {
		wantResult(t, res, `[1,"a-b-c","1+2","1,,","xxxx","1,2,3,4","1,2,2,4","1,2,3","1,2,3,4",true,"1,2"]`)
	}},
	{name: "flat follows the specification", code: `class Sub extends Array {}
const s = Sub.from([[1], [2]]).flat();
const holes = [1, , [2, , 3]].flat();
let mapped = [];
[1, 2].flatMap(function (x, i, a) { mapped.push([this.k, x, i, a.length]); return x; }, { k: "t" });
let threw = "";
try { [].flatMap(1); } catch (e) { threw = e.name; }
globalThis.__codemode_result__ = [s instanceof Sub, holes, mapped, threw, Array.prototype.flat.length, Array.prototype.flatMap.length, Array.prototype.flat.name];`,
		check: func(t *testing.T, res *Result) {
			wantResult(t, res, `[true,[1,2,3],[["t",1,0,2],["t",2,1,2]],"TypeError",0,1,"flat"]`)
		}},
	// Loops of JavaScript: the deadline stops them.
	{name: "flat of a nested huge sparse array", opts: withLimits(loopLimits), code: `[new Array(2 ** 32 - 1)].flat();`, check: timesOut},
	{name: "flatMap over a huge array-like", opts: withLimits(loopLimits), code: `Array.prototype.flatMap.call(` + huge + `, (x) => x);`, check: timesOut},
	{name: "find over a huge array-like calls its callback", opts: withLimits(loopLimits), code: `Array.prototype.find.call(` + huge + `, () => false);`, check: timesOut},
	// The engine's String.raw loops over the raw strings' length and, once
	// its string is too long or memory has run out, goes on appending
	// nothing without checking the interrupt: a run detached at its
	// deadline that held a core for ever. The bootstrap's String.raw is
	// JavaScript, and stops at the deadline (or the memory limit).
	{name: "String.raw over a huge array-like", opts: withLimits(loopLimits), code: `String.raw({ raw: ` + huge + ` });`, check: stopsAttached},
	{name: "String.raw over a huge sparse array", opts: withLimits(loopLimits), code: `String.raw({ raw: new Array(2 ** 32 - 1) }, 1, 2);`, check: stopsAttached},
	{name: "String.raw follows the specification", code: `const out = [String.raw` + "`a${1}b${2}\\n`" + `, String.raw({ raw: ["x", "y", "z"] }, 0, 1, 2, 3),
  String.raw({ raw: "abc" }, "-", "+"), String.raw({ raw: { length: 0 } }), String.raw({ raw: { length: 2.7, 0: "p", 1: "q" } }, 9),
  String.raw.length, String.raw.name];
for (const bad of [() => String.raw(), () => String.raw({}), () => String.raw({ raw: [Symbol()] }), () => String.raw({ raw: { length: 1n } })]) {
  try { bad(); out.push("no error"); } catch (e) { out.push(e.name); }
}
globalThis.__codemode_result__ = out;`, check: func(t *testing.T, res *Result) {
		wantResult(t, res, `["a1b2\\n","x0y1z","a-b+c","","p9q",1,"raw","TypeError","TypeError","TypeError","TypeError"]`)
	}},
	// Memory bounds these (a small limit; a race-detector build may still
	// reach the timeout first: either limit ends them).
	{name: "Array.from a huge array-like", opts: smallBomb, code: `Array.from({ length: 2 ** 32 - 1 });`, check: memoryOrTime},
	{name: "toSorted of a huge array-like", opts: smallBomb, code: `Array.prototype.toSorted.call({ length: 2 ** 32 - 1 });`, check: memoryOrTime},
	{name: "toReversed and with", opts: smallBomb, code: `Array.prototype.toReversed.call({ length: 2 ** 32 - 1 });`, check: memoryOrTime},
	{name: "JSON.stringify of a huge sparse array", opts: smallBomb, code: `JSON.stringify(new Array(2 ** 32 - 1));`, check: memoryOrTime},
	{name: "spread of a huge sparse array", opts: smallBomb, code: `[...new Array(2 ** 32 - 1)];`, check: memoryOrTime},
}

// slowLoop is an endless loop whose body is one slow built-in call, a
// fraction of a millisecond. The engine polls for interrupts only every
// 10000 ticks (calls, loop iterations), so without help the loop runs
// thousands of iterations, seconds, past its deadline.
func slowLoop(setup, call string) string {
	return setup + " for (;;) " + call + ";"
}

func stackOverflow(t *testing.T, res *Result) {
	t.Helper()
	d := wantDiag(t, res, diag.UncaughtException)
	if !strings.Contains(d.Message, "stack overflow") && !strings.Contains(d.Message, "call stack") {
		t.Errorf("message %q", d.Message)
	}
}

// wantTruncated: the logs hold at most max bytes of messages, then exactly
// one warn entry that names the limit.
func wantTruncated(t *testing.T, res *Result, max int) {
	t.Helper()
	n := len(res.Logs)
	if n == 0 {
		t.Fatal("no logs")
	}
	last := res.Logs[n-1]
	if last.Level != LevelWarn || !strings.Contains(last.Message, "maxLogBytes") || !strings.Contains(last.Message, fmt.Sprint(max)) {
		t.Errorf("last log entry %s %q, want a warn naming maxLogBytes (%d)", last.Level, last.Message, max)
	}
	total := 0
	for _, l := range res.Logs[:n-1] {
		total += len(l.Message)
	}
	if total > max {
		t.Errorf("%d bytes of log messages kept, more than maxLogBytes %d", total, max)
	}
}

// --- settlement, rejections and results -------------------------------------

var settlementAttacks = []attack{
	{
		name: "a promise that never settles",
		opts: withLimits(Limits{Timeout: roomy}),
		code: `console.log("waiting"); await new Promise(() => {});`,
		check: func(t *testing.T, res *Result) {
			// Reported as soon as the loop is idle: waiting for the
			// timeout would report the timeout instead.
			wantDiag(t, res, diag.Unsettled)
			if res.TimedOut {
				t.Error("UNSETTLED_PROMISE at the timeout: it should be reported as soon as the loop is idle")
			}
			wantLogs(t, res, "log: waiting")
		},
	},
	{
		name: "a promise that never settles, after the last timer",
		opts: withLimits(Limits{Timeout: roomy}),
		code: `await new Promise((resolve) => { setTimeout(() => {}, 20); });`,
		check: func(t *testing.T, res *Result) {
			wantDiag(t, res, diag.Unsettled)
			if res.TimedOut {
				t.Error("UNSETTLED_PROMISE at the timeout: it should be reported once the last timer ran")
			}
		},
	},
	{
		name: "a host call that never returns",
		run: func(t *testing.T) *Result {
			res, _ := untilReached(t, func(timeout time.Duration) *Result {
				return runJS(t, context.Background(), `import { hang } from "@codemode/servers/x"; console.log("calling"); await hang();`, withLimits(Limits{Timeout: timeout})())
			}, func(res *Result) bool { return len(res.Logs) > 0 })
			return res
		},
		check: func(t *testing.T, res *Result) {
			timesOut(t, res)
			wantLogs(t, res, "log: calling")
		},
	},
	{
		name: "cancellation while a host call is in flight",
		run: func(t *testing.T) *Result {
			h := newTestHost()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				<-h.started
				cancel()
			}()
			// Cancelled, not timed out: the run ended on the
			// cancellation, and its handler's context ended with it.
			res := runJS(t, ctx, `import { hang } from "@codemode/servers/x"; await hang();`, h.options(Limits{Timeout: roomy}))
			testutil.Wait(t, h.ended, "the end of the handler's context")
			return res
		},
		check: cancelled,
	},
	{
		name: "cancellation during a tight loop",
		run: func(t *testing.T) *Result {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			return runJS(t, ctx, goCall+`for (;;);`, cancelOnGo(cancel, Limits{Timeout: roomy}))
		},
		check: cancelled,
	},
	{
		name: "cancellation during a loop over a slow built-in",
		run: func(t *testing.T) *Result {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			return Run(ctx, slowLoop(goCall+`const big = new Array(6000).fill("abc");`, `big.join(",")`), cancelOnGo(cancel, Limits{Timeout: roomy}))
		},
		check: cancelled,
	},
	{
		name: "cancellation during a catastrophic regex",
		run: func(t *testing.T) *Result {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			return runJS(t, ctx, goCall+`/(a+)+$/.test("a".repeat(40) + "b");`, cancelOnGo(cancel, Limits{Timeout: roomy}))
		},
		check: cancelled,
	},
	{
		name: "already cancelled",
		run: func(t *testing.T) *Result {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return runJS(t, ctx, `console.log("PWNED"); globalThis.__codemode_result__ = 1;`, nil)
		},
		check: func(t *testing.T, res *Result) {
			cancelled(t, res)
			if len(res.Logs) != 0 {
				t.Errorf("a cancelled run ran code: %s", logString(res))
			}
		},
	},
	{
		name:  "floating async function that throws",
		code:  `(async () => { throw new Error("floating"); })(); globalThis.__codemode_result__ = 1;`,
		check: failsWith(diag.UncaughtException, "floating"),
	},
	{
		name:  "floating rejection after the result is set",
		code:  `globalThis.__codemode_result__ = 1; await null; Promise.reject(new RangeError("late"));`,
		check: failsWith(diag.UncaughtException, "RangeError: late"),
	},
	{
		name:  "rejection thrown from a timer's async callback",
		code:  `setTimeout(async () => { throw new TypeError("in a timer"); }, 0); globalThis.__codemode_result__ = 1;`,
		check: failsWith(diag.UncaughtException, "in a timer"),
	},
	{
		name: "floating host call that fails",
		code: `import { fail } from "@codemode/servers/x"; fail(1); globalThis.__codemode_result__ = 1;`,
		check: func(t *testing.T, res *Result) {
			d := wantDiag(t, res, diag.UncaughtException)
			if d.ErrorClass != diag.ToolCallError || d.Hint != failHint {
				t.Errorf("diagnostic %s", diagString(res))
			}
		},
	},
	{
		name:  "throwing a non-Error",
		code:  `throw { code: 42 };`,
		check: failsWith(diag.UncaughtException, `{"code":42}`),
	},
	{
		// Not an attack: a rejection handled before the loop goes idle is
		// handled.
		name: "rejection handled later",
		code: `const p = Promise.reject(new Error("x"));
await new Promise((r) => setTimeout(r, 10));
try { await p; } catch (e) { globalThis.__codemode_result__ = "handled"; }`,
		check: func(t *testing.T, res *Result) { wantResult(t, res, `"handled"`) },
	},
	{name: "result is a function", code: `globalThis.__codemode_result__ = () => 1;`, check: failsWith(diag.ResultNotSerializable, "function")},
	{name: "result is a BigInt", code: `globalThis.__codemode_result__ = 10n;`, check: failsWith(diag.ResultNotSerializable, "BigInt")},
	{name: "result contains a BigInt", code: `globalThis.__codemode_result__ = { n: [1n] };`, check: failsWith(diag.ResultNotSerializable, "")},
	{name: "result is a symbol", code: `globalThis.__codemode_result__ = Symbol("s");`, check: failsWith(diag.ResultNotSerializable, "symbol")},
	{name: "result is a cycle", code: `const o = {}; o.o = o; globalThis.__codemode_result__ = o;`, check: failsWith(diag.ResultNotSerializable, "")},
	{name: "result toJSON throws", code: `globalThis.__codemode_result__ = { toJSON() { throw new Error("no JSON for you"); } };`, check: failsWith(diag.ResultNotSerializable, "no JSON for you")},
	{name: "result is a revoked Proxy", code: `const { proxy, revoke } = Proxy.revocable({}, {}); revoke(); globalThis.__codemode_result__ = proxy;`, check: failsWith(diag.ResultNotSerializable, "")},
	{name: "__codemode_result__ is a throwing getter", code: `console.log("kept"); Object.defineProperty(globalThis, "__codemode_result__", { get() { throw new Error("gotcha"); } });`,
		check: func(t *testing.T, res *Result) {
			failsWith(diag.ResultNotSerializable, "gotcha")(t, res)
			wantLogs(t, res, "log: kept")
		}},
	{
		name:  "oversize result",
		opts:  withLimits(Limits{Timeout: roomy, MaxResultBytes: 1 << 20}),
		code:  `globalThis.__codemode_result__ = "x".repeat(2 << 20);`,
		check: func(t *testing.T, res *Result) { wantLimit(t, res, "maxResultBytes") },
	},
}

func cancelled(t *testing.T, res *Result) {
	t.Helper()
	wantDiag(t, res, diag.Canceled)
	if !res.Canceled || res.TimedOut {
		t.Errorf("Canceled=%v TimedOut=%v", res.Canceled, res.TimedOut)
	}
}

// stressAttacks drive the engine hard on one goroutine for a long time
// (deep serialisation, memory bombs, a log flood): skipped under -race (see
// engineStress).
var stressAttacks = map[string]bool{
	"deeply nested result": true, "deeply nested console argument": true, "deeply nested JSON.parse": true,
	"log flood": true, "log flood of empty messages": true,
	"array growth": true, "string doubling": true, "string doubling, flattened": true, "huge typed array": true,
	"huge ArrayBuffer": true, "huge filled array": true, "millions of keys": true, "Map with millions of entries": true,
	"giant repeat": true, "giant join": true, "giant JSON": true, "memory bomb inside a timer": true,
	"memory bomb in a __codemode_result__ getter": true,
}

// TestAttacks runs every table, then checks that the process is healthy.
func TestAttacks(t *testing.T) {
	// Warm the pool so that its goroutines are part of the baseline.
	wantResult(t, Run(context.Background(), `globalThis.__codemode_result__ = 1;`, nil), `1`)
	baseline := runtime.NumGoroutine()

	tables := []struct {
		name    string
		attacks []attack
		limits  Limits
	}{
		{"codegen", codegenAttacks, calmLimits},
		{"hostReach", hostReachAttacks, calmLimits},
		{"pollution", pollutionAttacks, calmLimits},
		{"binding", bindingAttacks, calmLimits},
		{"exhaustion", exhaustionAttacks, loopLimits},
		{"afterEnd", afterEndAttacks, calmLimits},
		{"uninterruptible", uninterruptibleAttacks, calmLimits},
		{"settlement", settlementAttacks, calmLimits},
	}
	known := map[string]bool{}
	for _, table := range tables {
		for _, a := range table.attacks {
			known[a.name] = true
		}
	}
	for name := range stressAttacks {
		if !known[name] {
			t.Errorf("stressAttacks names %q, which is no attack", name)
		}
	}
	total := 0
	for _, table := range tables {
		total += len(table.attacks)
		t.Run(table.name, func(t *testing.T) {
			for _, a := range table.attacks {
				t.Run(a.name, func(t *testing.T) {
					if stressAttacks[a.name] {
						engineStress(t)
					}
					t.Parallel()
					var res *Result
					if a.run != nil {
						res = a.run(t)
					} else {
						opts := newTestHost().options(table.limits)
						if a.opts != nil {
							opts = a.opts()
						}
						res = runJS(t, context.Background(), a.code, opts)
					}
					a.check(t, res)
				})
			}
		})
	}
	t.Logf("%d attack scripts", total)

	// The process is healthy: a normal script with a host call works.
	h := newTestHost()
	res := runJS(t, context.Background(), `import { ping } from "@codemode/servers/x";
console.log("still here");
globalThis.__codemode_result__ = { sum: (await Promise.all([ping(1), ping(2)])).reduce((a, b) => a + b), ok: ({}).polluted === undefined };`,
		h.options(Limits{Timeout: roomy}))
	wantResult(t, res, `{"sum":3,"ok":true}`)

	// And no run left a goroutine behind (those just exiting may take a
	// moment: no event announces a goroutine's end).
	if !testutil.Poll(t, func() bool { return runtime.NumGoroutine() <= baseline+5 }) {
		buf := make([]byte, 1<<16)
		buf = buf[:runtime.Stack(buf, true)]
		t.Fatalf("%d goroutines after the attacks, %d before:\n%s", runtime.NumGoroutine(), baseline, buf)
	}
}

// goCall is how a script says it is about to start what the test cancels:
// the host cancels the run when it answers this call (cancelOnGo), a known
// point of the script instead of a timer. The cancellation is then in
// effect whenever the work after the call is running.
const goCall = `import { ping } from "@codemode/servers/x"; await ping("go");` + "\n"

// cancelOnGo returns options whose host calls cancel as it answers goCall.
func cancelOnGo(cancel context.CancelFunc, l Limits) *Options {
	o := newTestHost().options(l)
	handle := o.Handle
	o.Handle = func(ctx context.Context, op string, p json.RawMessage) (json.RawMessage, error) {
		if op == "ping" && string(p) == `"go"` {
			cancel()
		}
		return handle(ctx, op, p)
	}
	return o
}

// TestTrackerInstalled guards the engine access of internal/engine: if
// an upgrade of modernc.org/quickjs moves the fields it reads, unhandled
// rejections would silently stop being reported.
func TestTrackerInstalled(t *testing.T) {
	if runtime.GOARCH == "386" || runtime.GOARCH == "arm" {
		t.Skip("no rejection tracker on 32-bit platforms")
	}
	v, err := newQJSVM()
	if err != nil {
		t.Fatal(err)
	}
	defer v.close()
	if v.in == nil {
		t.Fatal("the promise rejection tracker is not installed: engine.Attach no longer finds the engine's fields")
	}
}

// The watchdog stops a script through qjsVM.interrupt, which must reach a
// loop whose body is one slow built-in call at once: the engine alone would
// consult its interrupt handler only 10,000 ticks later (thousands of such
// calls, seconds). Counted in iterations after the interrupt, not in time.
func TestInterruptStopsSlowBuiltinLoops(t *testing.T) {
	if runtime.GOARCH == "386" || runtime.GOARCH == "arm" {
		t.Skip("no sandbox on 32-bit platforms")
	}
	for _, c := range []struct{ name, setup, call string }{
		{"join", `globalThis.big = new Array(6000).fill("abc");`, `big.join(",")`},
		{"JSON.stringify", `globalThis.o = Array.from({ length: 120 }, (_, i) => ({ i, s: "abcdefghij" }));`, `JSON.stringify(o)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, err := newQJSVM()
			if err != nil {
				t.Fatal(err)
			}
			defer v.close()
			// The probe is a native function, as the engine calls them (a
			// Go function registered through quickjs checks the interrupt
			// itself when it returns, which would hide what is tested).
			var probes []*engine.Promise
			defer func() {
				for _, p := range probes {
					p.Free()
				}
			}()
			if err := v.in.e.DefineHostCall("probe", "<eval>", func(_, _ string, p *engine.Promise) error {
				probes = append(probes, p)
				v.interrupt()
				return nil
			}, errorPayload); err != nil {
				t.Fatal(err)
			}
			if _, err := v.m.Eval(c.setup+` globalThis.n = 0; for (;;) { `+c.call+`; if (++n === 50) probe("", ""); }`, quickjs.EvalGlobal); err == nil {
				t.Fatal("the loop was not interrupted")
			}
			n, err := v.m.Eval("n", quickjs.EvalGlobal)
			if err != nil {
				t.Fatal(err)
			}
			if after := fmt.Sprint(n); after != "50" && after != "51" {
				t.Errorf("the loop ran to n = %s after an interrupt at 50: the interrupt did not reach the slow built-in at once", after)
			}
		})
	}
}
