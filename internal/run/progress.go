package run

import (
	"context"

	"github.com/codemode-mcp/codemode/internal/progress"
	"github.com/codemode-mcp/codemode/internal/sandbox"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// Progress: when the serving layer put a progress.Reporter in the run's
// context (the client asked for progress), each tool call reports its start
// and end, the upstream's own progress during the call, and every console
// line as the script writes it. Without one, nothing here costs anything.

// callProgress reports the start of a call of tool on serverID and returns
// the context to call it with (the upstream's notifications/progress go to
// the reporter) and the function that reports its end.
func callProgress(ctx context.Context, serverID, tool string) (context.Context, func(ok bool)) {
	r := progress.From(ctx)
	if r == nil {
		return ctx, func(bool) {}
	}
	c := r.CallStarted(serverID, tool)
	return upstream.WithProgress(ctx, c.Upstream), c.End
}

// logProgress is the sandbox's OnLog for a run whose client asked for
// progress, or nil.
func logProgress(ctx context.Context) func(sandbox.LogEntry) {
	r := progress.From(ctx)
	if r == nil {
		return nil
	}
	return func(e sandbox.LogEntry) { r.Log(string(e.Level), e.Message) }
}
