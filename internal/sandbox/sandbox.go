// Package sandbox runs one agent script in a fresh, locked-down JavaScript VM
// and reports what happened: console output, the value of
// globalThis.__codemode_result__, and diagnostics for everything that went
// wrong (codemode-spec §3).
//
// Start with [Run]. The caller supplies two things through [Options]: a
// [Resolver] that answers imports of `@codemode/...` modules with JavaScript
// source, and a [Handler] that performs async host operations (tool calls,
// discovery). The sandbox knows nothing about MCP; package run builds those
// two from the catalog and the upstream connections.
//
// Guarantees:
//   - Every run gets a VM that no other run has used (§1.4). VMs are created
//     ahead of time in a small pool so that creating one is off the hot path.
//   - The globals are exactly those of §3.5 (see js/bootstrap.js). Code from
//     strings is impossible; values cross the host boundary as JSON text.
//   - Every limit is enforced by the engine or the event loop, not by the
//     script's cooperation: the wall-clock timeout interrupts even a tight
//     loop or a catastrophic regular expression, the memory limit makes
//     allocation fail, logs and results are capped in bytes.
//   - A script's failure is a [diag.Diagnostic] in the [Result], never a Go
//     error or a panic.
//   - Host operations start once the script yields (awaits), all those of
//     one turn together. A [Deterministic] run also starts them in the
//     script's order and settles them a round at a time (determinism.go). Handlers run on worker goroutines, or on the
//     event-loop goroutine itself when the script is waiting for that one
//     operation and nothing else; promises are settled on the event-loop
//     goroutine, never from a worker.
package sandbox

import (
	"context"
	"encoding/json"
	"time"

	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/redact"
)

// Handler performs one async host operation requested by JavaScript through
// the internal module's call(op, payload). payload is the JSON of the value
// passed, or empty when call got none. It runs on a worker goroutine or on
// the event-loop goroutine (see dispatch in loop.go); ctx carries the run's
// deadline and is cancelled when the run ends, early or not, and the handler
// must return promptly then: the run cannot end while it blocks the loop. A returned *diag.Error is
// thrown into the script as an instance of its @codemode/errors class; any
// other error as a CodemodeError.
type Handler func(ctx context.Context, op string, payload json.RawMessage) (json.RawMessage, error)

// Resolver returns the JavaScript source of a `@codemode/...` module other
// than the built-in `@codemode/errors`. It is called on the event-loop
// goroutine while the engine is linking modules, so it may block (to connect
// an upstream, say) but must honour ctx, which carries the run's deadline.
// An error becomes an import failure; a *diag.Error keeps its hint.
type Resolver func(ctx context.Context, specifier string) (string, error)

// Limits bound one run. Zero fields get the defaults of DefaultLimits.
type Limits struct {
	Timeout        time.Duration
	MaxMemoryBytes int64
	MaxLogBytes    int64
	MaxResultBytes int64
}

// DefaultLimits are used for fields a caller leaves zero.
var DefaultLimits = Limits{
	Timeout:        30 * time.Second,
	MaxMemoryBytes: 64 << 20,
	MaxLogBytes:    64 << 10,
	MaxResultBytes: 1 << 20,
}

// Deterministic makes a run reproducible: given the same code, seed, start
// time and host answers, it does the same things in the same order and
// reports the same logs and result (see determinism.go for the rules).
// Math.random is seeded with Seed; Date reads a virtual clock that starts at
// Now and advances only as timers fire, in virtual time, without waiting;
// host operations are started and settled in the order the script made
// them, a round at a time. Replay mode reruns a script and needs all of it.
type Deterministic struct {
	Seed uint32
	Now  time.Time
	// WaitTimers makes timers also wait their delay in real time (the
	// clock the script reads stays virtual), for a run whose host
	// operations reach live servers: a polling loop must not hammer them.
	WaitTimers bool
}

// Options configure one run. The zero value runs a script with no host
// modules or operations and the default limits.
type Options struct {
	Limits        Limits
	Resolve       Resolver
	Handle        Handler
	Deterministic *Deterministic
	// Position maps a line and column of the code as run (1-based) to a
	// location in the agent's own source, e.g. "script.ts:3:7". The default
	// reports "script.js:line:col".
	Position func(line, col int) string
	// Deadline, if set, ends the run at that time instead of Limits.Timeout
	// after it starts; Limits.Timeout is still what messages report. A
	// caller that spent part of the budget before the run (transpiling,
	// connecting servers) sets it.
	Deadline time.Time
	// MaxPendingTimers bounds setTimeout calls waiting to fire. Default 1000.
	MaxPendingTimers int
	// Prelude lists modules imported, in order, before the agent's module:
	// surfaces use them to define globals (servers as objects, say).
	Prelude []string
	// Budget, if set, also holds the payloads of host operations in flight
	// (their inputs, and their results until they are settled): a memory
	// budget shared with other runs (package admit's Ticket is one). A
	// payload it refuses fails its operation with SandboxLimitError. The
	// run's own MaxMemoryBytes bounds them in any case.
	Budget Budget
	// Redact removes secrets from log messages and diagnostics, and is
	// what clips them (it redacts before it cuts: a secret cut in half by a
	// limit would no longer match, and its first half would get out). nil
	// redacts nothing and still clips.
	Redact *redact.Redactor
	// OnLog, if set, sees each log entry as it is captured (redacted and
	// clipped), on the event-loop goroutine: it must not block. The
	// serving layer sends them to a client that asked for progress.
	OnLog func(LogEntry)
	// KeepOversize keeps what the limits would lose (Result.Oversize,
	// Result.CutLog), for a caller that can offer it some other way.
	KeepOversize bool
}

// Budget is a memory budget shared beyond one run. Reserve never waits: it
// returns an error when n more bytes do not fit. An error with a method
// LimitValue() (limit string, value int64, hint string) names the limit
// for SandboxLimitError's limit and value.
type Budget interface {
	Reserve(n int64) error
	Unreserve(n int64)
}

// Level is a console level (§3.3.1).
type Level string

const (
	LevelDebug Level = "debug"
	LevelLog   Level = "log"
	LevelWarn  Level = "warn"
	LevelError Level = "error"
)

// LogEntry is one captured console call.
type LogEntry struct {
	Level   Level  `json:"level"`
	Message string `json:"message"`
	TimeMs  int64  `json:"timeMs"`
}

// Result is what a run produced. Result is JSON text, "null" when the script
// did not assign __codemode_result__ or failed (§3.3.4).
type Result struct {
	Logs        []LogEntry
	Result      json.RawMessage
	Diagnostics []diag.Diagnostic
	// Duration is the wall-clock time from the start of the run to its end.
	Duration time.Duration
	// TimedOut, OutOfMemory and Canceled tell why a run ended early;
	// TooLong, that it called an array method on more elements than its
	// memory limit allows (an uninterruptible loop; see engine.GuardArrayMethods).
	TimedOut, OutOfMemory, Canceled, TooLong bool
	// Suspended: the run ended because only operations whose handler
	// returned Suspend could let it go on. It has no result.
	Suspended bool
	// Detached: the run was answered (timed out or cancelled) while its
	// JavaScript was still inside a built-in that does not check for
	// interrupts; it stops when that call returns (see Detached).
	Detached bool
	// Stopped is closed once the run's JavaScript has stopped: when Run
	// returns, unless the run was detached. Whoever budgets CPU or memory
	// for runs holds a detached run's share until then.
	Stopped <-chan struct{} `json:"-"`
	// With Options.KeepOversize: Oversize is a result larger than
	// maxResultBytes (its JSON; Result is then null and no diagnostic
	// says why: the caller previews it), and CutLog the whole message of
	// the log entry that maxLogBytes cut or dropped first (redacted).
	Oversize json.RawMessage
	CutLog   *LogEntry
}

// Failed reports whether any diagnostic is an error.
func (r *Result) Failed() bool {
	for _, d := range r.Diagnostics {
		if d.Severity == diag.SeverityError {
			return true
		}
	}
	return false
}

// Run executes code, an ES module (already JavaScript; see package transpile
// for TypeScript), in a fresh VM. It returns when the module has settled and
// nothing is left to do (no timers, no host operations in flight), or when a
// limit, a fatal error or ctx ends the run. Run never returns nil and never
// panics on account of the script.
func Run(ctx context.Context, code string, opts *Options) *Result {
	var o Options
	if opts != nil {
		o = *opts
	}
	o.Limits = o.Limits.withDefaults()
	if o.Position == nil {
		o.Position = defaultPosition
	}
	if o.MaxPendingTimers <= 0 {
		o.MaxPendingTimers = 1000
	}
	return newRun(ctx, code, &o).supervise()
}

func (l Limits) withDefaults() Limits {
	if l.Timeout <= 0 {
		l.Timeout = DefaultLimits.Timeout
	}
	if l.MaxMemoryBytes <= 0 {
		l.MaxMemoryBytes = DefaultLimits.MaxMemoryBytes
	}
	if l.MaxLogBytes <= 0 {
		l.MaxLogBytes = DefaultLimits.MaxLogBytes
	}
	if l.MaxResultBytes <= 0 {
		l.MaxResultBytes = DefaultLimits.MaxResultBytes
	}
	return l
}
