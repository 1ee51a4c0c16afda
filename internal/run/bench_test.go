package run

import (
	"context"
	"log/slog"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/sandbox"
	"github.com/codemode-mcp/codemode/internal/testutil"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// Benchmarks of whole runs, as `codemode run` and the serving layer do them.
// docs/BENCHMARKS.md has the method and the latest figures.

func benchRun(b *testing.B, r *Runner, code string, want string) {
	b.Helper()
	ctx := context.Background()
	if res := r.Run(ctx, Request{Code: code}); string(res.Result) != want {
		b.Fatalf("result %s, want %s\n%s", res.Result, want, dump(res))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		// Between requests the gateway refills its pool of prepared VMs;
		// measure a request, not the refill (see sandbox.WarmPool).
		b.StopTimer()
		sandbox.WarmPool()
		b.StartTimer()
		r.Run(ctx, Request{Code: code})
	}
}

// BenchmarkRunEmpty: `return 1` from a fresh sandbox.
func BenchmarkRunEmpty(b *testing.B) {
	r := newTestRunner(b, map[string]*mcp.Server{})
	benchRun(b, r, `globalThis.__codemode_result__ = 1`, "1")
}

const (
	twoCalls = `import { add } from "@codemode/servers/calc";
const a = await add({ a: 1, b: 2 });
const b = await add({ a: a.sum, b: 3 });
globalThis.__codemode_result__ = b.sum;`
	hundredSequential = `import { add } from "@codemode/servers/calc";
let s = 0;
for (let i = 0; i < 100; i++) s = (await add({ a: s, b: 1 })).sum;
globalThis.__codemode_result__ = s;`
	hundredParallel = `import { add } from "@codemode/servers/calc";
const rs = await Promise.all(Array.from({ length: 100 }, (_, i) => add({ a: i, b: 1 })));
globalThis.__codemode_result__ = rs.reduce((s, r) => s + r.sum, 0);`
)

// The same scripts with each tool call replaced by an already-resolved
// promise of the same value, the module still imported: what the scripts
// cost apart from their tool calls. (RunX − RunXNoCalls)/100 is the cost of
// one tool call; docs/BENCHMARKS.md reports it.
const (
	hundredSequentialNoCalls = `import { add } from "@codemode/servers/calc";
let s = 0;
for (let i = 0; i < 100; i++) s = (await Promise.resolve({ sum: s + 1 })).sum;
globalThis.__codemode_result__ = s;`
	hundredParallelNoCalls = `import { add } from "@codemode/servers/calc";
const rs = await Promise.all(Array.from({ length: 100 }, (_, i) => Promise.resolve({ sum: i + 1 })));
globalThis.__codemode_result__ = rs.reduce((s, r) => s + r.sum, 0);`
)

func BenchmarkRun100SequentialNoCalls(b *testing.B) {
	benchRun(b, directRunner(b), hundredSequentialNoCalls, "100")
}

func BenchmarkRun100ParallelNoCalls(b *testing.B) {
	benchRun(b, directRunner(b), hundredParallelNoCalls, "5050")
}

// directRunner answers every call in process, without the MCP SDK: what
// these benchmarks measure is codemode's own cost per call (sandbox, host
// call, validation, unwrapping, trace).
func directRunner(b *testing.B) *Runner {
	base := newTestRunner(b, map[string]*mcp.Server{"calc": calcServer()})
	r := New(base.cfg, base.cat, callerFunc(func(ctx context.Context, id, tool string, args any) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{StructuredContent: map[string]any{"sum": 1}}, nil
	}), nil)
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

func BenchmarkRunInMemory2Calls(b *testing.B) {
	benchRun(b, newTestRunner(b, map[string]*mcp.Server{"calc": calcServer()}), twoCalls, "6")
}

func BenchmarkRunInMemory100Sequential(b *testing.B) {
	r := newTestRunner(b, map[string]*mcp.Server{"calc": calcServer()})
	r.cfg.DefaultLimits.MaxToolCalls = 1000
	benchRun(b, r, hundredSequential, "100")
}

func BenchmarkRunInMemory100Parallel(b *testing.B) {
	r := newTestRunner(b, map[string]*mcp.Server{"calc": calcServer()})
	r.cfg.DefaultLimits.MaxToolCalls = 1000
	benchRun(b, r, hundredParallel, "5050")
}

// BenchmarkRunEverythingStdio2Calls makes the same two calls to the real
// server-everything over stdio.
func BenchmarkRunEverythingStdio2Calls(b *testing.B) {
	cfg := testutil.Config(testutil.Everything(b, "everything"))
	// The server's stderr would interleave with the benchmark output.
	m := upstream.New(cfg.Servers, &upstream.Options{Logger: slog.New(slog.DiscardHandler)})
	b.Cleanup(func() { m.Close() })
	r := New(cfg, catalog.New(m), m, nil)
	benchRun(b, r, `import { get_sum } from "@codemode/servers/everything";
const a = await get_sum({ a: 1, b: 2 });
const b = await get_sum({ a: 3, b: 4 });
globalThis.__codemode_result__ = [a, b].length;`, "2")
}
