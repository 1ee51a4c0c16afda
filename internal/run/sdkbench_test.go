package run

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/upstream"
)

// BenchmarkSDKInMemoryCall is one tools/call between a go-sdk client and
// server over mcp.NewInMemoryTransports, without codemode.
func BenchmarkSDKInMemoryCall(b *testing.B) {
	ctx := context.Background()
	s := calcServer()
	ct, st := mcp.NewInMemoryTransports()
	s.Connect(ctx, st, nil)
	c := mcp.NewClient(&mcp.Implementation{Name: "c"}, nil)
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 1, "b": 2}}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSDKMemoryCall is the same call over upstream.NewMemoryTransports,
// which passes messages as Go values: the floor of the RunInMemory
// benchmarks, which dial their servers that way.
func BenchmarkSDKMemoryCall(b *testing.B) {
	ctx := context.Background()
	ct, st := upstream.NewMemoryTransports()
	calcServer().Connect(ctx, st, nil)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 1, "b": 2}}); err != nil {
			b.Fatal(err)
		}
	}
}

// directRunner answers every call in process, without the MCP SDK: what
// these benchmarks measure is codemode's own cost per call (sandbox, host
// call, validation, unwrapping, trace).
func directRunner(b *testing.B) *Runner {
	base := newTestRunner(b, map[string]*mcp.Server{"calc": calcServer()})
	r := New(base.cfg, base.cat, nil, &Options{Caller: callerFunc(func(ctx context.Context, id, tool string, args any) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{StructuredContent: map[string]any{"sum": 1}}, nil
	})})
	r.cfg.DefaultLimits.MaxToolCalls = 1000
	return r
}

func BenchmarkRunDirectCaller2Calls(b *testing.B) { benchRun(b, directRunner(b), twoCalls, "1") }

func BenchmarkRunDirectCaller100Sequential(b *testing.B) {
	benchRun(b, directRunner(b), hundredSequential, "1")
}

func BenchmarkRunDirectCaller100Parallel(b *testing.B) {
	benchRun(b, directRunner(b), hundredParallel, "100")
}
