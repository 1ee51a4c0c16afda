package serve_test

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/serve"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

func ExampleNew() {
	ctx := context.Background()
	cfg := config.Default() // no upstream servers
	mgr := upstream.New(cfg.Servers, nil)
	defer mgr.Close()
	srv := serve.New(run.New(cfg, catalog.New(mgr), mgr, nil), mgr, nil)
	srv.Start(ctx)

	// A client over in-memory transports, as stdio or HTTP would carry it.
	ct, st := mcp.NewInMemoryTransports()
	if _, err := srv.MCP().Connect(ctx, st, nil); err != nil {
		panic(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "example"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		panic(err)
	}
	defer cs.Close()
	tools, _ := cs.ListTools(ctx, nil)
	for _, t := range tools.Tools {
		fmt.Println(t.Name)
	}
	res, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "codemode_run", Arguments: map[string]any{
		"code": `globalThis.__codemode_result__ = [1, 2, 3].map((x) => x * 2);`,
	}})
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// codemode_run
	// {"logs":[],"result":[2,4,6],"diagnostics":[],"toolTrace":[]}
}
