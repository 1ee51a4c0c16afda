package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/sandbox"
)

// runInputSchema is the §3.2 request. limits stays open: unknown limit keys
// are ignored, not refused (§3.2.4).
var runInputSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"code":{"type":"string","description":"ES module source, JavaScript or TypeScript"},` +
	`"limits":{"type":"object","properties":{"timeoutMs":{"type":"integer"},"maxMemoryBytes":{"type":"integer"},"maxLogBytes":{"type":"integer"},"maxToolCalls":{"type":"integer"},"maxResultBytes":{"type":"integer"}}},` +
	`"requestedCapabilities":{"type":"array","items":{"type":"string"},"description":"server ids"}},` +
	`"required":["code"]}`)

func (s *Server) registerRun(servers []*catalog.Server) {
	ctx, full := s.context(servers, moduleForm)
	s.mu.Lock()
	s.injected[moduleForm] = full
	s.mu.Unlock()
	s.addTool(&mcp.Tool{
		Name:        s.cfg.Serve.RunToolName,
		Title:       "Run code against MCP tools",
		Description: s.runDescription(ctx),
		InputSchema: runInputSchema,
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: ptr(true)},
	}, s.handleRun)
}

func ptr[T any](v T) *T { return &v }

// decodeRequest parses a codemode.run request leniently where the spec
// allows (unknown limit keys) and strictly where it does not (code must be
// a string). A bad request comes back as a response with an INVALID_REQUEST
// diagnostic, so the model reads what to fix.
func decodeRequest(raw json.RawMessage) (run.Request, *diag.Diagnostic) {
	var req run.Request
	var probe struct {
		Code                  json.RawMessage `json:"code"`
		Limits                json.RawMessage `json:"limits"`
		RequestedCapabilities json.RawMessage `json:"requestedCapabilities"`
	}
	bad := func(msg, hint string) (run.Request, *diag.Diagnostic) {
		return req, &diag.Diagnostic{Severity: diag.SeverityError, Code: diag.InvalidRequest, Message: msg, Hint: hint}
	}
	if len(raw) == 0 || json.Unmarshal(raw, &probe) != nil {
		return bad("the arguments must be a JSON object", `call with {"code": "..."}`)
	}
	if json.Unmarshal(probe.Code, &req.Code) != nil {
		return bad(`"code" must be a string`, "pass the script's source text as a string")
	}
	if len(probe.Limits) > 0 && !bytes.Equal(probe.Limits, []byte("null")) {
		var limits map[string]json.RawMessage
		if json.Unmarshal(probe.Limits, &limits) != nil {
			return bad(`"limits" must be an object`, `e.g. {"timeoutMs": 10000}`)
		}
		for _, k := range []struct {
			key string
			dst *int64
		}{{"timeoutMs", &req.Limits.TimeoutMs}, {"maxMemoryBytes", &req.Limits.MaxMemoryBytes}, {"maxLogBytes", &req.Limits.MaxLogBytes},
			{"maxToolCalls", &req.Limits.MaxToolCalls}, {"maxResultBytes", &req.Limits.MaxResultBytes}} {
			v, ok := limits[k.key]
			if !ok {
				continue
			}
			var f float64
			if json.Unmarshal(v, &f) != nil || f < 0 {
				return bad(fmt.Sprintf("limits.%s must be a positive number", k.key), "use an integer, or leave it out for the default")
			}
			*k.dst = int64(f)
		}
	}
	if len(probe.RequestedCapabilities) > 0 && !bytes.Equal(probe.RequestedCapabilities, []byte("null")) {
		if json.Unmarshal(probe.RequestedCapabilities, &req.RequestedCapabilities) != nil {
			return bad(`"requestedCapabilities" must be an array of server ids`, `e.g. ["github"]`)
		}
	}
	return req, nil
}

func (s *Server) handleRun(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	r, bad := decodeRequest(req.Params.Arguments)
	if bad != nil {
		resp := &run.Response{Logs: []sandbox.LogEntry{}, Result: json.RawMessage("null"), Diagnostics: []diag.Diagnostic{*bad}, ToolTrace: []run.TraceEntry{}}
		res := responseResult(resp, "")
		res.IsError = true
		return res, nil
	}
	resp := s.runner.Run(ctx, r)
	return responseResult(resp, s.deferredDeclarations(req, resp.ServersUsed(), moduleForm)), nil
}

// responseResult wraps a §3.3 response as a tool result: the response as
// structuredContent and a compact text rendering of it. A failed script is
// not a failed call (§3.3.4): isError stays false.
func responseResult(resp *run.Response, extra string) *mcp.CallToolResult {
	res := &mcp.CallToolResult{StructuredContent: resp, Content: []mcp.Content{&mcp.TextContent{Text: Render(resp)}}}
	if extra != "" {
		res.Content = append(res.Content, &mcp.TextContent{Text: extra})
	}
	return res
}

// Render is the compact text form of a response, for clients that show the
// model only text content.
func Render(resp *run.Response) string {
	var b strings.Builder
	b.WriteString("result: ")
	b.Write(resp.Result)
	b.WriteByte('\n')
	for _, d := range resp.Diagnostics {
		fmt.Fprintf(&b, "%s %s", d.Severity, d.Code)
		if d.ErrorClass != "" {
			fmt.Fprintf(&b, " (%s)", d.ErrorClass)
		}
		if d.Path != "" {
			fmt.Fprintf(&b, " at %s", d.Path)
		}
		fmt.Fprintf(&b, ": %s", d.Message)
		if d.Hint != "" {
			fmt.Fprintf(&b, "\n  hint: %s", d.Hint)
		}
		b.WriteByte('\n')
	}
	if len(resp.Logs) > 0 {
		b.WriteString("logs:\n")
		for _, l := range resp.Logs {
			fmt.Fprintf(&b, "  [%s %dms] %s\n", l.Level, l.TimeMs, l.Message)
		}
	}
	if len(resp.ToolTrace) > 0 {
		b.WriteString("tool calls:")
		for i, t := range resp.ToolTrace {
			if i > 0 {
				b.WriteByte(';')
			}
			fmt.Fprintf(&b, " %s/%s %dms", t.ServerID, t.ToolName, t.DurationMs)
			if !t.OK {
				b.WriteString(" failed")
			}
		}
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n")
}

// deferredDeclarations returns the declarations of the servers a response
// used for the first time in the session, when the description carries only
// the index (§4.4). Sessions are told apart by their *mcp.ServerSession,
// which stdio (one session, no id) and stateful HTTP both keep for the
// session's life. Under stateless HTTP every request is a session of its
// own, so every response carries the declarations of the servers it used:
// §4.4 allows deferring them to the first import, not skipping them.
func (s *Server) deferredDeclarations(req *mcp.CallToolRequest, used []string, f form) string {
	s.mu.Lock()
	full := s.injected[f]
	s.mu.Unlock()
	if full || len(used) == 0 {
		return ""
	}
	var fresh []string
	if s.stateless.Load() || req == nil || req.Session == nil {
		fresh = used
	} else {
		s.mu.Lock()
		session := req.Session
		seen := s.delivered[session]
		if seen == nil {
			seen = map[string]bool{}
			s.delivered[session] = seen
			// Forget the session when it ends.
			go func() {
				session.Wait()
				s.mu.Lock()
				delete(s.delivered, session)
				s.mu.Unlock()
			}()
		}
		for _, id := range used {
			if !seen[id] {
				fresh = append(fresh, id)
				seen[id] = true
			}
		}
		s.mu.Unlock()
	}
	var b strings.Builder
	view := s.cat.View()
	for _, id := range fresh {
		if srv, err := view.Server(context.Background(), id); err == nil {
			b.WriteString(s.decls.get(srv, f).text)
		}
	}
	if b.Len() == 0 {
		return ""
	}
	once := " (sent once per session)"
	if s.stateless.Load() {
		once = ""
	}
	return "TypeScript declarations of the servers this script used" + once + ". " + declTypes + b.String()
}
