package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/normalize"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/transpile"
)

// The search-execute surface: the search + execute pair of Cloudflare's API
// server and Thoughtbox. `search` hands an arrow function the whole catalog
// as data, read-only; `execute` runs code with every server as a module and
// as a global object.

const (
	catalogModule = "@codemode/surface/catalog"
	// searchTimeoutMs and executeTimeoutMs are the surface's documented
	// timeouts, within the configured maxima.
	searchTimeoutMs  = 10_000
	executeTimeoutMs = 30_000
)

var (
	searchInput  = codeInput("async (catalog) => ...")
	executeInput = execInput("async () => ...")
)

type searchExecuteSurface struct{ s *Server }

func newSearchExecuteSurface(s *Server) Surface { return searchExecuteSurface{s} }

func (se searchExecuteSurface) Tools(servers []*catalog.Server) []Tool {
	// The examples use what is connected (see exampleCall).
	searchExample := "Object.keys(catalog.operations)"
	if len(servers) > 0 {
		searchExample = "Object.keys(catalog.operations[" + strconv.Quote(servers[0].ID) + "])"
	}
	return []Tool{
		searchInput.tool(&mcp.Tool{
			Name:  "search",
			Title: "Search the tool catalog with code",
			Description: `Run an async arrow function that receives the catalog and returns what it likes, e.g. async (catalog) => ` + searchExample + `.
catalog = {servers: [{serverId, serverName, version?, description?}], operations: {[serverId]: {[exportName]: {toolName, description, inputSchema, outputSchema?, annotations?}}}, prompts, resources, resourceTemplates: {[serverId]: [...]}}, also as spec; spec.paths["/<serverId>/<exportName>"].post is each operation in OpenAPI form. Read-only, 10 s timeout. Servers: ` + orNone(serverIDs(servers)) + ".",
			Annotations: &mcp.ToolAnnotations{Title: "Search", ReadOnlyHint: true},
		}, se.search),
		executeInput.tool(&mcp.Tool{
			Name:  "execute",
			Title: "Execute code against MCP tools",
			Description: `Run an async arrow function, e.g. async () => { const r = await ` + exampleCall(servers) + `; return r }, and get {logs, result, diagnostics, toolTrace}.
Each server is a global object named by its id ("-" becomes "_"), also available as await import("@codemode/servers/<serverId>"); its tools are async functions named as in search's operations (a spec.paths path: await codemode.request({path, body}), result in .result). ` + unwrapDoc + "\n" + errorsDoc + "\n" + policyDoc(se.s.cfg) + sandboxDoc + " 30 s timeout.",
			Annotations: &mcp.ToolAnnotations{Title: "Execute", OpenWorldHint: ptr(true)},
		}, se.execute),
	}
}

// searchForm runs search's code as an expression (or a function body)
// whose value, a function, the catalog module's search() calls with the
// catalog. The catalog is also bound as the free variables `catalog` (as
// Thoughtbox does) and `spec` (as Cloudflare's API server does).
var searchForm = &normalize.Options{
	Mode:    normalize.Call,
	Imports: fmt.Sprintf("import { search as __codemode_search, catalog as __codemode_catalog } from %q;", catalogModule),
	Bind:    "const catalog = await __codemode_catalog(), spec = catalog;",
	Finish:  "((f) => __codemode_search(f, catalog))",
	// A function of the catalog, also written as a statement (`;`).
	FunctionOnly: true,
}

func (se searchExecuteSurface) search(ctx context.Context, _ *mcp.CallToolRequest, in codeArgs) (*mcp.CallToolResult, error) {
	resp := se.s.runner.RunWith(ctx, run.Request{Code: in.Code, Limits: config.Limits{TimeoutMs: searchTimeoutMs}}, run.Extra{
		Normalize:   searchForm,
		ReadOnly:    true,
		Modules:     se.searchModules,
		Ops:         se.catalogOps(),
		LimitParams: fixedLimits,
	})
	notAFunction(ctx, in.Code, resp)
	ids := se.s.globalIDs()
	hintUndefined(resp, readOnlyFix("search", "execute", func(name string) bool {
		_, server := ids[name]
		return server || name == "codemode" || name == "cloudflare"
	}))
	return responseResult(resp, ""), nil
}

// notAFunction rewords the syntax error of search code that is not one
// function expression: esbuild's own message is about the wrapper the code
// runs in (`Expected ")"`, "replace it with ..."), when what is wrong is the
// shape of the code.
func notAFunction(ctx context.Context, code string, resp *run.Response) {
	for i, d := range resp.Diagnostics {
		if d.Code != diag.SyntaxError {
			continue
		}
		const fix = "pass one function of the catalog, e.g. async (catalog) => Object.keys(catalog.operations); statements go inside its body { ... }"
		if line, col, ok := transpile.TrailingCode(ctx, code); ok {
			// esbuild's message ends with a frame of the line at fault.
			frame := ""
			if i := strings.IndexByte(d.Message, '\n'); i >= 0 {
				frame = d.Message[i:]
			}
			d.Message = fmt.Sprintf("search expects a function, like async (catalog) => ...; the code goes on after an expression, at %d:%d", line, col) + frame
			d.Hint = fix
		} else if _, diags := transpile.Module(ctx, code, transpile.Body()); len(diags) == 0 {
			d.Message = "search expects a function, like async (catalog) => ...; the code is statements"
			d.Hint = fix
		} else {
			return
		}
		resp.Diagnostics[i] = d
		return
	}
}

func (se searchExecuteSurface) execute(ctx context.Context, _ *mcp.CallToolRequest, in execArgs) (*mcp.CallToolResult, error) {
	// An arrow function to call, the surface's documented form, or a
	// function body (see normalize.Call).
	resp := se.s.runner.RunWith(ctx, run.Request{Code: in.Code, Limits: config.Limits{TimeoutMs: executeTimeoutMs}, DryRun: in.DryRun},
		run.Extra{Normalize: &normalize.Options{Mode: normalize.Call, Imports: interfacesImport(in.Code), Async: se.s.serverGlobals()}, Prelude: []string{globalsModule}, Modules: se.s.globalsModules, Ops: se.s.interfacesOps, LimitParams: fixedLimits})
	se.s.hintServerKeys(ctx, resp, "search shows their operations")
	hintUndefined(resp, se.s.globalsFix(`find tools with await codemode.search("words") and codemode.describe("server.tool")`))
	se.s.missingTools(ctx, resp)
	return responseResult(resp, ""), nil
}

// searchModules serves search's module, the catalog (execute's are the
// server globals, globalsModules): each tool's runs reach their own module
// and host operations only (execute has no use for the catalog, whose
// building asks every server for its resources and prompts).
func (se searchExecuteSurface) searchModules(_ context.Context, _ *run.View, spec string) (string, bool) {
	return catalogSource, spec == catalogModule
}

// catalogOps serves the catalog module's host operation for one run.
// Building the catalog asks every server for its resources and prompts, so
// it is built once per run and counts as one call against maxToolCalls, as
// every call a script makes into the upstreams does.
func (se searchExecuteSurface) catalogOps() func(context.Context, *run.View, string, json.RawMessage) (json.RawMessage, error, bool) {
	var mu sync.Mutex
	var built json.RawMessage
	return func(ctx context.Context, v *run.View, op string, _ json.RawMessage) (json.RawMessage, error, bool) {
		if op != "surface.catalog" {
			return nil, nil, false
		}
		mu.Lock()
		defer mu.Unlock()
		if built == nil {
			if err := v.Charge("catalog()"); err != nil {
				return nil, err, true
			}
			out, err := se.s.catalogData(ctx, v)
			if err != nil {
				return nil, err, true
			}
			built = out
		}
		return built, nil, true
	}
}

// catalogSource is search's module: the catalog as data, and search(),
// which calls the agent's function with it.
const catalogSource = `import { call, classes } from "@codemode/internal";
export const catalog = async () => withPaths(await call("surface.catalog", []));
` + openAPIPathsSource + `
export async function search(f, data) {
  if (typeof f !== "function") {
    throw new classes.CodemodeError("code must be an async arrow function like async (catalog) => ..., but it evaluates to " + (f === null ? "null" : "a value of type " + typeof f),
      { hint: "pass the function itself, e.g. async (catalog) => Object.keys(catalog.operations)" });
  }
  return await f(data);
}
`

// openAPIPathsSource gives the catalog a `paths` property, read only and
// built when first read: the operations in the form of an OpenAPI
// document's paths, which is what Cloudflare's API server hands its search
// code as spec.paths. Each tool is a POST at /<serverId>/<exportName>,
// tagged with its server id; its input schema is the request body (and its
// properties the parameters), its output schema the 200 response's.
// Non-enumerable: Object.keys(catalog) lists the catalog's own data.
const openAPIPathsSource = `function withPaths(c) {
  let paths;
  Object.defineProperty(c, "paths", { enumerable: false, configurable: false, get() {
    if (paths !== undefined) return paths;
    paths = {};
    for (const [serverId, ops] of Object.entries(c.operations ?? {})) {
      for (const [name, op] of Object.entries(ops)) {
        const input = op.inputSchema ?? { type: "object" };
        const required = Array.isArray(input.required) ? input.required : [];
        const parameters = Object.entries(input.properties ?? {}).map(([p, schema]) => ({
          name: p, in: "body", required: required.includes(p), description: schema?.description, schema }));
        const description = op.description ?? "";
        paths["/" + serverId + "/" + name] = { post: {
          operationId: serverId + "." + name,
          summary: description.split("\n")[0].split(/(?<=\.)\s/)[0],
          description,
          tags: [serverId],
          parameters,
          requestBody: { required: true, content: { "application/json": { schema: input } } },
          responses: { "200": { description: "the tool's result", content: { "application/json": { schema: op.outputSchema ?? {} } } } },
          "x-codemode": { serverId, exportName: name, toolName: op.toolName, call: serverId + "." + name + "(input)" },
        } };
      }
    }
    return paths;
  } });
  return c;
}`

type operation struct {
	ToolName     string `json:"toolName"`
	Description  string `json:"description"` // always there: op.description.includes(...) is how agents filter
	InputSchema  any    `json:"inputSchema,omitempty"`
	OutputSchema any    `json:"outputSchema,omitempty"`
	Annotations  any    `json:"annotations,omitempty"`
	// Execution marks a tool that runs as an MCP task (see
	// run.ToolDefinition).
	Execution *run.Execution `json:"execution,omitempty"`
	// RequiresApproval: the gateway asks the user before every call.
	RequiresApproval bool `json:"requiresApproval,omitempty"`
}

type serverEntry struct {
	ServerID    string `json:"serverId"`
	ServerName  string `json:"serverName"`
	Version     string `json:"version,omitempty"`
	Description string `json:"description,omitempty"`
}

// catalogData is the `catalog` argument of search.
func (s *Server) catalogData(ctx context.Context, v *run.View) (json.RawMessage, error) {
	servers, _ := s.reachable(ctx, v.Catalog())
	out := struct {
		Servers           []serverEntry                   `json:"servers"`
		Operations        map[string]map[string]operation `json:"operations"`
		Prompts           map[string]any                  `json:"prompts"`
		Resources         map[string]any                  `json:"resources"`
		ResourceTemplates map[string]any                  `json:"resourceTemplates"`
	}{Servers: []serverEntry{}, Operations: map[string]map[string]operation{}, Prompts: map[string]any{}, Resources: map[string]any{}, ResourceTemplates: map[string]any{}}
	for _, srv := range servers {
		out.Servers = append(out.Servers, serverEntry{ServerID: srv.ID, ServerName: srv.Name, Version: srv.Version(), Description: srv.Snapshot.Instructions})
		ops := map[string]operation{}
		for _, t := range srv.Tools {
			op := operation{ToolName: t.Name, Description: t.Tool.Description, InputSchema: t.Tool.InputSchema, OutputSchema: t.Tool.OutputSchema, RequiresApproval: t.NeedsApproval}
			if t.Tool.Annotations != nil {
				op.Annotations = t.Tool.Annotations
			}
			d := run.Define(t, run.DetailDescription)
			op.Execution = d.Execution
			ops[t.ExportName] = op
		}
		out.Operations[srv.ID] = ops
		// Every server has a list of each kind, [] when it has none (or
		// listing failed): Object.values(catalog.resources).flat() must
		// work.
		out.Prompts[srv.ID], out.Resources[srv.ID], out.ResourceTemplates[srv.ID] = []any{}, []any{}, []any{}
		if s.mgr == nil {
			continue
		}
		caps := srv.Snapshot.Capabilities
		if caps != nil && caps.Prompts != nil {
			if ps, err := s.mgr.ListPrompts(ctx, srv.ID); err == nil && len(ps) > 0 {
				out.Prompts[srv.ID] = ps
			}
		}
		if caps != nil && caps.Resources != nil {
			if rs, err := s.mgr.ListResources(ctx, srv.ID); err == nil && len(rs) > 0 {
				out.Resources[srv.ID] = rs
			}
			if rt, err := s.mgr.ListResourceTemplates(ctx, srv.ID); err == nil && len(rt) > 0 {
				out.ResourceTemplates[srv.ID] = rt
			}
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, &diag.Error{Class: diag.CodemodeError, Message: "the catalog could not be encoded: " + err.Error()}
	}
	return b, nil
}
