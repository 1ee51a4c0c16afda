package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/builtin/thoughtbox"
	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/normalize"
	"github.com/codemode-mcp/codemode/internal/run"
)

// The thoughtbox surface: Thoughtbox's own pair of tools over its tb SDK
// (the thoughtbox built-in server, package builtin/thoughtbox).
// thoughtbox_search hands an arrow function the catalog of tb operations,
// catalog.operations.<module>.<operation>, read-only; thoughtbox_execute
// runs an arrow function with `tb` in scope, whose methods resolve to their
// results unwrapped.

const (
	tbCatalogModule = "@codemode/surface/thoughtbox-catalog"
	tbSDKModule     = "@codemode/surface/tb"
	tbCatalogOp     = "surface.thoughtbox.catalog"
)

var (
	tbSearchInput  = codeInput("async (catalog) => catalog.operations.session")
	tbExecuteInput = execInput("async () => tb.session.list({ limit: 5 })")
)

type thoughtboxSurface struct{ s *Server }

func newThoughtboxSurface(s *Server) Surface { return thoughtboxSurface{s} }

func (ts thoughtboxSurface) Instructions() string {
	return "With thoughtbox_execute, record reasoning with tb.thought(...) and keep a knowledge graph with tb.knowledge; thoughtbox_search lists the operations."
}

func (ts thoughtboxSurface) Tools([]*catalog.Server) []Tool {
	return []Tool{
		tbSearchInput.tool(&mcp.Tool{
			Name:  "thoughtbox_search",
			Title: "Discover Thoughtbox operations",
			Description: `Read-only. 10-second timeout. Write an arrow function that receives the catalog and returns whatever it wants, e.g. async (catalog) => catalog.operations.session
The catalog is organized by module: catalog.operations.<module>.<operation> = {signature, description, inputSchema, tool, readOnlyHint}, modules thought, session, knowledge. It also exposes prompts, resources, and resourceTemplates.`,
			Annotations: &mcp.ToolAnnotations{Title: "Search Thoughtbox operations", ReadOnlyHint: true},
		}, ts.search),
		tbExecuteInput.tool(&mcp.Tool{
			Name:  "thoughtbox_execute",
			Title: "Run operations with the tb SDK",
			Description: `30-second timeout. Write an async arrow function using the tb SDK, e.g. async () => tb.session.list({ limit: 5 }); you get {logs, result, diagnostics, toolTrace}. tb methods run server-side and return their results directly, unwrapped (no MCP envelope). The current session (the one tb.thought appends to) belongs to this MCP session; a thought with nextThoughtNeeded: false ends it.
` + thoughtbox.SDKSummary() + `addObservation and queryGraph take a single object argument; positional forms fail with "Missing required parameter". Methods with positional parameters (session.get, search, resume, export, analyze, extractLearnings, knowledge.getEntity) also take one object of named arguments.
` + sandboxDoc,
			Annotations: &mcp.ToolAnnotations{Title: "Execute with tb", DestructiveHint: ptr(false), OpenWorldHint: ptr(false)},
		}, ts.execute),
	}
}

// tbSearchForm runs thoughtbox_search's code as the argument of the
// catalog module's search(), as search-execute's search does (the catalog
// also a free variable `catalog`, as Thoughtbox binds it).
var tbSearchForm = &normalize.Options{
	Mode:         normalize.Call,
	Imports:      fmt.Sprintf("import { search as __codemode_search, catalog as __codemode_catalog } from %q;", tbCatalogModule),
	Bind:         "const catalog = await __codemode_catalog();",
	Finish:       "((f) => __codemode_search(f, catalog))",
	FunctionOnly: true,
}

func (ts thoughtboxSurface) search(ctx context.Context, _ *mcp.CallToolRequest, in codeArgs) (*mcp.CallToolResult, error) {
	resp := ts.s.runner.RunWith(ctx, run.Request{Code: in.Code, Limits: config.Limits{TimeoutMs: searchTimeoutMs}}, run.Extra{
		Normalize:   tbSearchForm,
		ReadOnly:    true,
		Modules:     ts.modules,
		Ops:         ts.ops,
		LimitParams: fixedLimits,
	})
	hintUndefined(resp, readOnlyFix("thoughtbox_search", "thoughtbox_execute", func(name string) bool { return name == "tb" }))
	return responseResult(resp, ""), nil
}

func (ts thoughtboxSurface) execute(ctx context.Context, _ *mcp.CallToolRequest, in execArgs) (*mcp.CallToolResult, error) {
	resp := ts.s.runner.RunWith(ctx, run.Request{Code: in.Code, Limits: config.Limits{TimeoutMs: executeTimeoutMs}, DryRun: in.DryRun},
		run.Extra{Normalize: &normalize.Options{Mode: normalize.Call, Async: []string{"tb"}}, Prelude: []string{tbSDKModule}, Modules: ts.modules, Ops: ts.ops, LimitParams: fixedLimits})
	unknownSDK(ctx, resp)
	hintUndefined(resp, func(name string) string {
		switch {
		case searchNames[name]:
			return name + " is thoughtbox_search's: find operations there, then call tb.<module>.<operation>(...) here"
		case toolObjects[name] || ts.s.globalIDs()[name] != "":
			return "thoughtbox_execute binds only tb, Thoughtbox's SDK (tb.thought, tb.session, tb.knowledge, ...)"
		}
		return ""
	})
	return responseResult(resp, ""), nil
}

// unknownSDK explains the failure of a call of a method the tb SDK does not
// have (the engine says "not a function", or "cannot read property of
// undefined" for a module it lacks): Thoughtbox's other modules (theseus,
// ulysses, notebook, hub, vars) or a misspelt method.
func unknownSDK(ctx context.Context, resp *run.Response) {
	known := map[string]bool{}
	var names []string
	for _, o := range thoughtbox.Operations {
		name := "tb." + o.Module + "." + o.Method
		if o.Module == o.Method {
			name = "tb." + o.Method
		}
		known[name], known["tb."+o.Module] = true, true
		names = append(names, name)
	}
	for i, d := range resp.Diagnostics {
		if d.Code != diag.UncaughtException || !strings.HasSuffix(d.Message, "not a function") && !strings.Contains(d.Message, "of undefined") {
			continue
		}
		line := pathLine(d.Path)
		for _, c := range resp.Calls(ctx) {
			name := c.Object + "." + c.Member
			if c.Line != line || c.Object != "tb" && !strings.HasPrefix(c.Object, "tb.") || known[name] {
				continue
			}
			missing := name
			if !known[c.Object] && c.Object != "tb" {
				missing = c.Object
			}
			resp.Diagnostics[i].Hint = missing + " is not part of this tb SDK, which has " + strings.Join(names, ", ") + " (thoughtbox_search lists them with their signatures)"
			break
		}
	}
}

func (ts thoughtboxSurface) modules(_ context.Context, _ *run.View, spec string) (string, bool) {
	switch spec {
	case tbCatalogModule:
		return tbCatalogSource, true
	case tbSDKModule:
		return thoughtbox.SDKSource(), true
	}
	return "", false
}

func (ts thoughtboxSurface) ops(_ context.Context, _ *run.View, op string, _ json.RawMessage) (json.RawMessage, error, bool) {
	if op != tbCatalogOp {
		return nil, nil, false
	}
	b, err := json.Marshal(map[string]any{
		"operations": thoughtbox.CatalogOperations(),
		// The built-in offers no prompts or resources; the keys are there
		// so that code written for Thoughtbox's catalog reads them as empty.
		"prompts": []any{}, "resources": []any{}, "resourceTemplates": []any{},
	})
	if err != nil {
		return nil, &diag.Error{Class: diag.CodemodeError, Message: "the catalog could not be encoded: " + err.Error()}, true
	}
	return b, nil, true
}

// tbCatalogSource serves the catalog; each operation also answers, not
// enumerated, to the name Thoughtbox's own catalog gives it
// (catalog.operations.session.session_list, knowledge_create_entity).
const tbCatalogSource = `import { call, classes } from "@codemode/internal";
export const catalog = async () => {
  const c = await call("` + tbCatalogOp + `", []);
  for (const [mod, ops] of Object.entries(c.operations)) {
    for (const [name, op] of Object.entries(ops)) {
      const alias = mod + "_" + name.replace(/[A-Z]/g, (m) => "_" + m.toLowerCase());
      if (name !== mod && !(alias in ops)) Object.defineProperty(ops, alias, { value: op, enumerable: false });
    }
  }
  return c;
};
export async function search(f, data) {
  if (typeof f !== "function") {
    throw new classes.CodemodeError("code must be an async arrow function like async (catalog) => ..., but it evaluates to " + (f === null ? "null" : "a value of type " + typeof f),
      { hint: "pass the function itself, e.g. async (catalog) => catalog.operations.session" });
  }
  return await f(data);
}
`
