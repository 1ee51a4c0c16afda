package run

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/admit"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/testutil"
)

// A run the sandbox answers at its deadline while its JavaScript cannot be
// stopped (here a tool call whose handler ignores cancellation, on the
// engine's goroutine) keeps its admission until that JavaScript stops: it
// still holds a core and its memory.
func TestDetachedRunKeepsItsAdmission(t *testing.T) {
	base := newTestRunner(t, map[string]*mcp.Server{"calc": calcServer()})
	release, started := make(chan struct{}), make(chan struct{}, 1)
	r := New(base.cfg, base.cat, callerFunc(func(ctx context.Context, id, tool string, args any) (*mcp.CallToolResult, error) {
		started <- struct{}{}
		<-release // ignores ctx on purpose
		return &mcp.CallToolResult{StructuredContent: map[string]any{"sum": 1}}, nil
	}), nil)
	a := admit.New(&admit.Options{MemoryBytes: 1 << 30})
	r.opts.Admission = a
	// The timeout is doubled until the script got to the call before it (a
	// loaded machine can take the first second to start the run).
	var res *Response
	stuck := false
	for ms := int64(1000); !stuck && ms <= 128_000; ms *= 2 {
		res = r.Run(context.Background(), Request{Code: `import { add } from "@codemode/servers/calc"; await add({ a: 1, b: 2 });`,
			Limits: config.Limits{TimeoutMs: ms}})
		select {
		case <-started:
			stuck = true
		default:
		}
		if d := res.Diagnostics; len(d) == 0 || d[0].Code != diag.SandboxLimit {
			t.Fatalf("want SANDBOX_LIMIT at the timeout: %s", dump(res))
		}
	}
	if !stuck {
		t.Fatal("the script never got to its tool call, even with a two-minute timeout")
	}
	if s := a.Stats(); s.Running != 1 {
		t.Errorf("the detached run gave its admission back at once: %+v", s)
	}
	close(release)
	if !testutil.Poll(t, func() bool { return a.Stats().Running == 0 }) {
		t.Fatalf("the admission was never given back: %+v", a.Stats())
	}
}
