//go:build !(386 || arm)

package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codemode-mcp/codemode/internal/diag"
)

// Adversarial tests of the native host call (internal/engine) and the inline
// dispatch of loop.go: leaks, re-entry, pollution, memory limits, and call
// sites checked against the engine's own backtraces.

// runKeep runs code like execute does, but keeps the VM open so that the
// test can look at the engine's memory afterwards. The caller closes it.
func runKeep(t *testing.T, code string, opts *Options) (*run, *qjsVM) {
	return runKeepCtx(t, context.Background(), code, opts)
}

func runKeepCtx(t *testing.T, ctx context.Context, code string, opts *Options) (*run, *qjsVM) {
	t.Helper()
	o := *opts
	o.Limits = o.Limits.withDefaults()
	o.Position = defaultPosition
	o.MaxPendingTimers = 1000
	r := newRun(ctx, code, &o)
	v, err := newQJSVM()
	if err != nil {
		t.Fatal(err)
	}
	r.vm = v
	v.bind(r)
	v.setLimits(r.deadline, o.Limits.MaxMemoryBytes)
	if err := v.evalModule(code, nil); err != nil { // the engine's own deadline bounds it
		r.evalFailure(err)
	} else {
		r.loop()
	}
	r.opCancel()
	r.workers.Wait()
	return r, v
}

// usedAfterGC is the engine's allocated bytes after a full collection.
func usedAfterGC(v *qjsVM) int64 {
	v.in.e.RunGC()
	used, _ := v.in.memory()
	return used
}

// Every host call frees what it holds (promise, resolving functions, the
// call site, parsed values, strings) whether it succeeds, fails, or is
// refused: the engine's memory after a collection does not grow with the
// number of calls.
func TestHostCallsDoNotLeak(t *testing.T) {
	h := newTestHost()
	scripts := map[string]string{
		"sequential ok": `for (let i = 0; i < N; i++) await ping({ i, s: "x".repeat(50) });`,
		"parallel ok":   `for (let k = 0; k < N / 100; k++) await Promise.all(Array.from({ length: 100 }, (_, i) => ping([i])));`,
		"failed":        `for (let i = 0; i < N; i++) { try { await fail(i); } catch (e) {} }`,
		"proto":         `for (let i = 0; i < N; i++) { await proto(); try { await protoFail(); } catch (e) {} }`,
		"refused": `for (let k = 0; k < N / 100; k++) {
  const ps = []; for (let i = 0; i < 1000; i++) ps.push(ping(i));
  for (let i = 0; i < 100; i++) { try { await ping(i); } catch (e) { if (e.limit !== "pendingOperations") throw e; } }
  await Promise.all(ps);
}`,
	}
	for name, body := range scripts {
		t.Run(name, func(t *testing.T) {
			measure := func(n int) int64 {
				code := "import { ping, fail, proto, protoFail } from \"@codemode/servers/x\";\nconst N = " + fmt.Sprint(n) + ";\n" + body + "\nglobalThis.__codemode_result__ = 1;\n"
				r, v := runKeep(t, code, h.options(Limits{Timeout: roomy}))
				defer v.close()
				if r.failed {
					t.Fatalf("run failed: %s", diagString(&Result{Diagnostics: r.diags}))
				}
				if len(v.in.ops) != 0 {
					t.Errorf("%d host calls still registered after the run", len(v.in.ops))
				}
				return usedAfterGC(v)
			}
			// Under -race the engine is many times slower: fewer calls
			// still show a leak of more than 64 bytes a call.
			n := 2000
			if raceDetector {
				n = 600
			}
			small, large := measure(100), measure(n)
			t.Logf("used after GC: %d calls %d bytes, %d calls %d bytes", 100, small, n, large)
			if large-small > 32<<10 {
				t.Errorf("memory grows with the number of calls: %d bytes more for %d more calls", large-small, n-100)
			}
		})
	}
}

// A VM closed with calls pending frees their promises and resolving
// functions (release): after release the engine's memory no longer depends
// on how many calls were pending.
func TestReleaseFreesPendingCalls(t *testing.T) {
	h := newTestHost()
	measure := func(n int) (before, after int64) {
		// The run is cancelled once every call has started (the host
		// counts them).
		code := fmt.Sprintf("import { hang } from \"@codemode/servers/x\";\nfor (let i = 0; i < %d; i++) hang();\nawait new Promise(() => {}); ", n)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		o := h.options(Limits{Timeout: roomy})
		var started atomic.Int64
		o.Handle = func(hctx context.Context, op string, p json.RawMessage) (json.RawMessage, error) {
			if op == "hang" && started.Add(1) == int64(n) {
				cancel()
			}
			return h.handle(hctx, op, p)
		}
		r, v := runKeepCtx(t, ctx, code, o)
		defer v.close()
		if !r.res.Canceled {
			t.Fatalf("want the cancellation: %s", diagString(&Result{Diagnostics: r.diags}))
		}
		// The cancellation ends the handlers too, and the loop may settle
		// a few of them before it stops: most calls are still pending.
		if got := len(v.in.ops); got > n || got < n*9/10 {
			t.Fatalf("%d ops registered, want about %d", got, n)
		}
		before = usedAfterGC(v)
		v.in.release()
		if len(v.in.ops) != 0 {
			t.Fatalf("release left %d ops", len(v.in.ops))
		}
		after = usedAfterGC(v)
		return before, after
	}
	b1, a1 := measure(5)
	b2, a2 := measure(500)
	t.Logf("5 pending: %d -> %d; 500 pending: %d -> %d", b1, a1, b2, a2)
	if b2-b1 < 495*100 {
		t.Fatalf("pending calls cost only %d bytes: the measurement is broken", b2-b1)
	}
	// The small-block allocator keeps arenas that are partly used, so
	// what is left varies by a few arenas (8–16 KiB, not with the count);
	// one leaked object per call (a promise's resolving function is 64
	// bytes or more) would be over 31 KiB.
	if a2-a1 > 495*64 {
		t.Errorf("after release, 495 more pending calls still hold %d bytes", a2-a1)
	}
}

// A module that fails while a call it never awaited is queued is reported
// at once, as before the inline dispatch: the orphaned call must not run on
// the loop goroutine first (here it would block until the deadline and turn
// the uncaught exception into a timeout, which the diagnostic would say).
func TestFailureWithOrphanedCallIsNotDelayed(t *testing.T) {
	h := newTestHost()
	for _, code := range []string{
		"import { hang } from \"@codemode/servers/x\";\nhang();\nthrow new Error(\"boom\");\n",
		"import { hang } from \"@codemode/servers/x\";\nhang();\nawait Promise.reject(new Error(\"boom\"));\n",
	} {
		t.Run("", func(t *testing.T) {
			res := runJS(t, context.Background(), code, h.options(Limits{Timeout: roomy}))
			d := wantDiag(t, res, diag.UncaughtException)
			if !strings.Contains(d.Message, "boom") {
				t.Errorf("diagnostic %+v", d)
			}
		})
	}
}

// A run whose context is cancelled ends on the cancellation even while the
// script awaits one call after another (each dispatched inline, never
// reaching the loop's select on ctx.Done()): otherwise it would run on to
// its timeout, and say so.
func TestCancelDuringSequentialCalls(t *testing.T) {
	for _, body := range []string{
		`for (;;) await ping(1);`,
		`for (;;) { try { await hang(); } catch (e) {} }`,
	} {
		ctx, cancel := context.WithCancel(context.Background())
		opts := newTestHost().options(Limits{Timeout: roomy})
		// Cancelled as the script makes its third call (the first "hang"
		// would wait for the cancellation itself).
		handle, calls := opts.Handle, atomic.Int32{}
		opts.Handle = func(hctx context.Context, op string, p json.RawMessage) (json.RawMessage, error) {
			if calls.Add(1) == 3 || op != "ping" {
				cancel()
			}
			return handle(hctx, op, p)
		}
		res := runJS(t, ctx, "import { ping, hang } from \"@codemode/servers/x\";\n"+body, opts)
		cancel()
		wantDiag(t, res, diag.Canceled)
		if res.TimedOut {
			t.Errorf("%s: cancelled at the 10th call, the run went on to its timeout", body)
		}
	}
}

// A handler on a worker that ignores its context (two calls at once, so
// neither runs on the loop goroutine) does not hold the run past its
// deadline: finish stops waiting for it. Here the handlers block until the
// run has returned, so a run that waited for them would never return.
func TestWorkerIgnoringContextIsBounded(t *testing.T) {
	h := newTestHost()
	opts := h.options(Limits{Timeout: 200 * time.Millisecond})
	release := make(chan struct{})
	defer close(release)
	opts.Handle = func(ctx context.Context, op string, p json.RawMessage) (json.RawMessage, error) {
		<-release // a blocking call that takes no context
		return p, nil
	}
	res := Run(context.Background(), "import { ping } from \"@codemode/servers/x\";\nawait Promise.all([ping(1), ping(2)]);", opts)
	wantLimit(t, res, "timeout")
}

// Nothing agent code can reach changes what a host call returns or throws:
// globals, prototypes and statics the bootstrap does not use directly.
func TestHostCallIgnoresPollution(t *testing.T) {
	h := newTestHost()
	res := runJS(t, context.Background(), `import { ping, fail, tool } from "@codemode/servers/x";
import { ToolCallError, SandboxLimitError } from "@codemode/errors";
const saved = { parse: JSON.parse, stringify: JSON.stringify };
const out = {};
JSON.parse = () => { throw new Error("polluted parse"); };
JSON.stringify = () => { throw new Error("polluted stringify"); };
const RealPromise = Promise;
const savedThen = Promise.prototype.then;
globalThis.Promise = class FakePromise { constructor() { throw new Error("polluted Promise"); } };
RealPromise.prototype.catch = function () { throw new Error("polluted catch"); };
RealPromise.prototype.then = function () { throw new Error("polluted then"); };
Object.defineProperty = () => { throw new Error("polluted defineProperty"); };
Object.create = () => { throw new Error("polluted create"); };
Object.keys = () => { throw new Error("polluted keys"); };
Object.prototype.get = function () { throw new Error("polluted get"); };
Object.prototype.set = function () { throw new Error("polluted set"); };
Object.prototype.hint = "polluted hint";
Object.prototype.fields = { polluted: true };
Array.prototype[Symbol.iterator] = function () { throw new Error("polluted iterator"); };
Array.prototype.push = function () { throw new Error("polluted push"); };
Error.captureStackTrace = () => { throw new Error("polluted captureStackTrace"); };
String.prototype.toString = function () { return "polluted"; };
const v = await ping({ a: [1, 2] });
out.value = v.a.length === 2 && v.a[1] === 2;
try { await fail(1); } catch (e) {
  out.fail = e instanceof ToolCallError && e.message === "the upstream said no" && e.hint === "ask nicely" && e.stack === "    at <agent>:25:17\n";
}
const ps = [];
for (let i = 0; i < 1000; i++) ps[i] = ping(i);
try { await ping(1); } catch (e) {
  out.refused = e instanceof SandboxLimitError && e.limit === "pendingOperations" && e.hint.startsWith("await");
}
delete Array.prototype[Symbol.iterator]; Array.prototype[Symbol.iterator] = Array.prototype.values;
RealPromise.prototype.then = savedThen;
await RealPromise.all(ps);
JSON.parse = saved.parse; JSON.stringify = saved.stringify;
delete Object.prototype.get; delete Object.prototype.set; delete Object.prototype.hint; delete Object.prototype.fields;
globalThis.__codemode_result__ = out;
`, h.options(Limits{}))
	wantResult(t, res, `{"value":true,"fail":true,"refused":true}`)
}

// A then getter on Object.prototype runs agent code while the loop resolves
// a call's promise (resolve looks up "then" synchronously). That code may
// start further calls, which register while settle runs, and may throw,
// which rejects the call's promise.
func TestThenGetterDuringSettle(t *testing.T) {
	h := newTestHost()
	const getterLine = "  if (this.x === 1) started.push(ping({ n: 0 }), fail(1).catch((e) => e.stack), ping({ n: 2 }));"
	res := runJS(t, context.Background(), `import { ping, fail } from "@codemode/servers/x";
const started = [];
let calls = 0;
Object.defineProperty(Object.prototype, "then", { configurable: true, get() {
`+getterLine+`
  if (this.y === 1) throw new Error("from then");
  calls++;
  return undefined;
} });
const a = await ping({ x: 1 });
let thrown = "";
try { await ping({ y: 1 }); } catch (e) { thrown = e.message; }
const all = await Promise.all(started);
delete Object.prototype.then;
globalThis.__codemode_result__ = { a: a.x, thrown, all };
`, h.options(Limits{}))
	site := fmt.Sprintf("    at <agent>:5:%d\n", strings.Index(getterLine, "fail(")+len("fail("))
	want, _ := json.Marshal(map[string]any{"a": 1, "thrown": "from then", "all": []any{map[string]any{"n": 0}, site, map[string]any{"n": 2}}})
	wantResult(t, res, string(want))
}

// A result that does not fit in the memory limit rejects the call with the
// engine's out-of-memory error (caught by the script), or ends the run as
// out of memory (uncaught); neither leaks nor crashes when repeated. (Its
// text fits: a larger one is refused before it reaches the VM, see
// TestResultLargerThanTheLimit.)
func TestResultOutOfMemory(t *testing.T) {
	h := newTestHost()
	big := json.RawMessage(`[` + strings.Repeat(`{"k":"`+strings.Repeat("v", 100)+`"},`, 14000) + `0]`)
	opts := h.options(Limits{MaxMemoryBytes: 2 << 20})
	if int64(len(big)) >= opts.Limits.MaxMemoryBytes {
		t.Fatalf("the result's text (%d bytes) must fit in the limit", len(big))
	}
	opts.Handle = func(ctx context.Context, op string, p json.RawMessage) (json.RawMessage, error) {
		if op == "ping" {
			return big, nil
		}
		return h.handle(ctx, op, p)
	}
	for i := 0; i < 5; i++ {
		res := runJS(t, context.Background(), `import { ping } from "@codemode/servers/x";
let caught = "";
try { await ping(1); } catch (e) { caught = String(e && e.message); }
globalThis.__codemode_result__ = caught;`, opts)
		if res.OutOfMemory {
			wantLimit(t, res, "out of memory")
		} else {
			wantResult(t, res, `"out of memory"`)
		}
		res = runJS(t, context.Background(), `import { ping } from "@codemode/servers/x";
await ping(1);`, opts)
		wantLimit(t, res, "out of memory")
	}
}

// Calls started with the engine at its memory limit fail cleanly: memory
// is filled to the limit with small objects and freed one at a time, so
// that the allocations of a call (strings, promise capability, refusal
// string) fail at one point or another. Every run either succeeds or is
// reported out of memory; none crashes or reports anything else.
func TestCallsAtMemoryLimit(t *testing.T) {
	h := newTestHost()
	outcomes := map[string]int{}
	for _, call := range []string{"ping(1)", "fail(1)", "Promise.all(Array.from({ length: 1001 }, (_, i) => ping(i)))"} {
		for k := 0; k < 12; k++ {
			res := runJS(t, context.Background(), fmt.Sprintf(`import { ping, fail } from "@codemode/servers/x";
let hog = null;
try { for (;;) hog = { n: hog, a: new Array(64).fill(0) }; } catch (e) {}
try { for (;;) hog = { n: hog }; } catch (e) {}
for (let i = 0; i < %d; i++) hog = hog.n;
let p = null, thrown = 0;
try { p = %s; } catch (e) { thrown++; }
hog = null;
const r = await Promise.allSettled([p]);
globalThis.__codemode_result__ = thrown + r.length;`, k, call), h.options(Limits{MaxMemoryBytes: 512 << 10}))
			if res.OutOfMemory {
				wantLimit(t, res, "out of memory")
				outcomes["oom"]++
			} else {
				wantOK(t, res)
				outcomes[string(res.Result)]++
			}
		}
	}
	t.Logf("outcomes %v", outcomes)
}

// The call site read from the engine's stack frames agrees with the
// engine's own backtrace (find_line_num) for the same call: boom, an agent
// function of the same length as fail, throws where fail would be called.
func TestCallSiteMatchesEngineBacktrace(t *testing.T) {
	snippets := []string{
		`try { await X(1); } catch (e) { out.push(e.stack); }`,
		`  try { const v = [1, 2, X(3)]; await v[2]; } catch (e) { out.push(e.stack); }`,
		`await (async () => { try { await X(1); } catch (e) { out.push(e.stack); } })();`,
		`try { await (0, X)(1); } catch (e) { out.push(e.stack); }`,
		`try { await X?.(1); } catch (e) { out.push(e.stack); }`,
		`try { await X(...[1, 2]); } catch (e) { out.push(e.stack); }`,
		`try { await Reflect.apply(X, null, [1]); } catch (e) { out.push(e.stack); }`,
		`try { await { m() { return X(1); } }.m(); } catch (e) { out.push(e.stack); }`,
		`try { await { get g() { return X(1); } }.g; } catch (e) { out.push(e.stack); }`,
		`try { await (function* () { yield X(1); })().next().value; } catch (e) { out.push(e.stack); }`,
		`try { for (const x of [1]) await X(x); } catch (e) { out.push(e.stack); }`,
		`try { await new (class { constructor() { this.p = X(1); } })().p; } catch (e) { out.push(e.stack); }`,
		`try { await [1].map((x) => X(x))[0]; } catch (e) { out.push(e.stack); }`,
		`try { await X` + "`t`" + `; } catch (e) { out.push(e.stack); }`,
		`                                                                                                                                        try { await X(1); } catch (e) { out.push(e.stack); }`,
		`try { await (async function* () { yield await X(1); })().next(); } catch (e) { out.push(e.stack); }`,
		`try { await Promise.resolve().then(() => X(1)); } catch (e) { out.push(e.stack); }`,
	}
	var body strings.Builder
	body.WriteString("const out = [];\n")
	for i, s := range snippets {
		// Vary the lines in between, so that the pc2line deltas vary.
		fmt.Fprintf(&body, "%s\n%s", s, strings.Repeat("\n", i%3))
		fmt.Fprintf(&body, "let v%d = %d;\n", i, i)
	}
	body.WriteString("globalThis.__codemode_result__ = out;\n")
	h := newTestHost()
	run := func(code string) []string {
		res := runJS(t, context.Background(), code, h.options(Limits{}))
		wantOK(t, res)
		var out []string
		if err := json.Unmarshal(res.Result, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	src := strings.ReplaceAll(body.String(), "X", "fail")
	got := run("import { fail } from \"@codemode/servers/x\";\n" + src)
	engine := run("// import\n" + strings.ReplaceAll(body.String(), "X", "boom") + "function boom() { throw new Error(\"x\"); }\n")
	if len(got) != len(snippets) || len(engine) != len(snippets) {
		t.Fatalf("got %d and %d stacks, want %d", len(got), len(engine), len(snippets))
	}
	pos := regexp.MustCompile(`<agent>:(\d+):(\d+)`)
	last := strings.Count(src, "\n") + 2 // boom's line
	for i := range snippets {
		var want string
		for _, m := range pos.FindAllStringSubmatch(engine[i], -1) {
			if m[1] != fmt.Sprint(last) {
				want = m[0]
				break
			}
		}
		g := pos.FindString(got[i])
		if g == "" {
			t.Errorf("snippet %d %q: no call site in %q", i, snippets[i], got[i])
		}
		if g != want {
			t.Errorf("snippet %d %q:\n  site   %q\n  engine %q (%q)", i, snippets[i], g, want, engine[i])
		}
	}
}
