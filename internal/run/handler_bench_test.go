package run

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func BenchmarkHandlerTool(b *testing.B) {
	base := newTestRunner(b, map[string]*mcp.Server{"calc": calcServer()})
	r := New(base.cfg, base.cat, nil, &Options{Caller: callerFunc(func(ctx context.Context, id, tool string, args any) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{StructuredContent: map[string]any{"sum": 1}}, nil
	})})
	r.cfg.DefaultLimits.MaxToolCalls = 1 << 30
	v := newView(r, r.cfg.DefaultLimits, Extra{})
	ctx := context.Background()
	payload := json.RawMessage(`{"a":1,"b":2}`)
	op := ToolOp("calc", "add")
	if _, err := v.handle(ctx, op, payload); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		v.handle(ctx, op, payload)
	}
}
