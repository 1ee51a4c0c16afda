package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	_ "embed"

	"modernc.org/quickjs"

	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/engine"
)

// vm is the seam between the event loop and the JavaScript engine: the few
// operations a run needs. qjsVM implements it over modernc.org/quickjs; any
// other engine would implement the same methods with an equivalent bootstrap.
// A vm is used by one goroutine at a time, except interrupt.
type vm interface {
	// bind attaches the run whose host functions JavaScript reaches.
	bind(h host)
	// setLimits sets the memory limit and the deadline for all later entries
	// into JavaScript.
	setLimits(deadline time.Time, memoryBytes int64)
	determinize(seed uint32, nowMs int64) error
	// setClock moves a deterministic run's virtual clock (what Date reads)
	// to nowMs; determinize must have been called.
	setClock(nowMs int64) error
	// evalModule compiles, links and starts the agent module, after
	// importing the prelude modules; its settlement is reported to
	// host.done.
	evalModule(src string, prelude []string) error
	settle(id int, ok bool, data string) error
	fire(id int) (thrown *described, err error) // thrown: what the callback threw, or nil
	runJobs() error
	// unhandled describes, and forgets, the promise rejections that no
	// handler has taken so far.
	unhandled() ([]described, error)
	// rejection describes why the agent module failed, once host.done
	// reported ok == false.
	rejection() (described, error)
	// result returns "J"+JSON of __codemode_result__ or "E"+a reason.
	result() (string, error)
	// interrupt stops the JavaScript running now, soon, from any goroutine.
	interrupt()
	// outOfMemory reports whether the engine's allocations are at its limit
	// (within slack), for failures too degenerate to describe themselves.
	outOfMemory() bool
	// memoryExhausted reports whether an allocation has failed at the
	// memory limit, even if the script caught the error and memory is free
	// again: the run is over.
	memoryExhausted() bool
	// allocated is the memory the engine holds now, in bytes.
	allocated() int64
	// tooLong reports the guarded built-in call that ended the run (see
	// guard.go), or nil.
	tooLong() *tooLong
	close()
}

// host is what a run offers JavaScript, through the host functions that the
// bootstrap captures.
type host interface {
	call(id int, op, payload string) error
	log(level Level, msg string) bool
	timer(id int, ms float64) (scheduled bool, err error)
	clearTimer(id int)
	done(ok bool)
	resolve(specifier string) (string, error)
	// note records something the script should hear about without
	// failing: kind "locale" for a locale-sensitive method that ignored
	// its locales or options (see locale.go).
	note(kind, detail string)
}

//go:embed js/bootstrap.js
var bootstrapJS string

// internalModule is the only way the generated modules reach the host: it
// takes the bootstrap's handoff and removes it from the global object. It is
// imported once while the VM is prepared, before agent code exists, and agent
// code cannot import it (see normalize).
const internalModule = `const h = globalThis.__cm_handoff;
delete globalThis.__cm_handoff;
export const call = h.call;
export const classes = h.classes;
export const freeze = h.freeze;
export const deepFreeze = h.deepFreeze;
export const meta = h.meta;
export const bindTools = h.bindTools;
export const importError = h.importError;
`

const errorsModule = `import { classes } from "@codemode/internal";
export const CodemodeError = classes.CodemodeError;
export const SchemaValidationError = classes.SchemaValidationError;
export const ToolNotFoundError = classes.ToolNotFoundError;
export const ServerNotFoundError = classes.ServerNotFoundError;
export const ToolCallError = classes.ToolCallError;
export const AuthenticationError = classes.AuthenticationError;
export const SandboxLimitError = classes.SandboxLimitError;
export const ApprovalDeniedError = classes.ApprovalDeniedError;
`

const (
	internalSpecifier = "@codemode/internal"
	errorsSpecifier   = "@codemode/errors"
	// agentSpecifier names the agent's module. It is loaded through the
	// module loader, not evaluated directly, so that its stack frames read
	// "<agent>:line:col" and cannot be confused with the bootstrap's
	// ("<eval>:...").
	agentSpecifier = "<agent>"
)

// bootstrapCode is the bootstrap compiled once per process: evaluating
// bytecode skips parsing in every new VM.
var bootstrapCode = sync.OnceValues(func() ([]byte, error) { return compileStripped(bootstrapJS) })

type qjsVM struct {
	m *quickjs.VM
	e *engine.Engine // its engine access (internals.go uses it too)
	h host

	// Functions the bootstrap handed over with __cm_install.
	failFn, fireFn, watchFn, resultFn, determinizeFn, isHostLimitFn quickjs.Value
	installed                                                       bool
	// strGuarded: the bootstrap handed its string searches to the engine's
	// guard (__cm_strguard), with this result.
	strGuarded  bool
	strGuardErr error
	// clockFn is the setter of a deterministic run's clock (determinize's
	// result); hasClock says it is held.
	clockFn  quickjs.Value
	hasClock bool
	// thrown is what a timer callback or the result's serialisation threw
	// (__cm_thrown), for describe.go.
	thrown    quickjs.Value
	hasThrown bool
	// classNames and classProtos are the @codemode/errors classes and
	// their prototypes (__cm_errclass), by which describe recognises them.
	classNames  []string
	classProtos []quickjs.Value

	// preparing is true while the VM imports its own internal module.
	preparing bool
	// agentSrc is the agent module's source once evalModule has been called.
	agentSrc  string
	agentSeen bool
	// reason is what the agent module was rejected with.
	reason    quickjs.Value
	hasReason bool
	memLimit  int64
	deadline  time.Time
	in        *internals
}

// noHost answers host calls made while no run is bound. Only the bootstrap
// runs then, and it makes none; anything else is a bug worth a clear error.
type noHost struct{}

func (noHost) call(int, string, string) error   { return errors.New("no run is bound") }
func (noHost) log(Level, string) bool           { return false }
func (noHost) timer(int, float64) (bool, error) { return false, errors.New("no run is bound") }
func (noHost) clearTimer(int)                   {}
func (noHost) done(bool)                        {}
func (noHost) resolve(string) (string, error)   { return "", errors.New("no run is bound") }
func (noHost) note(string, string)              {}

// newQJSVM creates a VM and prepares it: host functions, bootstrap, internal
// module. No agent code has run in it.
func newQJSVM() (*qjsVM, error) {
	code, err := bootstrapCode()
	if err != nil {
		return nil, fmt.Errorf("compiling the sandbox bootstrap: %w", err)
	}
	// A VM whose memory is handed back whole when it is closed (see
	// engine.NewVM): nothing of a run outlives its VM, so freeing it
	// object by object would be wasted work.
	m, e, err := engine.NewVM()
	if err != nil {
		return nil, err
	}
	v := &qjsVM{m: m, e: e, h: noHost{}}
	// Preparing allocates a few hundred KiB that all stay alive; a garbage
	// collection on the way would find nothing to free. setLimits lowers the
	// threshold again before agent code runs.
	m.SetGCThreshold(16 << 20)
	if err := v.prepare(code); err != nil {
		v.close()
		return nil, err
	}
	return v, nil
}

func (v *qjsVM) prepare(code []byte) error {
	m := v.m
	in, err := installInternals(v, v.e)
	if err != nil {
		return err
	}
	v.in = in
	reg := []struct {
		name string
		f    any
	}{
		{"__cm_log", func(level, msg string) bool { return v.h.log(Level(level), msg) }},
		{"__cm_clear", func(id int) { v.h.clearTimer(id) }},
		{"__cm_done", func(ok bool, reason quickjs.Value) {
			if !ok && !v.hasReason {
				v.reason, v.hasReason = reason.Dup(), true
			}
			v.h.done(ok)
		}},
		{"__cm_install", v.install},
		{"__cm_note", func(kind, detail string) { v.h.note(kind, detail) }},
		// describe.go: what the bootstrap hands over for describing what
		// ended a run without running script code.
		{"__cm_errclass", func(name string, proto quickjs.Value) {
			v.classNames, v.classProtos = append(v.classNames, name), append(v.classProtos, proto.Dup())
		}},
		// The bootstrap's string searches, for the engine's guard of the
		// engine's own (engine.GuardStringMethods).
		{"__cm_strguard", func(fallback quickjs.Value) {
			v.strGuardErr = v.in.e.GuardStringMethods(fallback, naiveSearchCompares.Load)
			v.strGuarded = true
		}},
		{"__cm_thrown", func(e quickjs.Value) {
			if v.hasThrown {
				v.thrown.Free()
			}
			v.thrown, v.hasThrown = e.Dup(), true
		}},
	}
	for _, r := range reg {
		if err := m.RegisterFunc(r.name, r.f, false); err != nil {
			return fmt.Errorf("registering %s: %w", r.name, err)
		}
	}
	// Host funcs whose Go error must become a JavaScript exception.
	// (__cm_call is native: see internals.go.)
	if err := m.RegisterHostFunc("__cm_timer", func(args []any) (any, error) {
		id, ms := argInt(args, 0), argFloat(args, 1)
		return v.h.timer(id, ms) // false: dropped, the run is winding down
	}); err != nil {
		return err
	}
	if err := m.RegisterHostFunc("__cm_url", func(args []any) (any, error) {
		return urlOp(argString(args, 0), argString(args, 1), argString(args, 2), argString(args, 3))
	}); err != nil {
		return err
	}
	// quickjs.VM's loader takes source text; the engine's own (set over it,
	// keeping the normalizer) also takes bytecode (modules.go).
	m.SetModuleLoader(v.load, v.normalize)
	v.in.e.SetModuleLoader(v.loadModule)
	if err := v.in.e.DefineChunkLoader("__cm_chunk", loadChunk); err != nil {
		return err
	}
	if _, err := m.EvalBytecode(code); err != nil {
		return fmt.Errorf("running the sandbox bootstrap: %w", err)
	}
	if !v.installed {
		return errors.New("the sandbox bootstrap did not install its functions")
	}
	if !v.strGuarded || v.strGuardErr != nil {
		return fmt.Errorf("guarding the string searches: %v", v.strGuardErr)
	}
	v.preparing = true
	p, err := m.EvalValue(`import "@codemode/internal"; import "@codemode/errors";`, quickjs.EvalModule)
	v.preparing = false
	if err != nil {
		return fmt.Errorf("loading the internal modules: %w", err)
	}
	p.Free()
	if _, err := m.ExecutePendingJobs(); err != nil {
		return fmt.Errorf("loading the internal modules: %w", err)
	}
	return nil
}

func (v *qjsVM) install(fail, fire, watch, result, determinize, isHostLimit quickjs.Value) {
	v.failFn, v.fireFn, v.watchFn = fail.Dup(), fire.Dup(), watch.Dup()
	v.resultFn, v.determinizeFn, v.isHostLimitFn = result.Dup(), determinize.Dup(), isHostLimit.Dup()
	v.installed = true
}

// isHostLimit reports whether e is a SandboxLimitError the host made (the
// bootstrap's check reads a private field: no agent code runs).
func (v *qjsVM) isHostLimit(e quickjs.Value) bool {
	if err := v.enter(); err != nil {
		return false
	}
	r, err := v.isHostLimitFn.Call(quickjs.UndefinedValue, e)
	b, _ := r.(bool)
	return err == nil && b
}

func argString(args []any, i int) string {
	if i < len(args) {
		if s, ok := args[i].(string); ok {
			return s
		}
	}
	return ""
}

func argInt(args []any, i int) int {
	if i < len(args) {
		switch n := args[i].(type) {
		case int:
			return n
		case float64:
			return int(n)
		}
	}
	return 0
}

func argFloat(args []any, i int) float64 {
	if i < len(args) {
		switch n := args[i].(type) {
		case int:
			return float64(n)
		case float64:
			return n
		}
	}
	return 0
}

// normalize decides which specifiers exist at all. Only `@codemode/...`
// names are modules; the internal module is reachable only from our own
// modules (and while the VM is being prepared).
func (v *qjsVM) normalize(_ *quickjs.VM, base, name string) (string, error) {
	if name == agentSpecifier {
		// Only the entry point imports the agent module, once.
		if base != "<eval>" || v.agentSeen {
			return "", &importError{specifier: name, reason: "cannot be imported"}
		}
		v.agentSeen = true
		return name, nil
	}
	if name == internalSpecifier && !v.preparing && !strings.HasPrefix(base, "@codemode/") {
		return "", &importError{specifier: name, reason: "is not a public module"}
	}
	if !strings.HasPrefix(name, "@codemode/") {
		return "", &importError{specifier: name, reason: "is not available: only @codemode/* modules can be imported (no npm packages, Node built-ins, URLs or relative files)"}
	}
	return name, nil
}

func (v *qjsVM) load(_ *quickjs.VM, name string) (string, error) {
	switch name {
	case internalSpecifier:
		return internalModule, nil
	case errorsSpecifier:
		return errorsModule, nil
	case agentSpecifier:
		return v.agentSrc, nil
	}
	src, err := v.h.resolve(name)
	if err != nil {
		// Not an error for the engine, which would turn it into a plain
		// TypeError ("module load failed: ..."): a module whose evaluation
		// throws the @codemode/errors instance the failure describes, so
		// that `await import(...)` rejects with a real ServerNotFoundError
		// (instanceof, hint, fields; §7.1, §7.3). A static import of it
		// fails the same way before any agent code runs; failure.go
		// reports either as IMPORT_FAILURE when nothing catches it.
		return failingModule(err), nil
	}
	return src, nil
}

// failingModule is the source of a module whose evaluation throws the error
// a failed import carries (see importInfo), by awaiting its rejection (see
// importError in bootstrap.js).
func failingModule(err error) string {
	info := importInfo(err)
	data, err := json.Marshal(map[string]any{"class": info.Class, "message": info.Message, "hint": info.Hint, "fields": info.Fields})
	if err != nil { // a field JSON cannot carry: the error without its fields
		data, _ = json.Marshal(map[string]any{"class": info.Class, "message": info.Message, "hint": info.Hint})
	}
	quoted, _ := json.Marshal(string(data))
	return `import { importError } from "@codemode/internal";` + "\nawait importError(" + string(quoted) + ");\n"
}

// importHint is the hint of an import failure that brings none.
const importHint = "import only @codemode/discovery, @codemode/errors and @codemode/servers/<serverId>; listServers() from @codemode/discovery lists the server ids"

// importInfo is the error a failed import throws: a *diag.Error as it is
// (its class, hint and fields), anything else as a CodemodeError.
func importInfo(err error) *diag.Error {
	var de *diag.Error
	if errors.As(err, &de) {
		c := *de
		if c.Class == "" {
			c.Class = diag.CodemodeError
		}
		if c.Hint == "" {
			c.Hint = importHint
		}
		return &c
	}
	return &diag.Error{Class: diag.CodemodeError, Message: err.Error(), Hint: importHint}
}

// importError is what normalize returns (and load, for a run without a
// resolver); the engine wraps normalize's text into a TypeError ("module
// normalization failed: ...").
type importError struct {
	specifier, reason string
}

func (e *importError) Error() string { return fmt.Sprintf("module %q %s", e.specifier, e.reason) }

func (v *qjsVM) bind(h host) { v.h = h }

func (v *qjsVM) setLimits(deadline time.Time, memoryBytes int64) {
	v.deadline = deadline
	v.memLimit = memoryBytes
	v.m.SetMemoryLimit(uintptr(memoryBytes))
	v.m.SetGCThreshold(uintptr(max(gcThreshold, memoryBytes/8)))
}

// enter arms the engine's timeout with what is left until the deadline. The
// engine re-arms at every outermost entry, so this must precede each one.
func (v *qjsVM) enter() error {
	left := time.Until(v.deadline)
	if left <= 0 {
		return errDeadline
	}
	return v.m.SetEvalTimeout(left)
}

var errDeadline = errors.New("deadline exceeded")

// gcThreshold is the least allocation before the cycle collector runs during
// a run. QuickJS frees most memory by reference counting; the collector only
// finds cycles. Its default, 256 KiB, is less than a prepared VM already
// holds, so it would run a full collection on the script's first
// allocation, for nothing.
const gcThreshold = 4 << 20

func (v *qjsVM) determinize(seed uint32, nowMs int64) error {
	if err := v.enter(); err != nil {
		return err
	}
	f, err := v.determinizeFn.CallValue(quickjs.UndefinedValue, int64(seed), float64(nowMs))
	if err != nil {
		return err
	}
	v.clockFn, v.hasClock = f, true
	return nil
}

func (v *qjsVM) setClock(nowMs int64) error {
	if !v.hasClock {
		return errors.New("setClock: the run is not deterministic")
	}
	if err := v.enter(); err != nil {
		return err
	}
	_, err := v.clockFn.Call(quickjs.UndefinedValue, float64(nowMs))
	return err
}

func (v *qjsVM) evalModule(src string, prelude []string) error {
	if err := v.enter(); err != nil {
		return err
	}
	v.agentSrc = src
	var entry strings.Builder
	for _, p := range prelude {
		fmt.Fprintf(&entry, "import %q;\n", p)
	}
	fmt.Fprintf(&entry, "import %q;\n", agentSpecifier)
	p, err := v.m.EvalValue(entry.String(), quickjs.EvalModule)
	if err != nil {
		return err
	}
	defer p.Free()
	if err := v.enter(); err != nil {
		return err
	}
	_, err = v.watchFn.Call(quickjs.UndefinedValue, p)
	return err
}

func (v *qjsVM) settle(id int, ok bool, data string) error {
	if err := v.enter(); err != nil {
		return err
	}
	return v.in.settle(id, ok, data)
}

// fire runs timer id's callback, and describes what it threw, if it threw.
func (v *qjsVM) fire(id int) (*described, error) {
	s, err := v.callString(v.fireFn, id)
	if err != nil || s == "" {
		return nil, err
	}
	d := v.describeThrown()
	return &d, nil
}

// describeThrown describes, and forgets, what __cm_thrown kept.
func (v *qjsVM) describeThrown() described {
	if !v.hasThrown {
		return described{Message: "an exception that was not kept"}
	}
	v.headroom()
	d := v.in.describe(v.thrown)
	v.thrown.Free()
	v.hasThrown = false
	return d
}

// callString calls one of the bootstrap's functions that answer with a
// string (or with nothing: "").
func (v *qjsVM) callString(f quickjs.Value, args ...any) (string, error) {
	if err := v.enter(); err != nil {
		return "", err
	}
	r, err := f.Call(quickjs.UndefinedValue, args...)
	if err != nil {
		return "", err
	}
	s, _ := r.(string)
	return s, nil
}

func (v *qjsVM) runJobs() error {
	if err := v.enter(); err != nil {
		return err
	}
	_, err := v.m.ExecutePendingJobs()
	return err
}

func (v *qjsVM) unhandled() ([]described, error) {
	if !v.in.pendingAny() {
		return nil, nil
	}
	v.headroom()
	return v.in.take(), nil
}

func (v *qjsVM) rejection() (described, error) {
	if !v.hasReason {
		return described{}, errors.New("the agent module was not rejected")
	}
	v.headroom()
	return v.in.describe(v.reason), nil
}

// headroom lifts the memory limit a little once the script is over (or about
// to be reported as failed): describing what went wrong must not fail for
// the lack of memory the script used up.
func (v *qjsVM) headroom() {
	if v.memLimit > 0 {
		v.m.SetMemoryLimit(uintptr(v.memLimit + describeHeadroom))
	}
}

const describeHeadroom = 4 << 20

func (v *qjsVM) result() (string, error) {
	if err := v.enter(); err != nil {
		return "", err
	}
	r, err := v.resultFn.Call(quickjs.UndefinedValue)
	if err != nil {
		return "", err
	}
	s, ok := r.(string)
	if !ok {
		return "", fmt.Errorf("result(): unexpected %T", r)
	}
	if rest, threw := strings.CutPrefix(s, "T"); threw {
		// The serialisation threw: what it threw is described here.
		return "E" + rest + ": " + v.describeThrown().text(), nil
	}
	return s, nil
}

func (v *qjsVM) interrupt() {
	v.m.Interrupt()
	v.in.kick()
}

func (v *qjsVM) memoryExhausted() bool { return v.in != nil && v.in.memoryExhausted() }

func (v *qjsVM) allocated() int64 {
	if v.in == nil {
		return 0
	}
	used, _ := v.in.memory()
	return used
}

func (v *qjsVM) tooLong() *tooLong {
	if v.in == nil {
		return nil
	}
	return v.in.tripped()
}

func (v *qjsVM) outOfMemory() bool {
	if v.memoryExhausted() {
		return true
	}
	used, limit := v.in.memory()
	// The allocator rounds up to size classes: "at the limit" means within
	// a slack of it.
	return limit > 0 && used+(limit/16) >= min(limit, v.memLimit)
}

// close hands the VM's memory back whole (engine.Engine.Drop): the values
// it still holds go with it, unfreed, and must not be used again.
func (v *qjsVM) close() {
	if v.in != nil { // nil when prepare failed early
		v.in.drop()
	}
	v.e.Drop()
}
