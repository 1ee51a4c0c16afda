package run

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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

func BenchmarkRunDirectCaller100Sequential(b *testing.B) {
	base := newTestRunner(b, map[string]*mcp.Server{"calc": calcServer()})
	r := New(base.cfg, base.cat, nil, &Options{Caller: callerFunc(func(ctx context.Context, id, tool string, args any) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{StructuredContent: map[string]any{"sum": 1}}, nil
	})})
	r.cfg.DefaultLimits.MaxToolCalls = 1000
	benchRun(b, r, hundredSequential, "1")
}
