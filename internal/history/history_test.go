package history_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/history"
	"github.com/codemode-mcp/codemode/internal/replay"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/store"
	"github.com/codemode-mcp/codemode/internal/testutil"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

const secret = "sk-live-0123456789abcdef"

// calcServer has add({a, b}) and echo({text}), which echoes.
func calcServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "1"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	s.AddTool(&mcp.Tool{Name: "add", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ A, B float64 }
			json.Unmarshal(req.Params.Arguments, &in)
			return &mcp.CallToolResult{StructuredContent: map[string]any{"sum": in.A + in.B}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
		})
	return s
}

// runner returns a Runner over calc whose config has a secret (for the
// redactor), observed by obs.
func runner(t testing.TB, obs run.Observer) *run.Runner {
	t.Helper()
	srv := config.Server{Name: "calc", Transport: config.Stdio, Command: "in-memory", Env: map[string]string{"API_KEY": secret}, Secrets: []string{secret}}
	cfg := testutil.Config(srv)
	mgr := upstream.New(cfg.Servers, &upstream.Options{Dial: upstream.DialInMemory(map[string]*mcp.Server{"calc": calcServer()}), Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { mgr.Close() })
	return run.New(cfg, catalog.New(mgr), mgr, &run.Options{Observer: obs})
}

func newStore(t testing.TB) *store.Store {
	s := store.New(&store.Options{Dir: t.TempDir()})
	t.Cleanup(func() { s.Close() })
	return s
}

// waitWritten waits until rec has written n runs (an event, not a time).
func waitWritten(t testing.TB, rec *history.Recorder, n uint64) {
	t.Helper()
	ch, stop := rec.Subscribe()
	defer stop()
	for rec.Written()+rec.Dropped() < n {
		<-ch
	}
	if rec.Written() < n {
		t.Fatalf("written %d, dropped %d; want %d written", rec.Written(), rec.Dropped(), n)
	}
}

// A run is recorded with where it came from, its code and hash, limits,
// response, and its calls with offsets, durations, outcomes and error
// classes; without payloads nothing of the calls' inputs or outputs.
func TestRecord(t *testing.T) {
	st := newStore(t)
	rec := history.New(st.History(), nil)
	defer rec.Close(context.Background())
	r := runner(t, rec)
	ctx := run.WithOrigin(context.Background(), run.Origin{Surface: "run", Tool: "codemode_run", Session: "sess-1", Client: "agent/2", Auth: "team-a"})
	code := `import { add, echo } from "@codemode/servers/calc";
const [x, y] = await Promise.all([add({ a: 1, b: 2 }), add({ a: 3, b: 4 })]);
try { await echo({ said: "hello" }); } catch {}
globalThis.__codemode_result__ = x.sum + y.sum;`
	resp := r.Run(ctx, run.Request{Code: code, Script: "sums@2"})
	waitWritten(t, rec, 1)
	got, err := st.History().Get(context.Background(), resp.RunID())
	if err != nil {
		t.Fatal(err)
	}
	if got.Surface != "run" || got.Tool != "codemode_run" || got.Session != "sess-1" || got.Client != "agent/2" || got.Auth != "team-a" ||
		got.Script != "sums@2" || got.Code != code || len(got.CodeSHA256) != 64 || got.Outcome != "ok" || got.ToolCalls != 3 || got.FailedCalls != 1 {
		t.Errorf("record %+v", got)
	}
	var limits config.Limits
	if json.Unmarshal(got.Limits, &limits) != nil || limits.TimeoutMs != config.Default().DefaultLimits.TimeoutMs {
		t.Errorf("limits %s", got.Limits)
	}
	var back run.Response
	if err := json.Unmarshal(got.Response, &back); err != nil || string(back.Result) != "10" || len(back.ToolTrace) != 3 {
		t.Errorf("response %s", got.Response)
	}
	outcomes := map[string]int{}
	for _, c := range got.Calls {
		outcomes[c.Tool+":"+c.Outcome]++
		if c.Server != "calc" || c.Offset <= 0 || c.Offset > got.Duration || c.Input != nil || c.Output != nil {
			t.Errorf("call %+v", c)
		}
		if c.Outcome == run.CallToolError && (c.ErrorClass != "ToolCallError" || !strings.HasPrefix(c.Error, "ToolCallError: ")) {
			t.Errorf("failed call %+v", c)
		}
	}
	if outcomes["add:ok"] != 2 || outcomes["echo:tool_error"] != 1 {
		t.Errorf("calls %v", outcomes)
	}
	// Calls are in the order they started: the two adds, then echo.
	if got.Calls[2].Tool != "echo" || got.Calls[2].Offset < got.Calls[1].Offset {
		t.Errorf("order %+v", got.Calls)
	}
}

// With payloads on, inputs and outputs are kept, redacted; a payload over
// the bound is kept as its size.
func TestPayloads(t *testing.T) {
	st := newStore(t)
	// The runner's redactor knows the configured secrets.
	r := runner(t, nil)
	rec := history.New(st.History(), &history.Options{Payloads: true, MaxPayloadBytes: 200, Redact: r.Redactor()})
	defer rec.Close(context.Background())
	r = runner(t, rec)
	resp := r.Run(context.Background(), run.Request{Code: `import { add, echo } from "@codemode/servers/calc";
await add({ a: 1, b: 2 });
try { await echo({ key: "` + secret + `" }); } catch {}
try { await echo({ long: "` + strings.Repeat("x", 300) + `" }); } catch {}
// The code itself names the secret too.
globalThis.__codemode_result__ = "` + secret + `".length;`})
	waitWritten(t, rec, 1)
	got, err := st.History().Get(context.Background(), resp.RunID())
	if err != nil {
		t.Fatal(err)
	}
	all, _ := json.Marshal(got)
	if strings.Contains(string(all), secret) {
		t.Errorf("the secret was recorded: %s", all)
	}
	if len(got.Calls) != 3 {
		t.Fatalf("calls %+v", got.Calls)
	}
	if string(got.Calls[0].Input) != `{"a":1,"b":2}` || !strings.Contains(string(got.Calls[0].Output), `"sum":3`) {
		t.Errorf("add's payloads: %s → %s", got.Calls[0].Input, got.Calls[0].Output)
	}
	if !strings.Contains(string(got.Calls[1].Input), "[REDACTED") || !strings.Contains(string(got.Calls[1].Output), "[REDACTED") {
		t.Errorf("echo's payloads: %s → %s", got.Calls[1].Input, got.Calls[1].Output)
	}
	if string(got.Calls[2].Input) != `{"bytes":311,"truncated":true}` {
		t.Errorf("a long input: %s", got.Calls[2].Input)
	}
	if !strings.Contains(got.Code, "[REDACTED") {
		t.Errorf("code %s", got.Code)
	}
}

// With payloads, a run's replay bundle is kept, and replays offline.
func TestBundle(t *testing.T) {
	st := newStore(t)
	r := runner(t, nil)
	rec := history.New(st.History(), &history.Options{Payloads: true, Redact: r.Redactor()})
	defer rec.Close(context.Background())
	srv := config.Server{Name: "calc", Transport: config.Stdio, Command: "in-memory"}
	cfg := testutil.Config(srv)
	mgr := upstream.New(cfg.Servers, &upstream.Options{Dial: upstream.DialInMemory(map[string]*mcp.Server{"calc": calcServer()}), Logger: slog.New(slog.DiscardHandler)})
	defer mgr.Close()
	r = run.New(cfg, catalog.New(mgr), mgr, &run.Options{Observer: rec, Record: rec.Capture})
	resp := r.Run(context.Background(), run.Request{Code: `import { add } from "@codemode/servers/calc";
const [a, b] = await Promise.all([add({ a: 1, b: 2 }), add({ a: 1, b: 2 })]);
const c = await add({ a: a.sum, b: b.sum });
console.log("sum", c.sum);
globalThis.__codemode_result__ = c.sum;`})
	if string(resp.Result) != "6" {
		t.Fatalf("result %s", resp.Result)
	}
	waitWritten(t, rec, 1)
	got, err := st.History().Get(context.Background(), resp.RunID())
	if err != nil {
		t.Fatal(err)
	}
	var b replay.Bundle
	if err := json.Unmarshal(got.Bundle, &b); err != nil || b.Format != replay.BundleFormat || len(b.Calls) != 3 {
		t.Fatalf("bundle %s: %v", got.Bundle, err)
	}
	rep, err := replay.Replay(context.Background(), &b)
	if err != nil || !rep.Reproduced {
		t.Errorf("replay: %+v %v", rep, err)
	}
}

// slowSink is a store that does not answer until released: the writer
// is stuck in Add.
type slowSink struct {
	entered chan int // each Add's batch size
	release chan struct{}
	added   int
}

func (s *slowSink) Add(ctx context.Context, runs []store.RunRecord) error {
	s.entered <- len(runs)
	<-s.release
	s.added += len(runs)
	return nil
}

func (s *slowSink) Prune(context.Context, time.Time, int64) (store.PruneResult, error) {
	return store.PruneResult{}, nil
}

// A store that does not answer never makes a run wait: with the writer
// stuck and the queue full, further runs are answered at once and dropped,
// and counted.
func TestDropNotBlock(t *testing.T) {
	sink := &slowSink{entered: make(chan int, 100), release: make(chan struct{})}
	rec := history.New(sink, &history.Options{QueueSize: 3})
	r := runner(t, rec)
	ctx := context.Background()
	one := func() {
		if resp := r.Run(ctx, run.Request{Code: `import { add } from "@codemode/servers/calc"; globalThis.__codemode_result__ = (await add({ a: 1, b: 1 })).sum;`}); string(resp.Result) != "2" {
			t.Fatalf("run: %s", resp.Result)
		}
	}
	one()
	if n := <-sink.entered; n != 1 {
		t.Fatalf("first batch %d", n)
	}
	// The writer is stuck with the first run. Three fill the queue; the
	// next five are dropped, and every run is answered.
	for range 8 {
		one()
	}
	if d := rec.Dropped(); d != 5 {
		t.Errorf("dropped %d, want 5", d)
	}
	if q := rec.Queued(); q != 3 {
		t.Errorf("queued %d, want 3", q)
	}
	close(sink.release)
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if sink.added != 4 || rec.Written() != 4 {
		t.Errorf("added %d, written %d; want 4", sink.added, rec.Written())
	}
	// Runs after Close are dropped too, without waiting.
	one()
	if d := rec.Dropped(); d != 6 {
		t.Errorf("dropped %d after close, want 6", d)
	}
}

// Retention is enforced as runs are written: by size (the oldest go), and
// by age on the injected clock.
func TestRetention(t *testing.T) {
	st := newStore(t)
	now := time.Now()
	clock := func() time.Time { return now }
	// Measure one run's bytes first.
	probe := history.New(st.History(), &history.Options{Now: clock})
	r := runner(t, probe)
	code := func(i int) string { return fmt.Sprintf("globalThis.__codemode_result__ = %d", i) }
	r.Run(context.Background(), run.Request{Code: code(0)})
	waitWritten(t, probe, 1)
	probe.Close(context.Background())
	_, per, err := st.History().Usage(context.Background())
	if err != nil {
		t.Fatal(err)
	}

	// Room for three runs and a half.
	limit := 3*per + per/2
	rec := history.New(st.History(), &history.Options{MaxBytes: limit, Now: func() time.Time { return clock() }})
	r = runner(t, rec)
	var ids []string
	for i := 1; i <= 6; i++ {
		ids = append(ids, r.Run(context.Background(), run.Request{Code: code(i)}).RunID())
		waitWritten(t, rec, uint64(i))
	}
	runs, _, err := st.History().List(context.Background(), store.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 || runs[0].ID != ids[5] || runs[2].ID != ids[3] {
		t.Errorf("kept %d runs; want the newest three", len(runs))
	}
	n, bytes, _ := st.History().Usage(context.Background())
	if n != 3 || bytes > limit {
		t.Errorf("usage %d runs, %d bytes; limit %d", n, bytes, limit)
	}
	rec.Close(context.Background())

	// A day later on the recorder's clock, with a 12-hour limit, every run
	// recorded so far is too old, and so is the next one, whose start is
	// on the real clock: once it is written, nothing remains.
	now = now.Add(24 * time.Hour)
	rec = history.New(st.History(), &history.Options{MaxAge: 12 * time.Hour, Now: clock})
	defer rec.Close(context.Background())
	r = runner(t, rec)
	r.Run(context.Background(), run.Request{Code: code(7)})
	waitWritten(t, rec, 1)
	if n, _, _ := st.History().Usage(context.Background()); n != 0 {
		t.Errorf("%d runs older than the limit remain", n)
	}
}

// A run that asks for approvals runs its script once per leg: the record
// keeps the last leg's calls.
func TestLegs(t *testing.T) {
	st := newStore(t)
	rec := history.New(st.History(), nil)
	ctx, ro := rec.StartRun(context.Background(), &run.RunStart{ID: "01900000-0000-7000-8000-00000000000a", Start: time.Now(), Request: run.Request{Code: "x"}})
	for leg := 1; leg <= 2; leg++ {
		for _, tool := range []string{"read", "write"}[:leg] {
			_, end := ro.StartCall(ctx, &run.CallStart{ServerID: "s", Tool: tool, Leg: leg})
			end(&run.CallEnd{Outcome: run.CallOK})
		}
	}
	ro.EndRun(ctx, &run.RunEnd{Outcome: "ok", Response: &run.Response{}})
	rec.Close(context.Background())
	got, err := st.History().Get(context.Background(), "01900000-0000-7000-8000-00000000000a")
	if err != nil || len(got.Calls) != 2 || got.Calls[0].Tool != "read" || got.Calls[1].Tool != "write" {
		t.Errorf("calls %+v, %v", got.Calls, err)
	}
}
