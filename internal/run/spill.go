package run

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/preview"
	"github.com/codemode-mcp/codemode/internal/sandbox"
)

// Large results. When the serving layer can keep data for the client (a
// Spill in the run's context: it stores the data and returns a resource
// URI the client's session can read), nothing a limit cuts is lost:
//
//   - a result over maxResultBytes: the response's result is a preview
//     (package preview: the value cut to fit, still JSON, with markers
//     naming the URI) and a RESULT_TRUNCATED warning says where the whole
//     result is;
//   - the log entry that maxLogBytes cut (or dropped) first: kept whole, and
//     the truncation warning of §3.3.1 names where;
//   - a tool result too large to enter the sandbox (over maxMemoryBytes):
//     the script's SandboxLimitError names where it is kept (its field
//     `resource`), so that the client can still read it.
//
// Without a Spill (codemode run, replay), the limits cut as before.

// Spill keeps data (of mimeType) where the run's client can read it, and
// returns its URI.
type Spill func(ctx context.Context, data []byte, mimeType string) (uri string, err error)

type spillKey struct{}

// WithSpill returns ctx whose runs keep what their limits cut through f.
func WithSpill(ctx context.Context, f Spill) context.Context {
	return context.WithValue(ctx, spillKey{}, f)
}

func spillFrom(ctx context.Context) Spill {
	f, _ := ctx.Value(spillKey{}).(Spill)
	return f
}

// maxPreviewBytes bounds a preview whatever maxResultBytes allows: a model
// reads the preview, and the client has the rest.
const maxPreviewBytes = 16 << 10

// previewBytes is the size of a result's preview: half of maxResultBytes
// (the rest of the response, its logs and diagnostics, must fit beside
// it), at most maxPreviewBytes.
func previewBytes(l config.Limits) int {
	return int(min(l.MaxResultBytes/2, maxPreviewBytes))
}

// spillOversize handles what the sandbox kept over its limits (see above).
func (r *Runner) spillOversize(ctx context.Context, resp *Response, sres *sandbox.Result, l config.Limits) {
	spill := spillFrom(ctx)
	if sres.Oversize != nil {
		full := r.redact.JSON(sres.Oversize)
		uri, err := "", error(nil)
		if spill != nil {
			uri, err = spill(ctx, full, "application/json")
		}
		if spill == nil || err != nil {
			d := diag.Diagnostic{Severity: diag.SeverityError, Code: diag.SandboxLimit, ErrorClass: diag.SandboxLimitError,
				Message: fmt.Sprintf("the result is %d bytes of JSON, more than maxResultBytes (%d)", len(full), l.MaxResultBytes),
				Hint:    "return a summary (counts, top-N, the fields you need) instead of the full data"}
			if err != nil {
				d.Message += fmt.Sprintf("; it could not be kept for reading either: %v", err)
			}
			resp.Diagnostics = append(resp.Diagnostics, d)
			resp.Result = json.RawMessage("null")
		} else {
			note := "the whole result: " + uri
			resp.Result, _ = preview.JSON(full, previewBytes(l), note)
			resp.Diagnostics = append(resp.Diagnostics, diag.Diagnostic{Severity: diag.SeverityWarning, Code: diag.ResultTruncated,
				Message: fmt.Sprintf("the result is %d bytes of JSON, more than maxResultBytes (%d): `result` is a preview of it; the whole result is the resource %s", len(full), l.MaxResultBytes, uri),
				Hint:    "the client can read the whole result with resources/read " + uri + "; to see it here, return a summary (counts, top-N, the fields you need)"})
		}
	}
	if sres.CutLog != nil && spill != nil {
		if uri, err := spill(ctx, []byte(sres.CutLog.Message), "text/plain"); err == nil && len(resp.Logs) > 0 {
			last := &resp.Logs[len(resp.Logs)-1]
			last.Message += fmt.Sprintf("; the first entry cut (%d bytes, console.%s) is kept whole as the resource %s", len(sres.CutLog.Message), sres.CutLog.Level, uri)
		}
	}
}

// spillToolResult keeps a tool result too large for the sandbox, if the
// run can; it returns where ("" if it cannot).
func (v *View) spillToolResult(ctx context.Context, out json.RawMessage) string {
	spill := spillFrom(ctx)
	if spill == nil {
		return ""
	}
	uri, err := spill(ctx, out, "application/json")
	if err != nil {
		return ""
	}
	return uri
}
