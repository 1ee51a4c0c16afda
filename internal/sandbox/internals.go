//go:build !(386 || arm)

package sandbox

import (
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	"modernc.org/libc"
	lib "modernc.org/libquickjs"
	"modernc.org/quickjs"
)

// This file reaches engine facilities that modernc.org/quickjs does not
// expose:
//
//   - The host promise rejection tracker. Without it a script like
//     `async function main() { throw new Error("x") }; main()` fails
//     silently: the rejected promise is garbage and the run reports success.
//     With it, a rejection that no handler has taken once the VM is idle is
//     reported as UNCAUGHT_EXCEPTION, as Node does.
//   - The context's interrupt counter. The engine consults its interrupt
//     handler (deadline, Interrupt) only every 10,000 ticks, and a tick can
//     be a slow built-in call (`for (;;) big.join(",")`): without a nudge a
//     300 ms timeout ran for seconds. kick makes the next tick consult it.
//   - The runtime's memory accounting, to recognise running out of memory
//     when the engine had too little memory left to even build the error.
//   - Native functions, promise capabilities and the stack frames, for the
//     host call (hostcall.go).
//
// Reaching them needs the VM's unexported runtime and context, read with
// reflect+unsafe, and Go functions passed to C as the transpiled code passes
// them (the address of a funcval). Both depend on the exact versions of
// modernc.org/quickjs and libquickjs that go.sum pins; the sandbox tests
// (host calls, unhandled rejections, timeouts in slow built-ins,
// out-of-memory classification, call sites) fail loudly if an upgrade
// changes either, and a VM whose internals are not found is not created.

// rawValue mirrors quickjs.Value's layout, so that a tracked TJSValue can be
// handed to the bootstrap's describe().
type rawValue struct {
	vm *quickjs.VM
	v  lib.TJSValue
}

var _ [unsafe.Sizeof(rawValue{}) - unsafe.Sizeof(quickjs.Value{})]struct{}
var _ [unsafe.Sizeof(quickjs.Value{}) - unsafe.Sizeof(rawValue{})]struct{}

type trackedRejection struct {
	promise, reason lib.TJSValue
	// oom: the reason is the null the engine throws when it runs out of
	// memory while building its out-of-memory error, and memory was at
	// the limit when it did. By the time the rejection is reported the
	// memory may be free again, and `throw null` looks the same.
	oom bool
}

// internals is the engine access of one VM. Everything but kick is only
// touched on the goroutine running that VM; kick may be called from any
// goroutine.
type internals struct {
	v       *qjsVM // the VM these are the internals of
	tls     *libc.TLS
	ctx, rt uintptr
	pending []trackedRejection

	ops       map[int]*hostOp // host calls not yet settled
	seq       int
	agentAtom lib.TJSAtom // "<agent>", the agent module's file name

	// exhausted: an allocation failed at the memory limit (memlimit.go).
	// Written by the engine's allocator on the VM's goroutine.
	exhausted bool
}

// byContext maps the JSContext of each live VM to its internals, for the
// callbacks the engine makes (the rejection tracker, native functions),
// which get the context.
var (
	byContextMu sync.RWMutex
	byContext   = map[uintptr]*internals{}
)

// internalsOf returns the internals of the VM whose context is ctx.
func internalsOf(ctx uintptr) *internals {
	byContextMu.RLock()
	defer byContextMu.RUnlock()
	return byContext[ctx]
}

// engineHandles returns the VM's C context, runtime and TLS.
func engineHandles(m *quickjs.VM) (ctx, rt uintptr, tls *libc.TLS, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	st := reflect.ValueOf(m).Elem().FieldByName("state")
	if !st.IsValid() {
		return 0, 0, nil, false
	}
	read := func(v reflect.Value) reflect.Value {
		return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
	}
	cctx := st.FieldByName("cContext")
	rtf := st.FieldByName("runtime")
	if !cctx.IsValid() || cctx.Kind() != reflect.Uintptr || !rtf.IsValid() || rtf.Kind() != reflect.Pointer {
		return 0, 0, nil, false
	}
	rtv := read(rtf).Elem()
	crt := rtv.FieldByName("cRuntime")
	tlsf := rtv.FieldByName("tls")
	if !crt.IsValid() || crt.Kind() != reflect.Uintptr || !tlsf.IsValid() || tlsf.Type() != reflect.TypeOf((*libc.TLS)(nil)) {
		return 0, 0, nil, false
	}
	return uintptr(read(cctx).Uint()), uintptr(read(crt).Uint()), read(tlsf).Interface().(*libc.TLS), true
}

// installInternals finds the engine internals of v, installs the rejection
// tracker and defines the native host call. It runs before the bootstrap.
func installInternals(v *qjsVM) (*internals, error) {
	ctx, rt, tls, ok := engineHandles(v.m)
	if !ok || ctx == 0 || rt == 0 || tls == nil {
		return nil, errors.New("the engine's internals were not found: this build of modernc.org/quickjs is not the one the sandbox was written for (see go.sum)")
	}
	t := &internals{v: v, tls: tls, ctx: ctx, rt: rt, ops: map[int]*hostOp{}}
	byContextMu.Lock()
	byContext[ctx] = t
	byContextMu.Unlock()
	var cb any = trackRejection
	lib.XJS_SetHostPromiseRejectionTracker(tls, rt, (*[2]uintptr)(unsafe.Pointer(&cb))[1], 0)
	if err := t.registerCall(); err != nil {
		t.release()
		return nil, err
	}
	if !t.hookAllocator() {
		t.release()
		return nil, errors.New("the engine's allocator is not the one the sandbox was written for (see go.sum)")
	}
	return t, nil
}

// trackRejection is called by the engine, on the VM's goroutine, when a
// promise is rejected with no handler (handled == 0) and when a handler is
// later added to such a promise (handled != 0).
func trackRejection(tls *libc.TLS, ctx uintptr, promise, reason lib.TJSValue, handled int32, _ uintptr) {
	t := internalsOf(ctx)
	if t == nil {
		return
	}
	if handled == 0 {
		// Keep the promise alive too, so its address cannot be reused by
		// another promise while we track it.
		t.pending = append(t.pending, trackedRejection{
			promise: lib.XDupValue(tls, ctx, promise),
			reason:  lib.XDupValue(tls, ctx, reason),
			oom:     reason.Ftag == lib.EJS_TAG_NULL && t.v.outOfMemory(),
		})
		return
	}
	key := promise.Fu.Fuint641
	for i, p := range t.pending {
		if p.promise.Fu.Fuint641 == key && p.promise.Ftag == promise.Ftag {
			lib.XFreeValue(tls, ctx, p.promise)
			lib.XFreeValue(tls, ctx, p.reason)
			t.pending = append(t.pending[:i], t.pending[i+1:]...)
			return
		}
	}
}

func (t *internals) pendingAny() bool { return len(t.pending) > 0 }

// take describes and forgets the rejections still unhandled.
func (t *internals) take() ([]string, error) {
	var infos []string
	for len(t.pending) > 0 {
		p := t.pending[0]
		t.pending = t.pending[1:]
		rv := rawValue{vm: t.v.m, v: p.reason}
		info, err := oomDescription, error(nil)
		if !p.oom {
			info, err = t.v.describe(*(*quickjs.Value)(unsafe.Pointer(&rv)))
		}
		lib.XFreeValue(t.tls, t.ctx, p.promise)
		lib.XFreeValue(t.tls, t.ctx, p.reason)
		if err != nil {
			return infos, err
		}
		infos = append(infos, info)
	}
	return infos, nil
}

// oomDescription is what describe() would say of the engine's out-of-memory
// error.
const oomDescription = `{"isError":true,"errorClass":"","name":"InternalError","message":"out of memory"}`

// kick makes the engine consult its interrupt handler at its next tick.
// The counter is written by the engine without atomics; a kick that races
// with its decrement can be lost, which is why callers repeat it.
func (t *internals) kick() {
	p := (*int32)(cMemory(t.ctx + unsafe.Offsetof(lib.TJSContext{}.Finterrupt_counter)))
	atomic.StoreInt32(p, 0)
}

// memory reports the bytes the engine has allocated and its limit.
func (t *internals) memory() (used, limit int64) {
	ms := &(*lib.TJSRuntime)(cMemory(t.rt)).Fmalloc_ctx.Fmalloc_state
	return int64(ms.Fmalloc_size), int64(ms.Fmalloc_limit)
}

// cMemory turns the address of engine memory into a pointer. The engine's
// memory comes from modernc.org/libc's allocator, outside the Go heap, so
// the garbage collector neither moves nor frees it; the detour through a
// variable only tells go vet so.
func cMemory(addr uintptr) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&addr))
}

// release frees what is still tracked and the promises of host calls never
// settled; the VM is about to close.
func (t *internals) release() {
	for _, p := range t.pending {
		lib.XFreeValue(t.tls, t.ctx, p.promise)
		lib.XFreeValue(t.tls, t.ctx, p.reason)
	}
	t.pending = nil
	for id, o := range t.ops {
		t.free(o)
		delete(t.ops, id)
	}
	if t.agentAtom != 0 {
		lib.XJS_FreeAtom(t.tls, t.ctx, t.agentAtom)
		t.agentAtom = 0
	}
	byContextMu.Lock()
	delete(byContext, t.ctx)
	byContextMu.Unlock()
}

// rawOf is the engine value inside v.
func rawOf(v quickjs.Value) lib.TJSValue {
	return (*rawValue)(unsafe.Pointer(&v)).v
}
