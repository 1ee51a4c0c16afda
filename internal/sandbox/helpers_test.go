package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codemode-mcp/codemode/internal/diag"
)

// Shared fixtures of the sandbox tests: a fake server module, a host that
// records what scripts asked of it, and assertions on a Result.

// serverX is the module every host-facing test imports as
// "@codemode/servers/x". It is shaped like the modules package run generates:
// frozen functions over call() and a deep-frozen __meta__.
const serverX = `import { call, freeze, deepFreeze } from "@codemode/internal";
export const ping = freeze(function ping(x) { return call("ping", x); });
export const tool = freeze(function tool(input) { return call("tool", arguments.length === 0 ? ["x", "tool"] : ["x", "tool", input]); });
export const fail = freeze(function fail(x) { return call("fail", x); });
export const hang = freeze(function hang() { return call("hang", null); });
export const proto = freeze(function proto() { return call("proto", null); });
export const protoFail = freeze(function protoFail() { return call("protoFail", null); });
export const __meta__ = deepFreeze({ serverId: "x", serverName: "X", tools: [{ toolName: "ping", exportName: "ping" }, { toolName: "tool", exportName: "tool" }] });
`

// Values the fake host answers with.
const (
	failMessage = "the upstream said no"
	failHint    = "ask nicely"
	// protoResult is a hostile tool result: JSON.parse must make these plain
	// own properties, never prototypes.
	protoResult = `{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}},"ok":1}`
)

// testHost answers the ops of serverX and records what it saw.
type testHost struct {
	mu       sync.Mutex
	payloads []string      // payloads of "tool" calls
	started  chan struct{} // one value per "hang" call that started
	ended    chan struct{} // one value per "hang" call whose ctx ended
}

func newTestHost() *testHost {
	return &testHost{started: make(chan struct{}, 16), ended: make(chan struct{}, 16)}
}

func (h *testHost) resolve(_ context.Context, specifier string) (string, error) {
	if specifier == "@codemode/servers/x" {
		return serverX, nil
	}
	return "", fmt.Errorf("module %q does not exist", specifier)
}

func (h *testHost) handle(ctx context.Context, op string, payload json.RawMessage) (json.RawMessage, error) {
	switch op {
	case "ping":
		return payload, nil
	case "tool":
		h.mu.Lock()
		h.payloads = append(h.payloads, string(payload))
		h.mu.Unlock()
		return payload, nil
	case "fail":
		return nil, diag.Errorf(diag.ToolCallError, "%s", failMessage).WithHint(failHint).WithFields(map[string]any{
			"serverId": "x", "toolName": "fail", "result": map[string]any{"code": 7},
		})
	case "protoFail":
		return nil, diag.Errorf(diag.ToolCallError, "%s", failMessage).WithHint(failHint).WithFields(map[string]any{
			"serverId": "x", "toolName": "protoFail",
			"__proto__": map[string]any{"polluted": true},
		})
	case "hang":
		signal(h.started)
		<-ctx.Done()
		signal(h.ended)
		return nil, ctx.Err()
	case "proto":
		return json.RawMessage(protoResult), nil
	}
	return nil, errors.New("unknown op " + op)
}

// signal sends on c without ever blocking a handler.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (h *testHost) toolPayloads() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.payloads...)
}

// options returns Options wired to h with the given limits.
func (h *testHost) options(l Limits) *Options {
	return &Options{Limits: l, Resolve: h.resolve, Handle: h.handle}
}

// roomy is the timeout of runs that must end on their own (a result, an
// exception, a limit other than time): far beyond what any of them takes,
// however loaded the machine and with -race (which makes the engine many
// times slower), so that the outcome tested is never a timeout. A run that
// wrongly waits for it fails with TIMEOUT, late, or at go test's -timeout.
const roomy = 30 * time.Minute

// untilReached is for tests of what a short timeout does at a given point
// of a script (logs kept, a call's context cancelled): it runs run with a
// timeout of 200 ms, and doubles it until reached says the script got to
// that point before the timeout ended it. On a loaded machine, starting a
// VM alone can take longer than a short timeout; the outcome tested is the
// same at any timeout. It returns the result and the timeout it took.
func untilReached(t *testing.T, run func(timeout time.Duration) *Result, reached func(*Result) bool) (*Result, time.Duration) {
	t.Helper()
	for timeout := 200 * time.Millisecond; ; timeout *= 2 {
		res := run(timeout)
		if reached(res) {
			return res, timeout
		}
		if timeout > 2*time.Minute {
			t.Fatalf("with a %v timeout the script still did not get to the point the test is about: %s", timeout, diagString(res))
		}
	}
}

// engineStress skips t under the race detector. Such a test drives the
// engine hard on one goroutine (deep recursion, memory bombs, floods): the
// race detector has nothing to find in it, and instruments every memory
// access of the transpiled engine, which makes it run for minutes. go test
// without -race (make test, CI) runs it.
func engineStress(t *testing.T) {
	t.Helper()
	if raceDetector {
		t.Skip("engine stress test: skipped under -race (see engineStress); go test without -race runs it")
	}
}

// runJS runs code and checks the things every run must satisfy: a non-nil
// Result, result JSON that is valid and "null" on failure (§3.3.4), and log
// entries with valid levels and non-decreasing times. How long a run took
// is not checked: that depends on the machine's load (see
// docs/BENCHMARKS.md for timings, and the interrupt tests for the
// mechanism that bounds it).
func runJS(t *testing.T, ctx context.Context, code string, opts *Options) *Result {
	t.Helper()
	res := Run(ctx, code, opts)
	if res == nil {
		t.Fatal("Run returned nil")
	}
	if !json.Valid(res.Result) {
		t.Errorf("Result is not valid JSON: %q", res.Result)
	}
	if res.Failed() && string(res.Result) != "null" {
		t.Errorf("failed run has result %s, want null (§3.3.4); diagnostics: %s", res.Result, diagString(res))
	}
	var last int64
	for i, l := range res.Logs {
		switch l.Level {
		case LevelDebug, LevelLog, LevelWarn, LevelError:
		default:
			t.Errorf("log %d has level %q", i, l.Level)
		}
		if l.TimeMs < last || l.TimeMs < 0 {
			t.Errorf("log %d has timeMs %d after %d", i, l.TimeMs, last)
		}
		last = l.TimeMs
	}
	return res
}

func diagString(res *Result) string {
	b, _ := json.Marshal(res.Diagnostics)
	return string(b)
}

func logString(res *Result) string {
	var parts []string
	for _, l := range res.Logs {
		parts = append(parts, string(l.Level)+": "+l.Message)
	}
	if len(parts) > 10 {
		parts = append(parts[:10], fmt.Sprintf("… (%d entries)", len(res.Logs)))
	}
	return strings.Join(parts, " | ")
}

// wantOK fails unless the run succeeded with no diagnostics at all.
func wantOK(t *testing.T, res *Result) {
	t.Helper()
	if len(res.Diagnostics) > 0 {
		t.Fatalf("unexpected diagnostics: %s\nlogs: %s", diagString(res), logString(res))
	}
	if res.TimedOut || res.OutOfMemory || res.Canceled {
		t.Fatalf("run ended early: timedOut=%v oom=%v canceled=%v", res.TimedOut, res.OutOfMemory, res.Canceled)
	}
}

// wantResult fails unless the run succeeded with a result equal (as JSON) to
// want.
func wantResult(t *testing.T, res *Result, want string) {
	t.Helper()
	wantOK(t, res)
	if !jsonEqual(res.Result, []byte(want)) {
		t.Fatalf("result\n got %s\nwant %s", res.Result, want)
	}
}

// wantDiag fails unless the run failed and its first error diagnostic has
// the code; it returns that diagnostic.
func wantDiag(t *testing.T, res *Result, code diag.Code) diag.Diagnostic {
	t.Helper()
	for _, d := range res.Diagnostics {
		if d.Severity == diag.SeverityError {
			if d.Code != code {
				t.Fatalf("diagnostic code %s, want %s: %s\nlogs: %s", d.Code, code, diagString(res), logString(res))
			}
			if d.Message == "" {
				t.Errorf("diagnostic %s has no message", d.Code)
			}
			if string(res.Result) != "null" {
				t.Errorf("failed run has result %s, want null", res.Result)
			}
			return d
		}
	}
	t.Fatalf("no error diagnostic, want %s; result %s, logs: %s", code, res.Result, logString(res))
	return diag.Diagnostic{}
}

// wantLimit fails unless the run ended with a SANDBOX_LIMIT diagnostic of
// class SandboxLimitError whose message mentions mention.
func wantLimit(t *testing.T, res *Result, mention string) diag.Diagnostic {
	t.Helper()
	d := wantDiag(t, res, diag.SandboxLimit)
	if d.ErrorClass != diag.SandboxLimitError {
		t.Errorf("errorClass %q, want SandboxLimitError", d.ErrorClass)
	}
	if d.Hint == "" {
		t.Errorf("limit diagnostic without a hint: %s", diagString(res))
	}
	if !strings.Contains(d.Message, mention) {
		t.Errorf("diagnostic message %q does not mention %q", d.Message, mention)
	}
	return d
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// check is one named JavaScript expression that must evaluate to true.
type check struct {
	name string
	expr string
}

// runChecks evaluates every check in one run (each in its own try/catch,
// with top-level await available) and reports each as a subtest: a check
// passes only if its expression is exactly true.
func runChecks(t *testing.T, opts *Options, prelude string, checks []check) {
	t.Helper()
	var b strings.Builder
	b.WriteString(prelude)
	b.WriteString("\nconst __out = {};\n")
	for i, c := range checks {
		fmt.Fprintf(&b, "try { const v = await (async () => (%s))(); __out[%d] = v === true ? true : \"evaluated to \" + (typeof v === \"string\" ? JSON.stringify(v) : String(v)); } catch (e) { __out[%d] = \"threw \" + (e && e.name) + \": \" + (e && e.message); }\n", c.expr, i, i)
	}
	b.WriteString("globalThis.__codemode_result__ = __out;\n")
	res := runJS(t, context.Background(), b.String(), opts)
	wantOK(t, res)
	var out map[string]any
	if err := json.Unmarshal(res.Result, &out); err != nil {
		t.Fatalf("result %s: %v", res.Result, err)
	}
	for i, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if v := out[fmt.Sprint(i)]; v != true {
				t.Errorf("%s\n  %v", c.expr, v)
			}
		})
	}
}
