package run

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

type sumIn struct {
	A float64 `json:"a" jsonschema:"first number"`
	B float64 `json:"b" jsonschema:"second number"`
}

type sumOut struct {
	Sum float64 `json:"sum"`
}

// calcServer is an in-process MCP server for unit tests and benchmarks.
func calcServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "1.2.3"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Returns the sum of two numbers"}, func(ctx context.Context, _ *mcp.CallToolRequest, in sumIn) (*mcp.CallToolResult, sumOut, error) {
		return nil, sumOut{in.A + in.B}, nil
	})
	s.AddTool(&mcp.Tool{Name: "echo", Description: "Echoes the message", InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Message string }
			json.Unmarshal(req.Params.Arguments, &in)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Message}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "fail", Description: "Always fails", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "it broke"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "sleep", Description: "Sleeps ms milliseconds", InputSchema: json.RawMessage(`{"type":"object","properties":{"ms":{"type":"number"}}}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Ms float64 }
			json.Unmarshal(req.Params.Arguments, &in)
			select {
			case <-time.After(time.Duration(in.Ms) * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(in.Ms)}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "export", Description: "A tool named like a reserved word", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "exported"}}}, nil
		})
	return s
}

// newTestRunner returns a Runner over in-process servers.
func newTestRunner(t testing.TB, servers map[string]*mcp.Server) *Runner {
	return newTestRunnerWith(t, servers, nil)
}

// newTestRunnerWith is newTestRunner with upstream options (Dial is set).
func newTestRunnerWith(t testing.TB, servers map[string]*mcp.Server, opts *upstream.Options) *Runner {
	t.Helper()
	var cs []config.Server
	for id := range servers {
		cs = append(cs, config.Server{ID: id, Name: id, Transport: config.Stdio, Command: "unused"})
	}
	o := upstream.Options{}
	if opts != nil {
		o = *opts
	}
	o.Dial = upstream.DialInMemory(servers)
	m := upstream.New(cs, &o)
	t.Cleanup(func() { m.Close() })
	cfg := config.Default()
	cfg.Servers = cs
	cfg.DefaultLimits.TimeoutMs = roomyMs
	return New(cfg, catalog.New(m), m, nil)
}

// roomyMs is the timeout of runs that must end on their own: the largest a
// request may ask for, far beyond what any test run takes however loaded
// the machine, so that the outcome tested is never a timeout.
const roomyMs = 300_000

func mustRun(t testing.TB, r *Runner, code string) *Response {
	t.Helper()
	return r.Run(context.Background(), Request{Code: code, Limits: config.Limits{TimeoutMs: roomyMs}})
}

func dump(r *Response) string {
	b, _ := json.MarshalIndent(r, "", "  ")
	return string(b)
}
