package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/run"
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
	s.addTool(&mcp.Tool{
		Name:  "search",
		Title: "Search the tool catalog with code",
		Description: `Run an async arrow function that receives the catalog and returns what it likes, e.g. async (catalog) => Object.keys(catalog.operations.github).
catalog = {servers: [{serverId, serverName, version?, description?}], operations: {[serverId]: {[exportName]: {toolName, description, inputSchema, outputSchema?, annotations?}}}, prompts, resources, resourceTemplates: {[serverId]: [...]}}. Read-only, 10 s timeout. Servers: ` + orNone(ids) + ".",
		InputSchema: codeSchema,
		Annotations: &mcp.ToolAnnotations{Title: "Search", ReadOnlyHint: true},
	}, s.handleSearch)
	s.addTool(&mcp.Tool{
		Name:  "execute",
		Title: "Execute code against MCP tools",
		Description: `Run an async arrow function, e.g. async () => { const r = await github.search_issues({q: "bug"}); return r.total_count }, and get {logs, result, diagnostics, toolTrace}.
Each server is a global object named by its id ("-" becomes "_"), also available as await import("@codemode/servers/<serverId>"); its tools are async functions named as in search's operations. ` + unwrapDoc + "\n" + errorsDoc + "\n" + sandboxDoc + " 30 s timeout.",
		InputSchema: codeSchema,
		Annotations: &mcp.ToolAnnotations{Title: "Execute", OpenWorldHint: ptr(true)},
	}, s.handleExecute)
}

func orNone(ids []string) string {
	if len(ids) == 0 {
		return "none connected"
	}
	return strings.Join(ids, ", ")
}

// codeArg decodes {code: string}.
func codeArg(raw json.RawMessage) (string, *mcp.CallToolResult) {
	var in struct {
		Code *string `json:"code"`
	}
	if json.Unmarshal(raw, &in) != nil || in.Code == nil {
		return "", errorResult(`the arguments must be {"code": "<source>"}`)
	}
	return *in.Code, nil
}

// fixedLimits is run.Extra.LimitParams for tools whose limits the caller
// cannot change: no hint suggests raising one.
var fixedLimits = map[string]string{}

func errorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

func (s *Server) handleSearch(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	code, bad := codeArg(req.Params.Arguments)
	if bad != nil {
		return bad, nil
	}
	resp := s.runner.RunWith(ctx, run.Request{Code: code, Limits: config.Limits{TimeoutMs: searchTimeoutMs}}, run.Extra{
		Transpile:   transpile.Call(fmt.Sprintf("import { catalog as __codemode_catalog } from %q;", catalogModule), "await __codemode_catalog()"),
		ReadOnly:    true,
		Modules:     s.surfaceModules,
		Ops:         s.surfaceOps,
		LimitParams: fixedLimits,
	})
	return responseResult(resp, ""), nil
}

func (s *Server) handleExecute(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	code, bad := codeArg(req.Params.Arguments)
	if bad != nil {
		return bad, nil
	}
	resp := s.runCallOrBody(ctx, code, executeTimeoutMs, run.Extra{Prelude: []string{globalsModule}, Modules: s.surfaceModules, Ops: s.surfaceOps, LimitParams: fixedLimits})
	return responseResult(resp, ""), nil
}

// runCallOrBody runs code as an arrow function to call, the surface's
// documented form, and falls back to a function body with `return` when the
// code is not an expression.
func (s *Server) runCallOrBody(ctx context.Context, code string, timeoutMs int64, x run.Extra) *run.Response {
	req := run.Request{Code: code, Limits: config.Limits{TimeoutMs: timeoutMs}}
	x.Transpile = transpile.Call("", "")
	if _, diags := transpile.Module(code, x.Transpile); len(diags) > 0 {
		x.Transpile = transpile.Body()
	}
	return s.runner.RunWith(ctx, req, x)
}

// surfaceModules serves the modules the non-spec surfaces add.
func (s *Server) surfaceModules(ctx context.Context, v *run.View, spec string) (string, bool) {
	switch spec {
	case catalogModule:
		return `import { call } from "@codemode/internal";
export const catalog = () => call("surface.catalog", []);
`, true
	case globalsModule:
		return globalsSource(ctx, v), true
	case mcpModule:
		return mcpSource, true
	}
	return "", false
}

// globalsSource defines one global object per connected server: the
// server's module namespace, which is frozen and lists its tools.
func globalsSource(ctx context.Context, v *run.View) string {
	servers, _ := v.Catalog().All(ctx)
	var b strings.Builder
	for i, srv := range servers {
		fmt.Fprintf(&b, "import * as s%d from %q;\n", i, run.ServerModulePrefix+srv.ID)
	}
	for i, srv := range servers {
		fmt.Fprintf(&b, "Object.defineProperty(globalThis, %q, { value: s%d, writable: false, enumerable: false, configurable: false });\n", typegen.GlobalName(srv.ID), i)
	}
	return b.String()
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
	servers, _ := v.Catalog().All(ctx)
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
