package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/codemode-mcp/codemode/internal/diag"
	"modernc.org/quickjs"
)

// This file turns every way a run can end badly into diagnostics. The first
// fatal diagnostic wins: once r.failed is set the run stops and its result
// is null (§3.3.4).

// What a diagnostic's message puts before the error's own "Name: message",
// outermost first: where the error escaped, then that it was uncaught.
// ErrorText takes them off again.
const (
	prefixUnhandled = "unhandled promise rejection: "
	prefixTimer     = "in a setTimeout callback: "
	prefixResult    = "reading the result: "
	prefixUncaught  = "Uncaught "
)

// ErrorText returns the error's own text ("TypeError: boom") from the
// message of a diagnostic this package wrote.
func ErrorText(message string) string {
	for _, p := range []string{prefixUnhandled, prefixTimer, prefixResult, prefixUncaught} {
		message = strings.TrimPrefix(message, p)
	}
	return message
}

func defaultPosition(line, col int) string {
	return "script.js:" + strconv.Itoa(line) + ":" + strconv.Itoa(col)
}

func (r *run) fatal(d diag.Diagnostic) {
	if r.failed {
		return
	}
	r.failed = true
	// The redactor clips: it removes the secrets before it cuts.
	d.Message = r.opts.Redact.Clip(d.Message, diag.MaxMessageBytes)
	d.Hint = r.opts.Redact.Clip(d.Hint, diag.MaxMessageBytes)
	d.Path = r.opts.Redact.Clip(d.Path, 256)
	r.diags = append(r.diags, d)
}

func (r *run) timeout() {
	r.res.TimedOut = true
	r.fatal(r.timeoutDiagnostic())
}

func (r *run) timeoutDiagnostic() diag.Diagnostic {
	return diag.Diagnostic{Severity: diag.SeverityError, Code: diag.SandboxLimit, ErrorClass: diag.SandboxLimitError,
		Message: fmt.Sprintf("the script was stopped after timeoutMs (%d ms)", r.opts.Limits.Timeout/time.Millisecond),
		Hint:    "do less per run: run independent tool calls concurrently with Promise.all, or split the work across runs"}
}

func (r *run) outOfMemory() {
	r.res.OutOfMemory = true
	r.fatal(diag.Diagnostic{Severity: diag.SeverityError, Code: diag.SandboxLimit, ErrorClass: diag.SandboxLimitError,
		Message: fmt.Sprintf("the script ran out of memory (maxMemoryBytes is %d)", r.opts.Limits.MaxMemoryBytes),
		Hint:    "keep less data alive: filter and aggregate tool results as they arrive instead of collecting them all"})
}

func (r *run) canceled() {
	r.res.Canceled = true
	r.fatal(canceledDiagnostic)
}

var canceledDiagnostic = diag.Diagnostic{Severity: diag.SeverityError, Code: diag.Canceled,
	Message: "the run was cancelled before it finished",
	Hint:    "run the script again if its result is still needed"}

// vmLimit reports, as SANDBOX_LIMIT, a limit the engine hit that ends the
// run whatever the script did about the error it saw: memory (memlimit.go)
// or a guarded built-in (guard.go). It reports whether there was one.
func (r *run) vmLimit() bool {
	if r.vm == nil {
		return false
	}
	if r.vm.memoryExhausted() {
		r.outOfMemory()
		return true
	}
	if tl := r.vm.tooLong(); tl != nil {
		r.res.TooLong = true
		r.fatal(diag.Diagnostic{Severity: diag.SeverityError, Code: diag.SandboxLimit, ErrorClass: diag.SandboxLimitError,
			Message: fmt.Sprintf("Array.prototype.%s was called on %d elements; the sandbox allows %d (as many as an array within maxMemoryBytes, %d bytes, can hold): on a sparse array or an array-like object the engine visits every index and cannot be interrupted meanwhile",
				tl.method, tl.length, tl.max, r.opts.Limits.MaxMemoryBytes),
			Hint: "keep sparse data in a Map or an object and iterate its keys; call array methods on real arrays"})
		return true
	}
	return false
}

// interrupted classifies an engine interrupt: our deadline, the caller's
// cancellation, or (for errDeadline) a deadline seen before entering.
func (r *run) interrupted() {
	if r.vmLimit() {
		return // the engine's own interrupt
	}
	if r.ctx.Err() != nil && time.Now().Before(r.deadline) {
		r.canceled()
		return
	}
	r.timeout()
}

// stopped reports whether the run was cancelled or ran out of time. Once it
// has, whatever the engine reports next (an interrupted evaluation can
// surface as "promise is pending" or worse) is the interruption's doing.
func (r *run) stopped() bool {
	return r.ctx.Err() != nil || !time.Now().Before(r.deadline)
}

func isInterrupt(err error) bool {
	if errors.Is(err, errDeadline) {
		return true
	}
	var qe *quickjs.Error
	return errors.As(err, &qe) && qe.Name == "InternalError" && qe.Message == "interrupted"
}

func isOOM(name, message string) bool {
	return name == "InternalError" && message == "out of memory"
}

// evalFailure handles an error from compiling or linking the agent module.
func (r *run) evalFailure(err error) {
	if isInterrupt(err) || r.stopped() || r.vmLimit() {
		r.interrupted()
		return
	}
	var qe *quickjs.Error
	if !errors.As(err, &qe) {
		r.fatal(diag.Diagnostic{Severity: diag.SeverityError, Code: diag.UncaughtException, Message: err.Error()})
		return
	}
	switch {
	case isOOM(qe.Name, qe.Message) || qe.Name == "" && qe.Message == "" && r.vm.outOfMemory():
		r.outOfMemory()
	case len(r.importErrs) > 0:
		r.importFailure(r.importErrs[len(r.importErrs)-1], "")
	case qe.Name == "TypeError" && strings.HasPrefix(qe.Message, "module "):
		// Refused by normalize (not a @codemode module, or internal).
		r.fatal(diag.Diagnostic{Severity: diag.SeverityError, Code: diag.ImportFailure, Message: qe.Message,
			Hint: "import only @codemode/discovery, @codemode/errors and @codemode/servers/<serverId>"})
	case qe.Name == "SyntaxError" && strings.HasPrefix(qe.Message, "Could not find export"):
		r.fatal(diag.Diagnostic{Severity: diag.SeverityError, Code: diag.ImportFailure, Message: qe.Message,
			Hint: `tool exports are the tool names with illegal characters replaced by "_" (get-sum → get_sum); list them with listTools(serverId, { detail: "name" }) from @codemode/discovery`})
	case qe.Name == "SyntaxError":
		d := diag.Diagnostic{Severity: diag.SeverityError, Code: diag.SyntaxError, Message: "SyntaxError: " + qe.Message,
			Hint: "fix the syntax at this position"}
		if qe.LineNumber > 0 {
			d.Path = r.opts.Position(qe.LineNumber, qe.ColumnNumber)
		}
		r.fatal(d)
	default:
		r.fatal(diag.Diagnostic{Severity: diag.SeverityError, Code: diag.UncaughtException, Message: qe.Name + ": " + qe.Message,
			Path: r.stackPath(qe.Stack)})
	}
}

func (r *run) importFailure(err error, prefix string) {
	de := importInfo(err)
	d := diag.Diagnostic{Severity: diag.SeverityError, Code: diag.ImportFailure, Message: prefix + de.Message, Hint: de.Hint}
	if de.Class != diag.CodemodeError {
		d.ErrorClass = de.Class
	}
	r.fatal(d)
}

// engineFailure handles an error from a later entry into the engine: running
// jobs, settling a promise, firing a timer.
func (r *run) engineFailure(err error, prefix string) {
	if isInterrupt(err) || r.stopped() || r.vmLimit() {
		r.interrupted()
		return
	}
	var qe *quickjs.Error
	if errors.As(err, &qe) {
		if isOOM(qe.Name, qe.Message) || qe.Name == "" && r.vm.outOfMemory() {
			r.outOfMemory()
			return
		}
		if qe.Name == "InternalError" && qe.Message == "stack overflow" {
			r.fatal(diag.Diagnostic{Severity: diag.SeverityError, Code: diag.UncaughtException, Message: prefix + "InternalError: stack overflow",
				Hint: "the recursion is too deep; use a loop or an explicit stack", Path: r.stackPath(qe.Stack)})
			return
		}
		r.fatal(diag.Diagnostic{Severity: diag.SeverityError, Code: diag.UncaughtException, Message: prefix + qe.Name + ": " + qe.Message,
			Hint: "catch the exception or fix its cause", Path: r.stackPath(qe.Stack)})
		return
	}
	r.fatal(diag.Diagnostic{Severity: diag.SeverityError, Code: diag.UncaughtException, Message: prefix + err.Error()})
}

// uncaught reports an exception that ended the module, or a rejection that
// no handler took.
func (r *run) uncaught(d described, prefix string) {
	if r.vmLimit() {
		return
	}
	// Out of memory, also when memory was too full for the engine to build
	// the error (no name, no message, or a null exception).
	if isOOM(d.Name, d.Message) || d.Name == "" && (d.Message == "" || d.Message == "null") && r.vm.outOfMemory() {
		r.outOfMemory()
		return
	}
	if d.Name == "InternalError" && d.Message == "interrupted" || r.stopped() {
		r.interrupted()
		return
	}
	// The error a failed import threw (vm.go failingModule), from a static
	// import or from an `await import()` that nothing caught.
	for _, ie := range r.importErrs {
		if de := importInfo(ie); d.ErrorClass == string(de.Class) && d.Message == de.Message {
			r.importFailure(ie, prefix)
			return
		}
	}
	text := d.Message
	if d.Name != "" {
		text = d.Name + ": " + d.Message
	}
	out := diag.Diagnostic{Severity: diag.SeverityError, Code: diag.UncaughtException, Message: prefix + prefixUncaught + text,
		Path: r.stackPath(d.Stack), ErrorClass: diag.Class(d.ErrorClass)}
	switch {
	case d.HostLimit:
		out.Code = diag.SandboxLimit
		out.Hint = d.Hint
	case d.ErrorClass != "":
		out.Hint = d.Hint
	case !d.IsError:
		out.Hint = "throw Error objects, and catch what you do not want to end the script"
	default:
		out.Hint = "catch the exception (try/catch around the await) or fix its cause"
	}
	if out.Hint == "" {
		out.Hint = "catch the exception or fix its cause"
	}
	r.fatal(out)
}

// stackPath returns the agent-source location of the innermost frame of the
// agent module in an engine stack trace ("    at f (<agent>:3:7)"), or "".
func (r *run) stackPath(stack string) string {
	const marker = agentSpecifier + ":"
	for _, line := range strings.Split(stack, "\n") {
		i := strings.Index(line, marker)
		if i < 0 {
			continue
		}
		rest := line[i+len(marker):]
		ln, rest, ok := leadingInt(rest)
		if !ok {
			continue
		}
		col := 1
		if strings.HasPrefix(rest, ":") {
			if c, _, ok := leadingInt(rest[1:]); ok {
				col = c
			}
		}
		return r.opts.Position(ln, col)
	}
	return ""
}

func leadingInt(s string) (int, string, bool) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, s, false
	}
	n, err := strconv.Atoi(s[:i])
	return n, s[i:], err == nil
}

// collectResult reads __codemode_result__ once the script is done.
func (r *run) collectResult() {
	s, err := r.vm.result()
	if err != nil {
		r.engineFailure(err, prefixResult)
		return
	}
	if strings.HasPrefix(s, "E") {
		r.fatal(diag.Diagnostic{Severity: diag.SeverityError, Code: diag.ResultNotSerializable, Message: s[1:],
			Hint: "assign plain JSON data to globalThis.__codemode_result__"})
		return
	}
	body := s[1:]
	if int64(len(body)) > r.opts.Limits.MaxResultBytes && r.opts.KeepOversize {
		r.res.Oversize = json.RawMessage(body)
		return
	}
	if int64(len(body)) > r.opts.Limits.MaxResultBytes {
		r.fatal(diag.Diagnostic{Severity: diag.SeverityError, Code: diag.SandboxLimit, ErrorClass: diag.SandboxLimitError,
			Message: fmt.Sprintf("the result is %d bytes of JSON, more than maxResultBytes (%d)", len(body), r.opts.Limits.MaxResultBytes),
			Hint:    "return a summary (counts, top-N, the fields you need) instead of the full data"})
		return
	}
	r.res.Result = json.RawMessage(body)
}
