package serve_test

// Defects found by trying the surfaces as a new user would (issue #10,
// "Found in the same trial"), each checked on the surface where it showed.

import (
	"testing"

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
