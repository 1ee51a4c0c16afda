package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/codemode-mcp/codemode/internal/diag"
)

// The globals of codemode-spec §3.5: what must be there, what must not, and
// how the non-engine ones (console, timers, TextEncoder/TextDecoder, URL)
// behave.

// requiredGlobals lists every global §3.5 requires with an expression that
// exercises it. Each name is also checked to be an own property of
// globalThis (except console.* which are properties of console).
var requiredGlobals = []check{
	{"JSON", `JSON.stringify(JSON.parse('{"a":[1,"x",null]}')) === '{"a":[1,"x",null]}'`},
	{"Math", `Math.max(1, 3) === 3 && Math.floor(-1.5) === -2 && Math.random() >= 0 && Math.random() < 1`},
	{"Date", `new Date(Date.UTC(2020, 0, 2)).toISOString() === "2020-01-02T00:00:00.000Z" && Math.abs(Date.now() - new Date().getTime()) < 1000 && Date.parse("2020-01-02T00:00:00Z") === 1577923200000`},
	{"URL", `new URL("https://a.example/c?d=1").searchParams.get("d") === "1"`},
	{"URLSearchParams", `new URLSearchParams("a=1&b=2").get("b") === "2"`},
	{"Promise", `(await Promise.all([1, Promise.resolve(2)])).join() === "1,2" && (await Promise.allSettled([Promise.reject(1)]))[0].status === "rejected" && (await Promise.any([Promise.reject(1), 3])) === 3 && (await Promise.race([4])) === 4`},
	{"Map", `new Map([[1, "a"]]).get(1) === "a"`},
	{"Set", `new Set([1, 1, 2]).size === 2`},
	{"WeakMap", `(() => { const k = {}; return new WeakMap([[k, 5]]).get(k) === 5; })()`},
	{"WeakSet", `(() => { const k = {}; return new WeakSet([k]).has(k); })()`},
	{"Symbol", `typeof Symbol("s") === "symbol" && typeof Symbol.iterator === "symbol" && Symbol.for("k") === Symbol.for("k")`},
	{"Proxy", `new Proxy({}, { get: () => 7 }).anything === 7`},
	{"Reflect", `Reflect.ownKeys({ a: 1, [Symbol.iterator]: 2 }).length === 2 && Reflect.has({ a: 1 }, "a")`},
	{"RegExp", `/a(b+)/.exec("xabbb")[1] === "bbb" && new RegExp("^x$", "i").test("X") && "a-b-c".replace(/-/g, "+") === "a+b+c"`},
	{"Error", `new Error("m", { cause: 1 }).cause === 1 && new TypeError("t") instanceof Error && new RangeError("r").name === "RangeError" && new SyntaxError("s") instanceof Error && new ReferenceError("x") instanceof Error && new AggregateError([], "a").name === "AggregateError"`},
	{"Array", `Array.from({ length: 3 }, (_, i) => i * 2).join() === "0,2,4" && [3, 1, 2].toSorted().join() === "1,2,3" && [1, [2, [3]]].flat(Infinity).length === 3`},
	{"Object", `Object.entries(Object.fromEntries([["a", 1]])).join() === "a,1" && Object.keys(Object.assign({}, { b: 2 })).join() === "b" && Object.groupBy([1, 2, 3], (x) => x % 2 ? "odd" : "even").odd.length === 2`},
	{"String", `String(12) === "12" && "abc".at(-1) === "c" && "a,b".split(",").length === 2 && "x".padStart(3, "-") === "--x" && "aXa".replaceAll("a", "b") === "bXb"`},
	{"Number", `Number("0x10") === 16 && Number.isInteger(5) && (1.005).toFixed(1) === "1.0" && Number.MAX_SAFE_INTEGER === 9007199254740991`},
	{"Boolean", `Boolean("") === false && Boolean("x") === true`},
	{"BigInt", `(2n ** 64n).toString() === "18446744073709551616" && BigInt("123") === 123n && typeof 1n === "bigint"`},
	{"parseInt", `parseInt("ff", 16) === 255 && parseInt("12px") === 12`},
	{"parseFloat", `parseFloat("1.5e3") === 1500`},
	{"isNaN", `isNaN("x") && !isNaN(1)`},
	{"isFinite", `isFinite(1) && !isFinite(Infinity) && !isFinite(NaN)`},
	{"Infinity", `Infinity === 1 / 0 && Infinity > Number.MAX_VALUE`},
	{"NaN", `Number.isNaN(NaN) && NaN !== NaN`},
	{"undefined", `undefined === void 0 && typeof undefined === "undefined"`},
	{"TextEncoder", `new TextEncoder().encode("é").length === 2`},
	{"TextDecoder", `new TextDecoder().decode(new Uint8Array([0xc3, 0xa9])) === "é"`},
	{"ArrayBuffer", `new ArrayBuffer(8).byteLength === 8 && new ArrayBuffer(8).slice(2).byteLength === 6 && ArrayBuffer.isView(new Uint8Array(1))`},
	{"DataView", `(() => { const d = new DataView(new ArrayBuffer(8)); d.setUint32(0, 0x01020304); d.setFloat32(4, 1.5, true); return d.getUint8(0) === 1 && d.getUint16(2) === 0x0304 && d.getFloat32(4, true) === 1.5; })()`},
	{"Uint8Array", `typedArrayWorks(Uint8Array, 1, 255, 255)`},
	{"Int8Array", `typedArrayWorks(Int8Array, 1, 255, -1)`},
	{"Uint16Array", `typedArrayWorks(Uint16Array, 2, 65535, 65535)`},
	{"Int16Array", `typedArrayWorks(Int16Array, 2, 65535, -1)`},
	{"Uint32Array", `typedArrayWorks(Uint32Array, 4, -1, 4294967295)`},
	{"Int32Array", `typedArrayWorks(Int32Array, 4, 4294967295, -1)`},
	{"Float32Array", `typedArrayWorks(Float32Array, 4, 0.5, 0.5)`},
	{"Float64Array", `typedArrayWorks(Float64Array, 8, 0.1, 0.1)`},
	{"setTimeout", `typeof setTimeout === "function" && typeof setTimeout(() => {}, 0) === "number"`},
	{"clearTimeout", `typeof clearTimeout === "function" && clearTimeout(setTimeout(() => {}, 0)) === undefined`},
	{"console.log", `typeof console.log === "function"`},
	{"console.debug", `typeof console.debug === "function"`},
	{"console.warn", `typeof console.warn === "function"`},
	{"console.error", `typeof console.error === "function"`},
	{"__codemode_result__", `"__codemode_result__" in globalThis && globalThis.__codemode_result__ === undefined`},
	{"globalThis", `typeof globalThis === "object" && globalThis.globalThis === globalThis`},
}

const typedArrayPrelude = `
// typedArrayWorks stores in into a 4-element array of type C and checks that
// it reads back as out, that the element size is bytes, and that common
// methods work.
function typedArrayWorks(C, bytes, input, out) {
  const a = new C(4);
  a[1] = input;
  const b = C.from([3, 1, 2]).sort();
  return a.length === 4 && a[1] === out && a[0] === 0 && C.BYTES_PER_ELEMENT === bytes &&
    a.byteLength === 4 * bytes && b.join() === "1,2,3" && a.subarray(1, 2)[0] === out &&
    new C(a.buffer, bytes, 1)[0] === out;
}
`

func TestRequiredGlobals(t *testing.T) {
	checks := append([]check(nil), requiredGlobals...)
	for _, c := range requiredGlobals {
		name := c.name
		if strings.Contains(name, ".") || name == "globalThis" {
			continue
		}
		checks = append(checks, check{name + " is an own global", fmt.Sprintf(`Object.getOwnPropertyNames(globalThis).includes(%q)`, name)})
	}
	runChecks(t, nil, typedArrayPrelude, checks)
}

// forbiddenGlobals must not exist (§3.5): network, setInterval, eval and
// string-compiling functions, Node/Deno/QuickJS host objects, shared memory
// and GC observation, and the bootstrap's own host functions.
var forbiddenGlobals = []string{
	"fetch", "XMLHttpRequest", "WebSocket", "EventSource", "Request", "Response", "Headers",
	"setInterval", "clearInterval", "setImmediate", "clearImmediate",
	"eval", "process", "require", "module", "exports", "Buffer", "global",
	"__dirname", "__filename", "Deno", "Bun", "navigator", "importScripts", "postMessage",
	"SharedArrayBuffer", "Atomics", "WeakRef", "FinalizationRegistry",
	"print", "std", "os", "scriptArgs", "gc", "bjson", "performance",
	"__cm_handoff", "__cm_call", "__cm_log", "__cm_timer", "__cm_clear", "__cm_done", "__cm_url", "__cm_install", "__cm_strguard",
}

func TestForbiddenGlobals(t *testing.T) {
	var checks []check
	for _, name := range forbiddenGlobals {
		checks = append(checks, check{name, fmt.Sprintf(
			`typeof %[1]s === "undefined" && !(%[2]q in globalThis) && !Object.getOwnPropertyNames(globalThis).includes(%[2]q) && Reflect.get(globalThis, %[2]q) === undefined`,
			name, name)})
	}
	// No global whose name looks like the host's, however it was added.
	checks = append(checks, check{"no __cm_ names", `Object.getOwnPropertyNames(globalThis).filter((k) => k.startsWith("__cm")).length === 0`})
	runChecks(t, nil, "", checks)
}

// ownGlobalNames is every own property name of globalThis in a fresh
// sandbox. A name added to this list must be in §3.5 or an engine built-in
// that cannot reach the host; a test failure here means something leaked.
var ownGlobalNames = []string{
	"AggregateError", "Array", "ArrayBuffer", "BigInt", "BigInt64Array", "BigUint64Array",
	"Boolean", "DOMException", "DataView", "Date", "Error", "EvalError", "Float16Array", "Float32Array",
	"Float64Array", "Function", "Infinity", "Int16Array", "Int32Array", "Int8Array",
	"InternalError", "Iterator", "JSON", "Map", "Math", "NaN", "Number", "Object",
	"Promise", "Proxy", "RangeError", "ReferenceError", "Reflect", "RegExp", "Set",
	"String", "Symbol", "SyntaxError", "TextDecoder", "TextEncoder", "TypeError",
	"URIError", "URL", "URLSearchParams", "Uint16Array", "Uint32Array", "Uint8Array",
	"Uint8ClampedArray", "WeakMap", "WeakSet", "__codemode_result__", "clearTimeout",
	"console", "decodeURI", "decodeURIComponent", "encodeURI", "encodeURIComponent",
	"escape", "globalThis", "isFinite", "isNaN", "parseFloat", "parseInt", "setTimeout",
	"undefined", "unescape",
	// Pure functions of their input, as the HTML standard defines them
	// (TestWebGlobalsMatchNode).
	"atob", "btoa", "queueMicrotask", "structuredClone",
}

func TestGlobalNamesFixture(t *testing.T) {
	res := runJS(t, context.Background(), `globalThis.__codemode_result__ = {
  names: Object.getOwnPropertyNames(globalThis).sort(),
  symbols: Object.getOwnPropertySymbols(globalThis).map(String),
  console: Object.getOwnPropertyNames(console).sort(),
  proto: Object.getPrototypeOf(globalThis) === Object.prototype,
};`, nil)
	wantOK(t, res)
	var got struct {
		Names, Symbols, Console []string
		Proto                   bool
	}
	if err := json.Unmarshal(res.Result, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, n := range ownGlobalNames {
		want[n] = true
	}
	have := map[string]bool{}
	for _, n := range got.Names {
		have[n] = true
		if !want[n] {
			t.Errorf("unexpected global %q: a new global must be in §3.5 or be reviewed and added to ownGlobalNames", n)
		}
	}
	for _, n := range ownGlobalNames {
		if !have[n] {
			t.Errorf("global %q is missing", n)
		}
	}
	if !reflect.DeepEqual(got.Symbols, []string{"Symbol(Symbol.toStringTag)"}) {
		t.Errorf("global symbols %q", got.Symbols)
	}
	// The spec's four levels, and info, trace, table and dir, which log
	// at level "log" (see TestConsoleExtras).
	if !reflect.DeepEqual(got.Console, []string{"debug", "dir", "error", "info", "log", "table", "trace", "warn"}) {
		t.Errorf("console has %q, want exactly debug, dir, error, info, log, table, trace, warn", got.Console)
	}
	if !got.Proto {
		t.Error("the global object's prototype is not Object.prototype")
	}
}

func TestResultNullWhenUnset(t *testing.T) {
	for name, code := range map[string]string{
		"nothing":   `const x = 1;`,
		"undefined": `globalThis.__codemode_result__ = undefined;`,
		"deleted":   `globalThis.__codemode_result__ = 1; delete globalThis.__codemode_result__;`,
		"null":      `globalThis.__codemode_result__ = null;`,
	} {
		t.Run(name, func(t *testing.T) {
			res := runJS(t, context.Background(), code, nil)
			wantResult(t, res, "null")
		})
	}
	t.Run("value", func(t *testing.T) {
		res := runJS(t, context.Background(), `globalThis.__codemode_result__ = { a: [1, "two", true, null], b: { c: 1.5 } };`, nil)
		wantResult(t, res, `{"a":[1,"two",true,null],"b":{"c":1.5}}`)
	})
	t.Run("last assignment wins", func(t *testing.T) {
		res := runJS(t, context.Background(), `globalThis.__codemode_result__ = 1; await null; globalThis.__codemode_result__ = 2;`, nil)
		wantResult(t, res, `2`)
	})
}

func TestSetTimeout(t *testing.T) {
	res := runJS(t, context.Background(), `
const order = [];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
setTimeout(() => order.push("b30"), 30);
setTimeout((x, y) => order.push("a0:" + x + y), 0, 1, 2);
setTimeout(() => order.push("c30"), 30); // same delay: the order of scheduling
setTimeout(() => order.push("d10"), 10);
setTimeout(() => order.push("neg"), -5);  // negative and NaN delays are 0
setTimeout(() => order.push("nan"), "x");
const cancelled = setTimeout(() => order.push("cancelled"), 5);
clearTimeout(cancelled);
clearTimeout(cancelled);  // twice is fine
clearTimeout(99999);      // unknown ids, and non-ids, are ignored
clearTimeout("1");
clearTimeout(undefined);
Promise.resolve().then(() => order.push("microtask")); // before any timer
const ids = [setTimeout(() => {}, 0), setTimeout(() => {}, 0)];
const t0 = Date.now();
await sleep(60);
const waited = Date.now() - t0;
// Once the module has finished, a zero-delay timer still runs; one with a
// delay is cancelled (see cancelTimers).
setTimeout(() => { globalThis.__codemode_result__.deferred = true; }, 0);
setTimeout(() => { globalThis.__codemode_result__.late = true; }, 20);
globalThis.__codemode_result__ = { order, waited: waited >= 55, idsDiffer: ids[0] !== ids[1], deferred: false, late: false };
`, nil)
	if string(res.Result) != `{"order":["microtask","a0:12","neg","nan","d10","b30","c30"],"waited":true,"idsDiffer":true,"deferred":true,"late":false}` {
		t.Errorf("result %s: %s", res.Result, diagString(res))
	}
	if len(res.Diagnostics) != 1 || res.Diagnostics[0].Code != diag.TimersCancelled {
		t.Errorf("want one TIMERS_CANCELLED: %s", diagString(res))
	}
}

// A timeout guard in a Promise.race must not hold a finished run until it
// fires, or past the run's timeout (which would lose the result).
func TestTimeoutGuardDoesNotHoldTheRun(t *testing.T) {
	o := newTestHost().options(Limits{Timeout: roomy})
	res := runJS(t, context.Background(), `import { ping } from "@codemode/servers/x";
const withTimeout = (p, ms) => Promise.race([p, new Promise((_, rej) => setTimeout(() => rej(new Error("timed out")), ms))]);
globalThis.__codemode_result__ = await withTimeout(ping(7), 1e9);`, o)
	// The guard fires long after the run's timeout: held by it, the run
	// would end at the timeout, its result lost.
	if string(res.Result) != "7" || res.Failed() {
		t.Errorf("result %s after %v: %s", res.Result, res.Duration, diagString(res))
	}
}

func TestSetTimeoutThisAndThrowingCallback(t *testing.T) {
	t.Run("this is undefined", func(t *testing.T) {
		res := runJS(t, context.Background(), `await new Promise((r) => setTimeout(function () { globalThis.__codemode_result__ = this === undefined; r(); }, 0));`, nil)
		wantResult(t, res, `true`)
	})
	t.Run("uncaught exception in a callback", func(t *testing.T) {
		res := runJS(t, context.Background(), `console.log("before"); setTimeout(() => { throw new Error("from the timer"); }, 0); globalThis.__codemode_result__ = 1;`, nil)
		d := wantDiag(t, res, "UNCAUGHT_EXCEPTION")
		if !strings.Contains(d.Message, "from the timer") {
			t.Errorf("message %q", d.Message)
		}
		if len(res.Logs) != 1 || res.Logs[0].Message != "before" {
			t.Errorf("logs before the failure not kept: %s", logString(res))
		}
	})
}

func TestConsole(t *testing.T) {
	res := runJS(t, context.Background(), `
console.log("a", 1, true, null, undefined);
console.log(1.5, -0, NaN, -Infinity, 1e21);
console.log(10n, Symbol("s"));
console.log({ a: 1, b: [1, "x", null], c: { d: "e" } });
console.log([1, { c: null }]);
const cyc = { name: "loop" }; cyc.self = cyc;
console.log(cyc);
console.log("prefix", cyc, "suffix");
console.log({ n: 1n });
console.log([1n]);
console.log();
console.log("");
console.log("héllo 🎉 日本");
console.log(new Date(0));
console.log(new Map([[1, 2]]));
console.log({ toJSON() { return "custom"; } });
console.log("%s and %d", "x", 1);
console.debug("dbg");
console.warn("wrn", { w: 1 });
console.error("err", [2]);
`, nil)
	wantOK(t, res)
	want := []LogEntry{
		{Level: LevelLog, Message: "a 1 true null undefined"},
		{Level: LevelLog, Message: "1.5 0 NaN -Infinity 1e+21"},
		{Level: LevelLog, Message: "10 Symbol(s)"},
		{Level: LevelLog, Message: `{"a":1,"b":[1,"x",null],"c":{"d":"e"}}`},
		{Level: LevelLog, Message: `[1,{"c":null}]`},
		{Level: LevelLog, Message: "[Unserializable Object]"},
		{Level: LevelLog, Message: "prefix [Unserializable Object] suffix"},
		{Level: LevelLog, Message: "[Unserializable Object]"},
		{Level: LevelLog, Message: "[Unserializable Object]"},
		{Level: LevelLog, Message: ""},
		{Level: LevelLog, Message: ""},
		{Level: LevelLog, Message: "héllo 🎉 日本"},
		{Level: LevelLog, Message: `"1970-01-01T00:00:00.000Z"`},
		{Level: LevelLog, Message: `{}`},
		{Level: LevelLog, Message: `"custom"`},
		{Level: LevelLog, Message: "%s and %d x 1"},
		{Level: LevelDebug, Message: "dbg"},
		{Level: LevelWarn, Message: `wrn {"w":1}`},
		{Level: LevelError, Message: `err [2]`},
	}
	if len(res.Logs) != len(want) {
		t.Fatalf("%d log entries, want %d: %s", len(res.Logs), len(want), logString(res))
	}
	for i, w := range want {
		g := res.Logs[i]
		if g.Level != w.Level || g.Message != w.Message {
			t.Errorf("log %d: got %s %q, want %s %q", i, g.Level, g.Message, w.Level, w.Message)
		}
	}
}

func TestConsoleErrorsAndFunctions(t *testing.T) {
	res := runJS(t, context.Background(), `
import { ToolCallError } from "@codemode/errors";
console.log(new TypeError("bad type"));
console.log(new ToolCallError("it broke", { hint: "retry", serverId: "s" }));
console.log(function named() {});
console.log(() => {});
`, nil)
	wantOK(t, res)
	if len(res.Logs) != 4 {
		t.Fatalf("logs: %s", logString(res))
	}
	for i, want := range []string{"TypeError: bad type", "ToolCallError: it broke", "named", ""} {
		m := res.Logs[i].Message
		if !strings.Contains(m, want) || m == "undefined" || m == "{}" {
			t.Errorf("log %d: %q does not contain %q", i, m, want)
		}
	}
	if !strings.Contains(res.Logs[1].Message, "retry") {
		t.Errorf("a CodemodeError's log should carry its hint: %q", res.Logs[1].Message)
	}
}

func TestConsoleTimeMs(t *testing.T) {
	res := runJS(t, context.Background(), `
console.log("first");
await new Promise((r) => setTimeout(r, 50));
console.log("second");
`, nil)
	wantOK(t, res)
	if len(res.Logs) != 2 {
		t.Fatalf("logs: %s", logString(res))
	}
	if d := res.Logs[1].TimeMs - res.Logs[0].TimeMs; d < 45 || d > 2000 {
		t.Errorf("timeMs %d then %d: want ~50 ms apart", res.Logs[0].TimeMs, res.Logs[1].TimeMs)
	}
}

var textEncodingChecks = []check{
	{"encoding", `new TextEncoder().encoding === "utf-8" && new TextDecoder().encoding === "utf-8"`},
	{"ascii", `bytes(enc.encode("abc")) === "61 62 63"`},
	{"two-byte", `bytes(enc.encode("é")) === "c3 a9"`},
	{"three-byte", `bytes(enc.encode("€")) === "e2 82 ac"`},
	{"astral", `bytes(enc.encode("😀")) === "f0 9f 98 80" && bytes(enc.encode("𝄞")) === "f0 9d 84 9e"`},
	{"lone high surrogate", `bytes(enc.encode("\ud800")) === "ef bf bd"`},
	{"lone low surrogate", `bytes(enc.encode("a\udc00b")) === "61 ef bf bd 62"`},
	{"reversed pair", `bytes(enc.encode("\udc00\ud800")) === "ef bf bd ef bf bd"`},
	{"encode() is empty", `enc.encode().length === 0 && enc.encode("").length === 0 && enc.encode() instanceof Uint8Array`},
	{"encode coerces", `bytes(enc.encode(12)) === "31 32"`},
	{"round trip", `["", "plain", "héllo wörld", "日本語", "😀🎉𝄞", "a\u0000b", "\uffff\u{10ffff}"].every((s) => dec.decode(enc.encode(s)) === s)`},
	{"round trip of a lone surrogate is U+FFFD", `dec.decode(enc.encode("x\ud83dy")) === "x\ufffdy"`},
	{"long input", `(() => { const s = "é😀a".repeat(10000); return dec.decode(enc.encode(s)) === s; })()`},
	{"encodeInto", `(() => { const d = new Uint8Array(4); const r = enc.encodeInto("a€b", d); return r.read === 2 && r.written === 4 && bytes(d) === "61 e2 82 ac"; })()`},
	{"encodeInto never splits a pair", `(() => { const d = new Uint8Array(5); const r = enc.encodeInto("a😀", d); const e = new Uint8Array(4); const q = enc.encodeInto("a😀", e); return r.read === 3 && r.written === 5 && q.read === 1 && q.written === 1; })()`},
	{"invalid byte", `dec.decode(u8(0xff)) === "\ufffd" && dec.decode(u8(0x61, 0x80, 0x62)) === "a\ufffdb"`},
	{"truncated sequence", `dec.decode(u8(0x61, 0xe2, 0x82)) === "a\ufffd"`},
	{"overlong", `dec.decode(u8(0xc0, 0x80)) === "\ufffd\ufffd" && dec.decode(u8(0xe0, 0x80, 0x80)) === "\ufffd\ufffd\ufffd"`},
	{"encoded surrogate", `dec.decode(u8(0xed, 0xa0, 0x80)) === "\ufffd\ufffd\ufffd"`},
	{"beyond U+10FFFF", `dec.decode(u8(0xf4, 0x90, 0x80, 0x80)) === "\ufffd\ufffd\ufffd\ufffd"`},
	{"fatal throws TypeError", `(() => { try { new TextDecoder("utf-8", { fatal: true }).decode(u8(0x61, 0xff)); return false; } catch (e) { return e instanceof TypeError; } })()`},
	{"fatal truncated throws", `(() => { try { new TextDecoder("utf-8", { fatal: true }).decode(u8(0xe2, 0x82)); return false; } catch (e) { return e instanceof TypeError; } })()`},
	{"fatal valid", `new TextDecoder("utf-8", { fatal: true }).decode(u8(0xe2, 0x82, 0xac)) === "€" && new TextDecoder("utf-8", { fatal: true }).fatal === true`},
	{"stream split 3-byte", `(() => { const d = new TextDecoder(); return d.decode(u8(0x61, 0xe2, 0x82), { stream: true }) === "a" && d.decode(u8(0xac, 0x62)) === "€b"; })()`},
	{"stream split 4-byte in 4 chunks", `(() => { const d = new TextDecoder(); let s = ""; for (const b of [0xf0, 0x9f, 0x98, 0x80]) s += d.decode(u8(b), { stream: true }); return s + d.decode() === "😀"; })()`},
	{"stream flush of an incomplete tail", `(() => { const d = new TextDecoder(); return d.decode(u8(0xf0, 0x9f), { stream: true }) === "" && d.decode() === "\ufffd"; })()`},
	{"stream invalid continuation", `(() => { const d = new TextDecoder(); return d.decode(u8(0xe2, 0x41), { stream: true }) === "\ufffdA"; })()`},
	{"stream reuse after flush", `(() => { const d = new TextDecoder(); d.decode(u8(0xe2), { stream: true }); d.decode(); return d.decode(u8(0x61)) === "a"; })()`},
	{"BOM stripped", `dec.decode(u8(0xef, 0xbb, 0xbf, 0x61)) === "a"`},
	{"only the first BOM", `dec.decode(u8(0xef, 0xbb, 0xbf, 0xef, 0xbb, 0xbf, 0x61)) === "\ufeffa"`},
	{"ignoreBOM keeps it", `new TextDecoder("utf-8", { ignoreBOM: true }).decode(u8(0xef, 0xbb, 0xbf, 0x61)) === "\ufeffa"`},
	{"BOM once per stream", `(() => { const d = new TextDecoder(); return d.decode(u8(0xef, 0xbb, 0xbf, 0x61), { stream: true }) + d.decode(u8(0xef, 0xbb, 0xbf, 0x62)) === "a\ufeffb"; })()`},
	{"BOM again after a flush", `(() => { const d = new TextDecoder(); d.decode(u8(0xef, 0xbb, 0xbf, 0x61)); return d.decode(u8(0xef, 0xbb, 0xbf, 0x62)) === "b"; })()`},
	// WHATWG: the BOM is stripped even when it arrives split across chunks.
	{"BOM split across stream chunks", `(() => { const d = new TextDecoder(); return d.decode(u8(0xef), { stream: true }) + d.decode(u8(0xbb, 0xbf, 0x61)) === "a"; })()`},
	{"inputs: ArrayBuffer, DataView, offset views", `dec.decode(u8(0x61, 0x62).buffer) === "ab" && dec.decode(new DataView(u8(0x78, 0x61, 0x62).buffer, 1)) === "ab" && dec.decode(u8(0x78, 0x61, 0x62).subarray(1)) === "ab" && dec.decode(new Uint16Array([0x6261])) === "ab"`},
	{"decode() is empty", `dec.decode() === ""`},
	{"decode of a non-buffer throws TypeError", `(() => { try { dec.decode("abc"); return false; } catch (e) { return e instanceof TypeError; } })()`},
	{"labels", `new TextDecoder("utf8").encoding === "utf-8" && new TextDecoder(" UTF-8 ").encoding === "utf-8" && new TextDecoder("unicode-1-1-utf-8").encoding === "utf-8"`},
	{"unsupported label throws RangeError", `(() => { try { new TextDecoder("latin1"); return false; } catch (e) { return e instanceof RangeError; } })()`},
}

const textEncodingPrelude = `
const enc = new TextEncoder();
const dec = new TextDecoder();
const u8 = (...b) => new Uint8Array(b);
const bytes = (a) => Array.from(a, (x) => x.toString(16).padStart(2, "0")).join(" ");
`

func TestTextEncoding(t *testing.T) {
	runChecks(t, nil, textEncodingPrelude, textEncodingChecks)
}

var urlChecks = []check{
	{"components", `(() => { const u = new URL("https://user:pw@Host.Example:8080/p/q?x=1#frag"); return u.protocol === "https:" && u.username === "user" && u.password === "pw" && u.host === "host.example:8080" && u.hostname === "host.example" && u.port === "8080" && u.pathname === "/p/q" && u.search === "?x=1" && u.hash === "#frag" && u.origin === "https://host.example:8080" && u.href === "https://user:pw@host.example:8080/p/q?x=1#frag"; })()`},
	{"relative with base", `new URL("../d?x#y", "https://a.example/b/c/").href === "https://a.example/b/d?x#y"`},
	{"relative with URL base", `new URL("/root", new URL("https://a.example/b/c")).href === "https://a.example/root"`},
	{"protocol-relative", `new URL("//other.example/p", "https://a.example/").href === "https://other.example/p"`},
	{"query-only relative", `new URL("?q=2", "https://a.example/b?q=1#h").href === "https://a.example/b?q=2"`},
	{"normalisation", `new URL("HTTPS://EXAMPLE.com:443/a/./b/../c").href === "https://example.com/a/c"`},
	{"empty path is /", `new URL("http://example.com").href === "http://example.com/" && new URL("http://example.com").pathname === "/"`},
	{"default port dropped", `new URL("http://a.example:80/").port === "" && new URL("http://a.example:81/").port === "81"`},
	{"percent-encoding of the path", `new URL("https://a.example/a b/é").pathname === "/a%20b/%C3%A9"`},
	{"IDN to punycode", `new URL("https://münchen.de/").hostname === "xn--mnchen-3ya.de"`},
	{"IPv4 normalisation", `new URL("http://0x7f.1/").hostname === "127.0.0.1"`},
	{"IPv6", `new URL("http://[0:0::1]:8080/").hostname === "[::1]" && new URL("http://[::1]:8080/").host === "[::1]:8080"`},
	{"opaque origin", `new URL("foo://bar/baz").origin === "null" && new URL("file:///tmp/x").pathname === "/tmp/x"`},
	{"mailto", `new URL("mailto:a@b.example").pathname === "a@b.example"`},
	{"invalid throws TypeError", `(() => { try { new URL("not a url"); return false; } catch (e) { return e instanceof TypeError; } })()`},
	{"relative without base throws TypeError", `(() => { try { new URL("/path"); return false; } catch (e) { return e instanceof TypeError; } })()`},
	{"invalid base throws TypeError", `(() => { try { new URL("a", "nope"); return false; } catch (e) { return e instanceof TypeError; } })()`},
	{"bad port throws", `(() => { try { new URL("http://a.example:99999/"); return false; } catch (e) { return e instanceof TypeError; } })()`},
	{"canParse", `URL.canParse("https://x.example") === true && URL.canParse("nope") === false && URL.canParse("/p", "https://x.example") === true && URL.canParse("/p") === false`},
	{"parse", `URL.parse("nope") === null && URL.parse("https://x.example/").href === "https://x.example/"`},
	{"toString and toJSON", `String(new URL("https://a.example")) === "https://a.example/" && JSON.stringify({ u: new URL("https://a.example/p") }) === '{"u":"https://a.example/p"}'`},
	{"instanceof and tag", `new URL("https://a.example") instanceof URL && Object.prototype.toString.call(new URL("https://a.example")) === "[object URL]" && Object.prototype.toString.call(new URLSearchParams()) === "[object URLSearchParams]"`},
	{"setters", `(() => { const u = new URL("https://a.example/p"); u.pathname = "x y"; u.hash = "h"; u.search = "k=v"; u.hostname = "b.example"; u.port = "8443"; u.protocol = "http"; return u.href === "http://b.example:8443/x%20y?k=v#h"; })()`},
	{"port setter to default", `(() => { const u = new URL("https://a.example:8443/"); u.port = "443"; return u.port === "" && u.host === "a.example"; })()`},
	{"href setter", `(() => { const u = new URL("https://a.example/"); u.href = "http://b.example/c?d=1"; return u.hostname === "b.example" && u.searchParams.get("d") === "1"; })()`},
	{"invalid href setter throws TypeError", `(() => { const u = new URL("https://a.example/"); try { u.href = "nope"; return false; } catch (e) { return e instanceof TypeError && u.href === "https://a.example/"; } })()`},
	{"searchParams is live and cached", `(() => { const u = new URL("https://a.example/?a=1"); return u.searchParams === u.searchParams && u.searchParams.get("a") === "1"; })()`},
	{"searchParams mutation updates href", `(() => { const u = new URL("https://h.example/?q=1"); u.searchParams.append("a b", "c&d"); u.searchParams.set("q", "2"); return u.href === "https://h.example/?q=2&a+b=c%26d" && u.search === "?q=2&a+b=c%26d"; })()`},
	{"searchParams delete updates href", `(() => { const u = new URL("https://h.example/?a=1&b=2&a=3"); u.searchParams.delete("a"); return u.href === "https://h.example/?b=2"; })()`},
	{"search setter updates searchParams", `(() => { const u = new URL("https://h.example/?q=1"); const p = u.searchParams; u.search = "?z=9"; return p.get("z") === "9" && p.get("q") === null; })()`},
	{"plus and percent decoding", `new URLSearchParams("q=a+b%20c%2B&e=%E2%82%AC").get("q") === "a b c+" && new URLSearchParams("e=%E2%82%AC").get("e") === "€"`},
	{"invalid percent sequences stay", `new URLSearchParams("a=%zz&b=%").get("a") === "%zz" && new URLSearchParams("b=%").get("b") === "%"`},
	{"invalid UTF-8 becomes U+FFFD", `new URLSearchParams("a=%FF").get("a") === "\ufffd"`},
	{"leading ? and empty pairs", `new URLSearchParams("?a=1&&b=&c").toString() === "a=1&b=&c="`},
	{"first = splits", `new URLSearchParams("a=b=c").get("a") === "b=c"`},
	{"serialisation", `new URLSearchParams({ q: "é ~*-._!'()" }).toString() === "q=%C3%A9+%7E*-._%21%27%28%29"`},
	{"from object, pairs, and another", `new URLSearchParams({ a: "1", b: 2 }).toString() === "a=1&b=2" && new URLSearchParams([["x", "y"], ["x", "z"]]).getAll("x").join() === "y,z" && new URLSearchParams(new URLSearchParams("k=v")).get("k") === "v"`},
	{"bad pair throws TypeError", `(() => { try { new URLSearchParams([["a"]]); return false; } catch (e) { return e instanceof TypeError; } })()`},
	{"get, getAll, has, size", `(() => { const p = new URLSearchParams("a=1&b=2&a=3"); return p.get("a") === "1" && p.get("z") === null && p.getAll("a").join() === "1,3" && p.has("b") && !p.has("c") && p.has("a", "3") && !p.has("a", "4") && p.size === 3; })()`},
	{"set replaces the first and drops the rest", `(() => { const p = new URLSearchParams("a=1&b=2&a=3"); p.set("a", "x"); return p.toString() === "a=x&b=2"; })()`},
	{"delete with value", `(() => { const p = new URLSearchParams("a=1&a=2"); p.delete("a", "1"); return p.toString() === "a=2"; })()`},
	{"stable sort by name", `(() => { const p = new URLSearchParams("c=3&a=1&b=2&a=0"); p.sort(); return p.toString() === "a=1&a=0&b=2&c=3"; })()`},
	{"sort by UTF-16 code units", `(() => { const p = new URLSearchParams("\u{1F600}=1&\uFFFD=2"); p.sort(); return [...p.keys()].join() === "\u{1F600},\uFFFD"; })()`},
	{"iteration", `(() => { const p = new URLSearchParams("a=1&b=2"); const seen = []; p.forEach((v, k) => seen.push(k + v)); return [...p].join(";") === "a,1;b,2" && [...p.entries()].join(";") === "a,1;b,2" && [...p.keys()].join() === "a,b" && [...p.values()].join() === "1,2" && seen.join() === "a1,b2"; })()`},
}

func TestURL(t *testing.T) {
	runChecks(t, nil, "", urlChecks)
}

func TestDeterministic(t *testing.T) {
	now := time.Date(2024, 2, 3, 4, 5, 6, 789_000_000, time.UTC)
	code := `
const randoms = [Math.random(), Math.random(), Math.random(), Math.random(), Math.random()];
const before = Date.now();
await new Promise((r) => setTimeout(r, 20));
const d = new Date();
globalThis.__codemode_result__ = {
  randoms,
  inRange: randoms.every((x) => x >= 0 && x < 1),
  distinct: new Set(randoms).size === randoms.length,
  now: Date.now(),
  advanced: Date.now() - before,
  newDate: d.getTime(),
  iso: d.toISOString(),
  epoch: new Date(0).getTime(),
  fromParts: new Date(2020, 0, 15).getFullYear() === 2020,
  fromString: new Date("2021-06-01T00:00:00Z").getTime() === 1622505600000,
  utc: Date.UTC(2000, 0, 1) === 946684800000,
  parse: Date.parse("2000-01-01T00:00:00Z") === 946684800000,
  instanceOf: d instanceof Date && new Date(0) instanceof Date,
  proto: Object.getPrototypeOf(d) === Date.prototype && d.constructor === Date,
  call: typeof Date() === "string",
  invalid: isNaN(new Date("garbage").getTime()),
};`
	run := func(seed uint32) map[string]any {
		t.Helper()
		res := runJS(t, context.Background(), code, &Options{Deterministic: &Deterministic{Seed: seed, Now: now}})
		wantOK(t, res)
		var out map[string]any
		if err := json.Unmarshal(res.Result, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	a, b, c := run(42), run(42), run(43)
	if !reflect.DeepEqual(a["randoms"], b["randoms"]) {
		t.Errorf("same seed, different sequences: %v and %v", a["randoms"], b["randoms"])
	}
	if reflect.DeepEqual(a["randoms"], c["randoms"]) {
		t.Errorf("seeds 42 and 43 gave the same sequence %v", a["randoms"])
	}
	if a["advanced"] != 20.0 {
		t.Errorf("after a 20 ms timer the virtual clock moved %v ms", a["advanced"])
	}
	for _, k := range []string{"inRange", "distinct", "fromParts", "fromString", "utc", "parse", "instanceOf", "proto", "call", "invalid"} {
		if a[k] != true {
			t.Errorf("%s: %v", k, a[k])
		}
	}
	ms := float64(now.UnixMilli() + 20)
	if a["now"] != ms || a["newDate"] != ms {
		t.Errorf("Date.now() = %v, new Date() = %v, want %v", a["now"], a["newDate"], ms)
	}
	if a["iso"] != "2024-02-03T04:05:06.809Z" {
		t.Errorf("iso %v", a["iso"])
	}
	if a["epoch"] != 0.0 {
		t.Errorf("new Date(0) = %v", a["epoch"])
	}
}

func TestNotDeterministicByDefault(t *testing.T) {
	before := time.Now().UnixMilli()
	res := runJS(t, context.Background(), `globalThis.__codemode_result__ = { now: Date.now(), r: [Math.random(), Math.random()] };`, nil)
	after := time.Now().UnixMilli()
	wantOK(t, res)
	var out struct {
		Now float64
		R   []float64
	}
	if err := json.Unmarshal(res.Result, &out); err != nil {
		t.Fatal(err)
	}
	// The real clock: read during the run, whatever the run took.
	if out.Now < float64(before) || out.Now > float64(after) {
		t.Errorf("Date.now() is %v, not between %d and %d, the clock before and after the run", out.Now, before, after)
	}
	res2 := runJS(t, context.Background(), `globalThis.__codemode_result__ = { r: [Math.random(), Math.random()] };`, nil)
	if jsonEqual(res2.Result, []byte(fmt.Sprintf(`{"r":[%v,%v]}`, out.R[0], out.R[1]))) {
		t.Errorf("two unseeded runs gave the same random numbers %v", out.R)
	}
}

// TestFreshSandbox checks §1.4: nothing a run does to its realm is visible
// to the next run.
func TestFreshSandbox(t *testing.T) {
	dirty := `
globalThis.leaked = "yes";
var leakedVar = 1;
Object.prototype.polluted = "yes";
Array.prototype.push = function () { return "hijacked"; };
JSON.stringify = () => '"hijacked"';
Math.random = () => 0.5;
console.log = () => {};
globalThis.setTimeout = undefined;
Object.freeze(Object.prototype);
delete globalThis.URL;
globalThis.__codemode_result__ = "dirty";
`
	clean := `
const a = [];
a.push(1);
globalThis.__codemode_result__ = {
  leaked: typeof leaked, leakedVar: typeof leakedVar, polluted: ({}).polluted === undefined,
  push: a.length === 1, json: JSON.stringify([1]) === "[1]", random: Math.random() !== 0.5 || Math.random() !== 0.5,
  setTimeout: typeof setTimeout, URL: typeof URL, extensible: Object.isExtensible(Object.prototype),
};
console.log("logged");
`
	for i := 0; i < 3; i++ {
		res := runJS(t, context.Background(), dirty, nil)
		wantResult(t, res, `"dirty"`)
		res = runJS(t, context.Background(), clean, nil)
		wantResult(t, res, `{"leaked":"undefined","leakedVar":"undefined","polluted":true,"push":true,"json":true,"random":true,"setTimeout":"function","URL":"function","extensible":true}`)
		if len(res.Logs) != 1 || res.Logs[0].Message != "logged" {
			t.Errorf("console of the clean run: %s", logString(res))
		}
	}
}

// A failed dynamic import that nothing catches is the IMPORT_FAILURE a
// static one is, with the host's whole reason, although the engine's
// TypeError cuts the reason at 256 bytes.
func TestUncaughtDynamicImportFailure(t *testing.T) {
	long := strings.Repeat("x", 300)
	res := runJS(t, context.Background(), `await import("@codemode/servers/" + "`+long+`");`, newTestHost().options(Limits{Timeout: roomy}))
	d := wantDiag(t, res, diag.ImportFailure)
	if !strings.Contains(d.Message, long) {
		t.Errorf("the reason was cut: %s", diagString(res))
	}
}

// Delayed timers scheduled once the run is winding down are dropped as
// they come, callbacks included, and reported once: a zero-delay loop that
// keeps scheduling them holds no memory and makes one diagnostic.
func TestTimersCancelledOnce(t *testing.T) {
	res := runJS(t, context.Background(), `function f() { setTimeout(f, 0); setTimeout(() => {}, 1000); } f();`,
		&Options{Limits: Limits{Timeout: 500 * time.Millisecond, MaxMemoryBytes: 16 << 20}})
	if !res.TimedOut || res.OutOfMemory {
		t.Errorf("TimedOut %v, OutOfMemory %v, want the timeout: %s", res.TimedOut, res.OutOfMemory, diagString(res))
	}
	n := 0
	for _, d := range res.Diagnostics {
		if d.Code == diag.TimersCancelled {
			n++
		}
	}
	if n != 1 || len(res.Diagnostics) != 2 {
		t.Errorf("%d TIMERS_CANCELLED among %d diagnostics, want 1 of 2", n, len(res.Diagnostics))
	}
	// Two passes of cancelling are one diagnostic, counting both.
	res = runJS(t, context.Background(), `setTimeout(() => setTimeout(() => {}, 10), 0); setTimeout(() => {}, 20); globalThis.__codemode_result__ = 1;`, nil)
	if len(res.Diagnostics) != 1 || !strings.Contains(res.Diagnostics[0].Message, "2 timers") {
		t.Errorf("%s", diagString(res))
	}
}

// A failed import rejects `await import()` with the resolver's
// @codemode/errors class, hint and fields (a plain error becomes a
// CodemodeError), caught without leaving an unhandled rejection behind; a
// static import of it is IMPORT_FAILURE with the class.
func TestImportFailureIsTheErrorClass(t *testing.T) {
	opts := &Options{Limits: Limits{Timeout: 5 * time.Second}, Resolve: func(_ context.Context, spec string) (string, error) {
		if spec == "@codemode/servers/plain" {
			return "", fmt.Errorf("module %q is broken", spec)
		}
		return "", diag.Errorf(diag.ServerNotFoundError, "there is no server %q", "nope").WithHint("call listServers()").
			WithFields(map[string]any{"serverId": "nope", "available": []string{"a", "b"}})
	}}
	res := runJS(t, context.Background(), `import { ServerNotFoundError, CodemodeError } from "@codemode/errors";
const out = [];
for (const id of ["nope", "nope", "plain"]) {
  try { await import("@codemode/servers/" + id); } catch (e) {
    out.push([e instanceof ServerNotFoundError, e instanceof CodemodeError, e.name, e.message, e.hint, e.serverId ?? null, e.available ?? null]);
  }
}
globalThis.__codemode_result__ = out;`, opts)
	wantResult(t, res, `[[true,true,"ServerNotFoundError","there is no server \"nope\"","call listServers()","nope",["a","b"]],
[true,true,"ServerNotFoundError","there is no server \"nope\"","call listServers()","nope",["a","b"]],
[false,true,"CodemodeError","module \"@codemode/servers/plain\" is broken","`+importHint+`",null,null]]`)

	for _, code := range []string{
		`import * as m from "@codemode/servers/nope"; m;`,
		`import { f } from "@codemode/servers/nope"; f;`,
		`await import("@codemode/servers/nope");`,
	} {
		res := runJS(t, context.Background(), code, opts)
		d := wantDiag(t, res, diag.ImportFailure)
		if d.ErrorClass != diag.ServerNotFoundError || d.Hint != "call listServers()" || !strings.HasSuffix(d.Message, `there is no server "nope"`) {
			t.Errorf("%s: %s", code, diagString(res))
		}
	}
}

// console.info, trace, table and dir log at level "log" instead of throwing
// "not a function"; the levels stay the spec's four.
func TestConsoleExtras(t *testing.T) {
	res := Run(context.Background(), `console.info("i", 1); console.trace("t"); console.table([{a: 1}]); console.dir({b: 2});
globalThis.__codemode_result__ = [console.info.name, typeof console.trace];`, nil)
	wantResult(t, res, `["info","function"]`)
	var got []string
	for _, l := range res.Logs {
		got = append(got, string(l.Level)+" "+l.Message)
	}
	want := []string{"log i 1", "log Trace: t", `log [{"a":1}]`, `log {"b":2}`}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("logs %q, want %q", got, want)
	}
}
