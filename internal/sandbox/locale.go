package sandbox

import (
	"github.com/codemode-mcp/codemode/internal/diag"
)

// The sandbox has no Intl, and the engine no locale data: toLocaleString,
// toLocaleDateString, localeCompare and the others format (and compare) the
// same whatever locales and options they are given. The bootstrap wraps
// them so that the first call that passes any tells the host, and the run
// carries one LOCALE_IGNORED warning instead of a silently wrong format.

// maxNoteDetail bounds what a note quotes of the script's arguments.
const maxNoteDetail = 80

func (r *run) note(kind, detail string) {
	if kind == "promise" {
		r.notePromise(detail)
		return
	}
	if kind != "locale" || r.localeNoted {
		return
	}
	r.localeNoted = true
	r.diags = append(r.diags, diag.Diagnostic{Severity: diag.SeverityWarning, Code: diag.LocaleIgnored,
		Message: r.opts.Redact.Clip(detail, maxNoteDetail) + " ignored its locales and options: the sandbox has no Intl and no locale data, so it formatted as if none were given",
		Hint:    "format by hand: toFixed(2) for decimals, String(n).padStart for widths, toISOString() for dates"})
}

// notePromise warns that the result holds a Promise, or its text: a call
// whose value was used without await (the bootstrap's notePromises).
func (r *run) notePromise(detail string) {
	r.diags = append(r.diags, diag.Diagnostic{Severity: diag.SeverityWarning, Code: diag.UnawaitedPromise,
		Message: r.opts.Redact.Clip(detail, maxNoteDetail) + ": a promise was used as a value (JSON makes it {}, text makes it \"[object Promise]\"), so that part of the result is missing",
		Hint:    "tool calls are async: put await before the call whose value you use (const r = await server.tool({...})), or await Promise.all([...]) for several"})
}
