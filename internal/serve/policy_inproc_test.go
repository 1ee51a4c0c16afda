package serve_test

// The tool policy in process: a go-sdk upstream that counts every call it
// receives, the gateway, and go-sdk clients of both protocol eras (one that
// is sent elicitation requests, one that gets input-required results). The
// end-to-end tests against the npm servers with the TypeScript clients are
// in policy_e2e_test.go.

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/serve"
	"github.com/codemode-mcp/codemode/internal/testutil"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// ledgerServer is an upstream with a read-only tool, a writing one and a
// destructive one, and a record of every call that reached it.
type ledgerServer struct {
	mu    sync.Mutex
	calls []string // "tool args"
	srv   *mcp.Server
}

func newLedgerServer() *ledgerServer {
	l := &ledgerServer{srv: mcp.NewServer(&mcp.Implementation{Name: "store", Version: "1"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})}
	f, tr := false, true
	add := func(name string, ann *mcp.ToolAnnotations) {
		l.srv.AddTool(&mcp.Tool{Name: name, Description: name + " things", Annotations: ann,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"key":{"type":"string"}}}`)},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				l.mu.Lock()
				l.calls = append(l.calls, name+" "+string(req.Params.Arguments))
				n := len(l.calls)
				l.mu.Unlock()
				return &mcp.CallToolResult{StructuredContent: map[string]any{"tool": name, "n": n}}, nil
			})
	}
	add("read", &mcp.ToolAnnotations{ReadOnlyHint: true})
	add("write", &mcp.ToolAnnotations{DestructiveHint: &f})
	add("drop", &mcp.ToolAnnotations{DestructiveHint: &tr})
	add("secret_admin", &mcp.ToolAnnotations{DestructiveHint: &tr})
	return l
}

func (l *ledgerServer) seen() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls...)
}

// count returns how many calls of tool reached the server.
func (l *ledgerServer) count(tool string) int {
	n := 0
	for _, c := range l.seen() {
		if strings.HasPrefix(c, tool+" ") {
			n++
		}
	}
	return n
}

// policyGateway serves one ledgerServer as "store" with the given policy
// and surfaces.
func policyGateway(t *testing.T, policy config.Server, surfaces ...string) (*serve.Server, *ledgerServer) {
	t.Helper()
	return policyGatewayCfg(t, policy, nil, surfaces...)
}

// policyGatewayCfg is policyGateway with the configuration changed by edit.
func policyGatewayCfg(t *testing.T, policy config.Server, edit func(*config.Config), surfaces ...string) (*serve.Server, *ledgerServer) {
	t.Helper()
	up := newLedgerServer()
	policy.Name, policy.Transport, policy.Command = "store", config.Stdio, "in-memory"
	cfg := testutil.Config(policy)
	if len(surfaces) == 0 {
		surfaces = []string{"run"}
	}
	cfg.Serve.Surfaces = surfaces
	if policy.Name == "store" && len(policy.DenyTools) > 0 {
		// One file per tool: a denied tool must not have one.
		cfg.Serve.BindingLevel = "tool"
	}
	if edit != nil {
		edit(cfg)
	}
	mgr := upstream.New(cfg.Servers, &upstream.Options{Dial: upstream.DialInMemory(map[string]*mcp.Server{"store": up.srv}),
		Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { mgr.Close() })
	return serve.New(run.New(cfg, catalog.New(mgr), mgr, nil), mgr, &serve.Options{Logger: slog.New(slog.DiscardHandler)}), up
}

// elicitor answers elicitations as the test says and records them.
type elicitor struct {
	mu       sync.Mutex
	asked    []*mcp.ElicitParams
	answer   func(n int, p *mcp.ElicitParams) *mcp.ElicitResult
	protocol string
}

func (e *elicitor) handle(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	e.mu.Lock()
	e.asked = append(e.asked, req.Params)
	n := len(e.asked)
	e.mu.Unlock()
	return e.answer(n, req.Params), nil
}

func (e *elicitor) requests() []*mcp.ElicitParams {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*mcp.ElicitParams(nil), e.asked...)
}

func accept(all bool) func(int, *mcp.ElicitParams) *mcp.ElicitResult {
	return func(int, *mcp.ElicitParams) *mcp.ElicitResult {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approveAll": all}}
	}
}

func decline(int, *mcp.ElicitParams) *mcp.ElicitResult { return &mcp.ElicitResult{Action: "decline"} }

const (
	protoLegacy = "2025-11-25" // elicitation requests
	protoMRTR   = "2026-07-28" // input-required results
)

// connectPolicyClient connects a go-sdk client speaking protocol, with an
// elicitation handler if e is not nil.
func connectPolicyClient(t *testing.T, srv *serve.Server, protocol string, e *elicitor, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv.Start(ctx)
	ct, st := mcp.NewInMemoryTransports()
	if _, err := srv.MCP().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	var o mcp.ClientOptions
	if opts != nil {
		o = *opts
	}
	if e != nil {
		o.ElicitationHandler = e.handle
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "policy-test", Version: "1"}, &o).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callRun(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (toolResult, runResponse) {
	t.Helper()
	ctx := testutil.Context(t)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	b, _ := json.Marshal(res)
	return asRun(t, b)
}

type traceOf = struct {
	ServerID   string `json:"serverId"`
	ToolName   string `json:"toolName"`
	OK         bool   `json:"ok"`
	Error      string `json:"error"`
	Approval   string `json:"approval"`
	DurationMs int64  `json:"durationMs"`
}

func approvals(t *testing.T, res toolResult) []string {
	t.Helper()
	var r struct {
		ToolTrace []traceOf `json:"toolTrace"`
	}
	json.Unmarshal(res.StructuredContent, &r)
	var out []string
	for _, e := range r.ToolTrace {
		out = append(out, e.ToolName+"="+e.Approval)
	}
	return out
}

// approvalCalls returns the calls an approval request lists in its _meta.
func approvalCalls(t *testing.T, p *mcp.ElicitParams) []map[string]any {
	t.Helper()
	b, _ := json.Marshal(p.Meta[run.ApprovalMetaKey])
	var m struct {
		Calls []map[string]any `json:"calls"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("approval request _meta: %v (%s)", err, b)
	}
	return m.Calls
}

var writesPolicy = config.Server{Approval: config.ApprovalWrites}

// Both eras of client, one script: an approved write goes through exactly
// once; the read before it runs once too, though the script is run again
// after the answer.
func TestApprovalGranted(t *testing.T) {
	t.Parallel()
	for _, proto := range []string{protoLegacy, protoMRTR} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			srv, up := policyGateway(t, writesPolicy)
			e := &elicitor{answer: accept(false)}
			cs := connectPolicyClient(t, srv, proto, e, nil)
			res, resp := callRun(t, cs, "codemode_run", map[string]any{"code": `import { read, write } from "@codemode/servers/store";
const before = await read({ key: "a" });
const w = await write({ key: "a" });
globalThis.__codemode_result__ = { before: before.n, w: w.n, now: Date.now() > 0 };`})
			if d := resp.errorDiag(); d != nil {
				t.Fatalf("%+v", *d)
			}
			if got := up.seen(); len(got) != 2 || !strings.HasPrefix(got[0], "read ") || !strings.HasPrefix(got[1], "write ") {
				t.Fatalf("the upstream saw %q, want one read then one write", got)
			}
			if !jsonEq(t, string(resp.Result), `{"before": 1, "w": 2, "now": true}`) {
				t.Errorf("result = %s", resp.Result)
			}
			asked := e.requests()
			if len(asked) != 1 {
				t.Fatalf("%d elicitations, want 1", len(asked))
			}
			calls := approvalCalls(t, asked[0])
			if len(calls) != 1 || calls[0]["serverId"] != "store" || calls[0]["toolName"] != "write" || !strings.Contains(asked[0].Message, `store/write`) ||
				!strings.Contains(asked[0].Message, `{"key":"a"}`) {
				t.Errorf("the request does not name the call: %q %v", asked[0].Message, calls)
			}
			if got := approvals(t, res); strings.Join(got, " ") != "read=auto write=granted" {
				t.Errorf("trace approvals = %q", got)
			}
		})
	}
}

// Declined: the call throws ApprovalDeniedError (which the script can
// catch), the upstream never sees it, the trace says denied.
func TestApprovalDenied(t *testing.T) {
	t.Parallel()
	for _, proto := range []string{protoLegacy, protoMRTR} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			srv, up := policyGateway(t, writesPolicy)
			cs := connectPolicyClient(t, srv, proto, &elicitor{answer: decline}, nil)
			res, resp := callRun(t, cs, "codemode_run", map[string]any{"code": `import { write } from "@codemode/servers/store";
import { ApprovalDeniedError, CodemodeError } from "@codemode/errors";
try { await write({ key: "x" }); globalThis.__codemode_result__ = "written"; }
catch (e) { globalThis.__codemode_result__ = { name: e.name, denied: e instanceof ApprovalDeniedError, base: e instanceof CodemodeError, tool: e.toolName, server: e.serverId, hint: e.hint.length > 0 }; }`})
			if d := resp.errorDiag(); d != nil {
				t.Fatalf("%+v", *d)
			}
			if !jsonEq(t, string(resp.Result), `{"name":"ApprovalDeniedError","denied":true,"base":true,"tool":"write","server":"store","hint":true}`) {
				t.Errorf("result = %s", resp.Result)
			}
			if n := len(up.seen()); n != 0 {
				t.Errorf("the upstream saw %d calls: %q", n, up.seen())
			}
			if got := approvals(t, res); strings.Join(got, " ") != "write=denied" {
				t.Errorf("trace approvals = %q", got)
			}
			// Uncaught, it fails the run with its class.
			_, resp = callRun(t, cs, "codemode_run", map[string]any{"code": `import { drop } from "@codemode/servers/store"; await drop({});`})
			if d := resp.errorDiag(); d == nil || d.ErrorClass != "ApprovalDeniedError" {
				t.Errorf("uncaught denial: %+v", resp.diags())
			}
			if n := len(up.seen()); n != 0 {
				t.Errorf("the upstream saw %q", up.seen())
			}
		})
	}
}

// Five writes in one Promise.all are one question listing five calls; the
// approval lets each through exactly once.
func TestApprovalBatch(t *testing.T) {
	t.Parallel()
	for _, proto := range []string{protoLegacy, protoMRTR} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			srv, up := policyGateway(t, writesPolicy)
			e := &elicitor{answer: accept(false)}
			cs := connectPolicyClient(t, srv, proto, e, nil)
			_, resp := callRun(t, cs, "codemode_run", map[string]any{"code": `import { read, write } from "@codemode/servers/store";
await read({});
const keys = ["a", "b", "c", "d", "e"];
const out = await Promise.all(keys.map((key) => write({ key })));
globalThis.__codemode_result__ = out.length;`})
			if d := resp.errorDiag(); d != nil {
				t.Fatalf("%+v", *d)
			}
			asked := e.requests()
			if len(asked) != 1 {
				t.Fatalf("%d elicitations, want 1", len(asked))
			}
			if calls := approvalCalls(t, asked[0]); len(calls) != 5 {
				t.Errorf("the request lists %d calls, want 5: %v", len(calls), calls)
			}
			if !strings.Contains(asked[0].Message, "5 tool calls") {
				t.Errorf("message: %q", asked[0].Message)
			}
			if up.count("write") != 5 || up.count("read") != 1 {
				t.Errorf("the upstream saw %q", up.seen())
			}
		})
	}
}

// A loop that collects writes and sends them together is one batch too;
// two batches (one after the other) are two questions, unless the first
// answer approves every remaining call.
func TestApprovalBatchesAndApproveAll(t *testing.T) {
	t.Parallel()
	code := `import { write, drop } from "@codemode/servers/store";
const pending = [];
for (const key of ["a", "b", "c"]) pending.push(write({ key }));
await Promise.all(pending);
await drop({ key: "z" });
await write({ key: "d" });
globalThis.__codemode_result__ = "done";`
	for _, tc := range []struct {
		all   bool
		asked int
	}{{false, 3}, {true, 1}} {
		srv, up := policyGateway(t, writesPolicy, "run", "emceepee")
		e := &elicitor{answer: accept(tc.all)}
		cs := connectPolicyClient(t, srv, protoLegacy, e, nil)
		res, resp := callRun(t, cs, "codemode_run", map[string]any{"code": code})
		if d := resp.errorDiag(); d != nil {
			t.Fatalf("%+v", *d)
		}
		if n := len(e.requests()); n != tc.asked {
			t.Errorf("approveAll %v: %d elicitations, want %d", tc.all, n, tc.asked)
		}
		if up.count("write") != 4 || up.count("drop") != 1 {
			t.Errorf("the upstream saw %q", up.seen())
		}
		// emceepee's stats count the calls of the run that answered, not
		// those of the runs before each question.
		e2 := &elicitor{answer: accept(false)}
		cs2 := connectPolicyClient(t, srv, protoLegacy, e2, nil)
		em := decode[toolResult](t, mustCall(t, cs2, "codemode_execute", map[string]any{"code": `await mcp.listServers(); await mcp.callTool("store", "write", { key: "s" }); return 1;`}))
		var st struct {
			Stats struct {
				MCPCalls int `json:"mcpCalls"`
			} `json:"stats"`
		}
		json.Unmarshal(em.StructuredContent, &st)
		if len(e2.requests()) != 1 || st.Stats.MCPCalls != 2 {
			t.Errorf("emceepee: asked %d times, stats %s", len(e2.requests()), em.StructuredContent)
		}
		if got := strings.Join(approvals(t, res), " "); got != "write=granted write=granted write=granted drop=granted write=granted" {
			t.Errorf("trace approvals = %q", got)
		}
	}
}

// A client that can be asked nothing gets APPROVAL_REQUIRED listing the
// calls, and nothing reaches the upstream; calls that need no approval
// still run.
func TestApprovalRequiredWithoutElicitation(t *testing.T) {
	t.Parallel()
	for _, proto := range []string{protoLegacy, protoMRTR} {
		srv, up := policyGateway(t, writesPolicy)
		cs := connectPolicyClient(t, srv, proto, nil, nil)
		_, resp := callRun(t, cs, "codemode_run", map[string]any{"code": `import { read, write } from "@codemode/servers/store";
await read({});
await Promise.all([write({ key: "a" }), write({ key: "b" })]);
globalThis.__codemode_result__ = "wrote";`})
		d := resp.errorDiag()
		if d == nil || d.Code != "APPROVAL_REQUIRED" || !strings.Contains(d.Message, "2 calls") || !strings.Contains(d.Message, `store/write`) ||
			!strings.Contains(d.Message, `{"key":"b"}`) || d.Hint == "" {
			t.Fatalf("%s: %+v", proto, resp.diags())
		}
		if string(resp.Result) != "null" {
			t.Errorf("%s: result %s", proto, resp.Result)
		}
		if up.count("write") != 0 || up.count("read") != 1 {
			t.Errorf("%s: the upstream saw %q", proto, up.seen())
		}
	}
}

// The input-required exchange by hand: the first call is answered with
// the question and a sealed requestState; the retry with the answer goes
// on; a state altered, or sent with other arguments, is refused.
func TestInputRequiredByHand(t *testing.T) {
	t.Parallel()
	srv, up := policyGateway(t, writesPolicy)
	// The middleware that would answer by itself is off: the test is the client.
	cs := connectPolicyClient(t, srv, protoMRTR, &elicitor{answer: accept(false)},
		&mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}})
	ctx := context.Background()
	args := map[string]any{"code": `import { read, write } from "@codemode/servers/store";
const r = await read({});
const w = await write({ key: "k" });
globalThis.__codemode_result__ = [r.n, w.n];`}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "codemode_run", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	if !res.NeedsInput() || len(res.InputRequests) != 1 || res.RequestState == "" || len(res.Content) != 0 {
		t.Fatalf("first call: %+v", res)
	}
	var key string
	for k, ir := range res.InputRequests {
		key = k
		if _, ok := ir.(*mcp.ElicitParams); !ok {
			t.Fatalf("input request %T", ir)
		}
	}
	if up.count("read") != 1 || up.count("write") != 0 {
		t.Fatalf("after the first call the upstream saw %q", up.seen())
	}
	answer := mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approveAll": false}}}

	// Tampered state, or the state with other arguments: refused, nothing sent.
	for name, p := range map[string]*mcp.CallToolParams{
		"altered":    {Name: "codemode_run", Arguments: args, InputResponses: answer, RequestState: res.RequestState[:len(res.RequestState)-4] + "AAAA"},
		"other args": {Name: "codemode_run", Arguments: map[string]any{"code": args["code"].(string) + "\n// x"}, InputResponses: answer, RequestState: res.RequestState},
	} {
		r2, err := cs.CallTool(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(r2)
		_, resp := asRun(t, b)
		if d := resp.errorDiag(); d == nil || d.Code != "INVALID_REQUEST" || !strings.Contains(d.Message, "requestState") {
			t.Errorf("%s state: %+v", name, resp.diags())
		}
	}
	if up.count("write") != 0 || up.count("read") != 1 {
		t.Fatalf("refused states reached the upstream: %q", up.seen())
	}

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "codemode_run", Arguments: args, InputResponses: answer, RequestState: res.RequestState})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	_, resp := asRun(t, b)
	if d := resp.errorDiag(); d != nil || !jsonEq(t, string(resp.Result), `[1, 2]`) {
		t.Fatalf("retry: %s", b)
	}
	if up.count("read") != 1 || up.count("write") != 1 {
		t.Errorf("the upstream saw %q", up.seen())
	}
}

// A dry run sends the read-only and auto-approved calls, returns null for
// the others and lists them in plan, redacted; nothing is asked.
func TestDryRun(t *testing.T) {
	t.Parallel()
	srv, up := policyGateway(t, config.Server{Approval: config.ApprovalWrites, AutoApprove: []string{"write"}}, "run", "search-execute", "files", "emceepee")
	e := &elicitor{answer: accept(false)}
	cs := connectPolicyClient(t, srv, protoLegacy, e, nil)
	for _, tc := range []struct{ tool, code string }{
		{"codemode_run", `import { read, write, drop } from "@codemode/servers/store";
const r = await read({});
const w = await write({ key: "w" });
const d = await drop({ key: "gone" });
globalThis.__codemode_result__ = { r: r.tool, w: w.tool, d };`},
		{"execute", `async () => { const r = await store.read({}); const w = await store.write({ key: "w" }); const d = await store.drop({ key: "gone" }); return { r: r.tool, w: w.tool, d }; }`},
		{"executeToolCode", `const r = await store.read({}); const w = await store.write({ key: "w" }); const d = await store.drop({ key: "gone" }); return { r: r.tool, w: w.tool, d };`},
	} {
		before := len(up.seen())
		res, resp := callRun(t, cs, tc.tool, map[string]any{"code": tc.code, "dryRun": true})
		if d := resp.errorDiag(); d != nil {
			t.Fatalf("%s: %+v", tc.tool, *d)
		}
		if !jsonEq(t, string(resp.Result), `{"r":"read","w":"write","d":null}`) {
			t.Errorf("%s: result %s", tc.tool, resp.Result)
		}
		var out struct {
			Plan []run.PlannedCall `json:"plan"`
		}
		json.Unmarshal(res.StructuredContent, &out)
		if len(out.Plan) != 1 || out.Plan[0].ToolName != "drop" || out.Plan[0].ServerID != "store" || mustJSON(out.Plan[0].Arguments) != `{"key":"gone"}` {
			t.Errorf("%s: plan %s", tc.tool, res.StructuredContent)
		}
		if got := strings.Join(approvals(t, res), " "); got != "read=auto write=auto drop=dry-run" {
			t.Errorf("%s: approvals %q", tc.tool, got)
		}
		if seen := up.seen()[before:]; len(seen) != 2 || up.count("drop") != 0 {
			t.Errorf("%s: the upstream saw %q", tc.tool, seen)
		}
	}
	// emceepee's mcp.callTool gets null, and its result has the plan.
	res := decode[toolResult](t, mustCall(t, cs, "codemode_execute", map[string]any{"dryRun": true,
		"code": `const d = await mcp.callTool("store", "drop", { key: "x" }); return d;`}))
	var em struct {
		Success bool              `json:"success"`
		Result  json.RawMessage   `json:"result"`
		Plan    []run.PlannedCall `json:"plan"`
	}
	json.Unmarshal(res.StructuredContent, &em)
	if !em.Success || string(em.Result) != "null" || len(em.Plan) != 1 || em.Plan[0].ToolName != "drop" {
		t.Errorf("emceepee dry run: %s", res.StructuredContent)
	}
	if len(e.requests()) != 0 || up.count("drop") != 0 {
		t.Errorf("a dry run asked %d times / sent drop %d times", len(e.requests()), up.count("drop"))
	}
	// Not a dry run: no plan at all.
	res2, _ := callRun(t, cs, "codemode_run", map[string]any{"code": `import { read } from "@codemode/servers/store"; await read({});`})
	if strings.Contains(string(res2.StructuredContent), `"plan"`) {
		t.Errorf("a run that is not dry has a plan: %s", res2.StructuredContent)
	}
}

func mustCall(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) json.RawMessage {
	t.Helper()
	ctx := testutil.Context(t)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	return b
}

// The policy is shown to the model: @requiresApproval in the declarations,
// requiresApproval in discovery, __meta__ and the surfaces' catalogs, and
// the description says what it means; denied tools are nowhere.
func TestPolicyShownToTheModel(t *testing.T) {
	t.Parallel()
	srv, _ := policyGateway(t, config.Server{Approval: config.ApprovalDestructive, DenyTools: []string{"secret_*"}}, "run", "search-execute", "files", "emceepee")
	cs := connectPolicyClient(t, srv, protoLegacy, nil, nil)
	ctx := context.Background()
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range lt.Tools {
		if strings.Contains(tool.Description, "secret_admin") {
			t.Errorf("%s's description names a denied tool", tool.Name)
		}
		if tool.Name == "codemode_run" {
			if !strings.Contains(tool.Description, "@requiresApproval */\nexport function drop") && !strings.Contains(tool.Description, "@requiresApproval") {
				t.Errorf("the declarations do not mark drop: %s", tool.Description)
			}
			if !strings.Contains(tool.Description, "ApprovalDeniedError") {
				t.Errorf("the description does not say what a denial throws")
			}
		}
	}
	_, resp := callRun(t, cs, "codemode_run", map[string]any{"code": `import { listTools, getTool, searchTools } from "@codemode/discovery";
import { __meta__ } from "@codemode/servers/store";
const list = await listTools("store", { detail: "name" });
globalThis.__codemode_result__ = {
  list: list.map((t) => t.toolName + (t.requiresApproval ? "!" : "")).join(","),
  get: (await getTool("store", "drop")).requiresApproval,
  search: (await searchTools("secret admin drop")).results.map((r) => r.toolName).join(","),
  meta: __meta__.tools.map((t) => t.toolName + (t.requiresApproval ? "!" : "")).join(","),
};`})
	if !jsonEq(t, string(resp.Result), `{"list":"drop!,read,write","get":true,"search":"drop","meta":"drop!,read,write"}`) {
		t.Errorf("discovery: %s %+v", resp.Result, resp.diags())
	}
	list := decode[toolResult](t, mustCall(t, cs, "listToolFiles", map[string]any{}))
	if !strings.Contains(list.text(), "drop.d.ts") || strings.Contains(list.text(), "secret") {
		t.Errorf("listToolFiles: %s", list.text())
	}
	files := decode[toolResult](t, mustCall(t, cs, "readToolFile", map[string]any{"fileName": "servers/store/drop.d.ts"}))
	if !strings.Contains(files.text(), "@requiresApproval") || strings.Contains(files.text(), "secret_admin") {
		t.Errorf("readToolFile: %s", files.text())
	}
	_, keys := callRun(t, cs, "execute", map[string]any{"code": `async () => Object.keys(store).sort().join(",") + "|" + ("secret_admin" in store)`})
	if string(keys.Result) != `"__meta__,drop,read,write|false"` {
		t.Errorf("the server global: %s", keys.Result)
	}
	search := decode[toolResult](t, mustCall(t, cs, "search", map[string]any{"code": `async (c) => Object.entries(c.operations.store).map(([k, v]) => k + (v.requiresApproval ? "!" : ""))`}))
	if !strings.Contains(string(search.StructuredContent), `"drop!"`) || strings.Contains(string(search.StructuredContent), "secret") {
		t.Errorf("search: %s", search.StructuredContent)
	}
	em := decode[toolResult](t, mustCall(t, cs, "codemode_search", map[string]any{"query": "."}))
	if !strings.Contains(string(em.StructuredContent), `"requiresApproval":true`) || strings.Contains(string(em.StructuredContent), "secret") {
		t.Errorf("codemode_search: %s", em.StructuredContent)
	}
}

// When the run tool's description has only the index, a server's
// declarations come with the first response that uses it; a call answered
// with an approval question is not that response: they come with the
// answer to the retry.
func TestDeclarationsSurviveAnInputRequiredRoundTrip(t *testing.T) {
	t.Parallel()
	srv, _ := policyGatewayCfg(t, writesPolicy, func(c *config.Config) { c.Serve.TypesBudgetTokens = 1 })
	cs := connectPolicyClient(t, srv, protoMRTR, &elicitor{answer: accept(false)}, nil)
	res, resp := callRun(t, cs, "codemode_run", map[string]any{"code": `import { write } from "@codemode/servers/store"; await write({ key: "k" });`})
	if d := resp.errorDiag(); d != nil {
		t.Fatalf("%+v", *d)
	}
	if !strings.Contains(res.text(), `declare module "@codemode/servers/store"`) {
		t.Errorf("the declarations did not come with the answer: %s", res.text())
	}
}
