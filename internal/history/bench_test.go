package history_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/history"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/sandbox"
	"github.com/codemode-mcp/codemode/internal/store"
	"github.com/codemode-mcp/codemode/internal/testutil"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

type callerFunc func(ctx context.Context, id, tool string, args any) (*mcp.CallToolResult, error)

func (f callerFunc) CallTool(ctx context.Context, id, tool string, args any) (*mcp.CallToolResult, error) {
	return f(ctx, id, tool, args)
}

// discard is a store that keeps nothing: with it, the benchmark measures
// what recording costs the run itself, without the writer's work.
type discard struct{}

func (discard) Add(context.Context, []store.RunRecord) error { return nil }
func (discard) Prune(context.Context, time.Time, int64) (store.PruneResult, error) {
	return store.PruneResult{}, nil
}

// BenchmarkRecordDirectCaller2Calls is run's RunDirectCaller2Calls (two
// tool calls answered in process, without the MCP SDK) without and with
// the run history recording every run into SQLite (on), or into a store
// that keeps nothing (discard: the cost on the run's path alone): what
// recording adds to a run's answer. docs/BENCHMARKS.md has the A/B.
func BenchmarkRecordDirectCaller2Calls(b *testing.B) {
	const code = `import { add } from "@codemode/servers/calc";
const a = await add({ a: 1, b: 2 });
const b = await add({ a: a.sum, b: 3 });
globalThis.__codemode_result__ = b.sum;`
	for _, mode := range []string{"off", "on", "discard"} {
		recording := mode != "off"
		b.Run("recording="+mode, func(b *testing.B) {
			cfg := testutil.Config(config.Server{Name: "calc", Transport: config.Stdio, Command: "in-memory"})
			mgr := upstream.New(cfg.Servers, &upstream.Options{Dial: upstream.DialInMemory(map[string]*mcp.Server{"calc": calcServer()}), Logger: slog.New(slog.DiscardHandler)})
			b.Cleanup(func() { mgr.Close() })
			opts := &run.Options{}
			var rec *history.Recorder
			if recording {
				var sink history.Sink = discard{}
				if mode == "on" {
					sink = newStore(b).History()
				}
				rec = history.New(sink, nil)
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

// BenchmarkRecordPath is what a run of two tool calls pays on its own path
// for being recorded: the observer's calls (start, two calls, end: the
// copy of the response and the queueing), with the writer discarding what
// it takes. Less sensitive to the machine's load than the whole run's A/B.
func BenchmarkRecordPath(b *testing.B) {
	rec := history.New(discard{}, &history.Options{QueueSize: 1 << 16})
	b.Cleanup(func() { rec.Close(context.Background()) })
	resp := &run.Response{Logs: []sandbox.LogEntry{{Level: "log", Message: "x"}}, Result: []byte("1"), ToolTrace: []run.TraceEntry{{ServerID: "calc", ToolName: "add", OK: true}, {ServerID: "calc", ToolName: "add", OK: true}}}
	req := run.Request{Code: `import { add } from "@codemode/servers/calc"; globalThis.__codemode_result__ = (await add({ a: 1, b: 2 })).sum;`}
	origin := run.Origin{Surface: "run", Tool: "codemode_run", Session: "s", Client: "c/1"}
	ctx := context.Background()
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		ctx, ro := rec.StartRun(ctx, &run.RunStart{ID: "01900000-0000-7000-8000-000000000001", Start: now, Origin: origin, Request: req})
		for range 2 {
			_, end := ro.StartCall(ctx, &run.CallStart{ServerID: "calc", Tool: "add", Start: now, Input: []byte(`{"a":1,"b":2}`)})
			end(&run.CallEnd{Duration: time.Millisecond, Outcome: run.CallOK})
		}
		ro.EndRun(ctx, &run.RunEnd{Duration: time.Millisecond, Response: resp, Outcome: "ok"})
	}
}

// BenchmarkWriteRuns is the writer's work per run, off the runs' path:
// runs written to SQLite 100 to a transaction (what group commit makes of
// a busy gateway), each with two calls. ns/op is per run.
func BenchmarkWriteRuns(b *testing.B) {
	st := newStore(b)
	h := st.History()
	const batch = 100
	recs := make([]store.RunRecord, batch)
	code := `import { add } from "@codemode/servers/calc"; globalThis.__codemode_result__ = (await add({ a: 1, b: 2 })).sum;`
	resp := []byte(`{"logs":[],"result":3,"diagnostics":[],"toolTrace":[{"serverId":"calc","toolName":"add","durationMs":0,"ok":true},{"serverId":"calc","toolName":"add","durationMs":0,"ok":true}]}`)
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		if n%batch == 0 {
			for i := range recs {
				n++
				recs[i] = store.RunRecord{ID: fmt.Sprintf("%036d", n), Start: time.Now(), Surface: "run", Tool: "codemode_run", Code: code, CodeSHA256: "x",
					Limits: []byte(`{}`), Outcome: "ok", Response: resp, ToolCalls: 2,
					Calls: []store.CallRecord{{Server: "calc", Tool: "add", Outcome: "ok"}, {Server: "calc", Tool: "add", Outcome: "ok"}}}
			}
			if err := h.Add(context.Background(), recs); err != nil {
				b.Fatal(err)
			}
		}
		n++
	}
}
