package serve

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/normalize"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/sandbox"
)

// The emceepee surface: emceepee's pair, codemode_search (regex over names
// and descriptions) and codemode_execute, whose code gets an `mcp` global
// with the whole protocol minus server management.

const mcpModule = "@codemode/surface/mcp"

// mcpSource defines the `mcp` global. Server management (add, remove,
// reconnect) is deliberately absent.
const mcpSource = `import { call, freeze } from "@codemode/internal";
const arr = (a) => Array.prototype.slice.call(a);
const mcp = freeze({
  listServers: () => call("mcp.listServers", []),
  listTools: (pattern) => call("mcp.listTools", [pattern]),
  callTool: (server, tool, args) => call("mcp.callTool", [server, tool, args]),
  listResources: (pattern) => call("mcp.listResources", [pattern]),
  readResource: (server, uri) => call("mcp.readResource", [server, uri]),
  listResourceTemplates: (pattern) => call("mcp.listResourceTemplates", [pattern]),
  listPrompts: (pattern) => call("mcp.listPrompts", [pattern]),
  getPrompt: (server, name, args) => call("mcp.getPrompt", [server, name, args]),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, Math.min(Math.max(Number(ms) || 0, 0), 5000))),
  log: function () { console.log.apply(console, arr(arguments)); },
});
Object.defineProperty(globalThis, "mcp", { value: mcp, writable: false, enumerable: false, configurable: false });
`

// emceepeeSearchArgs are codemode_search's arguments.
type emceepeeSearchArgs struct {
	Query          string `json:"query" jsonschema:"regex matched against names and descriptions"`
	Type           string `json:"type,omitempty"`
	Server         string `json:"server,omitempty" jsonschema:"regex on server names"`
	IncludeSchemas bool   `json:"includeSchemas,omitempty"`
}

// emceepeeExecuteArgs are codemode_execute's arguments.
type emceepeeExecuteArgs struct {
	Code    string   `json:"code,omitempty" jsonschema:"JavaScript function body; return the result"`
	Timeout *float64 `json:"timeout,omitempty" jsonschema:"ms"`
	DryRun  bool     `json:"dryRun,omitempty" jsonschema:"only read-only calls run; others return null and are listed in plan"`
	scriptFields
}

var (
	emceepeeSearchInput = newInput[emceepeeSearchArgs](
		`{"query": "<regex>", "type"?: "tools"|"resources"|"prompts"|"servers"|"all", "server"?: "<regex>", "includeSchemas"?: boolean}`,
		func(s *jsonschema.Schema) {
			t := prop(s, "type")
			t.Enum = []any{"tools", "resources", "prompts", "servers", "all"}
			t.Default = json.RawMessage(`"all"`)
			prop(s, "includeSchemas").Default = json.RawMessage(`false`)
		})
	emceepeeExecuteInput = newInput[emceepeeExecuteArgs](`{"code": "<JavaScript function body>", "timeout"?: <ms, 1000 to 300000>, "dryRun"?: boolean}`,
		func(s *jsonschema.Schema) {
			t := prop(s, "timeout")
			t.Minimum, t.Maximum = ptr(1000.0), ptr(300000.0)
			t.Default = json.RawMessage(`30000`)
			codeOrScript(s)
		})
)

type emceepeeSurface struct{ s *Server }

func newEmceepeeSurface(s *Server) Surface { return emceepeeSurface{s} }

func (e emceepeeSurface) Tools(servers []*catalog.Server) []Tool {
	return []Tool{
		emceepeeSearchInput.tool(&mcp.Tool{
			Name:        "codemode_search",
			Title:       "Search MCP capabilities",
			Description: "Search tools, resources, prompts and servers of the connected MCP servers by regex over names and descriptions. Servers: " + orNone(serverIDs(servers)) + ".",
			Annotations: &mcp.ToolAnnotations{Title: "Search capabilities", ReadOnlyHint: true},
		}, e.search),
		emceepeeExecuteInput.tool(&mcp.Tool{
			Name:  "codemode_execute",
			Title: "Execute code with the mcp API",
			Description: `Run JavaScript (a function body; return the result) with an mcp global: listServers(), listTools(pattern?), callTool(server, tool, args) (the MCP result), listResources(pattern?), readResource(server, uri), listResourceTemplates(pattern?), listPrompts(pattern?), getPrompt(server, name, args), sleep(ms ≤ 5000), log(...). Patterns are regexes on server names. At most ` + strconv.FormatInt(e.s.cfg.DefaultLimits.MaxToolCalls, 10) + ` mcp.* calls per execution (sleep and log excepted).
Returns {success, result, error?: {name, message, stack, hint}, logs, stats: {durationMs, mcpCalls}}. ` + policyDoc(e.s.cfg) + sandboxDoc,
			Annotations: &mcp.ToolAnnotations{Title: "Execute", OpenWorldHint: ptr(true)},
		}, e.execute),
	}
}

type searchHit struct {
	Server      string `json:"server"`
	Name        string `json:"name,omitempty"`
	URI         string `json:"uri,omitempty"`
	Description string `json:"description,omitempty"`
	MimeType    string `json:"mimeType,omitempty"`
	InputSchema any    `json:"inputSchema,omitempty"`
	Arguments   any    `json:"arguments,omitempty"`
	// RequiresApproval: the gateway asks the user before every call.
	RequiresApproval bool `json:"requiresApproval,omitempty"`
}

type serverStatus struct {
	Name         string          `json:"name"`
	Status       string          `json:"status"`
	Error        string          `json:"error,omitempty"`
	Capabilities map[string]bool `json:"capabilities"`
}

func (e emceepeeSurface) search(ctx context.Context, _ *mcp.CallToolRequest, in emceepeeSearchArgs) (*mcp.CallToolResult, error) {
	s := e.s
	if in.Type == "" {
		in.Type = "all" // the schema's enum admits no other value
	}
	q, err := compileSearch(in.Query)
	if err != nil {
		return errorResult(err.Error()), nil
	}
	sp, err := compileSearch(in.Server)
	if err != nil {
		return errorResult(err.Error()), nil
	}
	// One budget for the whole search (search_regexp.go).
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(s.searchTime, searchTimeBudget))
	defer cancel()
	b := s.searchBudget(ctx)
	// matches reports a match; once the budget refuses, it reports none,
	// and the search runs out at once.
	matches := func(re *searchRE, texts ...string) bool {
		ok, err := re.match(b, texts...)
		return ok && err == nil
	}
	want := func(t string) bool { return in.Type == "all" || in.Type == t }
	out := map[string]any{}
	view := s.cat.View()
	servers, _ := s.reachable(ctx, view)
	var tools, resources, prompts []searchHit
	for _, srv := range servers {
		if b.Err() != nil {
			break
		}
		if !matches(sp, srv.ID, srv.Name) {
			continue
		}
		if want("tools") {
			for _, t := range srv.Tools {
				if b.Err() != nil {
					break
				}
				if matches(q, t.Name, t.Tool.Description) {
					h := searchHit{Server: srv.ID, Name: t.Name, Description: t.Tool.Description, RequiresApproval: t.NeedsApproval}
					if in.IncludeSchemas {
						h.InputSchema = t.Tool.InputSchema
					}
					tools = append(tools, h)
				}
			}
		}
		caps := srv.Snapshot.Capabilities
		if want("resources") && s.mgr != nil && caps != nil && caps.Resources != nil && b.Err() == nil {
			if rs, err := s.mgr.ListResources(ctx, srv.ID); err == nil {
				for _, r := range rs {
					if matches(q, r.Name, r.URI, r.Description) {
						resources = append(resources, searchHit{Server: srv.ID, Name: r.Name, URI: r.URI, Description: r.Description, MimeType: r.MIMEType})
					}
				}
			}
		}
		if want("prompts") && s.mgr != nil && caps != nil && caps.Prompts != nil && b.Err() == nil {
			if ps, err := s.mgr.ListPrompts(ctx, srv.ID); err == nil {
				for _, p := range ps {
					if matches(q, p.Name, p.Description) {
						prompts = append(prompts, searchHit{Server: srv.ID, Name: p.Name, Description: p.Description, Arguments: p.Arguments})
					}
				}
			}
		}
	}
	if want("tools") {
		out["tools"] = nonNilHits(tools)
	}
	if want("resources") {
		out["resources"] = nonNilHits(resources)
	}
	if want("prompts") {
		out["prompts"] = nonNilHits(prompts)
	}
	if want("servers") && b.Err() == nil {
		var ss []serverStatus
		for _, st := range e.statuses(ctx, view) {
			if matches(sp, st.Name) && matches(q, st.Name) {
				ss = append(ss, st)
			}
		}
		if ss == nil {
			ss = []serverStatus{}
		}
		out["servers"] = ss
	}
	if err := b.Err(); err != nil {
		if errors.Is(err, context.Canceled) {
			return errorResult(stoppedSearch(err, b)), nil // the client is gone
		}
		out["incomplete"] = stoppedSearch(err, b)
	}
	return jsonResult(out), nil
}

func nonNilHits(h []searchHit) []searchHit {
	if h == nil {
		return []searchHit{}
	}
	return h
}

// statuses reports every configured server with its connection state.
func (e emceepeeSurface) statuses(ctx context.Context, view *catalog.View) []serverStatus {
	s := e.s
	servers, failed := s.reachable(ctx, view)
	byID := map[string]*catalog.Server{}
	for _, srv := range servers {
		byID[srv.ID] = srv
	}
	var out []serverStatus
	for _, id := range view.IDs() {
		st := serverStatus{Name: id, Status: "connected", Capabilities: map[string]bool{"tools": false, "resources": false, "prompts": false}}
		if srv := byID[id]; srv != nil {
			if c := srv.Snapshot.Capabilities; c != nil {
				st.Capabilities["tools"] = c.Tools != nil
				st.Capabilities["resources"] = c.Resources != nil
				st.Capabilities["prompts"] = c.Prompts != nil
			}
		} else {
			st.Status = "error"
			if s.mgr != nil && s.mgr.Status(id).RetryAt.After(time.Now()) {
				st.Status = "reconnecting"
			}
			if err := failed[id]; err != nil {
				st.Error = s.runner.Redact(err.Error())
			}
		}
		out = append(out, st)
	}
	return out
}

// emceepeeResult is codemode_execute's response.
type emceepeeResult struct {
	Success bool            `json:"success"`
	Result  json.RawMessage `json:"result"`
	Error   *emceepeeError  `json:"error,omitempty"`
	Logs    []string        `json:"logs"`
	Stats   emceepeeStats   `json:"stats"`
	// Plan: the calls a dry run did not send (codemode's addition).
	Plan []run.PlannedCall `json:"plan,omitzero"`
}

// emceepeeError is a JavaScript error as emceepee reports it: {name,
// message, stack}, plus what codemode knows besides: the diagnostic's code
// and the hint.
type emceepeeError struct {
	Name    string `json:"name"`
	Message string `json:"message"`
	Stack   string `json:"stack"`
	Code    string `json:"code,omitempty"`
	Hint    string `json:"hint,omitempty"`
}

// emceepeeErrorOf turns a run's error diagnostic back into the error the
// script saw: the name of its class (Error, TypeError, SchemaValidationError,
// …), its own message, and a stack in the engine's form, "Name: message\n
// at script.js:1:7". A failure that is not a JavaScript error (a limit, a
// syntax error, an import) is named by its class when it has one, else as
// codemode's CodemodeError; the code keeps the diagnostic's code either way.
func emceepeeErrorOf(d diag.Diagnostic) *emceepeeError {
	msg := sandbox.ErrorText(d.Message)
	name := string(d.ErrorClass)
	switch {
	case name != "":
		msg = strings.TrimPrefix(msg, name+": ")
	case d.Code == diag.SyntaxError:
		name, msg = "SyntaxError", strings.TrimPrefix(msg, "SyntaxError: ")
	case d.Code == diag.UncaughtException:
		// "TypeError: bad thing"; a thrown non-Error value has no name.
		if n, rest, ok := strings.Cut(msg, ": "); ok && jsIdentifier(n) {
			name, msg = n, rest
		} else {
			name = "Error"
		}
	default:
		name = string(diag.CodemodeError)
	}
	stack := name + ": " + msg
	if d.Path != "" {
		stack += "\n    at " + d.Path
	}
	return &emceepeeError{Name: name, Message: msg, Stack: stack, Code: string(d.Code), Hint: d.Hint}
}

// jsIdentifier reports whether s could be an error class's name.
func jsIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		letter := c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

type emceepeeStats struct {
	DurationMs int64 `json:"durationMs"`
	MCPCalls   int64 `json:"mcpCalls"`
}

func (e emceepeeSurface) execute(ctx context.Context, _ *mcp.CallToolRequest, in emceepeeExecuteArgs) (*mcp.CallToolResult, error) {
	timeout := int64(30_000)
	if in.Timeout != nil {
		timeout = int64(*in.Timeout) // the schema bounds it: 1000 ≤ timeout ≤ 300000
	}
	var calls atomic.Int64
	ops := func(ctx context.Context, v *run.View, op string, payload json.RawMessage) (json.RawMessage, error, bool) {
		if !strings.HasPrefix(op, "mcp.") {
			return nil, nil, false
		}
		calls.Add(1)
		// emceepee bounds every mcp.* call of an execution, not only
		// callTool (which CallRaw charges itself): a runaway loop of
		// resource reads is stopped like one of tool calls.
		if op != "mcp.callTool" {
			if err := v.Charge(op); err != nil {
				return nil, err, true
			}
		}
		out, err := e.op(ctx, v, op, payload)
		return out, err, true
	}
	modules := func(_ context.Context, _ *run.View, spec string) (string, bool) {
		if spec != mcpModule {
			return "", false
		}
		// Each run of the script imports the mcp module first: a run that
		// asks for approval runs the script again (run/approval.go), and
		// the stats count the calls of the run that answers.
		calls.Store(0)
		return mcpSource, true
	}
	start := time.Now()
	resp := e.s.runner.RunWith(ctx, run.Request{Code: in.Code, Limits: config.Limits{TimeoutMs: timeout}, DryRun: in.DryRun},
		run.Extra{Normalize: &normalize.Options{Mode: normalize.Body, Async: []string{"mcp"}}, Prelude: []string{mcpModule}, Modules: modules, Ops: ops,
			LimitParams: map[string]string{"timeoutMs": "timeout"}})
	out := emceepeeResult{Success: !resp.Failed(), Result: resp.Result, Logs: []string{},
		Stats: emceepeeStats{DurationMs: time.Since(start).Milliseconds(), MCPCalls: calls.Load()}, Plan: resp.Plan}
	for _, l := range resp.Logs {
		msg := l.Message
		if l.Level != "log" {
			msg = "[" + string(l.Level) + "] " + msg
		}
		out.Logs = append(out.Logs, msg)
	}
	ids := e.s.globalIDs()
	hintUndefined(resp, func(name string) string {
		switch id, server := ids[name]; {
		case server:
			return fmt.Sprintf("servers are reached through mcp: await mcp.callTool(%q, \"<tool>\", {...}); mcp.listTools(%q) lists its tools", id, id)
		case searchNames[name]:
			return "find tools with mcp.listServers() and mcp.listTools(server), or codemode_search"
		case toolObjects[name] && name != "mcp":
			return name + " is not bound here: call tools with await mcp.callTool(server, tool, args)"
		}
		return ""
	})
	for _, d := range resp.Diagnostics {
		if d.Hint == run.UnwrapHint {
			// mcp.callTool returns the MCP result itself.
			d.Hint = "mcp.callTool returns the MCP result: its text is result.content[0].text when result.content holds a text block (check result.isError first)"
		}
		if d.Severity == diag.SeverityError {
			out.Error = emceepeeErrorOf(d)
			break
		}
	}
	return jsonResult(out), nil
}

// mcpCall is a call of one of the `mcp` global's host operations: its name
// and its positional arguments.
type mcpCall struct {
	op   string
	args []json.RawMessage
}

// str is argument i as a string ("" if absent or not a string).
func (c mcpCall) str(i int) string {
	var s string
	if i < len(c.args) {
		json.Unmarshal(c.args[i], &s)
	}
	return s
}

// arg is argument i as it was passed (nil if absent).
func (c mcpCall) arg(i int) json.RawMessage {
	if i < len(c.args) {
		return c.args[i]
	}
	return nil
}

// mcpOps are the `mcp` global's host operations, by name. Each returns a
// value to encode as the operation's result.
var mcpOps = map[string]func(emceepeeSurface, context.Context, *run.View, mcpCall) (any, error){
	"mcp.listServers":           emceepeeSurface.listServers,
	"mcp.callTool":              emceepeeSurface.callTool,
	"mcp.readResource":          emceepeeSurface.readResource,
	"mcp.getPrompt":             emceepeeSurface.getPrompt,
	"mcp.listTools":             listing(emceepeeSurface.tools),
	"mcp.listResources":         listing(emceepeeSurface.resources),
	"mcp.listResourceTemplates": listing(emceepeeSurface.resourceTemplates),
	"mcp.listPrompts":           listing(emceepeeSurface.prompts),
}

// op serves one of the `mcp` global's host operations.
func (e emceepeeSurface) op(ctx context.Context, v *run.View, op string, payload json.RawMessage) (json.RawMessage, error) {
	c := mcpCall{op: op}
	if err := json.Unmarshal(payload, &c.args); err != nil {
		return nil, badCall(op, "malformed arguments")
	}
	h := mcpOps[op]
	if h == nil {
		return nil, badCall(op, "unknown operation")
	}
	out, err := h(e, ctx, v, c)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

func (e emceepeeSurface) listServers(ctx context.Context, v *run.View, _ mcpCall) (any, error) {
	return e.statuses(ctx, v.Catalog()), nil
}

func (e emceepeeSurface) callTool(ctx context.Context, v *run.View, c mcpCall) (any, error) {
	_, res, err := v.CallRaw(ctx, c.str(0), c.str(1), c.arg(2))
	if err != nil {
		return nil, err
	}
	return res, nil
}

func (e emceepeeSurface) readResource(ctx context.Context, _ *run.View, c mcpCall) (any, error) {
	if e.s.mgr == nil {
		return nil, badCall(c.op, "resources are not available")
	}
	res, err := e.s.mgr.ReadResource(ctx, c.str(0), c.str(1))
	if err != nil {
		return nil, &diag.Error{Class: diag.ToolCallError, Message: err.Error(), Hint: "check the server and uri with listResources()"}
	}
	// emceepee's ResourceContent is {contents}; the SDK's result also
	// carries caching hints (ttlMs, cacheScope) meant for clients.
	contents := res.Contents
	if contents == nil {
		contents = []*mcp.ResourceContents{}
	}
	return map[string]any{"contents": contents}, nil
}

func (e emceepeeSurface) getPrompt(ctx context.Context, _ *run.View, c mcpCall) (any, error) {
	if e.s.mgr == nil {
		return nil, badCall(c.op, "prompts are not available")
	}
	var pargs map[string]string
	if a := c.arg(2); a != nil {
		json.Unmarshal(a, &pargs)
	}
	res, err := e.s.mgr.GetPrompt(ctx, c.str(0), c.str(1), pargs)
	if err != nil {
		return nil, &diag.Error{Class: diag.ToolCallError, Message: err.Error(), Hint: "check the server, name and arguments with listPrompts()"}
	}
	return res, nil
}

// listing serves a list operation: its optional first argument is a regex
// on server names, and each matching server that can be reached adds what
// each returns.
func listing(each func(emceepeeSurface, context.Context, *catalog.Server) []any) func(emceepeeSurface, context.Context, *run.View, mcpCall) (any, error) {
	return func(e emceepeeSurface, ctx context.Context, v *run.View, c mcpCall) (any, error) {
		re, err := compileSearch(c.str(0))
		if err != nil {
			return nil, badCall(c.op, err.Error())
		}
		b := e.s.searchBudget(ctx)
		servers, _ := e.s.reachable(ctx, v.Catalog())
		out := []any{}
		for _, srv := range servers {
			ok, err := re.match(b, srv.ID, srv.Name)
			if err != nil {
				return nil, badCall(c.op, stoppedSearch(err, b))
			}
			if ok {
				out = append(out, each(e, ctx, srv)...)
			}
		}
		return out, nil
	}
}

func (e emceepeeSurface) tools(_ context.Context, srv *catalog.Server) []any {
	var out []any
	for _, t := range srv.Tools {
		tool := map[string]any{"server": srv.ID, "name": t.Name, "description": t.Tool.Description, "inputSchema": t.Tool.InputSchema}
		if d := run.Define(t, run.DetailDescription); d.Execution != nil {
			tool["execution"] = d.Execution
		}
		if t.NeedsApproval {
			tool["requiresApproval"] = true
		}
		out = append(out, tool)
	}
	return out
}

func (e emceepeeSurface) resources(ctx context.Context, srv *catalog.Server) []any {
	if !e.has(srv, "resources") {
		return nil
	}
	var out []any
	rs, _ := e.s.mgr.ListResources(ctx, srv.ID)
	for _, r := range rs {
		out = append(out, map[string]any{"server": srv.ID, "uri": r.URI, "name": r.Name, "description": r.Description, "mimeType": r.MIMEType})
	}
	return out
}

func (e emceepeeSurface) resourceTemplates(ctx context.Context, srv *catalog.Server) []any {
	if !e.has(srv, "resources") {
		return nil
	}
	var out []any
	rs, _ := e.s.mgr.ListResourceTemplates(ctx, srv.ID)
	for _, r := range rs {
		out = append(out, map[string]any{"server": srv.ID, "uriTemplate": r.URITemplate, "name": r.Name, "description": r.Description, "mimeType": r.MIMEType})
	}
	return out
}

func (e emceepeeSurface) prompts(ctx context.Context, srv *catalog.Server) []any {
	if !e.has(srv, "prompts") {
		return nil
	}
	var out []any
	ps, _ := e.s.mgr.ListPrompts(ctx, srv.ID)
	for _, p := range ps {
		h := map[string]any{"server": srv.ID, "name": p.Name, "description": p.Description}
		if len(p.Arguments) > 0 {
			h["arguments"] = p.Arguments // optional in emceepee's shape: absent, not null
		}
		out = append(out, h)
	}
	return out
}

// has reports whether srv can be asked for its resources or prompts: the
// gateway has a Manager to ask, and the server declared the capability.
func (e emceepeeSurface) has(srv *catalog.Server, capability string) bool {
	caps := srv.Snapshot.Capabilities
	if e.s.mgr == nil || caps == nil {
		return false
	}
	if capability == "resources" {
		return caps.Resources != nil
	}
	return caps.Prompts != nil
}

func badCall(op, msg string) *diag.Error {
	return &diag.Error{Class: diag.CodemodeError, Message: strings.TrimPrefix(op, "") + ": " + msg, Hint: "see the codemode_execute description for the mcp API"}
}
