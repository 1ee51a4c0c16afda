package serve

import (
	"fmt"

	"github.com/codemode-mcp/codemode/internal/config"
)

// The texts in this file are what the model reads about the sandbox. They
// document what codemode-spec requires a host to document: the language
// level (§3.2.1), capability identifiers (§3.2.3), limit keys (§3.2.4), the
// globals and deviations (§3.5) and the unwrapping rules (§5.3.2). Every
// word costs tokens on every turn of every conversation: keep them short.

// instructions are the server's instructions: what codemode is, then what
// each surface adds (see Instructor).
func (s *Server) instructions() string {
	text := "codemode runs your JavaScript/TypeScript in a sandbox where the tools of the connected MCP servers are async functions. " +
		"Write one script that calls several tools, filters and combines their data, and returns only what you need; " +
		"the tool descriptions document the API."
	for _, sf := range s.surfaces {
		if in, ok := sf.Surface.(Instructor); ok {
			if extra := in.Instructions(); extra != "" {
				text += " " + extra
			}
		}
	}
	return text
}

// sandboxDoc describes the language and globals, shared by every surface
// that runs code.
const sandboxDoc = `Sandbox: ES2023, TypeScript types stripped. Globals: standard built-ins, console.log/debug/info/warn/error, setTimeout/clearTimeout, URL, URLSearchParams, TextEncoder/TextDecoder. Absent: fetch/network, setInterval, require, process, eval, new Function, SharedArrayBuffer, Atomics, WeakRef. console.log(error) prints "Name: message". Fresh sandbox per call; pending timers are cancelled at the end.`

// unwrapDoc is §5.3.2.
const unwrapDoc = `A tool returns its structuredContent, else its one text block as a string, else the MCP result ({content:[...]}; images, audio as base64).`

const errorsDoc = `Failed calls throw, with .hint, a class from "@codemode/errors": SchemaValidationError (bad input; .path .expected .received .example), ToolCallError, ToolNotFoundError, ServerNotFoundError, AuthenticationError, SandboxLimitError.`

// approvalDoc tells the model about the tool policy; it is in the run tools'
// descriptions only when the configuration makes some tool need approval.
const approvalDoc = `Tools marked @requiresApproval (requiresApproval) ask the user before they run: issue such calls together (one Promise.all) so that one question covers them all; a declined call throws ApprovalDeniedError: do not retry it.`

// policyDoc is approvalDoc and a line break when c may ask for approvals,
// else "".
func policyDoc(c *config.Config) string {
	if !c.ApprovalPossible() {
		return ""
	}
	return approvalDoc + "\n"
}

func limitsDoc(c *config.Config) string {
	d, m := c.DefaultLimits, c.MaxLimits
	return fmt.Sprintf("limits (default/max): timeoutMs %d/%d, maxMemoryBytes %s/%s, maxLogBytes %s/%s, maxToolCalls %d/%d, maxResultBytes %s/%s; other keys ignored.",
		d.TimeoutMs, m.TimeoutMs, size(d.MaxMemoryBytes), size(m.MaxMemoryBytes), size(d.MaxLogBytes), size(m.MaxLogBytes),
		d.MaxToolCalls, m.MaxToolCalls, size(d.MaxResultBytes), size(m.MaxResultBytes))
}

func size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprint(n)
}
