package serve_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// A surface's internal modules (and the host operations behind them) are
// reachable only from that surface's own runs: search, which is read-only,
// cannot get emceepee's mcp module to read resources, and execute cannot
// use it to make calls that maxToolCalls does not see.
func TestSurfaceModulesStayWithTheirSurface(t *testing.T) {
	t.Parallel()
	g := newInproc(t, true, nil, "run", "search-execute", "files", "emceepee")
	modules := []string{"@codemode/surface/mcp", "@codemode/surface/catalog", "@codemode/surface/globals"}
	own := map[string]string{"search": "@codemode/surface/catalog", "execute": "@codemode/surface/globals",
		"executeToolCode": "@codemode/surface/globals", "codemode_execute": "@codemode/surface/mcp"}
	for _, tool := range []string{"codemode_run", "search", "execute", "executeToolCode", "codemode_execute"} {
		for _, m := range modules {
			// The script reports whether the import worked, so that it
			// runs the same way in every surface's form.
			probe := `let r; try { await import(` + jsonString(m) + `); r = "imported"; } catch (e) { r = "refused: " + e.message; }`
			var code string
			switch tool {
			case "codemode_run":
				code = probe + ` globalThis.__codemode_result__ = r;`
			case "search":
				code = `async (catalog) => { ` + probe + ` return r; }`
			case "execute":
				code = `async () => { ` + probe + ` return r; }`
			default:
				code = probe + ` return r;`
			}
			raw := g.call(t, tool, map[string]any{"code": code})
			got := importOutcome(t, tool, raw)
			if m == own[tool] {
				if got != "imported" {
					t.Errorf("%s cannot import its own module %s: %s", tool, m, got)
				}
				continue
			}
			if got == "imported" || !strings.Contains(got, "no module") {
				t.Errorf("%s imported %s, another surface's module: %s", tool, m, got)
			}
		}
	}
}

// importOutcome is the string a probe script returned, from a run
// response or from codemode_execute's.
func importOutcome(t *testing.T, tool string, raw json.RawMessage) string {
	t.Helper()
	if tool == "codemode_execute" {
		var out struct {
			Result string `json:"result"`
		}
		res := decode[toolResult](t, raw)
		if err := json.Unmarshal(res.StructuredContent, &out); err != nil {
			t.Fatalf("%s: %v: %s", tool, err, raw)
		}
		return out.Result
	}
	_, resp := asRun(t, raw)
	var s string
	if err := json.Unmarshal(resp.Result, &s); err != nil {
		t.Fatalf("%s: result %s: %s", tool, resp.Result, raw)
	}
	return s
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
