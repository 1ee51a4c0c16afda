package serve_test

// Defects found by trying the surfaces as a new user would (issue #10,
// "Found in the same trial"), each checked on the surface where it showed.

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/codemode-mcp/codemode/internal/buildinfo"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/testutil"
)

// The execute description recommends `await import("@codemode/servers/<id>")`:
// a failed one rejects with the real error class, with its hint and fields.
func TestExecuteDynamicImportErrorClass(t *testing.T) {
	t.Parallel()
	g := newInproc(t, true, []config.Server{githubDown()}, "search-execute")
	code := `async () => {
  const { ServerNotFoundError } = await import("@codemode/errors");
  const out = [];
  for (const id of ["nope", "github"]) {
    try { await import("@codemode/servers/" + id); out.push("imported " + id); }
    catch (e) { out.push([e instanceof ServerNotFoundError, e.name, e.serverId, e.hint.length > 0, Array.isArray(e.available)]); }
  }
  return out;
}`
	_, resp := asRun(t, g.call(t, "execute", map[string]any{"code": code}))
	if got := string(resp.Result); got != `[[true,"ServerNotFoundError","nope",true,true],[true,"ServerNotFoundError","github",true,true]]` {
		t.Errorf("result %s, diagnostics %+v", got, resp.diags())
	}
}

// search takes one function of the catalog. Code that is not one is told
// so, not given esbuild's complaint about the wrapper it runs in
// (`Expected ")"`, "replace it with ...").
func TestSearchExpectsAFunction(t *testing.T) {
	t.Parallel()
	g := newInproc(t, true, nil, "search-execute")
	for _, tc := range []struct{ code, message, path string }{
		{"not a function", "search expects a function, like async (catalog) => ...; the code goes on after an expression, at 1:5\n  1 | not a function", "script.ts:1:5"},
		{"async (catalog) => catalog.servers; console.log(1)", "goes on after an expression, at 1:35", "script.ts:1:35"},
		{"const s = 1;\nconsole.log(s)", "search expects a function, like async (catalog) => ...; the code is statements", ""},
	} {
		_, resp := asRun(t, g.call(t, "search", map[string]any{"code": tc.code}))
		d := resp.errorDiag()
		if d == nil || d.Code != "SYNTAX_ERROR" || !strings.Contains(d.Message, tc.message) || strings.Contains(d.Message, `Expected ")"`) ||
			!strings.Contains(d.Hint, "async (catalog) =>") || tc.path != "" && d.Path != tc.path {
			t.Errorf("%q: %+v", tc.code, resp.diags())
		}
	}
	// A function broken inside keeps esbuild's own message.
	_, resp := asRun(t, g.call(t, "search", map[string]any{"code": "async (catalog) => { catalog.servers.map(( }"}))
	if d := resp.errorDiag(); d == nil || strings.Contains(d.Message, "search expects") {
		t.Errorf("a broken function: %+v", resp.diags())
	}
}

// readToolFile past the end of a file says how long the file is.
func TestReadToolFilePastTheEnd(t *testing.T) {
	t.Parallel()
	g := newInproc(t, true, nil, "files")
	whole := decode[toolResult](t, g.call(t, "readToolFile", map[string]any{"fileName": "servers/calc.d.ts"}))
	n := strings.Count(whole.text(), "\n") + 1
	if whole.IsError || n < 3 {
		t.Fatalf("servers/calc.d.ts: %s", whole.text())
	}
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"fileName": "servers/calc.d.ts", "startLine": 500}, fmt.Sprintf("startLine 500 is past the end of servers/calc.d.ts, which has %d lines", n)},
		{map[string]any{"fileName": "servers/calc.d.ts", "startLine": 500, "endLine": 600}, fmt.Sprintf("startLine 500 is past the end of servers/calc.d.ts, which has %d lines", n)},
		{map[string]any{"fileName": "servers/calc.d.ts", "startLine": 3, "endLine": 2}, fmt.Sprintf("startLine 3 is after endLine 2 (servers/calc.d.ts has %d lines)", n)},
	} {
		res := decode[toolResult](t, g.call(t, "readToolFile", tc.args))
		if !res.IsError || !strings.Contains(res.text(), tc.want) {
			t.Errorf("%v: %s", tc.args, res.Content)
		}
	}
}

// serverInfo carries the build's version, not a placeholder.
func TestServerInfoVersion(t *testing.T) {
	t.Parallel()
	g := newInproc(t, true, nil, "run")
	if v := g.cs.InitializeResult().ServerInfo.Version; v != buildinfo.Version() || v == "" {
		t.Errorf("serverInfo.version = %q, want %q", v, buildinfo.Version())
	}
}

// server-everything's simulate-research-query runs only as an MCP task
// (execution.taskSupport "required"). A script calls it like any tool: the
// call creates the task, waits for it and resolves to the report.
// Discovery and every surface's listing show the task support; nothing
// marks the tool as one a script cannot call.
func TestTaskRequiredToolIsCallable(t *testing.T) {
	t.Parallel()
	g := newInproc(t, false, []config.Server{testutil.Everything(t, "everything")}, "run", "search-execute", "files", "emceepee")
	_, resp := asRun(t, g.call(t, "codemode_run", map[string]any{"code": `import { listTools, getTool } from "@codemode/discovery";
import * as ev from "@codemode/servers/everything";
const tools = await listTools("everything");
const research = await getTool("everything", "simulate-research-query");
const report = await ev.simulate_research_query({ topic: "tide pools" });
globalThis.__codemode_result__ = {
  listed: tools.find((t) => t.toolName === "simulate-research-query"),
  research: { execution: research.execution, unavailable: research.unavailable },
  plain: tools.filter((t) => t.execution).map((t) => t.toolName),
  report,
};`}))
	var got struct {
		Listed struct {
			Execution   struct{ TaskSupport string }
			Unavailable *string
		}
		Research struct {
			Execution   struct{ TaskSupport string }
			Unavailable *string
		}
		Plain  []string
		Report string
	}
	if err := json.Unmarshal(resp.Result, &got); err != nil || resp.errorDiag() != nil {
		t.Fatalf("%s %+v", resp.Result, resp.diags())
	}
	if got.Listed.Execution.TaskSupport != "required" || got.Research.Execution.TaskSupport != "required" ||
		got.Listed.Unavailable != nil || got.Research.Unavailable != nil {
		t.Errorf("discovery: %s", resp.Result)
	}
	if len(got.Plain) != 1 {
		t.Errorf("other tools are marked too: %v", got.Plain)
	}
	if !strings.Contains(got.Report, "Research Report: tide pools") {
		t.Errorf("report: %q", got.Report)
	}
	if len(resp.ToolTrace) != 1 || !resp.ToolTrace[0].OK {
		t.Errorf("trace: %+v", resp.ToolTrace)
	}

	decl := decode[toolResult](t, g.call(t, "readToolFile", map[string]any{"fileName": "servers/everything.d.ts"})).text()
	if i := strings.Index(decl, "simulate_research_query("); i < 0 || strings.Contains(decl, "@unavailable") {
		t.Errorf("the declaration of simulate_research_query:\n%s", decl)
	}
	_, resp = asRun(t, g.call(t, "search", map[string]any{"code": `async (catalog) => catalog.operations.everything.simulate_research_query`}))
	if !strings.Contains(string(resp.Result), `"taskSupport":"required"`) || strings.Contains(string(resp.Result), `"unavailable"`) {
		t.Errorf("search catalog: %s", resp.Result)
	}
	res := decode[toolResult](t, g.call(t, "codemode_execute", map[string]any{"code": `return (await mcp.listTools()).find((t) => t.name === "simulate-research-query")`}))
	if !strings.Contains(string(res.StructuredContent), `"taskSupport":"required"`) {
		t.Errorf("emceepee listTools: %s", res.StructuredContent)
	}
}
