package run

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/naming"
	"github.com/codemode-mcp/codemode/internal/normalize"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// serverError explains why server id cannot be used, as the error agent
// code sees: ServerNotFoundError for an unknown id (listing the known ones),
// AuthenticationError for rejected credentials, ServerNotFoundError with the
// upstream's reason (and stderr tail) for a server that is configured but
// not connected.
func serverError(id string, err error, known, disabled []string) *diag.Error {
	if errors.Is(err, catalog.ErrUnknownServer) || errors.Is(err, upstream.ErrUnknownServer) {
		for _, key := range disabled {
			if naming.NormalizeServerID(key) == id {
				return &diag.Error{Class: diag.ServerNotFoundError, Message: fmt.Sprintf("server %q is disabled in the gateway's configuration", id),
					Hint:   fmt.Sprintf(`the operator must remove "disabled": true from mcpServers.%s to use it; %s`, key, diag.ListHint("server ids", known, 30)),
					Fields: map[string]any{"serverId": id, "available": nonNil(known)}}
			}
		}
		return &diag.Error{Class: diag.ServerNotFoundError, Message: fmt.Sprintf("there is no server %q", id),
			Hint: closestHint(id, known, "server ids"), Fields: map[string]any{"serverId": id, "available": nonNil(known)}}
	}
	if errors.Is(err, upstream.Auth) {
		return &diag.Error{Class: diag.AuthenticationError, Message: err.Error(), Hint: upstreamHint(err, "the gateway's credentials for this server were rejected; the operator must fix its headers or env in the config"),
			Fields: map[string]any{"serverId": id}}
	}
	var slow *stillStarting
	if errors.As(err, &slow) {
		return &diag.Error{Class: diag.ServerNotFoundError, Message: slow.Error(),
			Hint:   "catch the error and go on without this server, or retry in a later run; listServers() from @codemode/discovery shows when it is connected",
			Fields: map[string]any{"serverId": id, "available": nonNil(known)}}
	}
	return &diag.Error{Class: diag.ServerNotFoundError, Message: fmt.Sprintf("server %q is not connected: %s", id, err.Error()),
		Hint:   upstreamHint(err, "use another server, or retry later"),
		Fields: map[string]any{"serverId": id, "available": nonNil(known)}}
}

// callError maps a failed tool call to the class agent code catches.
func callError(ctx context.Context, serverID, tool string, err error) *diag.Error {
	fields := map[string]any{"serverId": serverID, "toolName": tool}
	switch {
	case errors.Is(err, upstream.Auth):
		return &diag.Error{Class: diag.AuthenticationError, Message: err.Error(), Fields: fields,
			Hint: upstreamHint(err, "the server rejected the gateway's credentials; the operator must fix them in the config")}
	case errors.Is(err, upstream.Canceled) || ctx.Err() != nil:
		return &diag.Error{Class: diag.ToolCallError, Message: fmt.Sprintf("call to %s/%s was cancelled: the run ended first", serverID, tool), Fields: fields,
			Hint: "await every tool call before the script ends, or raise limits.timeoutMs"}
	case errors.Is(err, upstream.Timeout):
		return &diag.Error{Class: diag.ToolCallError, Message: err.Error(), Fields: fields,
			Hint: upstreamHint(err, "the tool took too long; ask for less at once (smaller page, narrower query)")}
	case errors.Is(err, upstream.ErrUnknownServer):
		return serverError(serverID, err, nil, nil)
	}
	return &diag.Error{Class: diag.ToolCallError, Message: err.Error(), Fields: fields,
		Hint: upstreamHint(err, "check the input against getTool(serverId, toolName), or try again if the server was restarting")}
}

func upstreamHint(err error, fallback string) string {
	var ue *upstream.Error
	if errors.As(err, &ue) && ue.Hint != "" {
		return ue.Hint
	}
	return fallback
}

// closestHint lists what exists, nearest names first, for "not found" hints.
func closestHint(name string, known []string, what string) string {
	if len(known) == 0 {
		return "there are no " + what + " at all: check the gateway's configuration"
	}
	sorted := append([]string(nil), known...)
	lname := strings.ToLower(name)
	sort.SliceStable(sorted, func(i, j int) bool {
		return diag.Distance(lname, strings.ToLower(sorted[i])) < diag.Distance(lname, strings.ToLower(sorted[j]))
	})
	if d := diag.Distance(lname, strings.ToLower(sorted[0])); d <= max(2, len(name)/3) {
		return fmt.Sprintf("did you mean %q? %s", sorted[0], diag.ListHint(what, known, 30))
	}
	return diag.ListHint(what, known, 30)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// ClosestHint lists the known names nearest to name first ("did you mean
// …?"), for hints about a name that does not exist.
func ClosestHint(name string, known []string, what string) string {
	return closestHint(name, known, what)
}

// nodeModules are Node.js names agents reach for; each has an equivalent
// through an MCP server, if the gateway has one.
var nodeNames = map[string]bool{"require": true, "fs": true, "path": true, "process": true, "__dirname": true,
	"__filename": true, "Buffer": true, "module": true, "exports": true, "child_process": true, "os": true}

// UnwrapHint explains a read of an MCP result's content of a tool call's
// value, which is unwrapped (a surface whose calls return MCP results, as
// emceepee's mcp.callTool does, replaces it).
const UnwrapHint = "tool results are unwrapped: a single text block is the string itself, structured content the object itself; use the value directly instead of .content[0].text (and JSON.parse only a string that holds JSON)"

// absentNames are browser globals agents reach for that the sandbox does not
// have (§3.2.1), and why; the hint then names the servers, through whose
// MCP tools the outside world is reached.
var absentNames = map[string]string{
	"fetch": "the sandbox has no network access; use the MCP tools of the connected servers instead", "XMLHttpRequest": "the sandbox has no network access; use the MCP tools of the connected servers instead",
	"WebSocket": "the sandbox has no network access; use the MCP tools of the connected servers instead", "axios": "the sandbox has no network access or npm packages; use the MCP tools of the connected servers instead",
	"window": "there is no browser (globalThis is the global object); the outside world is reached through the MCP tools of the connected servers", "document": "there is no browser or DOM; the outside world is reached through the MCP tools of the connected servers",
	"localStorage": "there is no browser storage; state lasts between runs only in a server (the built-in store server, if configured)",
}

// toolClasses are the error classes of a failed tool call.
var toolClasses = map[diag.Class]bool{diag.ToolCallError: true, diag.SchemaValidationError: true, diag.ToolNotFoundError: true,
	diag.ServerNotFoundError: true, diag.AuthenticationError: true}

// consoleMethods lists the console's methods, for a hint.
const consoleMethods = "console has log, info, debug, warn, error, trace and table"

// betterHint names the real fix where the engine's error only says what
// went wrong: a Node.js name (fs, require) or a relative import, where
// a server module is the way; a tool call's rejection that nothing
// handled, where an `await` is missing; a call of something that is not a
// function, where the callee says what was meant.
func (v *View) betterHint(ctx context.Context, d diag.Diagnostic, prep *normalize.Prepared) diag.Diagnostic {
	msg := sandboxErrorText(d.Message)
	switch {
	case d.Code == diag.UncaughtException && strings.HasPrefix(msg, "ReferenceError: '"):
		name, _, _ := strings.Cut(strings.TrimPrefix(msg, "ReferenceError: '"), "'")
		if name == "module" || name == "exports" {
			d.Hint = "module.exports is CommonJS, which the sandbox does not have: return the value instead (export default works too)"
		} else if nodeNames[name] {
			d.Hint = name + " is Node.js; the sandbox has no file system or Node modules. " + v.serverFor(name)
		} else if why, ok := absentNames[name]; ok {
			d.Hint = name + " is not available: " + why + "; " + v.serverFor(name)
		} else if name == "setInterval" {
			d.Hint = "setInterval is not available (polling loops are discouraged); repeat in a loop that waits: while (!done) { ...; await new Promise((r) => setTimeout(r, ms)); }"
		}
	case (d.Code == diag.ImportFailure || d.Code == diag.UncaughtException) && strings.Contains(msg, "module") &&
		(strings.Contains(msg, `"./`) || strings.Contains(msg, `"../`) || strings.Contains(msg, `'./`) || strings.Contains(msg, `'../`)):
		d.Hint = "import servers by module name, not by path: " + v.serverFor(relativeName(msg))
	case strings.HasPrefix(d.Message, "unhandled promise rejection: ") && toolClasses[d.ErrorClass]:
		at := ""
		if d.Path != "" {
			at = " at " + d.Path
		}
		d.Hint = "the tool call" + at + " was not awaited, so no try/catch saw it fail: put `await` before the call (or handle it with .catch())"
	case d.Code == diag.UncaughtException && strings.HasSuffix(msg, "not a function"):
		d.Hint = notAFunctionHint(ctx, d, prep)
	case d.Code == diag.UncaughtException && strings.HasPrefix(msg, "TypeError: cannot read property") && prep != nil && d.Path != "" &&
		slices.Contains(prep.ReadsAt(ctx, pathLine(d.Path)), "content"):
		// result.content[0].text: the MCP envelope, which the server
		// modules' tool functions unwrap.
		d.Hint = UnwrapHint
	case d.Code == diag.UncaughtException && strings.HasPrefix(msg, "TypeError: cannot read property") && prep != nil && d.Path != "":
		// r.items.length, r a tool call's promise (r.items is undefined).
		if u := prep.Unawaited(ctx, pathLine(d.Path)); u != nil {
			d.Hint = u.Message + ": " + u.Hint
		}
	}
	return d
}

// sandboxErrorText strips the run's prefixes from an error message
// ("unhandled promise rejection: Uncaught TypeError: …").
func sandboxErrorText(m string) string {
	for _, p := range []string{"unhandled promise rejection: ", "in a setTimeout callback: ", "Uncaught "} {
		m = strings.TrimPrefix(m, p)
	}
	return m
}

// serverFor says which server module replaces a Node.js name or a relative
// import ("./servers/filesystem").
func (v *View) serverFor(name string) string {
	ids := v.cat.IDs()
	want := ""
	for _, id := range ids {
		if id == name || strings.Contains(id, "filesystem") && (name == "fs" || name == "require" || name == "path" || name == "__dirname" || name == "__filename" || name == "filesystem") {
			want = id
			break
		}
	}
	if want != "" {
		return fmt.Sprintf(`use the %q server: import * as %s from "@codemode/servers/%s" (or await import("@codemode/servers/%s"))`, want, jsName(want), want, want)
	}
	if name == "fs" || name == "require" || name == "path" || name == "__dirname" || name == "__filename" {
		return `files are reached through a filesystem MCP server: import * as fs from "@codemode/servers/filesystem" if one is configured (` + diag.ListHint("servers", ids, 20) + ")"
	}
	return `import "@codemode/servers/<serverId>" (` + diag.ListHint("servers", ids, 20) + ")"
}

// relativeName is the last path segment of the module an import failure
// names ("./servers/filesystem" → "filesystem").
func relativeName(msg string) string {
	for _, q := range []string{`"`, `'`} {
		if i := strings.Index(msg, q+"."); i >= 0 {
			rest := msg[i+1:]
			if j := strings.Index(rest, q); j >= 0 {
				rest = rest[:j]
			}
			rest = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(rest, ".js"), ".ts"), "/index")
			return rest[strings.LastIndexByte(rest, '/')+1:]
		}
	}
	return ""
}

// jsName is id as a JavaScript identifier.
func jsName(id string) string {
	var b strings.Builder
	for i, c := range id {
		if c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// builtinObjects are globals whose methods are no tools.
var builtinObjects = map[string]bool{"Math": true, "JSON": true, "Object": true, "Array": true, "String": true, "Number": true,
	"Promise": true, "Date": true, "Reflect": true, "URL": true, "Symbol": true, "BigInt": true, "Boolean": true, "RegExp": true, "Map": true, "Set": true}

// notAFunctionHint explains "not a function" by the call at the error's
// line: QuickJS does not name the callee.
func notAFunctionHint(ctx context.Context, d diag.Diagnostic, prep *normalize.Prepared) string {
	const exportHint = "if it is a tool, check its export name: see the server module's __meta__.tools, or listTools(serverId) from @codemode/discovery"
	if prep == nil || d.Path == "" {
		return exportHint
	}
	line := pathLine(d.Path)
	for _, c := range prep.Calls(ctx) {
		if c.Line != line {
			continue
		}
		switch {
		case c.Object == "console":
			return consoleMethods + "; console." + c.Member + " is not one of them"
		case builtinObjects[c.Object]:
			return c.Object + "." + c.Member + " is not a function in this sandbox; check the method's name"
		}
	}
	return exportHint
}

// pathLine is the line of a "file:line:col" path, or 0.
func pathLine(p string) int {
	i := strings.LastIndexByte(p, ':')
	if i < 0 {
		return 0
	}
	j := strings.LastIndexByte(p[:i], ':')
	if j < 0 {
		return 0
	}
	n, _ := strconv.Atoi(p[j+1 : i])
	return n
}
