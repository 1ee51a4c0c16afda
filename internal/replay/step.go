package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/big"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/admit"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/normalize"
	"github.com/codemode-mcp/codemode/internal/redact"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/sandbox"
)

// Options configure a Stepper. All fields are optional.
type Options struct {
	// Config supplies the default and maximum limits (its servers are not
	// used: a step calls only the client's tools). Default: the built-in
	// limits.
	Config *config.Config
	Logger *slog.Logger
	// Admission, if set, admits every step's run (run.Options.Admission):
	// a gateway that serves steps beside MCP shares one bound and one
	// memory budget between them.
	Admission *admit.Controller
	// Observer sees every step's run (run.Options.Observer); a step's runs
	// are of surface "step" unless the context says otherwise.
	Observer run.Observer
}

// Stepper runs steps. It is safe for concurrent use and keeps nothing
// between steps but caches (transpiled code, compiled tool schemas).
type Stepper struct {
	cfg  config.Config
	opts Options
}

// New returns a Stepper.
func New(opts *Options) *Stepper {
	s := &Stepper{}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Config == nil {
		s.opts.Config = config.Default()
	}
	if s.opts.Logger == nil {
		s.opts.Logger = slog.New(slog.DiscardHandler)
	}
	s.cfg = *s.opts.Config
	s.cfg.Servers = []config.Server{{ID: ClientServerID, Name: ClientServerID}}
	s.cfg.Disabled = nil
	return s
}

var defaultStepper = sync.OnceValue(func() *Stepper { return New(nil) })

// Step runs one step with the built-in limits: see [Stepper.Step].
func Step(ctx context.Context, req Request) (Response, error) {
	return defaultStepper().Step(ctx, req)
}

// Step reruns the request's code block from the start, answering the
// script's tool calls with the results the conversation recorded, in the
// order the script makes them, and answers with the next message: the
// calls the script needs next, or its result. It is a pure function of the
// request: the same request gives the same response, byte for byte (a run
// stopped by its timeoutMs aside, which depends on the machine).
//
// The error is non-nil, an *Error, only when the request itself is
// malformed; a script's failure, a divergence included, is a code result
// with status "error".
func (s *Stepper) Step(ctx context.Context, req Request) (Response, error) {
	p, err := parse(&req)
	if err != nil {
		return Response{}, err
	}
	ts, err := toolsetFor(req.Tools)
	if err != nil {
		return Response{}, err
	}
	c := &caller{p: p, ts: ts}
	r := run.New(&s.cfg, ts.cat, c, &run.Options{Logger: s.opts.Logger, Admission: s.opts.Admission, Observer: s.opts.Observer})
	if run.OriginOf(ctx).Surface == "" {
		ctx = run.WithOrigin(ctx, run.Origin{Surface: "step"})
	}
	resp := r.RunWith(ctx, run.Request{Code: p.code, Limits: req.Limits}, run.Extra{
		Normalize:     &normalize.Options{Mode: normalize.Body, Async: ts.globalNames()},
		Prelude:       []string{globalsModule},
		Modules:       ts.modules,
		Deterministic: &sandbox.Deterministic{Seed: p.seed, Now: p.now},
	})
	return c.respond(resp), nil
}

// caller answers the run's tool calls from the plan: the call at position
// i gets the recorded result i, if its name and arguments are the
// recorded ones; a call past the record is suspended and becomes part of
// the next batch. The sandbox starts the calls of a round in the script's
// order, so positions are the script's order.
type caller struct {
	p  *plan
	ts *toolset

	mu       sync.Mutex
	next     int
	pending  []pendingCall
	diverged *diag.Diagnostic
}

type pendingCall struct {
	pos  int
	call ToolCall
}

func (c *caller) CallTool(_ context.Context, _ string, tool string, args any) (*mcp.CallToolResult, error) {
	text := argsText(args)
	c.mu.Lock()
	pos := c.next
	c.next++
	if pos >= len(c.p.calls) {
		c.pending = append(c.pending, pendingCall{pos, ToolCall{ID: CallID(c.p.codeID, pos), Type: "function", Function: FunctionCall{Name: tool, Arguments: text}}})
		c.mu.Unlock()
		return nil, sandbox.Suspend
	}
	c.mu.Unlock()
	rec := c.p.calls[pos]
	if !c.ts.same(rec.name, tool) || !sameJSON(rec.args, text) {
		d := diag.Diagnostic{Severity: diag.SeverityError, Code: diag.ReplayDiverged, Path: rec.ptr,
			Message: fmt.Sprintf("at position %d (0-based) the script calls %s(%s), but the conversation recorded %s(%s) there (call %q)",
				pos, tool, clip(text), rec.name, clip(rec.args), rec.id),
			Hint: "the code, the tools or an earlier result changed since that call was made: resend the messages exactly as the steps returned them, with each call's own result, or start over with a new code message"}
		c.mu.Lock()
		if c.diverged == nil {
			c.diverged = &d
		}
		c.mu.Unlock()
		return nil, &sandbox.Abort{Diagnostic: d}
	}
	return answer(tool, rec)
}

// answer turns a tool message into the call's result: its content parsed
// as JSON when it is JSON, else the string; or, for a message marked as an
// error, a ToolCallError.
func answer(tool string, rec recorded) (*mcp.CallToolResult, error) {
	text, isText := contentText(rec.content)
	var value json.RawMessage
	switch {
	case !isText:
		value = rec.content
	case json.Valid([]byte(text)):
		value = json.RawMessage(text)
	}
	if rec.isError {
		if !isText {
			text = string(rec.content)
		}
		if text == "" {
			text = "the client reported an error without a message"
		}
		result := any(text)
		if value != nil {
			result = value
		}
		return nil, &diag.Error{Class: diag.ToolCallError, Message: fmt.Sprintf("%s failed: %s", tool, noSecrets.Clip(text, 2000)),
			Hint:   "the tool reported this failure: read its message; fix the input, or do without this call",
			Fields: map[string]any{"serverId": ClientServerID, "toolName": tool, "result": result}}
	}
	if value != nil {
		return &mcp.CallToolResult{StructuredContent: value}, nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
}

// respond builds the step's answer from the run.
func (c *caller) respond(resp *run.Response) Response {
	out := Response{Logs: resp.Logs, Diagnostics: resp.Diagnostics}
	codeResult := func(r *CodeResult) Message {
		return Message{Role: RoleCodeResult, ID: c.p.codeID, Result: r}
	}
	switch {
	case c.diverged != nil:
		out.Message = codeResult(&CodeResult{Status: "error", Error: errorInfo(*c.diverged)})
	case resp.Failed():
		for _, d := range resp.Diagnostics {
			if d.Severity == diag.SeverityError {
				out.Message = codeResult(&CodeResult{Status: "error", Error: errorInfo(c.ts.explain(d))})
				break
			}
		}
	case resp.Suspended() && len(c.pending) > 0:
		pending := slices.Clone(c.pending)
		slices.SortFunc(pending, func(a, b pendingCall) int { return a.pos - b.pos })
		calls := make([]ToolCall, len(pending))
		for i, p := range pending {
			calls[i] = p.call
		}
		out.Message = Message{Role: RoleAssistant, ToolCalls: calls}
	case c.next < len(c.p.calls):
		rec := c.p.calls[c.next]
		d := diag.Diagnostic{Severity: diag.SeverityError, Code: diag.ReplayDiverged, Path: rec.ptr,
			Message: fmt.Sprintf("the script finished after %d tool calls, but the conversation recorded %d: the call at position %d, %s(%s) (call %q), was never made",
				c.next, len(c.p.calls), c.next, rec.name, clip(rec.args), rec.id),
			Hint: "resend the messages exactly as the steps returned them, or start over with a new code message"}
		out.Diagnostics = append(out.Diagnostics, d)
		out.Message = codeResult(&CodeResult{Status: "error", Error: errorInfo(d)})
	default:
		out.Message = codeResult(&CodeResult{Status: "success", Data: resp.Result})
	}
	return out
}

// explain adds what a step knows to a failure: a name the script used that
// is not defined is most likely a client tool it expected.
func (ts *toolset) explain(d diag.Diagnostic) diag.Diagnostic {
	text := sandbox.ErrorText(d.Message)
	name, ok := strings.CutPrefix(text, "ReferenceError: ")
	if !ok {
		return d
	}
	name, ok = strings.CutSuffix(name, " is not defined")
	if !ok {
		return d
	}
	var known []string
	for _, t := range ts.server.Tools {
		known = append(known, t.ExportName)
	}
	if len(known) == 0 {
		d.Hint = fmt.Sprintf("if %s is one of the client's tools, the request must list it in tools", name)
		return d
	}
	d.Hint = fmt.Sprintf("if %s is meant to be a tool, use one of the client's: %s (globals, also exported by %s)", name, strings.Join(known, ", "), ClientModule)
	return d
}

// errorInfo is a code result's error for a diagnostic: the error class or
// JavaScript error name, the error's own message and the hint.
func errorInfo(d diag.Diagnostic) *ErrorInfo {
	text := sandbox.ErrorText(d.Message)
	e := &ErrorInfo{Name: "Error", Message: text, Hint: d.Hint}
	switch {
	case d.ErrorClass != "":
		e.Name = string(d.ErrorClass)
		e.Message = strings.TrimPrefix(text, e.Name+": ")
	case d.Code == diag.ReplayDiverged:
		e.Name = "ReplayDivergedError"
	case d.Code == diag.SyntaxError:
		e.Name = "SyntaxError"
	case d.Code == diag.UncaughtException:
		if n, m, ok := strings.Cut(text, ": "); ok && isIdentifier(n) {
			e.Name, e.Message = n, m
		}
	}
	return e
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// argsText is the JSON text of a call's input as the run layer passes it
// (the script's JSON for an object, else a decoded value).
func argsText(args any) string {
	if raw, ok := args.(json.RawMessage); ok {
		var b bytes.Buffer
		if json.Compact(&b, raw) == nil {
			return b.String()
		}
		return string(raw)
	}
	return string(Marshal(args))
}

// sameJSON compares two JSON texts as values: key order, spacing and the
// spelling of numbers (1, 1.0, 1e0) do not matter. No text ("") is {}.
func sameJSON(a, b string) bool {
	if a == b {
		return true
	}
	va, okA := decodeJSON(a)
	vb, okB := decodeJSON(b)
	return okA && okB && equalValues(va, vb)
}

func decodeJSON(s string) (any, bool) {
	if strings.TrimSpace(s) == "" {
		return map[string]any{}, true
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, false
	}
	return v, true
}

func equalValues(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equalValues(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalValues(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		if x == y {
			return true
		}
		fx, okX := new(big.Float).SetString(string(x))
		fy, okY := new(big.Float).SetString(string(y))
		return okX && okY && fx.Cmp(fy) == 0
	default:
		return a == b
	}
}

// noSecrets clips the client's texts for messages: a step knows no secrets
// to redact (it calls only the client's tools, with the client's data), and
// clipping is the redactor's (package redact), nil or not.
var noSecrets *redact.Redactor

// clip shortens a call's arguments for a message.
func clip(s string) string { return noSecrets.Clip(s, 300) }
