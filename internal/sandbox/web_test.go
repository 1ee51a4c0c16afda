package sandbox

import (
	"context"
	_ "embed"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/testutil"
)

//go:embed testdata/webglobals.js
var webGlobalsCases string

// btoa, atob, structuredClone, queueMicrotask and DOMException behave as
// the HTML and WebIDL standards say: every case of testdata/webglobals.js
// has the same outcome (value, or the class, name and code of the error)
// in the sandbox as in Node, whose implementations follow them.
func TestWebGlobalsMatchNode(t *testing.T) {
	res := runJS(t, context.Background(), webGlobalsCases+"\nglobalThis.__codemode_result__ = await run();\n", &Options{Limits: Limits{Timeout: 2 * time.Minute}})
	wantOK(t, res)
	var got map[string]json.RawMessage
	if err := json.Unmarshal(res.Result, &got); err != nil {
		t.Fatal(err)
	}

	script := filepath.Join(t.TempDir(), "webglobals.mjs")
	if err := os.WriteFile(script, []byte(webGlobalsCases+"\nconsole.log(JSON.stringify(await run()));\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := testutil.Context(t)
	out, err := exec.CommandContext(ctx, testutil.Node(t), script).Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var want map[string]json.RawMessage
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatalf("node's output: %v\n%s", err, out)
	}

	// Where Node itself departs from the standard, the standard's outcome.
	for name, outcome := range map[string]string{
		// Node's TextEncoder is a JavaScript class, cloned as a plain
		// object; the standard's is a platform object that is not
		// serializable.
		"clone TextEncoder": `{"threw":["DOMException","DataCloneError",25]}`,
	} {
		want[name] = json.RawMessage(outcome)
	}
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if g, ok := got[name]; !ok {
			t.Errorf("%s: missing from the sandbox's results", name)
		} else if !jsonEqual(g, want[name]) {
			t.Errorf("%s:\n sandbox %s\n node    %s", name, g, want[name])
		}
	}
	if len(got) != len(want) || len(got) < 100 {
		t.Errorf("%d results in the sandbox, %d in node", len(got), len(want))
	}
}

// Once made (on first use), atob, btoa and structuredClone compute the
// same whatever the script then does to the built-in prototypes.
func TestWebGlobalsUnderPollution(t *testing.T) {
	res := runJS(t, context.Background(), `const input = { m: new Map([[1, 2]]), s: new Set([3]), a: [4, 5] };
structuredClone(1); atob(""); queueMicrotask(() => {});
for (let i = 0; i < 8; i++) {
  Object.defineProperty(Array.prototype, i, { set() { throw new Error("setter " + i); }, get() { return "polluted"; }, configurable: true });
}
Object.defineProperty(Object.prototype, "hint", { set() { throw new Error("hint setter"); }, configurable: true });
Map.prototype.forEach = Set.prototype.forEach = () => { throw new Error("forEach"); };
Map.prototype.set = () => { throw new Error("set"); };
Object.keys = () => ["nope"];
Promise.prototype.then = () => { throw new Error("then"); };
const c = structuredClone(input, { transfer: [] });
let ran = false;
queueMicrotask(() => { ran = true; });
await null;
const out = atob(" YW Jj ") + " " + btoa("abc") + " " + c.m.size + " " + c.s.size + " " + Object.getOwnPropertyNames(c.a).join() + " " + c.a.length + " " + Object.getOwnPropertyDescriptor(c.a, 1).value + " " + ran;
// The engine's own JSON.stringify stumbles on index setters: restore
// Array.prototype before the result is read.
for (let i = 0; i < 8; i++) delete Array.prototype[i];
globalThis.__codemode_result__ = out;`, nil)
	wantResult(t, res, `"abc YWJj 1 1 0,1,length 2 5 true"`)
}

// The limits hold: a clone too large for the memory limit ends the run with
// SANDBOX_LIMIT; one too deep ends it with a stack overflow.
func TestStructuredCloneLimits(t *testing.T) {
	engineStress(t)
	res := runJS(t, context.Background(), `const a = []; for (let i = 0; i < 20000; i++) a.push({ i, s: "x".repeat(10) + i });
const copies = []; for (;;) copies.push(structuredClone(a));`, &Options{Limits: Limits{Timeout: 5 * time.Minute, MaxMemoryBytes: 32 << 20}})
	if !res.OutOfMemory {
		t.Errorf("not stopped at the memory limit: %s", diagString(res))
	}
	res = runJS(t, context.Background(), `let v = 1; for (let i = 0; i < 100000; i++) v = [v];
try { structuredClone(v); globalThis.__codemode_result__ = "cloned"; } catch (e) { globalThis.__codemode_result__ = e.name + ": " + e.message; }`, nil)
	wantResult(t, res, `"InternalError: stack overflow"`)
}

// Without Intl, locale-sensitive methods ignore their locales and options;
// the first call that passes any gives the run one LOCALE_IGNORED warning,
// and calls without them none. The methods keep their names and lengths.
func TestLocaleArgumentsWarn(t *testing.T) {
	res := runJS(t, context.Background(), `globalThis.__codemode_result__ = [(1234.5).toLocaleString(), new Date(0).toLocaleDateString(), "a".localeCompare("b"), "i".toLocaleUpperCase(), [1].toLocaleString(),
  Number.prototype.toLocaleString.name, Date.prototype.toLocaleTimeString.length, String.prototype.localeCompare.length];`, nil)
	wantResult(t, res, `["1234.5","01/01/1970",-1,"I","1","toLocaleString",0,1]`)

	for _, c := range []struct{ code, method string }{
		{`(1234.5).toLocaleString("de-DE"); (1).toLocaleString("fr-FR"); new Date(0).toLocaleString("en-GB");`, `Number.prototype.toLocaleString("de-DE")`},
		{`(5).toLocaleString(undefined, { maximumFractionDigits: 2 });`, `Number.prototype.toLocaleString(…)`},
		{`new Date(0).toLocaleTimeString(["de"]);`, `Date.prototype.toLocaleTimeString(…)`},
		{`"a".localeCompare("b", undefined, { sensitivity: "base" });`, `String.prototype.localeCompare(…, …)`},
		{`"a".localeCompare("b", "sv");`, `String.prototype.localeCompare(…, "sv")`},
		{`"i".toLocaleUpperCase("tr");`, `String.prototype.toLocaleUpperCase("tr")`},
		{`new Uint8Array(2).toLocaleString("en");`, `TypedArray.prototype.toLocaleString("en")`},
		{`(10n).toLocaleString("en");`, `BigInt.prototype.toLocaleString("en")`},
	} {
		res := runJS(t, context.Background(), c.code, nil)
		if len(res.Diagnostics) != 1 {
			t.Errorf("%s: %s", c.code, diagString(res))
			continue
		}
		d := res.Diagnostics[0]
		if d.Severity != diag.SeverityWarning || d.Code != diag.LocaleIgnored || !strings.HasPrefix(d.Message, c.method+" ignored its locales and options") || d.Hint == "" {
			t.Errorf("%s: %+v", c.code, d)
		}
	}
}

// Each of these globals is made on first use: before, it is an accessor;
// reading it (typeof included) or assigning it makes it a plain data
// property, as the other globals are.
func TestWebGlobalsAreMadeOnFirstUse(t *testing.T) {
	res := runJS(t, context.Background(), `const kind = (n) => { const d = Object.getOwnPropertyDescriptor(globalThis, n); return [typeof d.get, d.enumerable, d.configurable, "value" in d && d.writable]; };
const before = kind("structuredClone");
const t = typeof structuredClone;
const after = kind("structuredClone");
globalThis.btoa = 5;
const assigned = [btoa, kind("btoa")];
const viaError = (() => { try { atob("*"); } catch (e) { return [e instanceof DOMException, kind("DOMException")]; } })();
globalThis.__codemode_result__ = { before, t, after, assigned, viaError };`, nil)
	wantResult(t, res, `{"before":["function",false,true,false],"t":"function","after":["undefined",false,true,true],
"assigned":[5,["undefined",false,true,true]],"viaError":[true,["undefined",false,true,true]]}`)
}

// A Promise in the result (JSON makes it {}) or its text ("[object
// Promise]") is a value used without await: the run warns, once, naming
// where it is; a result without one has no warning, and no getter of the
// result runs twice.
func TestPromiseInResultWarns(t *testing.T) {
	for _, c := range []struct{ code, where string }{
		{`globalThis.__codemode_result__ = { a: 1, b: Promise.resolve(2) };`, "result.b is a Promise"},
		{`globalThis.__codemode_result__ = [1, Promise.resolve(2)];`, "result[1] is a Promise"},
		{"const p = Promise.resolve(2); globalThis.__codemode_result__ = { text: `got ${p}` };", `result.text holds the text "[object Promise]"`},
		{`globalThis.__codemode_result__ = String(Promise.resolve(1));`, `the result holds the text "[object Promise]"`},
		{`globalThis.__codemode_result__ = { ok: true, list: [1, "two"] };`, ""},
		{`let n = 0; globalThis.__codemode_result__ = { get x() { n++; return n; } };`, ""},
	} {
		res := runJS(t, context.Background(), c.code, nil)
		var warned []diag.Diagnostic
		for _, d := range res.Diagnostics {
			if d.Code == diag.UnawaitedPromise {
				warned = append(warned, d)
			}
		}
		if c.where == "" {
			if len(warned) > 0 || len(res.Diagnostics) > 0 {
				t.Errorf("%s: %s", c.code, diagString(res))
			}
			continue
		}
		if len(warned) != 1 || warned[0].Severity != diag.SeverityWarning || !strings.HasPrefix(warned[0].Message, c.where) || !strings.Contains(warned[0].Hint, "await") {
			t.Errorf("%s: %s", c.code, diagString(res))
		}
	}
	// The getter ran once (by JSON.stringify), not again for the check.
	res := runJS(t, context.Background(), `let n = 0; globalThis.__codemode_result__ = { get x() { n++; return n; } };`, nil)
	wantResult(t, res, `{"x":1}`)
}
