package serve_test

// In-process tests of the surfaces: the gateway and its upstreams in one
// process over in-memory transports, for what needs no real client.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/serve"
	"github.com/codemode-mcp/codemode/internal/testutil"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// calcServer has one tool, add({a, b}).
func calcServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "1"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	s.AddTool(&mcp.Tool{Name: "add", Description: "a + b", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ A, B float64 }
			json.Unmarshal(req.Params.Arguments, &in)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(in.A + in.B)}}}, nil
		})
	return s
}

// githubDown is the README's github entry with GITHUB_TOKEN unset: it is
// configured but never starts.
func githubDown() config.Server {
	return config.Server{Name: "github", Transport: config.Stdio, Command: "github-mcp-server", Args: []string{"stdio"},
		Unresolved: []string{"GITHUB_TOKEN"}}
}

type inproc struct {
	srv *serve.Server
	cs  *mcp.ClientSession
}

// newInproc serves calc (in memory) and the given extra servers with
// surfaces, and connects a client.
func newInproc(t *testing.T, withCalc bool, extra []config.Server, surfaces ...string) *inproc {
	t.Helper()
	var servers []config.Server
	if withCalc {
		servers = append(servers, config.Server{Name: "calc", Transport: config.Stdio, Command: "in-memory"})
	}
	cfg := testutil.Config(append(servers, extra...)...)
	cfg.Serve.Surfaces = surfaces
	mgr := upstream.New(cfg.Servers, &upstream.Options{Dial: upstream.DialInMemory(map[string]*mcp.Server{"calc": calcServer()}),
		Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { mgr.Close() })
	srv := serve.New(run.New(cfg, catalog.New(mgr), mgr, nil), mgr, &serve.Options{Logger: slog.New(slog.DiscardHandler), WarmupTimeout: warmup})
	return &inproc{srv: srv, cs: connectInMemory(t, srv, "inproc")}
}

// connectInMemory starts srv and returns a client connected to it over
// in-memory transports; both end with the test.
func connectInMemory(tb testing.TB, srv *serve.Server, client string) *mcp.ClientSession {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	srv.Start(ctx)
	ct, st := mcp.NewInMemoryTransports()
	if _, err := srv.MCP().Connect(ctx, st, nil); err != nil {
		tb.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: client, Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool and returns the result as JSON, as the e2e helpers
// decode it.
func (g *inproc) call(t *testing.T, tool string, args any) json.RawMessage {
	t.Helper()
	ctx, cancel := context.WithCancel(testutil.Context(t))
	defer cancel()
	res, err := g.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (g *inproc) descriptions(t *testing.T) map[string]string {
	t.Helper()
	ctx, cancel := context.WithCancel(testutil.Context(t))
	defer cancel()
	res, err := g.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, tool := range res.Tools {
		out[tool.Name] = tool.Description
	}
	return out
}

type jsError struct {
	Name    string `json:"name"`
	Message string `json:"message"`
	Stack   string `json:"stack"`
	Code    string `json:"code"`
	Hint    string `json:"hint"`
}

// codemode_execute reports a failure as emceepee does: {name, message,
// stack} of the JavaScript error, not codemode's diagnostic code and
// rendering.
func TestEmceepeeErrorShape(t *testing.T) {
	t.Parallel()
	g := newInproc(t, true, nil, "emceepee")
	for _, tc := range []struct {
		code                   string
		name, message, atStack string
	}{
		{`throw new Error('boom')`, "Error", "boom", "Error: boom\n    at script."},
		{`mcp.log("x"); throw new TypeError("bad thing")`, "TypeError", "bad thing", "TypeError: bad thing\n    at script."},
		{`await mcp.callTool("calc", "add", { a: "one" })`, "SchemaValidationError", "", "SchemaValidationError: "},
		{`await Promise.reject(new RangeError("far"))`, "RangeError", "far", "RangeError: far"},
		{`throw "plain"`, "Error", "plain", "Error: plain"},
	} {
		var out struct {
			Success bool     `json:"success"`
			Error   *jsError `json:"error"`
		}
		res := decode[toolResult](t, g.call(t, "codemode_execute", map[string]any{"code": tc.code}))
		if err := json.Unmarshal(res.StructuredContent, &out); err != nil || out.Success || out.Error == nil {
			t.Errorf("%s: %v %s", tc.code, err, res.StructuredContent)
			continue
		}
		e := out.Error
		if e.Name != tc.name {
			t.Errorf("%s: error.name = %q, want %q", tc.code, e.Name, tc.name)
		}
		if tc.message != "" && e.Message != tc.message {
			t.Errorf("%s: error.message = %q, want %q", tc.code, e.Message, tc.message)
		}
		if strings.HasPrefix(e.Message, "Uncaught") || strings.HasPrefix(e.Message, e.Name+":") || strings.Contains(e.Message, "hint:") {
			t.Errorf("%s: error.message carries more than the error's own message: %q", tc.code, e.Message)
		}
		if !strings.HasPrefix(e.Stack, tc.atStack) {
			t.Errorf("%s: error.stack = %q, want it to start with %q", tc.code, e.Stack, tc.atStack)
		}
		if e.Hint == "" {
			t.Errorf("%s: the hint was lost: %s", tc.code, res.StructuredContent)
		}
	}
}

// emceepee bounds every mcp.* call of an execution ("Max mcp.* calls per
// execution", configurable): maxToolCalls counts list and resource calls as
// well as tool calls, and the call past it throws SandboxLimitError.
func TestEmceepeeCountsEveryMCPCall(t *testing.T) {
	t.Parallel()
	g := newInproc(t, true, nil, "emceepee")
	code := `let n = 0;
for (let i = 0; i < 150; i++) {
  try { await (i % 2 ? mcp.listServers() : mcp.listTools("calc")); n++; }
  catch (e) { return {n, name: e.name, message: e.message, limit: e.limit}; }
}
return {n};`
	var out struct {
		Success bool `json:"success"`
		Result  struct {
			N       int    `json:"n"`
			Name    string `json:"name"`
			Message string `json:"message"`
			Limit   string `json:"limit"`
		} `json:"result"`
		Stats struct {
			MCPCalls int `json:"mcpCalls"`
		} `json:"stats"`
	}
	res := decode[toolResult](t, g.call(t, "codemode_execute", map[string]any{"code": code}))
	if err := json.Unmarshal(res.StructuredContent, &out); err != nil {
		t.Fatal(err)
	}
	r := out.Result
	if r.N != 100 || r.Name != "SandboxLimitError" || r.Limit != "maxToolCalls" || !strings.Contains(r.Message, "mcp.listTools refused") {
		t.Errorf("150 list calls with the default maxToolCalls (100): %s", res.StructuredContent)
	}
	if out.Stats.MCPCalls != 101 {
		t.Errorf("stats.mcpCalls = %d, want 101 (the refused call included)", out.Stats.MCPCalls)
	}
}

// A configured server that cannot start (here: GITHUB_TOKEN unset) is news
// only for the runs that use it: code that does not touch it gets no
// warning about it, code that does gets a structured error saying why.
func TestUnavailableServerWarnsOnlyWhenUsed(t *testing.T) {
	t.Parallel()
	g := newInproc(t, true, []config.Server{githubDown()}, "run", "search-execute", "files", "emceepee")
	noGithub := func(name string, raw json.RawMessage) string {
		t.Helper()
		_, resp := asRun(t, raw)
		for _, d := range resp.diags() {
			if strings.Contains(d.Message, "github") || strings.Contains(d.Hint, "GITHUB_TOKEN") {
				t.Errorf("%s: a run that does not use github is told about it: %+v", name, d)
			}
		}
		if d := resp.errorDiag(); d != nil {
			t.Errorf("%s: %+v", name, d)
		}
		return string(resp.Result)
	}
	if got := noGithub("execute", g.call(t, "execute", map[string]any{"code": `async () => calc.add({ a: 1, b: 2 })`})); got != `"3"` {
		t.Errorf("execute = %s", got)
	}
	noGithub("executeToolCode", g.call(t, "executeToolCode", map[string]any{"code": `return await calc.add({ a: 1, b: 2 })`}))
	noGithub("search", g.call(t, "search", map[string]any{"code": `async (catalog) => Object.keys(catalog.operations)`}))
	noGithub("run", g.call(t, "codemode_run", map[string]any{"code": `import { add } from "@codemode/servers/calc"; globalThis.__codemode_result__ = await add({ a: 1, b: 2 });`}))

	// emceepee's listServers still shows it, with the reason.
	var ls struct {
		Result []struct{ Name, Status, Error string } `json:"result"`
	}
	res := decode[toolResult](t, g.call(t, "codemode_execute", map[string]any{"code": `return await mcp.listServers()`}))
	if err := json.Unmarshal(res.StructuredContent, &ls); err != nil || len(ls.Result) != 2 || ls.Result[1].Status == "connected" || !strings.Contains(ls.Result[1].Error, "GITHUB_TOKEN") {
		t.Errorf("listServers does not report github as down: %s", res.StructuredContent)
	}

	// Using it: the global exists, and its tools fail with the reason.
	for _, tc := range []struct{ tool, code string }{
		{"execute", `async () => github.search_issues({ q: "bug" })`},
		{"executeToolCode", `return await github.search_issues({ q: "bug" })`},
	} {
		_, resp := asRun(t, g.call(t, tc.tool, map[string]any{"code": tc.code}))
		d := resp.errorDiag()
		if d == nil || d.ErrorClass != "ServerNotFoundError" || !strings.Contains(d.Message, "github") || !strings.Contains(d.Message+d.Hint, "GITHUB_TOKEN") {
			t.Errorf("%s using github: want a ServerNotFoundError naming GITHUB_TOKEN: %+v", tc.tool, resp.diags())
		}
	}
	_, resp := asRun(t, g.call(t, "execute", map[string]any{"code": `async () => { try { await github.search_issues({}) } catch (e) { return [e.name, typeof github, "then" in github] } }`}))
	if string(resp.Result) != `["ServerNotFoundError","object",false]` {
		t.Errorf("catching the failure: %s %+v", resp.Result, resp.diags())
	}
}

// §3.2.3: an unavailable requested capability gives one eager warning, not
// one per layer that noticed.
func TestRunRequestedCapabilityWarnsOnce(t *testing.T) {
	t.Parallel()
	g := newInproc(t, true, []config.Server{githubDown()}, "run")
	_, resp := asRun(t, g.call(t, "codemode_run", map[string]any{"code": `globalThis.__codemode_result__ = 1;`, "requestedCapabilities": []string{"github"}}))
	var about []diagnostic
	for _, d := range resp.diags() {
		if strings.Contains(d.Message, "github") {
			about = append(about, d)
		}
	}
	if len(about) != 1 || about[0].Code != "CAPABILITY_UNAVAILABLE" || about[0].Severity != "warning" {
		t.Errorf("want one CAPABILITY_UNAVAILABLE warning about github, got %+v", about)
	}
}

// Every surface tool checks its arguments against its inputSchema, and
// says which argument is wrong and how to call it.
func TestSurfaceArgumentsValidated(t *testing.T) {
	t.Parallel()
	g := newInproc(t, true, nil, "search-execute", "files", "emceepee")
	for _, tc := range []struct {
		tool string
		args map[string]any
		want []string
	}{
		{"readToolFile", map[string]any{"fileName": "servers/calc.d.ts", "startLine": 0}, []string{`"startLine"`, ">= 1", "fileName"}},
		{"readToolFile", map[string]any{"fileName": "servers/calc.d.ts", "endLine": "2"}, []string{`"endLine"`}},
		{"readToolFile", map[string]any{}, []string{`"fileName"`}},
		{"codemode_search", map[string]any{}, []string{`"query"`, "required"}},
		{"codemode_search", map[string]any{"query": "x", "type": "tool"}, []string{`"type"`, `"tools"`}},
		{"codemode_execute", map[string]any{"code": "return 1", "timeout": 10}, []string{`"timeout"`, "1000"}},
		{"codemode_execute", map[string]any{"code": "return 1", "timeout": 400000}, []string{`"timeout"`, "300000"}},
		{"execute", map[string]any{"code": 1}, []string{`"code"`, "string"}},
		{"search", map[string]any{}, []string{`"code"`}},
		{"executeToolCode", map[string]any{"code": nil}, []string{`"code"`}},
	} {
		res := decode[toolResult](t, g.call(t, tc.tool, tc.args))
		if !res.IsError {
			t.Errorf("%s %v was accepted: %s", tc.tool, tc.args, res.text())
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(res.text(), w) {
				t.Errorf("%s %v: the refusal lacks %s: %s", tc.tool, tc.args, w, res.text())
			}
		}
	}
	// What the schemas allow still works.
	if res := decode[toolResult](t, g.call(t, "readToolFile", map[string]any{"fileName": "servers/calc.d.ts", "startLine": 1, "endLine": 1})); res.IsError {
		t.Errorf("readToolFile startLine 1: %s", res.text())
	}
	if res := decode[toolResult](t, g.call(t, "codemode_search", map[string]any{"query": "add", "type": "tools"})); res.IsError || !strings.Contains(res.text(), `"add"`) {
		t.Errorf("codemode_search: %s", res.text())
	}
}

// search's code is an async arrow function; a value that is not one is a
// diagnostic saying so, not a result.
func TestSearchCodeMustBeAFunction(t *testing.T) {
	t.Parallel()
	g := newInproc(t, true, nil, "search-execute")
	for _, code := range []string{`42`, `({ a: 1 })`, `null`} {
		res, resp := asRun(t, g.call(t, "search", map[string]any{"code": code}))
		d := resp.errorDiag()
		if res.IsError || d == nil || !strings.Contains(d.Message+d.Hint, "async arrow function") || !strings.Contains(d.Message+d.Hint, "async (catalog) =>") {
			t.Errorf("search %s: want a diagnostic saying the code must be an async arrow function: %s %+v", code, resp.Result, resp.diags())
		}
	}
	if got := okRun(t, g.call(t, "search", map[string]any{"code": `async (catalog) => Object.keys(catalog.operations.calc)`})); got != `["add"]` {
		t.Errorf("search with a function = %s", got)
	}
}

// A call refused while the server drains is a JSON-RPC error with a real
// code, not 0.
func TestDrainRefusesWithInternalError(t *testing.T) {
	t.Parallel()
	g := newInproc(t, false, nil, "run")
	ctx, cancel := context.WithCancel(testutil.Context(t))
	defer cancel()
	if err := g.srv.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := g.cs.CallTool(ctx, &mcp.CallToolParams{Name: "codemode_run", Arguments: map[string]any{"code": "1"}})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInternalError || !strings.Contains(werr.Message, "shutting down") {
		t.Fatalf("a call while draining: %v (%#v), want JSON-RPC error %d saying codemode is shutting down", err, werr, jsonrpc.CodeInternalError)
	}
}

// The examples of the descriptions call a tool that exists, or a
// placeholder that reads as one; never a server that is not there.
func TestDescriptionExamplesUseTheCatalog(t *testing.T) {
	t.Parallel()
	d := newInproc(t, true, []config.Server{githubDown()}, "search-execute", "files").descriptions(t)
	for _, name := range []string{"execute", "executeToolCode"} {
		if !strings.Contains(d[name], `calc.add({"a":0,"b":0})`) && !strings.Contains(d[name], "calc.add(") {
			t.Errorf("%s's example does not call calc.add: %s", name, d[name])
		}
	}
	if !strings.Contains(d["search"], `catalog.operations["calc"]`) {
		t.Errorf("search's example does not use calc: %s", d["search"])
	}
	for name, text := range d {
		if strings.Contains(text, "github") || strings.Contains(text, "everything.") {
			t.Errorf("%s's description names a server that is not connected: %s", name, text)
		}
	}

	d = newInproc(t, false, nil, "search-execute", "files").descriptions(t)
	for _, name := range []string{"execute", "executeToolCode"} {
		if !strings.Contains(d[name], "<serverId>.<tool>(") {
			t.Errorf("%s without servers: want a placeholder example: %s", name, d[name])
		}
	}
	if !strings.Contains(d["search"], "Object.keys(catalog.operations)") {
		t.Errorf("search without servers: %s", d["search"])
	}
}

// On the surfaces with servers as global objects, a server object answers
// exactly its tools: an unknown name is undefined (typeof, in, Object.keys
// and optional chaining agree), and calling one fails with a
// ToolNotFoundError diagnostic listing the closest tools (the engine's "not
// a function", rewritten).
func TestGlobalUnknownToolIsToolNotFound(t *testing.T) {
	g := newInproc(t, true, nil, "search-execute", "files")
	for tool, code := range map[string]string{
		"execute":         `async () => [typeof calc.addd, "addd" in calc, Object.keys(calc).includes("addd"), calc.addd?.({}) ?? "none", typeof calc.then, Object.keys(calc).includes("add"), await calc.add({a: 1, b: 2})]`,
		"executeToolCode": `return [typeof calc.addd, "addd" in calc, Object.keys(calc).includes("addd"), calc.addd?.({}) ?? "none", typeof calc.then, Object.keys(calc).includes("add"), await calc.add({a: 1, b: 2})]`,
	} {
		raw := g.call(t, tool, map[string]any{"code": code})
		_, resp := asRun(t, raw)
		if !jsonEq(t, string(resp.Result), `["undefined",false,false,"none","undefined",true,"3"]`) {
			t.Errorf("%s: %s", tool, raw)
		}
	}
	for tool, code := range map[string]string{
		"execute":         "async () => {\n  const r = await calc.addd({a: 1, b: 2});\n  return r;\n}",
		"executeToolCode": "const r = await calc.addd({a: 1, b: 2});\nreturn r;",
	} {
		_, resp := asRun(t, g.call(t, tool, map[string]any{"code": code}))
		d := resp.errorDiag()
		if d == nil || d.ErrorClass != "ToolNotFoundError" || !strings.Contains(d.Message, "calc.addd") || !strings.Contains(d.Hint, `did you mean "add"`) {
			t.Errorf("%s: want a ToolNotFoundError suggesting add: %+v", tool, d)
		}
	}
}
