package run

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/schema"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// CallTool runs one tool call the way a binding does: look the tool up (by
// canonical or export name), count it against maxToolCalls, validate the
// input against its inputSchema, call it, record it in the trace and unwrap
// the result (§5.3.2). Every failure is a *diag.Error of the §7.1 class agent
// code should see, an isError result included. input may be nil (no
// argument).
func (v *View) CallTool(ctx context.Context, serverID, name string, input json.RawMessage) (json.RawMessage, error) {
	t, res, err := v.CallRaw(ctx, serverID, name, input)
	if err != nil {
		return nil, err
	}
	if res == nil {
		return json.RawMessage("null"), nil // a dry run's unsent call
	}
	if res.IsError {
		return nil, v.toolFailed(serverID, t, res)
	}
	out, err := Unwrap(res)
	if err != nil {
		return nil, &diag.Error{Class: diag.ToolCallError, Message: fmt.Sprintf("the result of %s/%s cannot be encoded: %v", serverID, t.Name, err), Fields: map[string]any{"serverId": serverID, "toolName": t.Name}}
	}
	// A result that cannot fit in the sandbox is refused here, before it is
	// copied into the VM.
	if int64(len(out)) > v.limits.MaxMemoryBytes {
		e := &diag.Error{Class: diag.SandboxLimitError,
			Message: fmt.Sprintf("the result of %s/%s is %d bytes, more than the sandbox's maxMemoryBytes (%d)", serverID, t.Name, len(out), v.limits.MaxMemoryBytes),
			Hint:    "ask the tool for less at once (a page, a filter, a smaller range)",
			Fields:  map[string]any{"limit": "maxMemoryBytes", "value": v.limits.MaxMemoryBytes}}
		if uri := v.spillToolResult(ctx, out); uri != "" {
			// Not lost: the client can read it (spill.go).
			e.Message += "; it is kept whole as the resource " + uri + ", which the client can read"
			e.Fields["resource"] = uri
		}
		return nil, e
	}
	return out, nil
}

// CallRaw is CallTool without the unwrapping: an isError result is returned
// as it is (and traced as a failure), for surfaces that hand agent code the
// whole MCP result. The result is nil, with a nil error, for a call a dry
// run did not send (the script gets null).
func (v *View) CallRaw(ctx context.Context, serverID, name string, input json.RawMessage) (*catalog.Tool, *mcp.CallToolResult, error) {
	if v.x.ReadOnly {
		return nil, nil, &diag.Error{Class: diag.CodemodeError, Message: fmt.Sprintf("cannot call %s/%s: this run is read-only", serverID, name),
			Hint: "search only reads the catalog; call tools with execute"}
	}
	s, err := v.server(ctx, serverID)
	if err != nil {
		return nil, nil, err
	}
	v.use(serverID)
	t := s.Lookup(name)
	if t == nil {
		// Not counted: nothing was called, and a misspelt name must not
		// use up maxToolCalls.
		return nil, nil, toolNotFound(s, name)
	}
	if err := v.count(serverID, name); err != nil {
		return nil, nil, err
	}
	start := time.Now()
	callCtx, observed := v.startCall(ctx, start, serverID, t.Name, input)
	args, verr := v.checkInput(s, t, input)
	if verr != nil {
		v.record(serverID, t.Name, 0, verr, "")
		observed(0, CallInvalid, verr, nil)
		return nil, nil, verr
	}
	// The policy decides, and the call is made, traced and recorded, in
	// one place (approval.go).
	res, err := v.invoke(callCtx, s, t, args)
	observeOutcome(observed, time.Since(start), res, err, v, serverID, t)
	if err != nil {
		return nil, nil, err
	}
	// A server that died earlier in the run (or dropped a result too
	// large to carry) is back: no warning that it is not connected.
	v.mu.Lock()
	delete(v.died, serverID)
	v.mu.Unlock()
	return t, res, nil
}

// count enforces maxToolCalls. A refused call throws SandboxLimitError; the
// script may catch it, and the response then carries a warning. A tool call
// is counted as (serverID, tool); a surface's own call (see Charge) as
// (op, "").
func (v *View) count(serverID, tool string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.calls < v.limits.MaxToolCalls {
		v.calls++
		return nil
	}
	v.refused++
	// Built only here: a string per call would cost every call.
	msg := fmt.Sprintf("call to %s/%s refused: the run already made maxToolCalls (%d) tool calls", serverID, tool, v.limits.MaxToolCalls)
	if tool == "" {
		msg = fmt.Sprintf("%s refused: the run already made maxToolCalls (%d) calls", serverID, v.limits.MaxToolCalls)
	}
	return &diag.Error{Class: diag.SandboxLimitError, Message: msg,
		Hint:   "batch the work into fewer calls (most list tools take filters or page sizes)" + v.orRaise("maxToolCalls"),
		Fields: map[string]any{"limit": "maxToolCalls", "value": v.limits.MaxToolCalls}}
}

// Charge counts a request of a surface's own API that is not a tool call
// (emceepee's mcp.readResource, say) against maxToolCalls, so that the
// limit bounds every call a script makes through that API. It returns the
// SandboxLimitError to throw once the budget is spent.
func (v *View) Charge(op string) error { return v.count(op, "") }

// record appends a trace entry. err, if any, is summarised as
// "Class: summary" (see traceSummary) and clipped by the redactor, which
// removes the configured secrets before it cuts. approval is the policy's
// decision, "" for a call refused before the policy.
func (v *View) record(serverID, tool string, d time.Duration, err *diag.Error, approval string) {
	e := &TraceEntry{ServerID: serverID, ToolName: tool, DurationMs: d.Milliseconds(), OK: err == nil, Approval: approval}
	if err != nil {
		e.Error = v.r.redact.Clip(string(err.Class)+": "+traceSummary(err), 300)
	}
	v.mu.Lock()
	v.traceList = append(v.traceList, e)
	v.mu.Unlock()
}

// traceSummary is what the trace says about a failed call. §3.3.2: the
// trace never holds the call's input or output, and err.Message may quote
// both. The script sees the whole message in the exception (and in the
// diagnostic if it does not catch it); the trace only says what failed.
//
//   - SchemaValidationError: where and what was expected, from the
//     violation's path and expected fields; never the value received.
//   - Every other error: the head of the message, up to the first ": " or
//     "; ". Every message of a failed call puts the gateway's own words
//     first ("echo (calc/echo) failed", `server "calc" timed out
//     (tools/call echo)`, "call to calc/echo was cancelled") and what it
//     quotes after: the tool's isError text (its output, which often echoes
//     the input), the upstream's JSON-RPC error (likewise), a stderr tail.
func traceSummary(err *diag.Error) string {
	if err.Class == diag.SchemaValidationError {
		path, okPath := err.Fields["path"].(string)
		expected, okExp := err.Fields["expected"].(string)
		if okPath && okExp {
			return "invalid input at " + pointerOrRoot(path) + ": expected " + expected
		}
	}
	msg := err.Message
	if i := strings.Index(msg, ": "); i >= 0 {
		msg = msg[:i]
	}
	if i := strings.Index(msg, "; "); i >= 0 {
		msg = msg[:i]
	}
	return msg
}

func (v *View) noteDeath(serverID string, err error) {
	if errIsKind(err, upstream.Died) || errIsKind(err, upstream.StartFailed) {
		v.mu.Lock()
		v.died[serverID] = err
		v.mu.Unlock()
	}
}

func errIsKind(err error, k upstream.Kind) bool {
	ue, ok := err.(*upstream.Error)
	return ok && ue.Kind == k
}

// validator is what the catalog keeps per tool: the compiled input schema,
// or nil when the schema does not compile (then the upstream validates).
type validator struct {
	v *schema.Validator
	// object: the tool takes an object, so a call without an argument
	// sends {} (MCP servers expect one, even empty).
	object bool
	// err is why the schema does not compile (v is nil then).
	err error
}

func (v *View) checkInput(s *catalog.Server, t *catalog.Tool, input json.RawMessage) (any, *diag.Error) {
	var val any
	if len(input) > 0 && !bytes.Equal(input, []byte("null")) {
		dec := json.NewDecoder(bytes.NewReader(input))
		dec.UseNumber()
		if err := dec.Decode(&val); err != nil {
			return nil, &diag.Error{Class: diag.SchemaValidationError, Message: "the input is not JSON data: " + err.Error(), Hint: "pass plain data"}
		}
	}
	c := t.Once(func(t *catalog.Tool) any {
		sv, err := schema.Compile(t.Tool.InputSchema)
		if err != nil {
			v.r.opts.Logger.Warn("tool input schema does not compile; calls go unvalidated", "server", s.ID, "tool", t.Name, "err", err)
		}
		return validator{sv, isObjectSchema(t.Tool.InputSchema), err}
	}).(validator)
	if c.err != nil {
		v.unvalidated(s.ID, t.Name, c.err)
	}
	if c.v != nil {
		if viol := c.v.Validate(val); viol != nil {
			fields := map[string]any{
				"serverId":   s.ID,
				"toolName":   t.Name,
				"exportName": t.ExportName,
				"path":       viol.Path,
				"expected":   viol.Expected,
				"received":   viol.Received,
			}
			ex := c.v.Example()
			if ex != nil {
				fields["example"] = ex
			}
			msg := fmt.Sprintf("invalid input for %s (%s/%s): %s", t.ExportName, s.ID, t.Name, viol.Message)
			if len(viol.Others) > 0 {
				// Every problem at once, so that one retry can fix them all.
				msg += "; also " + strings.Join(viol.Others, "; ")
			}
			hint := fmt.Sprintf("at %s pass %s", pointerOrRoot(viol.Path), viol.Expected)
			if ex != nil {
				if b, err := json.Marshal(ex); err == nil && len(b) <= 300 {
					hint += "; a valid input looks like " + string(b)
				}
			}
			return nil, &diag.Error{Class: diag.SchemaValidationError, Message: msg, Hint: hint, Fields: fields}
		}
	}
	if val == nil && c.object {
		return json.RawMessage("{}"), nil
	}
	if _, ok := val.(map[string]any); ok {
		return input, nil // forward the agent's JSON as it is
	}
	return val, nil
}

// unvalidated notes that the run called a tool whose input schema does not
// compile, for one warning per tool (see finalDiagnostics): the call goes
// to the server unchecked, which the caller must not have to guess.
func (v *View) unvalidated(serverID, tool string, err error) {
	key := serverID + "/" + tool
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, u := range v.unchecked {
		if u.tool == key {
			return
		}
	}
	v.unchecked = append(v.unchecked, uncheckedTool{key, err})
}

type uncheckedTool struct {
	tool string // server/tool
	err  error
}

func pointerOrRoot(p string) string {
	if p == "" {
		return "the top level"
	}
	return p
}

func isObjectSchema(s any) bool {
	t := schema.Keyword(s, "type")
	return t == nil || t == "object" // absent: MCP's default input is an object
}

func toolNotFound(s *catalog.Server, name string) *diag.Error {
	names := make([]string, len(s.Tools))
	for i, t := range s.Tools {
		names[i] = t.ExportName
	}
	return &diag.Error{Class: diag.ToolNotFoundError, Message: fmt.Sprintf("server %q has no tool %q", s.ID, name),
		Hint:   closestHint(name, names, "tools"),
		Fields: map[string]any{"serverId": s.ID, "toolName": name, "available": nonNil(names)}}
}

// toolFailed turns an isError result into a ToolCallError carrying the
// upstream's own text, clipped by the redactor (which redacts before it
// cuts).
func (v *View) toolFailed(serverID string, t *catalog.Tool, res *mcp.CallToolResult) *diag.Error {
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok && tc.Text != "" {
			texts = append(texts, tc.Text)
		}
	}
	msg := strings.Join(texts, "\n")
	if msg == "" {
		msg = "the tool reported an error without a message"
	}
	fields := map[string]any{"serverId": serverID, "toolName": t.Name}
	if full, err := json.Marshal(res); err == nil && len(full) <= 64<<10 {
		fields["result"] = json.RawMessage(full)
	}
	return &diag.Error{Class: diag.ToolCallError, Message: fmt.Sprintf("%s (%s/%s) failed: %s", t.ExportName, serverID, t.Name, v.r.redact.Clip(msg, 2000)),
		Hint: "read the tool's message; check the input with getTool(serverId, toolName) if it is about the arguments", Fields: fields}
}

// Unwrap applies §5.3.2 to a successful result, in order: structuredContent;
// a single text block as its string; otherwise (images, audio, several
// blocks) the whole result, binary data as base64.
func Unwrap(res *mcp.CallToolResult) (json.RawMessage, error) {
	if res.StructuredContent != nil {
		return json.Marshal(res.StructuredContent)
	}
	if len(res.Content) == 1 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			return json.Marshal(tc.Text)
		}
	}
	if res.Content == nil {
		res.Content = []mcp.Content{}
	}
	return json.Marshal(res)
}
