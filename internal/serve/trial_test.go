package serve_test

// Defects found by trying the surfaces as a new user would (issue #10,
// "Found in the same trial"), each checked on the surface where it showed.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/codemode-mcp/codemode/internal/buildinfo"
	"github.com/codemode-mcp/codemode/internal/config"
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
	if v := g.cs.InitializeResult().ServerInfo.Version; v != buildinfo.Version() || v == "" || v == "dev" {
		t.Errorf("serverInfo.version = %q, want %q", v, buildinfo.Version())
	}
}
