package run_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

func ExampleRunner_Run() {
	// An in-process MCP server with one tool.
	calc := mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "1.0.0"}, nil)
	type in struct{ A, B float64 }
	type out struct{ Sum float64 }
	mcp.AddTool(calc, &mcp.Tool{Name: "add", Description: "Returns the sum of two numbers"},
		func(ctx context.Context, _ *mcp.CallToolRequest, x in) (*mcp.CallToolResult, out, error) {
			return nil, out{x.A + x.B}, nil
		})

	cfg := config.Default()
	cfg.Servers = []config.Server{{ID: "calc", Name: "calc", Transport: config.Stdio, Command: "in-process"}}
	mgr := upstream.New(cfg.Servers, &upstream.Options{Dial: upstream.DialInMemory(map[string]*mcp.Server{"calc": calc})})
	defer mgr.Close()
	r := run.New(cfg, catalog.New(mgr), mgr, nil)

	resp := r.Run(context.Background(), run.Request{Code: `
import { add } from "@codemode/servers/calc";
const { Sum } = await add({ A: 40, B: 2 });
console.log("sum is", Sum);
globalThis.__codemode_result__ = { answer: Sum };`})
	b, _ := json.Marshal(resp.Result)
	fmt.Println(string(b), resp.Logs[0].Message, len(resp.Diagnostics), resp.ToolTrace[0].ToolName)
	// Output: {"answer":42} sum is 42 0 add
}
