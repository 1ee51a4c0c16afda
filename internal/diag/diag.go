// Package diag defines what a run reports when something goes wrong: the
// §3.3.3 [Diagnostic], the machine-readable codes, and the §7.1 error classes
// that agent code catches as exceptions.
//
// A failure inside a script is never a Go error of the outer call: it is a
// Diagnostic in the response (codemode-spec §3.3.4). A failure of one tool
// call is an [*Error] that the sandbox rethrows as an instance of its
// @codemode/errors class. Start with [Diagnostic] and [Error].
package diag

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Severity of a diagnostic.
type Severity string

const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

// Code is a machine-readable diagnostic code. The first four are the ones the
// spec names; the rest are ours and are documented in the run tool's
// description.
type Code string

const (
	SyntaxError       Code = "SYNTAX_ERROR"       // the script does not parse
	UncaughtException Code = "UNCAUGHT_EXCEPTION" // an exception or rejection nobody handled
	ImportFailure     Code = "IMPORT_FAILURE"     // an import that cannot be resolved
	SandboxLimit      Code = "SANDBOX_LIMIT"      // a limit of §3.2.4 (or the script size) was hit
	// ResultNotSerializable: __codemode_result__ holds something JSON cannot
	// carry (a function, a BigInt, a cycle).
	ResultNotSerializable Code = "RESULT_NOT_SERIALIZABLE"
	// Unsettled: the script awaits a promise that nothing can ever settle.
	Unsettled Code = "UNSETTLED_PROMISE"
	// CapabilityUnavailable: a requestedCapabilities entry the host cannot
	// provide (§3.2.3), reported eagerly as a warning.
	CapabilityUnavailable Code = "CAPABILITY_UNAVAILABLE"
	// UpstreamUnavailable: a server failed to start or died; the run goes on.
	UpstreamUnavailable Code = "UPSTREAM_UNAVAILABLE"
	// InvalidRequest: the request itself is malformed (no code, bad limits).
	InvalidRequest Code = "INVALID_REQUEST"
	// TimersCancelled: the script finished with timers pending, which were
	// cancelled (an info diagnostic; see sandbox).
	TimersCancelled Code = "TIMERS_CANCELLED"
	// Canceled: the caller cancelled the run (the client went away, the
	// gateway is shutting down).
	Canceled Code = "CANCELLED"
	// ReplayDiverged: a replayed script made a call other than the one
	// recorded at that position (package replay).
	ReplayDiverged Code = "REPLAY_DIVERGED"
	// InputNotValidated: the run called a tool whose inputSchema is not
	// valid JSON Schema in any draft the host knows, so its inputs went
	// to the server unchecked (a warning).
	InputNotValidated Code = "INPUT_NOT_VALIDATED"
	// LocaleIgnored: a locale-sensitive method (toLocaleString,
	// localeCompare, ...) was given locales or options, which the sandbox,
	// without Intl, ignores (a warning).
	LocaleIgnored Code = "LOCALE_IGNORED"
	// Normalized: the code was reshaped into the form the surface runs (a
	// markdown fence removed, a lone function called, a last expression
	// returned…); an info diagnostic that shows the canonical form (see
	// package normalize).
	Normalized Code = "NORMALIZED"
	// NoResult: the run succeeded with a null result although the code
	// looks like it meant to produce a value (a warning whose hint shows the
	// one-line fix).
	NoResult Code = "NO_RESULT"
	// ApprovalRequired: a call needs the user's approval and the client of
	// the run can ask for none (no elicitation, no input-required results):
	// the run stopped before the call, and nothing reached the upstream.
	ApprovalRequired Code = "APPROVAL_REQUIRED"
	// ResultTruncated: the result was larger than maxResultBytes; the
	// response carries a preview of it and the whole result is a
	// resource the client can read (a warning naming it).
	ResultTruncated Code = "RESULT_TRUNCATED"
	// UnawaitedPromise: the result holds a Promise (which JSON makes {}) or
	// the text "[object Promise]": a tool call whose value was used
	// without await (a warning).
	UnawaitedPromise Code = "UNAWAITED_PROMISE"
)

// Diagnostic is one entry of the response's `diagnostics` (§3.3.3).
type Diagnostic struct {
	Severity Severity `json:"severity"`
	Code     Code     `json:"code"`
	Message  string   `json:"message"`
	// Hint is one corrective action.
	Hint string `json:"hint,omitempty"`
	// Path is a source location ("script.ts:3:7") or a JSON Pointer.
	Path string `json:"path,omitempty"`
	// ErrorClass is the @codemode/errors class, when one applies.
	ErrorClass Class `json:"errorClass,omitempty"`
	// Limit names, on a SANDBOX_LIMIT diagnostic, the limit that was
	// reached when it is known: a §3.2.4 limit ("timeoutMs",
	// "maxMemoryBytes", "maxToolCalls", "maxResultBytes", "maxLogBytes"),
	// or one of the gateway's own, "concurrency" (too many runs at once)
	// and "memoryBudget" (the gateway's memory is taken), which a retry
	// later may not hit.
	Limit string `json:"limit,omitempty"`
}

// Class names a §7.1 error class.
type Class string

const (
	CodemodeError         Class = "CodemodeError"
	SchemaValidationError Class = "SchemaValidationError"
	ToolNotFoundError     Class = "ToolNotFoundError"
	ServerNotFoundError   Class = "ServerNotFoundError"
	ToolCallError         Class = "ToolCallError"
	AuthenticationError   Class = "AuthenticationError"
	SandboxLimitError     Class = "SandboxLimitError"
	// ApprovalDeniedError: the user declined a call that needed approval;
	// the upstream never saw it.
	ApprovalDeniedError Class = "ApprovalDeniedError"
)

// Classes lists the subclasses of CodemodeError in declaration order.
var Classes = []Class{SchemaValidationError, ToolNotFoundError, ServerNotFoundError, ToolCallError, AuthenticationError, SandboxLimitError, ApprovalDeniedError}

// Error is a failure the sandbox throws into agent code as an instance of
// Class. Fields are extra own properties of that instance (toolName, path,
// …), all plain JSON data.
type Error struct {
	Class   Class
	Message string
	Hint    string
	Fields  map[string]any
}

func (e *Error) Error() string {
	if e.Hint == "" {
		return fmt.Sprintf("%s: %s", e.Class, e.Message)
	}
	return fmt.Sprintf("%s: %s (hint: %s)", e.Class, e.Message, e.Hint)
}

// Errorf builds an Error of class c whose message is formatted as by
// fmt.Sprintf. Add the hint and fields by name, so that no two strings can
// be swapped:
//
//	diag.Errorf(diag.ToolNotFoundError, "no tool %q", name).WithHint("use getTool").WithFields(map[string]any{"serverId": id})
func Errorf(c Class, format string, args ...any) *Error {
	return &Error{Class: c, Message: fmt.Sprintf(format, args...)}
}

// WithHint sets e's hint and returns e.
func (e *Error) WithHint(hint string) *Error {
	e.Hint = hint
	return e
}

// WithFields sets e's fields (the error class's properties in the sandbox,
// such as serverId) and returns e.
func (e *Error) WithFields(fields map[string]any) *Error {
	e.Fields = fields
	return e
}

// ListHint renders a "did you mean"-free list of what exists, for hints such
// as "available servers: a, b, c". Long lists are cut with a count.
func ListHint(what string, items []string, max int) string {
	if len(items) == 0 {
		return "there are no " + what
	}
	if max > 0 && len(items) > max {
		return fmt.Sprintf("available %s: %s, … (%d more)", what, strings.Join(items[:max], ", "), len(items)-max)
	}
	return "available " + what + ": " + strings.Join(items, ", ")
}

// Distance is the Levenshtein distance between a and b, for "did you mean"
// suggestions.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// MaxMessageBytes bounds the message of one diagnostic. A script can throw
// an Error whose message is megabytes long; the response must stay small
// whatever it throws.
const MaxMessageBytes = 4096

// Cut cuts s to at most n bytes without splitting a UTF-8 character.
//
// It knows nothing of secrets: text bound for the model is clipped by
// redact.Redactor (Clip, Cut, Tail), which redacts before it cuts (a secret
// cut in two would escape redaction). Cut is for the rest (configuration
// errors, log lines) and for package redact itself; a test in package redact
// keeps it that way.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
