package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/sandbox"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

const secret = "sk-live-0123456789abcdef"

// liveServer is an in-process MCP server whose answers change from call to
// call (a counter), so that only a recording can reproduce a run; "slow"
// answers after a delay, in reverse order of its argument, and "env"
// returns a configured secret.
func liveServer() *mcp.Server {
	var n atomic.Int64
	s := mcp.NewServer(&mcp.Implementation{Name: "live", Version: "1.0.0"}, nil)
	s.AddTool(&mcp.Tool{Name: "tick", Description: "Counts calls", InputSchema: json.RawMessage(`{"type":"object","properties":{"label":{"type":"string"}}}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(`{"n":%d,"args":%s}`, n.Add(1), req.Params.Arguments)}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object","properties":{"i":{"type":"integer"}}}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ I int }
			json.Unmarshal(req.Params.Arguments, &in)
			select { // later calls of a batch answer first
			case <-time.After(time.Duration(3-in.I) * 20 * time.Millisecond):
			case <-ctx.Done():
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(in.I)}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "env", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "TOKEN=" + secret}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "fail", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no such thing"}}}, nil
		})
	return s
}

// recordingRunner returns a runner over liveServer that records into the
// returned slot.
func recordingRunner(t *testing.T) (*run.Runner, *upstream.Manager, *[]*Bundle) {
	t.Helper()
	cs := []config.Server{{ID: "live", Name: "live", Transport: config.Stdio, Command: "unused", Secrets: []string{secret}}}
	m := upstream.New(cs, &upstream.Options{Dial: upstream.DialInMemory(map[string]*mcp.Server{"live": liveServer()})})
	t.Cleanup(func() { m.Close() })
	cfg := config.Default()
	cfg.Servers = cs
	var got []*Bundle
	rec := &Recorder{Write: func(b *Bundle) error { got = append(got, b); return nil }, OnError: func(err error) { t.Error(err) }}
	r := run.New(cfg, catalog.New(m), Releasing(m), &run.Options{Record: rec.Record})
	return r, m, &got
}

const recordedScript = `import { tick, slow, env, fail } from "@codemode/servers/live";
import { listTools } from "@codemode/discovery";
const tools = (await listTools("live")).map((t) => t.toolName);
const r = Math.random();
const a = JSON.parse(await tick({ label: "first " + r }));
await new Promise((res) => setTimeout(res, 30));
const batch = await Promise.all([0, 1, 2].map((i) => slow({ i })));
const b = JSON.parse(await tick({ label: "after " + a.n + " at " + new Date().toISOString() }));
let failed = "";
try { await fail({}); } catch (e) { failed = e.name; }
const e = await env({});
console.log("done", a.n, b.n, e);
globalThis.__codemode_result__ = { tools, a: a.n, b: b.n, batch, failed, e, elapsed: Date.now() - Date.parse(new Date(0).toISOString()) > 0 };`

// TestRecordAndReplay: a run recorded against a live server replays
// offline (the server closed) to the same result, logs and calls; a
// bundle edited to answer differently diverges where it matters; secrets
// are redacted in the bundle.
func TestRecordAndReplay(t *testing.T) {
	r, m, got := recordingRunner(t)
	resp := r.Run(context.Background(), run.Request{Code: recordedScript})
	if resp.Failed() || len(*got) != 1 {
		t.Fatalf("run: %s; %d bundles", Marshal(resp), len(*got))
	}
	b := (*got)[0]
	m.Close() // offline from here on

	var ops []string
	for _, c := range b.Calls {
		ops = append(ops, opName(c.Op)+string(c.Input))
	}
	want := `discovery.listTools["live",null] live/tick{"label":"first %s"} live/slow{"i":0} live/slow{"i":1} live/slow{"i":2} live/tick{"label":"after 1 at %s"} live/fail{} live/env{}`
	var res struct{ Batch []string }
	json.Unmarshal(b.Outcome.Result, &res)
	if fmt.Sprint(res.Batch) != "[0 1 2]" || len(ops) != 8 || ops[2] != `live/slow{"i":0}` || ops[4] != `live/slow{"i":2}` || !strings.HasPrefix(ops[0], "discovery.listTools") {
		t.Fatalf("calls in the script's order, want %s:\n%s\nresult %s", want, strings.Join(ops, "\n"), b.Outcome.Result)
	}
	data := string(Marshal(b))
	if strings.Contains(data, secret) || !strings.Contains(data, "TOKEN=[REDACTED]") {
		t.Errorf("the bundle holds the secret, or not its redaction")
	}
	if len(b.Modules) < 2 || b.Limits.MaxToolCalls != 100 || b.Now.IsZero() {
		t.Errorf("modules %d, limits %+v, now %v", len(b.Modules), b.Limits, b.Now)
	}

	// Through a file, as `codemode replay run` reads it.
	path := filepath.Join(t.TempDir(), "run.json")
	if err := WriteFile(path, b); err != nil {
		t.Fatal(err)
	}
	b2, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Replay(context.Background(), b2)
	if err != nil || !rep.Reproduced {
		t.Fatalf("replay: %v %s", err, Marshal(rep))
	}
	if !jsonEq(rep.Outcome.Result, string(b.Outcome.Result)) {
		t.Errorf("replayed result %s, recorded %s", rep.Outcome.Result, b.Outcome.Result)
	}

	// A different answer: the next call's input depends on it.
	edited := *b2
	edited.Calls = append([]BundleCall(nil), b2.Calls...)
	edited.Calls[1].Result = json.RawMessage(`"{\"n\":7}"`)
	rep, _ = Replay(context.Background(), &edited)
	if rep.Reproduced || rep.Diverged.What != "call" || rep.Diverged.Position != 5 || !strings.Contains(rep.Diverged.Message, "after 7") {
		t.Errorf("edited answer: %s", Marshal(rep.Diverged))
	}
	// Other code: the first call differs.
	edited = *b2
	edited.Code = strings.Replace(b2.Code, `"first "`, `"1st "`, 1)
	rep, _ = Replay(context.Background(), &edited)
	if rep.Reproduced || rep.Diverged.What != "call" || rep.Diverged.Position != 1 {
		t.Errorf("edited code: %s", Marshal(rep.Diverged))
	}
	// Another seed: Math.random differs, so does the first tick's input.
	edited = *b2
	edited.Seed++
	rep, _ = Replay(context.Background(), &edited)
	if rep.Reproduced || rep.Diverged.Position != 1 {
		t.Errorf("other seed: %s", Marshal(rep.Diverged))
	}
	// A recorded log that is not reproduced.
	edited = *b2
	edited.Outcome.Logs = append([]sandbox.LogEntry(nil), b2.Outcome.Logs...)
	edited.Outcome.Logs[0].Message = "something else"
	rep, _ = Replay(context.Background(), &edited)
	if rep.Reproduced || rep.Diverged.What != "logs" {
		t.Errorf("edited log: %s", Marshal(rep.Diverged))
	}
	// A recorded call the replay does not make.
	edited = *b2
	edited.Calls = append(append([]BundleCall(nil), b2.Calls...), BundleCall{Op: "tool\x00live\x00tick", Input: json.RawMessage(`{}`), Result: json.RawMessage(`"x"`)})
	rep, _ = Replay(context.Background(), &edited)
	if rep.Reproduced || rep.Diverged.What != "calls" {
		t.Errorf("extra recorded call: %s", Marshal(rep.Diverged))
	}
}

// TestRecordedRunsAreDeterministic: the same code recorded twice gets
// different seeds and times, but each bundle replays to itself.
func TestRecordedRunsAreDeterministic(t *testing.T) {
	r, _, got := recordingRunner(t)
	for range 2 {
		r.Run(context.Background(), run.Request{Code: `import { tick } from "@codemode/servers/live";
globalThis.__codemode_result__ = [Math.random(), await tick({}), Date.now()];`})
	}
	if len(*got) != 2 || (*got)[0].Seed == (*got)[1].Seed {
		t.Fatalf("%d bundles, seeds equal", len(*got))
	}
	for _, b := range *got {
		if rep, _ := Replay(context.Background(), b); !rep.Reproduced {
			t.Errorf("not reproduced: %s", Marshal(rep))
		}
	}
}
