package upstream_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type addInput struct {
	A int `json:"a"`
	B int `json:"b"`
}

// A Manager in front of an in-process go-sdk server, as the run layer's
// tests and benchmarks use it.
func Example() {
	srv := mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "1.2.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "add", Description: "Adds two integers."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addInput) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(in.A + in.B)}}}, nil, nil
		})

	m := upstream.New([]config.Server{{ID: "calc", Name: "calc"}}, &upstream.Options{
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
		Dial:   upstream.DialInMemory(map[string]*mcp.Server{"calc": srv}),
	})
	defer m.Close()
	ctx := context.Background()
	fmt.Println(m.Status("calc").State)

	snap, err := m.Snapshot(ctx, "calc")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(snap.Info.Name, snap.Info.Version, snap.Generation, snap.Tool("add").Description)

	res, err := m.CallTool(ctx, "calc", "add", map[string]any{"a": 2, "b": 3})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	fmt.Println(m.Status("calc").State)

	_, err = m.CallTool(ctx, "nope", "add", nil)
	fmt.Println(err)
	// Output:
	// not-connected
	// calc 1.2.0 1 Adds two integers.
	// 5
	// connected
	// server "nope" cannot be used: no such server in the configuration
}
