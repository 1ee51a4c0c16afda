package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/schema"
	"github.com/codemode-mcp/codemode/internal/transpile"
	"github.com/codemode-mcp/codemode/internal/typegen"
)

// The search + execute pair of Cloudflare's API server and Thoughtbox:
// `search` hands an arrow function the whole catalog as data, read-only;
// `execute` runs code with every server as a module and as a global object.

const (
	catalogModule = "@codemode/surface/catalog"
	globalsModule = "@codemode/surface/globals"
	// searchTimeoutMs and executeTimeoutMs are the surface's documented
	// timeouts, within the configured maxima.
	searchTimeoutMs  = 10_000
	executeTimeoutMs = 30_000
)

var codeSchema = json.RawMessage(`{"type":"object","properties":{"code":{"type":"string"}},"required":["code"]}`)

func (s *Server) registerSearchExecute(servers []*catalog.Server) {
	ids := make([]string, 0, len(servers))
	for _, srv := range servers {
		ids = append(ids, srv.ID)
	}
	// The examples use what is connected (see exampleCall).
	searchExample := "Object.keys(catalog.operations)"
	if len(servers) > 0 {
		searchExample = "Object.keys(catalog.operations[" + strconv.Quote(servers[0].ID) + "])"
	}
	s.addTool(&mcp.Tool{
		Name:  "search",
		Title: "Search the tool catalog with code",
		Description: `Run an async arrow function that receives the catalog and returns what it likes, e.g. async (catalog) => ` + searchExample + `.
catalog = {servers: [{serverId, serverName, version?, description?}], operations: {[serverId]: {[exportName]: {toolName, description, inputSchema, outputSchema?, annotations?}}}, prompts, resources, resourceTemplates: {[serverId]: [...]}}. Read-only, 10 s timeout. Servers: ` + orNone(ids) + ".",
		InputSchema: codeSchema,
		Annotations: &mcp.ToolAnnotations{Title: "Search", ReadOnlyHint: true},
	}, checked("search", codeSchema, codeUsage("async (catalog) => ..."), s.handleSearch))
	s.addTool(&mcp.Tool{
		Name:  "execute",
		Title: "Execute code against MCP tools",
		Description: `Run an async arrow function, e.g. async () => { const r = await ` + exampleCall(servers) + `; return r }, and get {logs, result, diagnostics, toolTrace}.
Each server is a global object named by its id ("-" becomes "_"), also available as await import("@codemode/servers/<serverId>"); its tools are async functions named as in search's operations. ` + unwrapDoc + "\n" + errorsDoc + "\n" + sandboxDoc + " 30 s timeout.",
		InputSchema: codeSchema,
		Annotations: &mcp.ToolAnnotations{Title: "Execute", OpenWorldHint: ptr(true)},
	}, checked("execute", codeSchema, codeUsage("async () => ..."), s.handleExecute))
}

// exampleCall is a call of a connected server's tool as its global object
// names it, for the examples of the descriptions: a model copies examples,
// and one that names a server that is not there costs it a failed run. It
// prefers a read-only tool whose smallest valid input is short; failing
// that, the first tool, its input elided. Without any tool it is a
// placeholder that reads as one.
func exampleCall(servers []*catalog.Server) string {
	var first *catalog.Server
	for _, srv := range servers {
		if len(srv.Tools) > 0 {
			first = srv
			break
		}
	}
	if first == nil {
		return "<serverId>.<tool>({ ... })"
	}
	name := typegen.GlobalName(first.ID) + "."
	tools := first.Tools[:min(len(first.Tools), 20)]
	for _, readOnly := range []bool{true, false} {
		for _, t := range tools {
			if readOnly && (t.Tool.Annotations == nil || !t.Tool.Annotations.ReadOnlyHint) {
				continue
			}
			b, err := json.Marshal(schema.Example(t.Tool.InputSchema))
			if err == nil && len(b) <= 40 && !bytes.Equal(b, []byte("null")) {
				return name + t.ExportName + "(" + string(b) + ")"
			}
		}
	}
	return name + first.Tools[0].ExportName + "({ ... })"
}

func orNone(ids []string) string {
	if len(ids) == 0 {
		return "none connected"
	}
	return strings.Join(ids, ", ")
}

// codeArg decodes {code: string}.
func codeArg(raw json.RawMessage) string {
	var in struct {
		Code string `json:"code"`
	}
	json.Unmarshal(raw, &in) // checked() has validated it against codeSchema
	return in.Code
}

// fixedLimits is run.Extra.LimitParams for tools whose limits the caller
// cannot change: no hint suggests raising one.
var fixedLimits = map[string]string{}

// codeUsage is the shape of a good call of a {code} tool, for refusals.
func codeUsage(example string) string {
	return `{"code": "` + example + `"}`
}

func errorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// searchTranspile runs search's code as an expression whose value, a
// function, the catalog module's search() calls with the catalog. It is
// transpile.Call with a check: any other value is refused with the form
// the code must take, rather than returned as the result.
var searchTranspile = &transpile.Options{
	Prefix: fmt.Sprintf("import { search as __codemode_search } from %q;globalThis.__codemode_result__ = await __codemode_search(", catalogModule),
	Suffix: "\n);\n",
}

func (s *Server) handleSearch(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	code := codeArg(req.Params.Arguments)
	resp := s.runner.RunWith(ctx, run.Request{Code: code, Limits: config.Limits{TimeoutMs: searchTimeoutMs}}, run.Extra{
		Transpile:   searchTranspile,
		ReadOnly:    true,
		Modules:     s.surfaceModules,
		Ops:         s.surfaceOps,
		LimitParams: fixedLimits,
	})
	return responseResult(resp, ""), nil
}

func (s *Server) handleExecute(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	code := codeArg(req.Params.Arguments)
	resp := s.runCallOrBody(ctx, code, executeTimeoutMs, run.Extra{Prelude: []string{globalsModule}, Modules: s.surfaceModules, Ops: s.surfaceOps, LimitParams: fixedLimits})
	return responseResult(resp, ""), nil
}

// runCallOrBody runs code as an arrow function to call, the surface's
// documented form, and falls back to a function body with `return` when the
// code is not an expression.
func (s *Server) runCallOrBody(ctx context.Context, code string, timeoutMs int64, x run.Extra) *run.Response {
	req := run.Request{Code: code, Limits: config.Limits{TimeoutMs: timeoutMs}}
	x.Transpile = transpile.Call("", "")
	if _, diags := transpile.Module(code, x.Transpile); len(diags) > 0 && diags[0].Code == diag.SyntaxError {
		x.Transpile = transpile.Body()
	}
	return s.runner.RunWith(ctx, req, x)
}

// surfaceModules serves the modules the non-spec surfaces add.
func (s *Server) surfaceModules(ctx context.Context, v *run.View, spec string) (string, bool) {
	switch spec {
	case catalogModule:
		return catalogSource, true
	case globalsModule:
		return s.globalsSource(ctx, v), true
	case mcpModule:
		return mcpSource, true
	}
	return "", false
}

// catalogSource is search's module: the catalog as data, and search(),
// which calls the agent's function with it.
const catalogSource = `import { call, classes } from "@codemode/internal";
export const catalog = () => call("surface.catalog", []);
export async function search(f) {
  if (typeof f !== "function") {
    throw new classes.CodemodeError("code must be an async arrow function like async (catalog) => ..., but it evaluates to " + (f === null ? "null" : "a value of type " + typeof f),
      { hint: "pass the function itself, e.g. async (catalog) => Object.keys(catalog.operations)" });
  }
  return await f(await catalog());
}
`

// globalsSource defines one global object per configured server. A
// connected server's object is its module namespace (frozen, listing its
// tools) behind a proxy that turns other names into calls that fail with
// ToolNotFoundError. A server that cannot be reached gets an object whose
// every tool rejects with the reason (ServerNotFoundError, or
// AuthenticationError): a script that uses it learns why, and one that
// does not is not told about it.
func (s *Server) globalsSource(ctx context.Context, v *run.View) string {
	servers, failed := s.reachable(ctx, v.Catalog())
	var b strings.Builder
	b.WriteString(`import { bindTools, freeze } from "@codemode/internal";
const define = (name, value) => Object.defineProperty(globalThis, name, { value, writable: false, enumerable: false, configurable: false });
// route binds a name the way a server module binds a tool, through the same
// host operation: a name that is no tool throws ToolNotFoundError listing
// the tools there are (rather than "not a function"), and a server that is
// down throws why, or works if it is back.
const route = (op, name) => bindTools([op + name], [name])[0];
// Names asked of any object by the language and by common idioms; they stay
// undefined instead of turning into tool calls.
const inert = { __proto__: null, then: 1, toJSON: 1, toString: 1, valueOf: 1, constructor: 1 };
const unreachable = (op) => new Proxy(freeze(Object.create(null)), {
  get: (_, name) => typeof name !== "string" || name in inert ? undefined : route(op, name),
});
const server = (op, ns) => new Proxy(ns, {
  get: (t, name) => typeof name !== "string" || name in t || name in inert ? t[name] : route(op, name),
});
`)
	for i, srv := range servers {
		fmt.Fprintf(&b, "import * as s%d from %q;\n", i, run.ServerModulePrefix+srv.ID)
	}
	for i, srv := range servers {
		fmt.Fprintf(&b, "define(%q, server(%q, s%d));\n", typegen.GlobalName(srv.ID), run.ToolOp(srv.ID, ""), i)
	}
	for _, id := range v.Catalog().IDs() {
		if _, down := failed[id]; down {
			fmt.Fprintf(&b, "define(%q, unreachable(%q));\n", typegen.GlobalName(id), run.ToolOp(id, ""))
		}
	}
	return b.String()
}

// reachable returns the servers a run can use, in configuration order, and
// why the others cannot be used. The servers come from the run's view, so
// that the run sees one state of each (§8.2); which ones are down is asked
// of a view of its own first, because a run's view remembers every server
// that failed it and the run then warns about it (UPSTREAM_UNAVAILABLE):
// listing servers, or giving each a global object, is not using them, and a
// script that never touches a broken server must not hear about it.
func (s *Server) reachable(ctx context.Context, v *catalog.View) ([]*catalog.Server, map[string]error) {
	_, failed := s.cat.View().All(ctx)
	var out []*catalog.Server
	for _, id := range v.IDs() {
		if _, down := failed[id]; down {
			continue
		}
		srv, err := v.Server(ctx, id)
		if err != nil {
			failed[id] = err
			continue
		}
		out = append(out, srv)
	}
	return out, failed
}

// surfaceOps serves the host operations the non-spec surfaces add.
func (s *Server) surfaceOps(ctx context.Context, v *run.View, op string, payload json.RawMessage) (json.RawMessage, error, bool) {
	switch {
	case op == "surface.catalog":
		out, err := s.catalogData(ctx, v)
		return out, err, true
	case strings.HasPrefix(op, "mcp."):
		out, err := s.mcpOp(ctx, v, op, payload)
		return out, err, true
	}
	return nil, nil, false
}

type operation struct {
	ToolName     string `json:"toolName"`
	Description  string `json:"description,omitempty"`
	InputSchema  any    `json:"inputSchema,omitempty"`
	OutputSchema any    `json:"outputSchema,omitempty"`
	Annotations  any    `json:"annotations,omitempty"`
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
			op := operation{ToolName: t.Name, Description: t.Tool.Description, InputSchema: t.Tool.InputSchema, OutputSchema: t.Tool.OutputSchema}
			if t.Tool.Annotations != nil {
				op.Annotations = t.Tool.Annotations
			}
			ops[t.ExportName] = op
		}
		out.Operations[srv.ID] = ops
		if s.mgr == nil {
			continue
		}
		caps := srv.Snapshot.Capabilities
		if caps != nil && caps.Prompts != nil {
			if ps, err := s.mgr.ListPrompts(ctx, srv.ID); err == nil {
				out.Prompts[srv.ID] = ps
			}
		}
		if caps != nil && caps.Resources != nil {
			if rs, err := s.mgr.ListResources(ctx, srv.ID); err == nil {
				out.Resources[srv.ID] = rs
			}
			if rt, err := s.mgr.ListResourceTemplates(ctx, srv.ID); err == nil {
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
