package run

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/outer"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// storeSource serves one server, "store", whose snapshot is rebuilt on every
// request: its version counts the snapshots taken, so that a script can see
// something that differs between two runs of it.
type storeSource struct {
	cfg config.Server
	mu  sync.Mutex
	n   int
}

func (s *storeSource) Servers() []config.Server { return []config.Server{s.cfg} }

func (s *storeSource) Snapshot(_ context.Context, id string) (*upstream.Snapshot, error) {
	if id != "store" {
		return nil, catalog.ErrUnknownServer
	}
	s.mu.Lock()
	s.n++
	n := s.n
	s.mu.Unlock()
	f := false
	schema := json.RawMessage(`{"type":"object","properties":{"key":{"type":"string"}}}`)
	return &upstream.Snapshot{ServerID: "store", Name: "store", Info: &mcp.Implementation{Name: "store", Version: fmt.Sprint(n)}, Tools: []*mcp.Tool{
		{Name: "read", InputSchema: schema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		{Name: "write", InputSchema: schema, Annotations: &mcp.ToolAnnotations{DestructiveHint: &f}},
	}}, nil
}

// recordingCaller answers every call and remembers it.
type recordingCaller struct {
	mu    sync.Mutex
	calls []string
}

func (c *recordingCaller) CallTool(_ context.Context, _, tool string, args any) (*mcp.CallToolResult, error) {
	b, _ := json.Marshal(args)
	c.mu.Lock()
	c.calls = append(c.calls, tool+" "+string(b))
	n := len(c.calls)
	c.mu.Unlock()
	return &mcp.CallToolResult{StructuredContent: map[string]any{"n": n}}, nil
}

func (c *recordingCaller) seen() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.calls...)
}

func approvingRunner(t *testing.T, log *slog.Logger) (*Runner, *recordingCaller) {
	t.Helper()
	cfg := config.Default()
	srv := config.Server{ID: "store", Name: "store", Approval: config.ApprovalWrites}
	cfg.Servers = []config.Server{srv}
	caller := &recordingCaller{}
	return New(cfg, catalog.New(&storeSource{cfg: srv}), caller, &Options{Logger: log}), caller
}

func asking(answer string) (context.Context, *int) {
	n := new(int)
	ch := outer.NewFunc(func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		*n++
		return &mcp.ElicitResult{Action: answer}, nil
	})
	return outer.With(context.Background(), ch), n
}

// A script that makes another call when run again (here: its arguments
// come from the server's version, which changes between the runs) is
// stopped: the user's answer was about the call they saw.
func TestApprovalReplayDiverges(t *testing.T) {
	r, caller := approvingRunner(t, nil)
	ctx, asked := asking("accept")
	resp := r.Run(ctx, Request{Code: `import { write, __meta__ } from "@codemode/servers/store";
await write({ key: __meta__.serverVersion });
globalThis.__codemode_result__ = "written";`})
	if *asked != 1 {
		t.Errorf("asked %d times", *asked)
	}
	d := errorOf(resp)
	if d == nil || d.Code != diag.ReplayDiverged || !strings.Contains(d.Message, "store/write") {
		t.Fatalf("%s", dump(resp))
	}
	if got := caller.seen(); len(got) != 0 {
		t.Errorf("the upstream saw %q", got)
	}
}

func errorOf(r *Response) *diag.Diagnostic {
	for _, d := range r.Diagnostics {
		if d.Severity == diag.SeverityError {
			return &d
		}
	}
	return nil
}

// Without a channel to a client (codemode run, a test), a call that needs
// approval stops the run with APPROVAL_REQUIRED; calls that need none
// still run, and the audit line says what happened.
func TestApprovalRequiredWithoutChannel(t *testing.T) {
	var logs bytes.Buffer
	r, caller := approvingRunner(t, slog.New(slog.NewTextHandler(&logs, nil)))
	resp := r.Run(context.Background(), Request{Code: `import { read, write } from "@codemode/servers/store";
await read({});
await write({ key: "k" });`})
	d := errorOf(resp)
	if d == nil || d.Code != diag.ApprovalRequired || !strings.Contains(d.Message, `store/write [writes, open world] {"key":"k"}`) {
		t.Fatalf("%s", dump(resp))
	}
	if got := caller.seen(); len(got) != 1 || !strings.HasPrefix(got[0], "read ") {
		t.Errorf("the upstream saw %q", got)
	}
	if !strings.Contains(logs.String(), "error=APPROVAL_REQUIRED") || !strings.Contains(logs.String(), "approval_auto=1") {
		t.Errorf("audit line: %s", logs.String())
	}
}

// The audit line lists each decision the user made, and never arguments.
func TestApprovalAudit(t *testing.T) {
	var logs bytes.Buffer
	r, _ := approvingRunner(t, slog.New(slog.NewTextHandler(&logs, nil)))
	ctx, _ := asking("decline")
	r.Run(ctx, Request{Code: `import { read, write } from "@codemode/servers/store";
await read({ key: "public" });
try { await write({ key: "very-private-key" }); } catch (e) {}`})
	line := logs.String()
	if !strings.Contains(line, "store/write=denied") || !strings.Contains(line, "approval_auto=1") || strings.Contains(line, "very-private") {
		t.Errorf("audit line: %s", line)
	}
}

// Calls that need no approval still run concurrently in a run that may ask
// (a deterministic one): the ledger numbers a call and releases its turn
// before it waits for the server.
func TestApprovingRunKeepsConcurrency(t *testing.T) {
	var wg sync.WaitGroup
	wg.Add(2)
	s := mcp.NewServer(&mcp.Implementation{Name: "barrier"}, nil)
	for _, name := range []string{"left", "right"} {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: objectSchema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				wg.Done()
				done := make(chan struct{})
				go func() { wg.Wait(); close(done) }()
				select {
				case <-done:
					return textResult(name), nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			})
	}
	r := newTestRunner(t, map[string]*mcp.Server{"barrier": s})
	r.cfg.Servers[0].Approval = config.ApprovalWrites
	if !r.cfg.ApprovalPossible() {
		t.Fatal("the test's configuration asks for nothing")
	}
	// Sequential calls would hold the run until its timeout: roomy, so
	// that only they can fail the test, however loaded the machine.
	res := r.Run(context.Background(), Request{Limits: config.Limits{TimeoutMs: roomyMs}, Code: `import { left, right } from "@codemode/servers/barrier";
globalThis.__codemode_result__ = await Promise.all([left(), right()]);`})
	if string(res.Result) != `["left","right"]` {
		t.Fatalf("calls were not concurrent:\n%s", dump(res))
	}
}

// The ledger survives its JSON form (the requestState's payload) with
// results and errors intact.
func TestLedgerRoundTrip(t *testing.T) {
	l := newLedger()
	l.done(0, "k0", ApprovalAuto, &mcp.CallToolResult{StructuredContent: map[string]any{"a": 1}}, nil, 0)
	l.done(1, "k1", ApprovalDenied, nil, &diag.Error{Class: diag.ApprovalDeniedError, Message: "no", Hint: "h", Fields: map[string]any{"toolName": "w"}}, 0)
	l.decide([]*pendingCall{{pos: 2, key: "k2"}}, true, true)
	back, err := decodeLedger(l.encode())
	if err != nil {
		t.Fatal(err)
	}
	if back.Seed != l.Seed || back.NowMs != l.NowMs || !back.ApproveAll || back.Batches != 1 {
		t.Errorf("%+v", back)
	}
	if c := back.get(1); c == nil || c.Err == nil || c.Err.Class != diag.ApprovalDeniedError || c.Err.Fields["toolName"] != "w" {
		t.Errorf("call 1: %+v", c)
	}
	if c := back.get(0); c == nil || !strings.Contains(string(c.Result), `"structuredContent":{"a":1}`) {
		t.Errorf("call 0: %+v %s", c, c.Result)
	}
	if c := back.get(2); c == nil || c.Done || c.Approval != ApprovalGranted {
		t.Errorf("call 2: %+v", c)
	}
}

// callKey ignores key order and spacing, not values.
func TestCallKey(t *testing.T) {
	a := callKey("s", "t", json.RawMessage(`{"a": 1, "b": [1, 2]}`))
	if b := callKey("s", "t", json.RawMessage(`{"b":[1,2],"a":1}`)); a != b {
		t.Errorf("key order changed the key")
	}
	for _, other := range []string{
		callKey("s", "t", json.RawMessage(`{"a": 2, "b": [1, 2]}`)),
		callKey("s", "u", json.RawMessage(`{"a": 1, "b": [1, 2]}`)),
		callKey("x", "t", json.RawMessage(`{"a": 1, "b": [1, 2]}`)),
	} {
		if other == a {
			t.Errorf("different calls share a key")
		}
	}
}
