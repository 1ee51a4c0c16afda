package run

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/sandbox"
)

// CallDirect makes one tool call for a client that calls an upstream's tool
// directly (a server served as ordinary MCP tools, "codeMode": false or
// "both"), along the path a script's call takes: the tool is looked up in
// cat (the catalog of such servers, catalog.Catalog.Direct), its input
// validated, the call traced, reported to a client that asked for
// progress, made within the default timeoutMs, redacted, and logged on the
// audit line (marked direct). It returns the upstream's result as it is
// (an isError result included), or the *diag.Error that stopped the call.
func (r *Runner) CallDirect(ctx context.Context, cat *catalog.Catalog, serverID, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	start := time.Now()
	limits := r.cfg.Resolve(config.Limits{})
	ctx, cancel := context.WithTimeout(ctx, time.Duration(limits.TimeoutMs)*time.Millisecond)
	defer cancel()
	v := newView(r, limits, Extra{})
	v.cat = cat.View()
	_, res, err := v.CallRaw(ctx, serverID, tool, args)
	resp := &Response{Logs: []sandbox.LogEntry{}, Result: json.RawMessage("null"), Diagnostics: []diag.Diagnostic{}, ToolTrace: v.trace(), used: []string{serverID}}
	if err != nil {
		de, ok := err.(*diag.Error)
		if !ok {
			de = &diag.Error{Class: diag.ToolCallError, Message: err.Error()}
		}
		resp.Diagnostics = append(resp.Diagnostics, diag.Diagnostic{Severity: diag.SeverityError, Code: diag.UncaughtException, ErrorClass: de.Class, Message: de.Message, Hint: de.Hint})
	}
	r.redactResponse(resp)
	r.audit(WithLogAttrs(ctx, slog.String("direct", serverID+"/"+tool)), Request{}, resp, time.Since(start))
	if err != nil {
		return nil, err
	}
	return res, nil
}
