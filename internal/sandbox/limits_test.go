package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/testutil"
)

// Limits (codemode-spec §3.2.4, §7.4): each one stops the script with a
// SANDBOX_LIMIT diagnostic of class SandboxLimitError, keeps the logs
// captured before, and reports a null result (§3.3.4).

// wantLimitFailure is wantLimit plus §3.3.4: the logs before the failure are
// kept (the script logs "before" first) and the result is null although the
// script assigned one.
func wantLimitFailure(t *testing.T, res *Result, mention string) {
	t.Helper()
	wantLimit(t, res, mention)
	if n := len(res.Diagnostics); n != 1 {
		t.Errorf("%d diagnostics, want 1: %s", n, diagString(res))
	}
	if len(res.Logs) == 0 || res.Logs[0].Message != "before" {
		t.Errorf("logs captured before the failure are lost: %s", logString(res))
	}
}

func TestTimeout(t *testing.T) {
	const imp = `import { ping } from "@codemode/servers/x";`
	cases := []struct {
		name, imports, code string
		// each is how long one host call takes, as a fraction of the
		// timeout; forever: until its context ends.
		each    float64
		forever bool
	}{
		{name: "tight loop", code: `for (;;);`},
		{name: "waiting on a timer", code: `await new Promise((r) => setTimeout(r, 1e9));`},
		{name: "waiting on a host call", imports: imp, code: `await ping(1);`, forever: true},
		// Each call is well under the timeout; together they are not.
		{name: "many host calls in a row", imports: imp, code: `for (let i = 0; i < 20; i++) await ping(i);`, each: 0.25},
		{name: "host calls, then a loop", imports: imp, code: `await ping(1); for (;;);`, each: 0.25},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var started, ended chan struct{}
			code := c.imports + "\n" + `console.log("before"); globalThis.__codemode_result__ = "too early";` + "\n" + c.code
			res, timeout := untilReached(t, func(timeout time.Duration) *Result {
				started, ended = make(chan struct{}, 64), make(chan struct{}, 64)
				o := newTestHost().options(Limits{Timeout: timeout})
				o.Handle = func(ctx context.Context, op string, p json.RawMessage) (json.RawMessage, error) {
					signal(started)
					if c.forever {
						<-ctx.Done()
						signal(ended)
						return nil, ctx.Err()
					}
					select {
					case <-time.After(time.Duration(c.each * float64(timeout))):
						return p, nil
					case <-ctx.Done():
						return nil, ctx.Err()
					}
				}
				return runJS(t, context.Background(), code, o)
			}, func(res *Result) bool {
				// The script logged, and made its call if it makes one,
				// before the timeout ended it.
				return len(res.Logs) > 0 && (c.imports == "" || len(started) > 0)
			})
			if !res.TimedOut {
				t.Errorf("TimedOut is false")
			}
			wantLimitFailure(t, res, fmt.Sprintf("timeoutMs (%d ms)", timeout.Milliseconds()))
			if c.forever {
				testutil.Wait(t, ended, "the cancellation of the handler's context at the timeout")
			}
		})
	}
	t.Run("a script inside the timeout", func(t *testing.T) {
		t.Parallel()
		res := runJS(t, context.Background(), `await new Promise((r) => setTimeout(r, 50)); globalThis.__codemode_result__ = "in time";`, &Options{Limits: Limits{Timeout: roomy}})
		wantResult(t, res, `"in time"`)
	})
}

func TestMemoryLimit(t *testing.T) {
	const limit = 16 << 20
	opts := func(l int64) *Options { return &Options{Limits: Limits{Timeout: roomy, MaxMemoryBytes: l}} }
	fail := []struct{ name, code string }{
		{"one buffer twice the limit", `const a = new Uint8Array(32 << 20); a.fill(1); globalThis.__codemode_result__ = a.length;`},
		{"small objects, twice the limit", `const a = []; for (let i = 0; i < 400000; i++) a.push({ i, s: "x" + i }); globalThis.__codemode_result__ = a.length;`},
		{"strings, twice the limit", `const a = []; for (let i = 0; i < 64; i++) a.push(("x" + i).repeat(1 << 19) + "!"); a.map((s) => s.indexOf("!")); globalThis.__codemode_result__ = a.length;`},
	}
	for _, c := range fail {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			res := runJS(t, context.Background(), `console.log("before");`+"\n"+c.code, opts(limit))
			if !res.OutOfMemory {
				t.Errorf("OutOfMemory is false")
			}
			wantLimitFailure(t, res, fmt.Sprintf("maxMemoryBytes is %d", limit))
		})
	}
	ok := []struct{ name, code, want string }{
		// Half the limit in 100 kB buffers. (The engine counts what the
		// allocator really reserves, a power of two per allocation: a
		// buffer of exactly 1 MiB costs 2 MiB, so half the limit in 1 MiB
		// buffers does not fit.)
		{"half the limit in 100 kB buffers", `const a = []; for (let i = 0; i < 84; i++) a.push(new Uint8Array(100000).fill(i)); globalThis.__codemode_result__ = a.length;`, "84"},
		{"a quarter of the limit in one buffer", `const a = new Uint8Array(4 << 20); a.fill(1); globalThis.__codemode_result__ = a.length;`, fmt.Sprint(4 << 20)},
		{"small objects, under half the limit", `const a = []; for (let i = 0; i < 50000; i++) a.push({ i, s: "x" + i }); globalThis.__codemode_result__ = a.length;`, "50000"},
		{"garbage is collected", `let n = 0; for (let i = 0; i < 200; i++) { const a = new Uint8Array(1 << 20); a[0] = 1; n += a[0]; } globalThis.__codemode_result__ = n;`, "200"},
	}
	for _, c := range ok {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			res := runJS(t, context.Background(), c.code, opts(limit))
			wantResult(t, res, c.want)
		})
	}
	t.Run("the limit is per run", func(t *testing.T) {
		t.Parallel()
		// More than the 16 MiB the other cases fail with.
		res := runJS(t, context.Background(), `const a = new Uint8Array(24 << 20); a.fill(1); globalThis.__codemode_result__ = a.length;`, opts(64<<20))
		wantResult(t, res, fmt.Sprint(24<<20))
	})
	t.Run("out of memory in a timer callback", func(t *testing.T) {
		t.Parallel()
		res := runJS(t, context.Background(), `console.log("before"); setTimeout(() => { const a = []; for (;;) a.push({ a }); }, 0);`, opts(limit))
		if !res.OutOfMemory {
			t.Errorf("OutOfMemory is false")
		}
		wantLimitFailure(t, res, "maxMemoryBytes")
	})
	t.Run("out of memory after a host call", func(t *testing.T) {
		t.Parallel()
		o := newTestHost().options(Limits{Timeout: roomy, MaxMemoryBytes: limit})
		res := runJS(t, context.Background(), `import { ping } from "@codemode/servers/x"; console.log("before"); await ping(1); const m = new Map(); for (let i = 0; ; i++) m.set(i, { i });`, o)
		if !res.OutOfMemory {
			t.Errorf("OutOfMemory is false")
		}
		wantLimitFailure(t, res, "maxMemoryBytes")
	})
	// A script may catch the engine's out-of-memory error, but exceeding a
	// limit ends the run all the same (§7.4): neither a caught error that
	// lets the run succeed as if nothing happened, nor a retry loop that
	// hits the limit until the timeout.
	caught := []struct{ name, code string }{
		{"caught once", `let caught = "none";
try { new Uint8Array(64 << 20); } catch (e) { caught = e.name; }
globalThis.__codemode_result__ = caught;`},
		{"caught in a retry loop", `let n = 0;
for (let i = 0; i < 1e6; i++) { try { const a = []; for (;;) a.push(new Array(1000).fill(1)); } catch { n++; } }
globalThis.__codemode_result__ = n;`},
		{"caught in an async function", `async function f() { try { return "x".repeat(1 << 26); } catch { return "caught"; } }
globalThis.__codemode_result__ = await f();`},
	}
	for _, c := range caught {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			res := runJS(t, context.Background(), c.code, opts(limit))
			if !res.OutOfMemory || res.TimedOut {
				t.Errorf("OutOfMemory %v, TimedOut %v, result %s", res.OutOfMemory, res.TimedOut, res.Result)
			}
			wantLimit(t, res, "maxMemoryBytes")
		})
	}
}

func TestLogLimit(t *testing.T) {
	run := func(t *testing.T, max int64, code string) *Result {
		t.Helper()
		res := runJS(t, context.Background(), code+"\nglobalThis.__codemode_result__ = \"done\";", &Options{Limits: Limits{MaxLogBytes: max}})
		// Truncating logs is not a failure of the script.
		wantResult(t, res, `"done"`)
		return res
	}
	warn := func(max int64) string {
		return fmt.Sprintf("warn: log output truncated: the script logged more than maxLogBytes (%d bytes); later console output was dropped", max)
	}
	a40 := strings.Repeat("a", 40)

	t.Run("exact truncation", func(t *testing.T) {
		res := run(t, 100, `const s = "a".repeat(40); console.log(s); console.warn(s); console.error(s); console.log("dropped"); console.error("dropped");`)
		wantLogs(t, res, "log: "+a40, "warn: "+a40, "error: "+strings.Repeat("a", 20), warn(100))
		wantTruncated(t, res, 100)
	})
	t.Run("exact fit is not truncated", func(t *testing.T) {
		res := run(t, 6, `console.log("abc"); console.debug("def");`)
		wantLogs(t, res, "log: abc", "debug: def")
	})
	t.Run("one byte over after an exact fit", func(t *testing.T) {
		res := run(t, 6, `console.log("abc"); console.log("def"); console.log("g");`)
		wantLogs(t, res, "log: abc", "log: def", warn(6))
	})
	t.Run("never splits a UTF-8 character", func(t *testing.T) {
		res := run(t, 5, `console.log("aé€");`)
		wantLogs(t, res, "log: aé", warn(5))
	})
	t.Run("arguments count with their separators", func(t *testing.T) {
		res := run(t, 5, `console.log("ab", "cd"); console.log("x");`)
		wantLogs(t, res, "log: ab cd", warn(5))
	})
	t.Run("the default is 64 KiB", func(t *testing.T) {
		res := runJS(t, context.Background(), `for (let i = 0; i < 100; i++) console.log("x".repeat(1000));`, nil)
		wantOK(t, res)
		wantTruncated(t, res, 65536)
		total := 0
		for _, l := range res.Logs[:len(res.Logs)-1] {
			total += len(l.Message)
		}
		if total != 65536 {
			t.Errorf("%d bytes kept, want exactly 65536", total)
		}
	})
	t.Run("logs are kept when the script fails later", func(t *testing.T) {
		res := runJS(t, context.Background(), `console.log("before"); console.error("also"); throw new Error("boom");`, nil)
		wantDiag(t, res, diag.UncaughtException)
		wantLogs(t, res, "log: before", "error: also")
	})
}

func TestResultLimit(t *testing.T) {
	opts := &Options{Limits: Limits{MaxResultBytes: 1000}}
	t.Run("exactly the limit", func(t *testing.T) {
		res := runJS(t, context.Background(), `globalThis.__codemode_result__ = "x".repeat(998);`, opts)
		wantOK(t, res)
		if len(res.Result) != 1000 {
			t.Errorf("result of %d bytes", len(res.Result))
		}
	})
	t.Run("one byte over", func(t *testing.T) {
		res := runJS(t, context.Background(), `console.log("before"); globalThis.__codemode_result__ = "x".repeat(999);`, opts)
		wantLimitFailure(t, res, "maxResultBytes (1000)")
	})
	t.Run("bytes, not characters", func(t *testing.T) {
		res := runJS(t, context.Background(), `globalThis.__codemode_result__ = "é".repeat(499);`, opts)
		wantOK(t, res)
		res = runJS(t, context.Background(), `console.log("before"); globalThis.__codemode_result__ = "é".repeat(500);`, opts)
		wantLimitFailure(t, res, "maxResultBytes")
	})
	t.Run("the default is 1 MiB", func(t *testing.T) {
		res := runJS(t, context.Background(), `console.log("before"); globalThis.__codemode_result__ = "x".repeat(1 << 20);`, nil)
		wantLimitFailure(t, res, "maxResultBytes (1048576)")
	})
}

func TestPendingTimerLimit(t *testing.T) {
	opts := func() *Options { return &Options{MaxPendingTimers: 10, Limits: Limits{Timeout: roomy}} }
	t.Run("exactly the limit", func(t *testing.T) {
		res := runJS(t, context.Background(), `let n = 0; for (let i = 0; i < 9; i++) setTimeout(() => n++, i);
await new Promise((r) => setTimeout(r, 20)); // the 10th
globalThis.__codemode_result__ = n;`, opts())
		wantResult(t, res, `9`)
	})
	t.Run("one over the limit", func(t *testing.T) {
		res := runJS(t, context.Background(), `for (let i = 0; i < 10; i++) setTimeout(() => {}, i);
await new Promise((r) => setTimeout(r, 20)); // the 11th
globalThis.__codemode_result__ = "not reached";`, opts())
		if !res.Failed() || !strings.Contains(res.Diagnostics[0].Message, "10") {
			t.Fatalf("11 pending timers with a limit of 10: %s, result %s", diagString(res), res.Result)
		}
	})
	t.Run("pending, not total", func(t *testing.T) {
		res := runJS(t, context.Background(), `let n = 0;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
for (let round = 0; round < 3; round++) {
  for (let i = 0; i < 9; i++) setTimeout(() => n++, 1);
  await sleep(10);
}
const ids = []; for (let i = 0; i < 9; i++) ids.push(setTimeout(() => { n += 1000; }, 1));
ids.forEach(clearTimeout); // cleared timers are no longer pending
for (let i = 0; i < 9; i++) setTimeout(() => n++, 1);
await sleep(10);
globalThis.__codemode_result__ = n;`, opts())
		wantResult(t, res, `36`)
	})
	t.Run("over the limit is a SandboxLimitError", func(t *testing.T) {
		res := runJS(t, context.Background(), `console.log("before"); for (let i = 0; i < 11; i++) setTimeout(() => {}, 1000);`, opts())
		wantLimitFailure(t, res, "10")
	})
	t.Run("the script can catch it as a SandboxLimitError", func(t *testing.T) {
		res := runJS(t, context.Background(), `import { SandboxLimitError, CodemodeError } from "@codemode/errors";
let out = "not thrown";
try { for (let i = 0; i < 11; i++) setTimeout(() => {}, 0); } catch (e) {
  out = { limit: e instanceof SandboxLimitError, base: e instanceof CodemodeError, hint: typeof e.hint === "string" && e.hint.length > 0 };
}
globalThis.__codemode_result__ = out;`, opts())
		wantResult(t, res, `{"limit":true,"base":true,"hint":true}`)
	})
	t.Run("the default is 1000", func(t *testing.T) {
		res := runJS(t, context.Background(), `for (let i = 0; i < 1000; i++) setTimeout(() => {}, 1); await new Promise((r) => setTimeout(r, 5));`, nil)
		if !res.Failed() || !strings.Contains(res.Diagnostics[0].Message, "1000") {
			t.Errorf("1001 timers: %s", diagString(res))
		}
		res = runJS(t, context.Background(), `for (let i = 0; i < 999; i++) setTimeout(() => {}, 1); await new Promise((r) => setTimeout(r, 5)); globalThis.__codemode_result__ = 1;`, nil)
		wantResult(t, res, `1`)
	})
}

// TestHostCallFloodIsBounded: a script can start host calls without
// awaiting them, as fast as it can loop. What that costs the host (a
// goroutine per call, parked until the event loop takes its completion)
// must be bounded by something other than the JavaScript heap limit, which
// does not see Go memory.
func TestHostCallFloodIsBounded(t *testing.T) {
	Run(context.Background(), "", nil) // warm the pool
	baseline := runtime.NumGoroutine()
	var peak atomic.Int64
	h := newTestHost()
	o := h.options(Limits{Timeout: roomy})
	o.Handle = func(ctx context.Context, op string, p json.RawMessage) (json.RawMessage, error) {
		n := int64(runtime.NumGoroutine())
		for {
			old := peak.Load()
			if n <= old || peak.CompareAndSwap(old, n) {
				break
			}
		}
		return p, nil
	}
	const calls = 5000 // five times the bound on operations in flight
	res := runJS(t, context.Background(), fmt.Sprintf(`import { ping } from "@codemode/servers/x";
const ps = [];
for (let i = 0; i < %d; i++) ps.push(ping(i).catch((e) => e.name));
globalThis.__codemode_result__ = (await Promise.all(ps)).length;`, calls), o)
	if !res.Failed() {
		wantResult(t, res, fmt.Sprint(calls))
	}
	if extra := peak.Load() - int64(baseline); extra > 1000 {
		t.Errorf("%d host calls started without awaiting peaked at %d extra goroutines: in-flight host operations need a bound", calls, extra)
	}
}

// TestConcurrentRunsIsolated runs 8 scripts at once; each pollutes its realm
// and checks that it sees only its own state.
func TestConcurrentRunsIsolated(t *testing.T) {
	const n = 8
	var wg sync.WaitGroup
	results := make([]*Result, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := newTestHost()
			o := h.options(Limits{Timeout: roomy})
			o.Deterministic = &Deterministic{Seed: uint32(i), Now: time.UnixMilli(int64(i) * 1000)}
			results[i] = Run(context.Background(), fmt.Sprintf(`import { ping } from "@codemode/servers/x";
const id = %d;
globalThis.runId = id;
Object.prototype.owner = id;
Array.prototype.owner = id;
console.log("run", id);
let sum = 0;
for (let k = 0; k < 20; k++) {
  sum += await ping(id);
  await new Promise((r) => setTimeout(r, (k * 7 + id) %% 5));
  if (globalThis.runId !== id || ({}).owner !== id || [].owner !== id) throw new Error("state of another run is visible");
}
let busy = 0; for (let k = 0; k < 200000; k++) busy += k %% 3;
globalThis.__codemode_result__ = { id, sum, now: Date.now(), busy };`, i), o)
		}()
	}
	wg.Wait()
	for i, res := range results {
		if res == nil {
			t.Fatalf("run %d returned nil", i)
		}
		// The virtual clock moved by the timers' delays.
		delays := 0
		for k := range 20 {
			delays += (k*7 + i) % 5
		}
		want := fmt.Sprintf(`{"id":%d,"sum":%d,"now":%d,"busy":199999}`, i, 20*i, i*1000+delays)
		if len(res.Diagnostics) > 0 || !jsonEqual(res.Result, []byte(want)) {
			t.Errorf("run %d: result %s, diagnostics %s; want %s", i, res.Result, diagString(res), want)
		}
		if len(res.Logs) != 1 || res.Logs[0].Message != fmt.Sprintf("run %d", i) {
			t.Errorf("run %d logs: %s", i, logString(res))
		}
	}
}

func TestDefaultLimits(t *testing.T) {
	want := Limits{Timeout: 30 * time.Second, MaxMemoryBytes: 64 << 20, MaxLogBytes: 64 << 10, MaxResultBytes: 1 << 20}
	if DefaultLimits != want {
		t.Errorf("DefaultLimits = %+v, want %+v", DefaultLimits, want)
	}
	res := runJS(t, context.Background(), `globalThis.__codemode_result__ = "defaults";`, nil)
	wantResult(t, res, `"defaults"`)
	res = runJS(t, context.Background(), `globalThis.__codemode_result__ = "zero";`, &Options{})
	wantResult(t, res, `"zero"`)
}

// A script can throw (or fail to serialise with) a message of any size; the
// diagnostic keeps only the first diag.MaxMessageBytes and says it was cut.
func TestHugeExceptionMessageIsClipped(t *testing.T) {
	for _, src := range []string{
		`throw new Error("x".repeat(5_000_000))`,
		`globalThis.__codemode_result__ = { toJSON() { throw new Error("y".repeat(5_000_000)) } }`,
		`await Promise.reject(new TypeError("z".repeat(5_000_000)))`,
	} {
		res := Run(context.Background(), src, newTestHost().options(Limits{}))
		if len(res.Diagnostics) != 1 {
			t.Fatalf("%s: %s", src, diagString(res))
		}
		msg := res.Diagnostics[0].Message
		if len(msg) > diag.MaxMessageBytes+64 || !strings.Contains(msg, "more bytes]") {
			t.Errorf("%.40s: diagnostic message is %d bytes (%.80q…), want it clipped to ~%d with a marker", src, len(msg), msg, diag.MaxMessageBytes)
		}
	}
}

// Work done in Go for the script stays bounded by the script's limits: the
// URL parser takes at most 2 MiB, and the arguments of host operations in
// flight at most maxMemoryBytes together.
func TestHostWorkIsBounded(t *testing.T) {
	res := Run(context.Background(), `
const out = [];
for (const f of [() => new URL("http://" + "a".repeat(3e6) + ".com"), () => new URLSearchParams("a=b&".repeat(7e5))]) {
  try { f(); out.push("accepted") } catch (e) { out.push(e.name + ": " + e.message) }
}
globalThis.__codemode_result__ = out;`, newTestHost().options(Limits{Timeout: roomy}))
	if s := string(res.Result); strings.Count(s, "URL input too long") != 2 {
		t.Errorf("oversized URL inputs: %s %s", s, diagString(res))
	}

	h := newTestHost()
	// Roomy: only memory may stop these calls (-race makes building and
	// copying 3 MiB strings in the engine take most of the default 30 s).
	opts := h.options(Limits{MaxMemoryBytes: 16 << 20, Timeout: roomy})
	opts.Handle = func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage("1"), nil
	}
	res = Run(context.Background(), `import { tool } from "@codemode/servers/x";
const big = "x".repeat(3 << 20);
const calls = [];
for (let i = 0; i < 6; i++) calls.push(tool(big)); // all in flight: none settles before the script yields
const settled = await Promise.allSettled(calls);
globalThis.__codemode_result__ = settled.map((s) => s.status === "fulfilled" ? "ok" : s.reason.name);`, opts)
	if got := string(res.Result); got != `["ok","ok","ok","ok","ok","SandboxLimitError"]` {
		t.Errorf("six 3 MiB arguments in flight under a 16 MiB limit: %s %s", got, diagString(res))
	}
}

// An exception thrown by a setTimeout callback ends the run with its class,
// hint and position, like one thrown at top level.
func TestTimerCallbackException(t *testing.T) {
	res := Run(context.Background(), "setTimeout(() => {\n  throw new TypeError(\"boom\");\n}, 0);", newTestHost().options(Limits{}))
	d := wantDiag(t, res, diag.UncaughtException)
	if !strings.Contains(d.Message, "TypeError: boom") || !strings.Contains(d.Message, "setTimeout") || !strings.Contains(d.Path, ":2:") {
		t.Errorf("diagnostic %+v", d)
	}

	opts := newTestHost().options(Limits{})
	opts.MaxPendingTimers = 2
	res = Run(context.Background(), `setTimeout(() => { for (let i = 0; i < 5; i++) setTimeout(() => {}, 10); }, 0);`, opts)
	wantLimit(t, res, "timers")
}

// maxLogBytes counts message bytes; entries are capped too (one per 16
// bytes of the limit, at least 100), so a flood of tiny lines keeps the
// response small, and the closing notice says which limit was hit.
func TestLogEntryCap(t *testing.T) {
	res := Run(context.Background(), `for (let i = 0; i < 100000; i++) console.log("x");`, newTestHost().options(Limits{MaxLogBytes: 64 << 10}))
	n := len(res.Logs)
	if n != 4096+1 {
		t.Fatalf("%d entries, want 4096 and the notice", n)
	}
	if last := res.Logs[n-1]; last.Level != LevelWarn || !strings.Contains(last.Message, "more than 4096 entries") {
		t.Errorf("notice %+v", last)
	}
}
