package sandbox

import (
	"context"
	"strings"
	"testing"

	"github.com/codemode-mcp/codemode/internal/diag"
)

// A host call that fails, uncaught, is reported at the agent's call: the
// error is created on the event loop, so without the call site noted at the
// call it would have no position in the agent's code.
func TestFailedCallReportsCallSite(t *testing.T) {
	h := newTestHost()
	cases := []struct {
		name, code, path string
	}{
		{"top level", "import { fail } from \"@codemode/servers/x\";\nconst a = 1;\nawait fail(a);\n", "script.js:3:11"},
		{"nested function", "import { fail } from \"@codemode/servers/x\";\nasync function f() {\n  return await fail(1);\n}\nawait f();\n", "script.js:3:20"},
		{"Promise.all over arrows", "import { ping, fail } from \"@codemode/servers/x\";\nawait Promise.all([1, 2].map((i) =>\n  i === 2 ? fail(i) : ping(i)));\n", "script.js:3:17"},
		{"after other calls", "import { ping, fail } from \"@codemode/servers/x\";\nfor (let i = 0; i < 3; i++) await ping(i);\n\n\nawait fail(0);\n", "script.js:5:11"},
		{"timer callback", "import { fail } from \"@codemode/servers/x\";\nawait new Promise((resolve, reject) => setTimeout(() => {\n  fail(1).then(resolve, reject);\n}, 1));\n", "script.js:3:7"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := runJS(t, context.Background(), c.code, h.options(Limits{}))
			d := wantDiag(t, res, diag.UncaughtException)
			if d.ErrorClass != diag.ToolCallError || !strings.Contains(d.Message, failMessage) {
				t.Fatalf("diagnostic = %+v", d)
			}
			if d.Path != c.path {
				t.Fatalf("path = %q, want %q", d.Path, c.path)
			}
		})
	}
}

// The agent sees the call site in the error's stack, and the error is still
// an ordinary instance of its class that it can catch.
func TestCaughtCallErrorHasCallSiteStack(t *testing.T) {
	h := newTestHost()
	res := runJS(t, context.Background(), `import { fail } from "@codemode/servers/x";
import { ToolCallError } from "@codemode/errors";
try {
  await fail(1);
} catch (e) {
  globalThis.__codemode_result__ = { cls: e instanceof ToolCallError, stack: e.stack, hint: e.hint };
}`, h.options(Limits{}))
	wantResult(t, res, `{"cls":true,"stack":"    at <agent>:4:13\n","hint":"`+failHint+`"}`)
}

// A call made with no agent frame on the stack (from a module the host
// provides) still fails cleanly, just without a position.
func TestFailedCallWithoutAgentFrame(t *testing.T) {
	h := newTestHost()
	opts := h.options(Limits{})
	resolve := opts.Resolve
	opts.Resolve = func(ctx context.Context, s string) (string, error) {
		if s == "@codemode/servers/y" {
			return `import { call } from "@codemode/internal"; export const p = call("fail", 1);`, nil
		}
		return resolve(ctx, s)
	}
	res := runJS(t, context.Background(), `import { p } from "@codemode/servers/y"; await p;`, opts)
	d := wantDiag(t, res, diag.UncaughtException)
	if d.ErrorClass != diag.ToolCallError || d.Path != "" {
		t.Fatalf("diagnostic = %+v", d)
	}
}

// Calls the loop never settles (the run timed out) release their promises
// with the VM; many runs in a row must neither leak nor crash.
func TestUnsettledCallsAreReleased(t *testing.T) {
	h := newTestHost()
	for i := 0; i < 20; i++ {
		res := runJS(t, context.Background(), `import { hang, ping } from "@codemode/servers/x";
ping(1); ping(2);
await Promise.all([hang(), hang()]);`, h.options(Limits{Timeout: 50e6}))
		wantLimit(t, res, "timeout")
	}
}
