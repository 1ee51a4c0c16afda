package run

import (
	"github.com/codemode-mcp/codemode/internal/redact"
)

// Redacted replaces a configured secret wherever it would reach the model.
const Redacted = redact.Marker

// redactResponse removes the configured secrets from every string of a
// response, in place. It is the last line of defence: what upstreams send
// is redacted by the upstream manager before a script sees it, and the
// sandbox redacts logs and diagnostics before it clips them; this catches
// whatever a script assembled from parts (a secret written into its code,
// say) and texts the run layer wrote itself.
func (r *Runner) redactResponse(resp *Response) {
	d := r.redact
	if d.Empty() {
		return
	}
	for i := range resp.Logs {
		resp.Logs[i].Message = d.String(resp.Logs[i].Message)
	}
	resp.Result = d.JSON(resp.Result)
	for i := range resp.Diagnostics {
		x := &resp.Diagnostics[i]
		x.Message, x.Hint, x.Path = d.String(x.Message), d.String(x.Hint), d.String(x.Path)
	}
	for i := range resp.ToolTrace {
		resp.ToolTrace[i].Error = d.String(resp.ToolTrace[i].Error)
	}
}

// Redact removes configured secrets from text that leaves the gateway by
// another path than a run's response (status listings, say).
func (r *Runner) Redact(s string) string { return r.redact.String(s) }

// Redactor returns the runner's redactor (nil when no secret is
// configured), for the serving layer's own texts.
func (r *Runner) Redactor() *redact.Redactor { return r.redact }
