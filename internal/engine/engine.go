//go:build !(386 || arm)

// Package engine is the sandbox's unsafe access to the QuickJS engine: the
// few facilities that modernc.org/quickjs does not expose, reached through
// the engine's C structures (transpiled to Go by ccgo as
// modernc.org/libquickjs) and the unexported fields of quickjs.VM. Nothing
// else in codemode uses unsafe on the engine.
//
// Start with [Attach], which finds a VM's engine context and runtime. Then:
//
//   - [Engine.DefineHostCall] defines a native function that starts a host
//     operation and returns a promise the host settles later from Go
//     ([Promise.Resolve], [Promise.Fail]) on the VM's goroutine, noting the
//     call site of the script's own module (the hot path of every tool call).
//   - [Engine.TrackRejections] keeps promises rejected with no handler.
//   - [Engine.Kick] and [Engine.InterruptCounter] reach the counter that
//     decides when the engine next consults its interrupt handler.
//   - [Engine.WrapAllocator] and [Engine.Memory] wrap and read the runtime's
//     memory accounting.
//   - [Engine.GuardArrayMethods] bounds the built-ins that loop over a
//     length without checking the interrupt (guard.go).
//   - [Engine.Describe] reads a thrown value without running any script
//     code (describe.go).
//
// # Why this is safe, and when it stops being
//
// Every access depends on the exact builds that go.mod pins: the names,
// offsets and sizes of the C structures' fields, the unexported fields of
// quickjs.VM and quickjs.Value, and how ccgo-transpiled code calls a C
// function pointer (a pointer to a Go funcval, which is how a Go function
// is handed to the engine here). layout.go lists every field this package
// reads; [Attach] refuses a VM (no VM is created, the run fails with a clear
// error) when any of them differs, and TestPinnedVersions fails, naming
// what to re-check, when the module versions are not the ones this package
// was written for. The engine's memory comes from modernc.org/libc's
// allocator, outside the Go heap, so the garbage collector neither moves
// nor frees what is read here.
//
// An Engine is used on the goroutine running its VM, except Kick and
// InterruptCounter, which any goroutine may call.
package engine

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	"modernc.org/libc"
	lib "modernc.org/libquickjs"
	"modernc.org/quickjs"
)

// Engine is the engine access of one quickjs.VM.
type Engine struct {
	vm      *quickjs.VM
	tls     *libc.TLS
	ctx, rt uintptr

	// Rejection tracking (rejections.go).
	tracking bool
	note     func(reasonIsNull bool) bool
	pending  []rejection

	// Host calls (hostcall.go), by the magic number of their function.
	calls []*hostCall

	// The allocator wrapper (alloc.go); called when an allocation fails.
	onExhausted func()

	// The module loader and the chunk loader (modules.go).
	loader ModuleLoader
	chunks func(string) ([]byte, error)

	// The blocks of a VM made by NewVM (vm.go), and their handle.
	heap       *heap
	heapHandle uintptr

	// Guarded array methods (guard.go): the caller's maximum and report,
	// and the typed arrays' length getter.
	guardMax     func() uint64
	guardTooLong func(method string, length, max uint64)
	taLength     lib.TJSValue

	// The bootstrap's implementation of the guarded string searches
	// (strguard.go), or undefined, and the caller's bound on the engine's
	// own.
	strFallback lib.TJSValue
	strMax      func() uint64

	// The atom "hint" (describe.go), made when first needed.
	hintAtom lib.TJSAtom
}

// registry maps the JSContext and the malloc state of every attached VM to
// its Engine, for the callbacks the engine makes, which get one or the
// other.
var (
	registryMu sync.RWMutex
	byContext  = map[uintptr]*Engine{}
	byMalloc   = map[uintptr]*Engine{}
)

// engineOf returns the Engine of the VM whose context is ctx, or nil.
func engineOf(ctx uintptr) *Engine {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return byContext[ctx]
}

// ErrLayout is the error of Attach when the engine is not the build this
// package was written for.
var ErrLayout = errors.New("the engine's internals are not those of the build the sandbox was written for (see internal/engine/layout.go)")

// Attach finds the engine internals of m and registers them, for the
// engine's callbacks. Call Detach before m.Close.
func Attach(m *quickjs.VM) (*Engine, error) {
	if err := checkLayout(); err != nil {
		return nil, err
	}
	ctx, rt, tls, ok := handles(m)
	if !ok || ctx == 0 || rt == 0 || tls == nil {
		return nil, ErrLayout
	}
	e := &Engine{vm: m, tls: tls, ctx: ctx, rt: rt, taLength: undefinedValue, strFallback: undefinedValue}
	e.seedRandom()
	registryMu.Lock()
	byContext[ctx] = e
	byMalloc[rt+mallocStateOffset] = e
	registryMu.Unlock()
	return e, nil
}

// Detach frees what the Engine still holds (tracked rejections, the names
// of host calls) and unregisters it. Promises of host calls not settled
// must be freed before, by their owner. The VM is about to close.
func (e *Engine) Detach() {
	e.freeRejections()
	for _, c := range e.calls {
		if c.siteAtom != 0 {
			lib.XJS_FreeAtom(e.tls, e.ctx, c.siteAtom)
		}
	}
	e.calls = nil
	lib.XFreeValue(e.tls, e.ctx, e.taLength)
	e.taLength = undefinedValue
	lib.XFreeValue(e.tls, e.ctx, e.strFallback)
	e.strFallback = undefinedValue
	if e.hintAtom != 0 {
		lib.XJS_FreeAtom(e.tls, e.ctx, e.hintAtom)
		e.hintAtom = 0
	}
	e.unregister()
}

// unregister forgets the Engine, for the engine's callbacks.
func (e *Engine) unregister() {
	registryMu.Lock()
	delete(byContext, e.ctx)
	delete(byMalloc, e.rt+mallocStateOffset)
	registryMu.Unlock()
}

// handles reads the VM's C context, runtime and TLS from quickjs.VM's
// unexported fields (checked by checkLayout).
func handles(m *quickjs.VM) (ctx, rt uintptr, tls *libc.TLS, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	read := func(v reflect.Value) reflect.Value {
		return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
	}
	st := reflect.ValueOf(m).Elem().FieldByName("state")
	rtv := read(st.FieldByName("runtime")).Elem()
	return uintptr(read(st.FieldByName("cContext")).Uint()), uintptr(read(rtv.FieldByName("cRuntime")).Uint()),
		read(rtv.FieldByName("tls")).Interface().(*libc.TLS), true
}

// StripSource makes the VM compile functions without their source text:
// the bytecode of a compiled script is then much smaller, and its functions
// print as "[native code]" (Function.prototype.toString).
func (e *Engine) StripSource() { lib.XJS_SetStripInfo(e.tls, e.rt, lib.MJS_STRIP_SOURCE) }

// Kick makes the engine consult its interrupt handler (the deadline,
// quickjs.VM.Interrupt) at its next tick. The engine consults it only when
// its interrupt counter runs out, every 10,000 ticks, and a tick can be one
// slow built-in call: without a kick, an interrupt can wait that long. The
// counter is written by the engine without atomics; a kick that races with
// a decrement can be lost, which is why callers repeat it.
func (e *Engine) Kick() { atomic.StoreInt32(e.interruptCounter(), 0) }

// InterruptCounter reads the ticks left before the engine next consults its
// interrupt handler.
func (e *Engine) InterruptCounter() int32 { return atomic.LoadInt32(e.interruptCounter()) }

// seedRandom gives Math.random a random seed. quickjs seeds it with the
// time in microseconds, so two VMs made in the same microsecond (on two
// cores at once) drew the same numbers: two concurrent runs picking
// "random" keys picked the same ones. A deterministic run replaces
// Math.random with its own seeded generator (package sandbox).
func (e *Engine) seedRandom() {
	*(*uint64)(cMemory(e.ctx + unsafe.Offsetof(lib.TJSContext{}.Frandom_state))) = rand.Uint64() | 1 // never 0
}

func (e *Engine) interruptCounter() *int32 {
	return (*int32)(cMemory(e.ctx + unsafe.Offsetof(lib.TJSContext{}.Finterrupt_counter)))
}

// Memory reports the bytes the engine has allocated and its limit.
func (e *Engine) Memory() (used, limit int64) {
	ms := &(*lib.TJSRuntime)(cMemory(e.rt)).Fmalloc_ctx.Fmalloc_state
	return int64(ms.Fmalloc_size), int64(ms.Fmalloc_limit)
}

// RunGC runs the engine's cycle collector now.
func (e *Engine) RunGC() { lib.XJS_RunGC(e.tls, e.rt) }

// cMemory turns the address of engine memory into a pointer. The engine's
// memory comes from modernc.org/libc's allocator, outside the Go heap, so
// the garbage collector neither moves nor frees it; the detour through a
// variable only tells go vet so.
func cMemory(addr uintptr) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&addr))
}

// funcPtr is how Go function f is handed to the engine as a C function
// pointer: the address of its funcval, which is what ccgo-transpiled code
// calls through (func values are pointer-shaped, so an interface holding
// one carries that address in its data word). f must be a package-level
// function, so that its funcval is never collected.
func funcPtr(f any) uintptr { return (*[2]uintptr)(unsafe.Pointer(&f))[1] }

// rawValue mirrors quickjs.Value's layout (checked by checkLayout), so that
// an engine value can be handed to quickjs's API and back.
type rawValue struct {
	vm *quickjs.VM
	v  lib.TJSValue
}

// value wraps engine value v as a quickjs.Value of e's VM, without taking a
// reference: the Value is valid as long as v is.
func (e *Engine) value(v lib.TJSValue) quickjs.Value {
	rv := rawValue{vm: e.vm, v: v}
	return *(*quickjs.Value)(unsafe.Pointer(&rv))
}

// rawOf is the engine value inside v.
func rawOf(v quickjs.Value) lib.TJSValue {
	return (*rawValue)(unsafe.Pointer(&v)).v
}

var undefinedValue = lib.TJSValue{Ftag: lib.EJS_TAG_UNDEFINED}

// pendingError takes the engine's pending exception as a *quickjs.Error.
func (e *Engine) pendingError() error {
	exc := lib.XJS_GetException(e.tls, e.ctx)
	defer lib.XFreeValue(e.tls, e.ctx, exc)
	return quickjs.ErrorFromValue(e.value(exc))
}

// callFree calls f with args and frees what it returns; an exception
// becomes the error the caller reports (an interrupt, running out of
// memory).
func (e *Engine) callFree(f lib.TJSValue, args ...lib.TJSValue) error {
	n := int(unsafe.Sizeof(lib.TJSValue{})) * len(args)
	argv := e.tls.Alloc(n)
	defer e.tls.Free(n)
	copy(unsafe.Slice((*lib.TJSValue)(cMemory(argv)), len(args)), args)
	r := lib.XJS_Call(e.tls, e.ctx, f, undefinedValue, int32(len(args)), argv)
	if r.Ftag == lib.EJS_TAG_EXCEPTION {
		return e.pendingError()
	}
	lib.XFreeValue(e.tls, e.ctx, r)
	return nil
}
