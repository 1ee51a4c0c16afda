package run

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/codemode-mcp/codemode/internal/config"
)

// Redacted replaces a configured secret wherever it would reach the model.
const Redacted = "[REDACTED]"

// redactor removes the configured secrets (config.Server.Secrets) from
// text. Credentials stay server-side: an upstream that echoes its token in
// an error, a stderr tail quoting an API key, a tool like server-everything's
// get-env that returns its environment, none of them reach the model as
// they are. It is a last line of defence, not a guarantee: a script can
// still transform a secret (split it, base64 it) before returning it.
type redactor struct {
	r *strings.Replacer // nil when there is nothing to redact
}

func newRedactor(servers []config.Server) redactor {
	seen := map[string]bool{}
	var secrets []string
	for _, s := range servers {
		for _, v := range s.Secrets {
			// Also the form the value takes inside a JSON string.
			b, _ := json.Marshal(v)
			for _, form := range []string{v, string(b[1 : len(b)-1])} {
				if !seen[form] {
					seen[form] = true
					secrets = append(secrets, form)
				}
			}
		}
	}
	if len(secrets) == 0 {
		return redactor{}
	}
	// Longest first, so that a secret containing another is replaced whole.
	sort.Slice(secrets, func(i, j int) bool { return len(secrets[i]) > len(secrets[j]) })
	var pairs []string
	for _, s := range secrets {
		pairs = append(pairs, s, Redacted)
	}
	return redactor{strings.NewReplacer(pairs...)}
}

func (d redactor) String(s string) string {
	if d.r == nil {
		return s
	}
	return d.r.Replace(s)
}

// response redacts every string of a response in place.
func (d redactor) response(resp *Response) {
	if d.r == nil {
		return
	}
	for i := range resp.Logs {
		resp.Logs[i].Message = d.String(resp.Logs[i].Message)
	}
	resp.Result = json.RawMessage(d.String(string(resp.Result)))
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
