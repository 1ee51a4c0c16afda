package serve

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/sandbox"
)

// Saved scripts on every surface: a tool that takes `code` also takes
// {"script": "NAME" or "NAME@VERSION", "args": {...}} instead. useScript,
// called for every tool call (track), puts the saved code in the call's
// arguments as `code` and says which script it is (run.WithScript), so
// that the surfaces run it as they run code they are sent, and the run's
// args are @codemode/args and the global `args`.

// scriptFields are what codeArgs and runArgs add for saved scripts.
type scriptFields struct {
	Script string         `json:"script,omitempty" jsonschema:"saved script to run instead of code: NAME[@VERSION]"`
	Args   map[string]any `json:"args,omitempty" jsonschema:"its args"`
}

// codeOrScript amends the schema of a tool that takes code or a saved
// script: one of them is required.
func codeOrScript(s *jsonschema.Schema) {
	s.AnyOf = []*jsonschema.Schema{{Required: []string{"code"}}, {Required: []string{"script"}}}
}

// useScript resolves a call's "script". It returns the result to answer
// with instead of running anything when the call is wrong.
func (s *Server) useScript(ctx context.Context, req *mcp.CallToolRequest) (context.Context, *mcp.CallToolResult) {
	if req.Params == nil || !bytes.Contains(req.Params.Arguments, []byte(`"script"`)) {
		return ctx, nil
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(req.Params.Arguments, &fields) != nil {
		return ctx, nil // the tool says what is wrong with its arguments
	}
	raw, ok := fields["script"]
	if !ok || isNullJSON(raw) {
		return ctx, nil
	}
	bad := func(msg, hint string) (context.Context, *mcp.CallToolResult) {
		return ctx, invalidRequest(diag.Diagnostic{Severity: diag.SeverityError, Code: diag.InvalidRequest, Message: msg, Hint: hint})
	}
	var ref string
	if json.Unmarshal(raw, &ref) != nil {
		return bad(`"script" must be the name of a saved script, a string`, `e.g. {"script": "weekly-report", "args": {"team": "core"}}`)
	}
	if c, ok := fields["code"]; ok && !isNullJSON(c) {
		return bad(`pass either "code" or "script", not both`, `to run the saved script, leave "code" out`)
	}
	var args json.RawMessage
	if a, ok := fields["args"]; ok && !isNullJSON(a) {
		var m map[string]json.RawMessage
		if json.Unmarshal(a, &m) != nil {
			return bad(`"args" must be an object`, `e.g. "args": {"team": "core"}`)
		}
		args = a
	}
	if s.opts.Scripts == nil {
		return bad("this gateway has no saved scripts", `send the code itself in "code"`)
	}
	code, full, d := s.opts.Scripts(ctx, ref)
	if d != nil {
		return ctx, invalidRequest(*d)
	}
	codeJSON, _ := json.Marshal(code)
	fields["code"] = codeJSON
	delete(fields, "script")
	b, err := json.Marshal(fields)
	if err != nil {
		return bad("the arguments could not be encoded again: "+err.Error(), "")
	}
	req.Params.Arguments = b
	return run.WithScript(ctx, full, args), nil
}

func isNullJSON(b json.RawMessage) bool {
	return len(bytes.TrimSpace(b)) == 0 || bytes.Equal(bytes.TrimSpace(b), []byte("null"))
}

// invalidRequest answers a request that cannot run with a §3.3 response
// holding its diagnostic, as a tool error.
func invalidRequest(d diag.Diagnostic) *mcp.CallToolResult {
	resp := &run.Response{Logs: []sandbox.LogEntry{}, Result: json.RawMessage("null"), Diagnostics: []diag.Diagnostic{d}, ToolTrace: []run.TraceEntry{}}
	res := responseResult(resp, "")
	res.IsError = true
	return res
}
