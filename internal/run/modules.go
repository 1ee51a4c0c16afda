package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/codemode-mcp/codemode/internal/admit"
	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// Module specifiers of the in-sandbox API.
const (
	DiscoveryModule    = "@codemode/discovery"
	ServerModulePrefix = "@codemode/servers/"
	// ArgsModule's default export (also exported as `args`) is the run's
	// Request.Args, {} without any; a run with Args also has them as the
	// global `args`. Saved scripts read their arguments there.
	ArgsModule = "@codemode/args"
)

// argsSource is @codemode/args for args (a JSON object, checked by
// checkArgs, or nil). JSON is a JavaScript expression. The global is
// writable, like any a script could have made itself.
func argsSource(args json.RawMessage) string {
	if args == nil {
		args = json.RawMessage("{}")
	}
	return "const args = " + string(args) + ";" + `
Object.defineProperty(globalThis, "args", { value: args, writable: true, configurable: true, enumerable: false });
export default args;
export { args };
`
}

// checkArgs refuses Request.Args that are not a JSON object.
func checkArgs(args json.RawMessage) *diag.Diagnostic {
	if args == nil {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil || m == nil {
		return &diag.Diagnostic{Severity: diag.SeverityError, Code: diag.InvalidRequest,
			Message: "args must be a JSON object", Hint: `pass the script's arguments as an object, e.g. "args": {"owner": "me"}`}
	}
	return nil
}

// resolve answers the sandbox's imports. It runs while the engine links
// modules, so connecting a server here blocks the script, which is what an
// import means.
func (v *View) resolve(ctx context.Context, spec string) (string, error) {
	switch {
	case spec == DiscoveryModule:
		return discoverySource, nil
	case spec == ArgsModule:
		return argsSource(v.args), nil
	case strings.HasPrefix(spec, ServerModulePrefix):
		id := strings.TrimPrefix(spec, ServerModulePrefix)
		s, err := v.connect(ctx, id)
		if _, known := v.cat.Config(id); known {
			v.use(id)
		}
		if err != nil {
			de := serverError(id, err, v.cat.IDs(), v.r.cfg.Disabled)
			v.mu.Lock()
			v.importFails[id] = true
			v.mu.Unlock()
			// The sandbox throws it into the script as it is: `await
			// import()` rejects with this class, hint and fields.
			return "", &diag.Error{Class: de.Class, Message: fmt.Sprintf("cannot import %q: %s", spec, de.Message), Hint: de.Hint, Fields: de.Fields}
		}
		return ServerModuleSource(s), nil
	}
	if v.x.Modules != nil {
		if src, ok := v.x.Modules(ctx, v, spec); ok {
			return src, nil
		}
	}
	return "", &diag.Error{Class: diag.CodemodeError, Message: fmt.Sprintf("there is no module %q", spec),
		Hint: "import @codemode/discovery, @codemode/errors or @codemode/servers/<serverId>; " + diag.ListHint("server ids", v.cat.IDs(), 20)}
}

// ServerModuleSource generates the JavaScript of @codemode/servers/<id>: one
// frozen async function per tool, made by the internal bindTools, and a
// frozen __meta__ whose tools are made, deep-frozen, when first read (§5.1,
// §5.2). Local names are generated (t0, t1, …)
// and exported under the §6.1 names, because an export name may be a word
// that cannot name a local binding. Each binding's host operation carries
// its route (see ToolOp), so only the input crosses as JSON.
func ServerModuleSource(s *catalog.Server) string {
	ops := make([]string, len(s.Tools))
	names := make([]string, len(s.Tools))
	locals := make([]string, len(s.Tools))
	exports := make([]string, 0, len(s.Tools)+1)
	for i, t := range s.Tools {
		ops[i] = ToolOp(s.ID, t.Name)
		names[i] = t.ExportName
		locals[i] = fmt.Sprintf("t%d", i)
		exports = append(exports, fmt.Sprintf("t%d as %s", i, t.ExportName))
	}
	opsJSON, _ := json.Marshal(ops)
	namesJSON, _ := json.Marshal(names)
	head := map[string]any{"serverId": s.ID, "serverName": s.Name}
	if ver := s.Version(); ver != "" {
		head["serverVersion"] = ver
	}
	headJSON, _ := json.Marshal(head)
	toolsJSON, _ := json.Marshal(metaTools(s))
	exports = append(exports, "__meta__")
	var b strings.Builder
	b.WriteString(`import { bindTools, meta } from "@codemode/internal";` + "\n")
	fmt.Fprintf(&b, "const [%s] = bindTools(%s, %s);\n", strings.Join(locals, ", "), opsJSON, namesJSON)
	// __meta__.tools is made from its JSON when first read (meta in
	// bootstrap.js): most runs import a server and never read it.
	fmt.Fprintf(&b, "const __meta__ = meta(%s, %s);\n", headJSON, jsString(string(toolsJSON)))
	fmt.Fprintf(&b, "export { %s };\n", strings.Join(exports, ", "))
	return b.String()
}

type metaTool struct {
	ToolName         string `json:"toolName"`
	ExportName       string `json:"exportName"`
	Description      string `json:"description,omitempty"`
	RequiresApproval bool   `json:"requiresApproval,omitempty"`
}

func metaTools(s *catalog.Server) []metaTool {
	out := make([]metaTool, len(s.Tools))
	for i, t := range s.Tools {
		out[i] = metaTool{ToolName: t.Name, ExportName: t.ExportName, Description: t.Tool.Description, RequiresApproval: t.NeedsApproval}
	}
	return out
}

// jsString quotes s as a JavaScript string literal. JSON strings are valid
// JavaScript string literals (U+2028 and U+2029 included, since ES2019).
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// discoverySource is @codemode/discovery (§4.1). Each function forwards its
// arguments, as JSON, to the host; the host answers with plain data.
var discoverySource = `import { call, freeze } from "@codemode/internal";
export const specVersion = ` + jsString(SpecVersion) + `;
export const listServers = freeze(function listServers() { return call("discovery.listServers", []); });
export const describeServer = freeze(function describeServer(serverId) { return call("discovery.describeServer", [serverId]); });
export const listTools = freeze(function listTools(serverId, options) { return call("discovery.listTools", [serverId, options]); });
export const getTool = freeze(function getTool(serverId, toolName) { return call("discovery.getTool", [serverId, toolName]); });
export const searchTools = freeze(function searchTools(query, options) { return call("discovery.searchTools", [query, options]); });
`

// ToolOp is the host operation of one tool's binding: "tool", the server id
// and the tool name, NUL-separated (ids are [a-z0-9-], and the SDK refuses
// tool names with control characters; a name from agent code with a NUL in
// it only fails to be found). ToolOp(id, "") is the prefix of every tool of
// server id, for bindings made in JavaScript.
func ToolOp(serverID, tool string) string { return "tool\x00" + serverID + "\x00" + tool }

// handle serves the sandbox's host operations. Under admission, the
// answers of the upstream requests an operation makes are held against the
// run's ticket as they arrive (a stdio server's, before they are decoded),
// until the operation has turned them into its result, which the sandbox
// then holds until the script has it: one held too many is dropped at once,
// and the operation fails with SandboxLimitError.
func (v *View) handle(ctx context.Context, op string, payload json.RawMessage) (out json.RawMessage, err error) {
	if v.ticket != nil {
		m := &meter{t: v.ticket}
		ctx = context.WithValue(upstream.WithReceiveBudget(ctx, m), meterKey{}, m)
		defer func() {
			if refused := m.release(); refused != nil && err != nil {
				out, err = nil, answerDropped(refused)
			}
		}()
	}
	return v.serveOp(ctx, op, payload)
}

func (v *View) serveOp(ctx context.Context, op string, payload json.RawMessage) (json.RawMessage, error) {
	if route, ok := strings.CutPrefix(op, "tool\x00"); ok {
		serverID, name, _ := strings.Cut(route, "\x00")
		return v.CallTool(ctx, serverID, name, payload)
	}
	switch op {
	case "discovery.listServers":
		return v.listServers(ctx)
	case "discovery.describeServer":
		return v.describeServer(ctx, payload)
	case "discovery.listTools":
		return v.listTools(ctx, payload)
	case "discovery.getTool":
		return v.getTool(ctx, payload)
	case "discovery.searchTools":
		return v.searchTools(ctx, payload)
	}
	if v.x.Ops != nil {
		if out, err, ok := v.x.Ops(ctx, v, op, payload); ok {
			return out, err
		}
	}
	return nil, errors.New("unknown host operation " + op)
}

// meter holds the answers of one host operation's upstream requests as they
// arrive (upstream.WithReceiveBudget), against the run's ticket, until the
// operation returns.
type meter struct {
	t *admit.Ticket

	mu      sync.Mutex
	held    int64
	refused error
	done    bool
}

type meterKey struct{}

// dropped returns the error of an answer the operation running in ctx had
// dropped as it arrived, or nil.
func dropped(ctx context.Context) *diag.Error {
	m, _ := ctx.Value(meterKey{}).(*meter)
	if m == nil {
		return nil
	}
	m.mu.Lock()
	refused := m.refused
	m.mu.Unlock()
	if refused == nil {
		return nil
	}
	return answerDropped(refused)
}

// errOpOver refuses an answer that arrives after its operation returned.
var errOpOver = errors.New("the operation that asked for it is over")

func (m *meter) Reserve(n int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done {
		return errOpOver
	}
	if err := m.t.Reserve(n); err != nil {
		if m.refused == nil {
			m.refused = err
		}
		return err
	}
	m.held += n
	return nil
}

// release gives back what the operation held and returns why an answer
// was refused, if one was.
func (m *meter) release() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.done = true
	m.t.Unreserve(m.held)
	m.held = 0
	return m.refused
}

// answerDropped is the error of an operation whose upstream answer was
// dropped as it arrived.
func answerDropped(refused error) *diag.Error {
	de := &diag.Error{Class: diag.SandboxLimitError, Message: "an answer from the server was dropped as it arrived: " + refused.Error(),
		Hint: "ask for less at once (a page, a filter, a smaller range)", Fields: map[string]any{"limit": admit.LimitMemory}}
	var r *admit.Refusal
	if errors.As(refused, &r) {
		de.Hint = r.Hint
		de.Fields = map[string]any{"limit": r.Limit, "value": r.Value}
	}
	return de
}
