package run

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"slices"
	"time"

	"github.com/codemode-mcp/codemode/internal/diag"
)

// The audit line: every run logs one record at Info level ("run"), so that
// an operator can see what agents did without a debugger: which code (a
// hash, never the text), how long, how many tool calls and how many failed,
// which servers, and the first error's code. It never carries the code,
// inputs, outputs or messages, which may hold data the operator must not
// keep. Every policy decision is there too: how many calls ran without
// asking, and each call the user granted or denied or a dry run held back
// (server/tool, never its arguments); a run waiting for the client's
// answer says how many calls it asked about. The serving layer adds the MCP session and the tool called through
// WithLogAttrs.

type logAttrsKey struct{}

// WithLogAttrs returns a ctx whose runs add attrs to their audit line.
func WithLogAttrs(ctx context.Context, attrs ...slog.Attr) context.Context {
	prev, _ := ctx.Value(logAttrsKey{}).([]slog.Attr)
	return context.WithValue(ctx, logAttrsKey{}, append(slices.Clip(prev), attrs...))
}

func (r *Runner) audit(ctx context.Context, req Request, resp *Response, took time.Duration) {
	log := r.opts.Logger
	if !log.Enabled(ctx, slog.LevelInfo) {
		return
	}
	sum := sha256.Sum256([]byte(req.Code))
	failed, auto := 0, 0
	var decided []string
	for _, e := range resp.ToolTrace {
		if !e.OK {
			failed++
		}
		switch e.Approval {
		case "":
		case ApprovalAuto:
			auto++
		default:
			decided = append(decided, e.ServerID+"/"+e.ToolName+"="+e.Approval)
		}
	}
	attrs, _ := ctx.Value(logAttrsKey{}).([]slog.Attr)
	attrs = append(slices.Clip(attrs),
		slog.String("code_sha256", hex.EncodeToString(sum[:8])),
		slog.Int("code_bytes", len(req.Code)),
		slog.Bool("ok", !resp.Failed()),
		slog.Duration("took", took),
		slog.Int("tool_calls", len(resp.ToolTrace)),
		slog.Int("failed_calls", failed))
	for _, d := range resp.Diagnostics {
		if d.Severity == diag.SeverityError {
			attrs = append(attrs, slog.String("error", string(d.Code)))
			break
		}
	}
	if resp.runID != "" {
		attrs = append(attrs, slog.String("run", resp.runID))
	}
	if len(resp.used) > 0 {
		attrs = append(attrs, slog.Any("servers", resp.used))
	}
	if auto > 0 || len(decided) > 0 {
		attrs = append(attrs, slog.Int("approval_auto", auto))
	}
	if len(decided) > 0 {
		attrs = append(attrs, slog.Any("approvals", decided))
	}
	if resp.awaiting > 0 {
		attrs = append(attrs, slog.Int("awaiting_approval", resp.awaiting))
	}
	log.LogAttrs(ctx, slog.LevelInfo, "run", attrs...)
}
