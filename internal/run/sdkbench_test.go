package run

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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

// BenchmarkSDKClientCall is the client half alone: a go-sdk client calls
// add over upstream.NewMemoryTransports against a responder that answers
// each request with a fixed result, no SDK server behind it. It is the
// least any gateway built on the go-sdk client pays per tool call.
func BenchmarkSDKClientCall(b *testing.B) {
	ctx := context.Background()
	ct, st := upstream.NewMemoryTransports()
	conn, err := st.Connect(ctx)
	if err != nil {
		b.Fatal(err)
	}
	go cannedResponder(ctx, conn)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 1, "b": 2}}); err != nil {
			b.Fatal(err)
		}
	}
}

// cannedResponder answers initialize and tools/call with what calcServer
// would send, and ignores notifications, until conn closes.
func cannedResponder(ctx context.Context, conn mcp.Connection) {
	initResult := json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"calc","version":"1.2.3"}}`)
	callResult := json.RawMessage(`{"content":[{"type":"text","text":"{\"sum\":3}"}],"structuredContent":{"sum":3}}`)
	for {
		m, err := conn.Read(ctx)
		if err != nil {
			return
		}
		req, ok := m.(*jsonrpc.Request)
		if !ok || !req.IsCall() {
			continue
		}
		res := callResult
		if req.Method == "initialize" {
			res = initResult
		}
		if conn.Write(ctx, &jsonrpc.Response{ID: req.ID, Result: res}) != nil {
			return
		}
	}
}
