package run

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/transpile"
)

// recorder is an Observer that keeps what it sees.
type recorder struct {
	mu     sync.Mutex
	starts []*RunStart
	calls  []*CallStart
	ends   map[string]*CallEnd // by tool and input
	runEnd []*RunEnd
}

func (r *recorder) StartRun(ctx context.Context, s *RunStart) (context.Context, RunObserver) {
	r.mu.Lock()
	r.starts = append(r.starts, s)
	r.mu.Unlock()
	return context.WithValue(ctx, recorderKey{}, s.ID), r
}

type recorderKey struct{}

func (r *recorder) StartCall(ctx context.Context, c *CallStart) (context.Context, func(*CallEnd)) {
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
	return ctx, func(e *CallEnd) {
		r.mu.Lock()
		r.ends[c.Tool+string(c.Input)] = e
		r.mu.Unlock()
	}
}

func (r *recorder) EndRun(ctx context.Context, e *RunEnd) {
	r.mu.Lock()
	r.runEnd = append(r.runEnd, e)
	r.mu.Unlock()
}

// An observer sees the run start with its origin, every tool call (also
// one the input schema refused, and a failed one) with its outcome, and
// the run end with the final response and its id.
func TestObserver(t *testing.T) {
	base := newTestRunner(t, map[string]*mcp.Server{"calc": calcServer()})
	rec := &recorder{ends: map[string]*CallEnd{}}
	// Two observers, to check that Observers calls both.
	other := &recorder{ends: map[string]*CallEnd{}}
	r := New(base.cfg, base.cat, base.caller, &Options{Observer: Observers(nil, rec, other)})
	ctx := WithOrigin(context.Background(), Origin{Surface: "test", Tool: "codemode_run", Session: "s1", Client: "c/1"})
	resp := r.Run(ctx, Request{Code: `import { add, fail } from "@codemode/servers/calc";
await Promise.all([add({ a: 1, b: 2 }), add({ a: 3, b: 4 })]);
try { await add({ a: "x" }); } catch {}
try { await fail({}); } catch {}
globalThis.__codemode_result__ = 1;`})
	if resp.Failed() {
		t.Fatal(dump(resp))
	}
	if len(rec.starts) != 1 || len(rec.runEnd) != 1 || len(other.runEnd) != 1 {
		t.Fatalf("starts %d, ends %d, other's ends %d; want 1 each", len(rec.starts), len(rec.runEnd), len(other.runEnd))
	}
	s := rec.starts[0]
	if s.Origin.Surface != "test" || s.Origin.Session != "s1" || s.Origin.Client != "c/1" || s.ID == "" || s.ID != resp.RunID() {
		t.Errorf("start %+v, run id %q", s, resp.RunID())
	}
	if len(rec.calls) != 4 {
		t.Fatalf("%d calls observed, want 4", len(rec.calls))
	}
	for _, c := range rec.calls {
		if c.ServerID != "calc" || c.Offset < 0 || c.Start.Before(s.Start) {
			t.Errorf("call %+v", c)
		}
	}
	want := map[string]string{
		`add{"a":1,"b":2}`: CallOK, `add{"a":3,"b":4}`: CallOK,
		`add{"a":"x"}`: CallInvalid, `fail{}`: CallToolError,
	}
	n := 0
	for key, e := range rec.ends {
		if w, ok := want[key]; !ok || w != e.Outcome {
			t.Errorf("call %s ended %q, want %q", key, e.Outcome, w)
		}
		n++
		switch e.Outcome {
		case CallInvalid:
			if e.Class != diag.SchemaValidationError || e.Error == "" || e.Result != nil {
				t.Errorf("refused call: %+v", e)
			}
		case CallToolError:
			if e.Class != diag.ToolCallError || e.Result == nil || !e.Result.IsError {
				t.Errorf("failed call: %+v", e)
			}
		case CallOK:
			if e.Result == nil || e.Class != "" {
				t.Errorf("ok call: %+v", e)
			}
		}
	}
	if n != 4 {
		t.Errorf("%d calls ended, want 4", n)
	}
	end := rec.runEnd[0]
	if end.Outcome != "ok" || end.Response != resp || end.Limits.TimeoutMs == 0 || end.Duration <= 0 {
		t.Errorf("end %+v", end)
	}
	if got := string(rec.calls[0].Input); !json.Valid([]byte(got)) {
		t.Errorf("input %q", got)
	}

	// A failed run's outcome is its first error's code; a run refused
	// before its limits were resolved is observed too.
	resp = r.Run(ctx, Request{Code: `throw new Error("no")`})
	if got := rec.runEnd[1].Outcome; got != string(diag.UncaughtException) || !resp.Failed() {
		t.Errorf("outcome %q", got)
	}
	r.Run(ctx, Request{Code: " "})
	if got := rec.runEnd[2].Outcome; got != string(diag.InvalidRequest) {
		t.Errorf("outcome %q", got)
	}
}

// Without an observer a response has no run id.
func TestNoObserver(t *testing.T) {
	r := newTestRunner(t, map[string]*mcp.Server{})
	if id := mustRun(t, r, "globalThis.__codemode_result__ = 1").RunID(); id != "" {
		t.Errorf("run id %q", id)
	}
}

// A run's Args are @codemode/args's default export and the global args;
// without them the module exports {} (and the global is only there once
// imported); anything but an object is refused.
func TestArgs(t *testing.T) {
	r := newTestRunner(t, map[string]*mcp.Server{})
	ctx := context.Background()
	resp := r.Run(ctx, Request{Code: `import a, { args as b } from "@codemode/args";
globalThis.__codemode_result__ = [a.owner, b === a, args === a, args.n + 1];`, Args: json.RawMessage(`{"owner":"me","n":41}`)})
	if string(resp.Result) != `["me",true,true,42]` {
		t.Errorf("result %s\n%s", resp.Result, dump(resp))
	}
	// The global is there without an import.
	resp = r.RunWith(ctx, Request{Code: `return args.owner`, Args: json.RawMessage(`{"owner":"me"}`)}, Extra{Transpile: transpile.Body()})
	if string(resp.Result) != `"me"` {
		t.Errorf("result %s\n%s", resp.Result, dump(resp))
	}
	resp = r.Run(ctx, Request{Code: `import a from "@codemode/args";
globalThis.__codemode_result__ = a;`})
	if string(resp.Result) != `{}` {
		t.Errorf("result %s\n%s", resp.Result, dump(resp))
	}
	resp = r.Run(ctx, Request{Code: `globalThis.__codemode_result__ = typeof args;`})
	if string(resp.Result) != `"undefined"` {
		t.Errorf("result %s\n%s", resp.Result, dump(resp))
	}
	for _, bad := range []string{`[1]`, `"x"`, `null`, `{`} {
		resp = r.Run(ctx, Request{Code: `1`, Args: json.RawMessage(bad)})
		if len(resp.Diagnostics) != 1 || resp.Diagnostics[0].Code != diag.InvalidRequest {
			t.Errorf("args %s: %s", bad, dump(resp))
		}
	}
}
