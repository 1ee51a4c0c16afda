package sandbox

import (
	"fmt"
	"sync/atomic"

	"modernc.org/quickjs"

	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/engine"
)

// internals is what a VM needs of the engine beyond modernc.org/quickjs's
// API, on top of internal/engine (the package that holds every unsafe
// access to the engine):
//
//   - The host call __cm_call(op, payload): a native function that starts a
//     host operation and returns a promise, settled from Go on the
//     event-loop goroutine (settle). See engine.DefineHostCall.
//   - Unhandled rejections. Without the engine's rejection tracker a script
//     like `async function main() { throw new Error("x") }; main()` fails
//     silently; with it, a rejection that no handler has taken once the VM
//     is idle is reported as UNCAUGHT_EXCEPTION, as Node does.
//   - The interrupt counter. The engine consults its interrupt handler
//     (deadline, Interrupt) only every 10,000 ticks, and a tick can be a slow
//     built-in call (`for (;;) big.join(",")`): kick makes the next tick
//     consult it.
//   - The memory accounting and an allocator wrapper, to recognise running
//     out of memory even when the script caught the error, or when the
//     engine had too little memory left to build it.
//
// Everything but kick is only touched on the goroutine running the VM.
type internals struct {
	v *qjsVM // the VM these are the internals of
	e *engine.Engine

	ops map[int]*engine.Promise // host calls not yet settled
	seq int

	// exhausted: an allocation failed at the memory limit. Written by the
	// engine's allocator on the VM's goroutine.
	exhausted bool

	// trip is the guarded array method call that ended the run (see
	// engine.GuardArrayMethods), or nil.
	trip *tooLong
}

// tooLong is what ended a run at a guarded array method.
type tooLong struct {
	method      string
	length, max uint64
}

// installInternals installs, through e (v's engine access), the rejection
// tracker, the allocator wrapper and the native host call. It runs before
// the bootstrap; an error means no VM can be created.
func installInternals(v *qjsVM, e *engine.Engine) (*internals, error) {
	t := &internals{v: v, e: e, ops: map[int]*engine.Promise{}}
	// A rejection with null is noted if memory was at its limit: that is
	// what the engine throws when it cannot even build its out-of-memory
	// error, and `throw null` looks the same.
	e.TrackRejections(func(null bool) bool { return null && v.outOfMemory() })
	if err := e.DefineHostCall("__cm_call", agentSpecifier, t.call, errorPayload); err != nil {
		t.release()
		return nil, err
	}
	if err := e.WrapAllocator(t.onExhausted); err != nil {
		t.release()
		return nil, err
	}
	if err := e.GuardArrayMethods(t.maxElements, t.onTooLong); err != nil {
		t.release()
		return nil, err
	}
	return t, nil
}

// naiveSearchCompares bounds the character comparisons of one call of the
// engine's own string search (indexOf, split, replace... with a string to
// find: engine.GuardStringMethods): about a tenth of a second of one core
// (docs/BENCHMARKS.md, "String searches"). Larger searches run in linear
// time, interruptibly. Tests lower it to run every search that way.
var naiveSearchCompares atomic.Uint64

func init() { naiveSearchCompares.Store(1 << 26) }

// maxElements is the most elements a guarded array method may loop over in
// this run: as many as an array within the memory limit can hold (16 bytes
// each), so that a loop no memory backs (a sparse array, an array-like
// object) is never longer than one over the largest array the script could
// hold.
func (t *internals) maxElements() uint64 {
	limit := t.v.memLimit
	if limit <= 0 {
		limit = DefaultLimits.MaxMemoryBytes
	}
	return uint64(limit) / 16
}

// onTooLong ends the run at a guarded array method called on more elements:
// it is reported as SANDBOX_LIMIT even if the script catches the engine's
// RangeError (see run.vmLimit).
func (t *internals) onTooLong(method string, length, max uint64) {
	t.trip = &tooLong{method: method, length: length, max: max}
	t.v.m.Interrupt()
	t.e.Kick()
}

// tripped reports the guarded call that ended the run, or nil.
func (t *internals) tripped() *tooLong { return t.trip }

// call is __cm_call(op, payload): it starts host operation op with the JSON
// text payload ("" for none). Its promise is kept until settle. An error (a
// limit) refuses the call: the script gets errorPayload's JSON, for the
// bootstrap's hostError().
func (t *internals) call(op, payload string, p *engine.Promise) error {
	t.seq++
	id := t.seq
	// In the map before the host hears of it: whatever happens next, the
	// promise is freed once, by settle or by release.
	t.ops[id] = p
	if err := t.v.h.call(id, op, payload); err != nil {
		delete(t.ops, id) // the engine frees a refused call's promise
		return err
	}
	return nil
}

// settle resolves (ok) or rejects the promise of operation id with data: the
// JSON of the value, or the error description of errorPayload, which the
// bootstrap's fail() turns into the @codemode/errors instance, with the
// agent's line as its stack.
func (t *internals) settle(id int, ok bool, data string) error {
	p := t.ops[id]
	if p == nil {
		return nil
	}
	delete(t.ops, id)
	defer p.Free()
	if ok {
		return p.Resolve(data)
	}
	site := ""
	if line, col, found := p.Site(); found {
		site = fmt.Sprintf("%s:%d:%d", agentSpecifier, line, col)
	}
	return p.Fail(t.v.failFn, data, site)
}

// onExhausted marks the VM and stops its JavaScript at the next tick; the
// run reports SANDBOX_LIMIT maxMemoryBytes where Go regains control. It is
// called from inside the engine's allocator.
func (t *internals) onExhausted() {
	t.exhausted = true
	t.v.m.Interrupt()
	t.e.Kick()
}

func (t *internals) pendingAny() bool { return t.e.Unhandled() }

// take describes and forgets the rejections still unhandled.
func (t *internals) take() []described {
	var out []described
	t.e.TakeRejections(func(reason quickjs.Value, oom bool) error {
		d := oomDescribed
		if !oom {
			d = t.describe(reason)
		}
		out = append(out, d)
		return nil
	})
	return out
}

// described is what ended a run, as the diagnostics need it.
type described struct {
	IsError    bool
	ErrorClass string
	// HostLimit: a SandboxLimitError the host made (a limit was hit).
	HostLimit bool
	Name      string
	Message   string
	Stack     string
	Hint      string
}

// text is the thrown value as a message says it: "Name: message".
func (d described) text() string {
	if d.Name == "" {
		return d.Message
	}
	if d.Message == "" {
		return d.Name
	}
	return d.Name + ": " + d.Message
}

// oomDescribed is what the engine's out-of-memory error describes as.
var oomDescribed = described{IsError: true, Name: "InternalError", Message: "out of memory"}

// describe describes a thrown value once the script has ended, running no
// code the script can reach (engine.Describe): @codemode/errors classes
// are recognised by the prototypes the bootstrap handed over before any
// agent code ran, and SANDBOX_LIMIT is reported only for the
// SandboxLimitErrors the host itself made (the bootstrap marks them in a
// private field): one a script throws of its own is UNCAUGHT_EXCEPTION.
func (t *internals) describe(v quickjs.Value) described {
	e := t.e.Describe(v, t.v.classProtos)
	d := described{IsError: e.IsError, Name: e.Name, Message: e.Message, Stack: e.Stack, Hint: e.Hint}
	if e.Class >= 0 {
		d.ErrorClass = t.v.classNames[e.Class]
		d.HostLimit = d.ErrorClass == string(diag.SandboxLimitError) && t.v.isHostLimit(v)
	}
	return d
}

// kick makes the engine consult its interrupt handler at its next tick;
// any goroutine may call it.
func (t *internals) kick() { t.e.Kick() }

// memory reports the bytes the engine has allocated and its limit.
func (t *internals) memory() (used, limit int64) { return t.e.Memory() }

// memoryExhausted reports whether an allocation has failed at the limit
// since the VM was created.
func (t *internals) memoryExhausted() bool { return t.exhausted }

// release frees the promises of host calls never settled and detaches from
// the engine; the VM is about to close.
func (t *internals) release() {
	for id, p := range t.ops {
		p.Free()
		delete(t.ops, id)
	}
	t.e.Detach()
}

// drop forgets the promises of host calls never settled, without freeing
// them: the VM is about to be dropped whole (engine.Engine.Drop).
func (t *internals) drop() {
	clear(t.ops)
}
