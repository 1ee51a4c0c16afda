package history_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/history"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/sandbox"
	"github.com/codemode-mcp/codemode/internal/testutil"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

type callerFunc func(ctx context.Context, id, tool string, args any) (*mcp.CallToolResult, error)

func (f callerFunc) CallTool(ctx context.Context, id, tool string, args any) (*mcp.CallToolResult, error) {
	return f(ctx, id, tool, args)
}

// BenchmarkRecordDirectCaller2Calls is run's RunDirectCaller2Calls (two
// tool calls answered in process, without the MCP SDK) without and with
// the run history recording every run into SQLite: what recording adds to
// a run's answer. docs/BENCHMARKS.md has the A/B.
func BenchmarkRecordDirectCaller2Calls(b *testing.B) {
	const code = `import { add } from "@codemode/servers/calc";
const a = await add({ a: 1, b: 2 });
const b = await add({ a: a.sum, b: 3 });
globalThis.__codemode_result__ = b.sum;`
	for _, recording := range []bool{false, true} {
		name := "recording=off"
		if recording {
			name = "recording=on"
		}
		b.Run(name, func(b *testing.B) {
			cfg := testutil.Config(config.Server{Name: "calc", Transport: config.Stdio, Command: "in-memory"})
			mgr := upstream.New(cfg.Servers, &upstream.Options{Dial: upstream.DialInMemory(map[string]*mcp.Server{"calc": calcServer()}), Logger: slog.New(slog.DiscardHandler)})
			b.Cleanup(func() { mgr.Close() })
			opts := &run.Options{}
			var rec *history.Recorder
			if recording {
				st := newStore(b)
				rec = history.New(st.History(), nil)
				b.Cleanup(func() { rec.Close(context.Background()) })
				opts.Observer = rec
			}
			r := run.New(cfg, catalog.New(mgr), callerFunc(func(ctx context.Context, id, tool string, args any) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{StructuredContent: map[string]any{"sum": 1}}, nil
			}), opts)
			ctx := run.WithOrigin(context.Background(), run.Origin{Surface: "run", Tool: "codemode_run", Session: "bench", Client: "bench/1"})
			if res := r.Run(ctx, run.Request{Code: code}); string(res.Result) != "1" {
				b.Fatalf("result %s", res.Result)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				// As run's benchmarks: a request, not the pool's refill.
				b.StopTimer()
				sandbox.WarmPool()
				b.StartTimer()
				r.Run(ctx, run.Request{Code: code})
			}
			b.StopTimer()
			if rec != nil && rec.Dropped() > 0 {
				b.Logf("%d runs dropped", rec.Dropped())
			}
		})
	}
}
