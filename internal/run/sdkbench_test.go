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
	ct, st := mcp.NewInMemoryTransports()
	benchSDKCall(b, ct, st)
}

// BenchmarkSDKMemoryCall is the same call over upstream.NewMemoryTransports,
// which passes messages as Go values: the floor of the RunInMemory
// benchmarks, which dial their servers that way.
func BenchmarkSDKMemoryCall(b *testing.B) {
	ct, st := upstream.NewMemoryTransports()
	benchSDKCall(b, ct, st)
}

// benchSDKCall connects calcServer to a client over the two ends and
// measures one add call.
func benchSDKCall(b *testing.B, client, server mcp.Transport) {
	ctx := context.Background()
	if _, err := calcServer().Connect(ctx, server, nil); err != nil {
		b.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c"}, nil).Connect(ctx, client, nil)
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
