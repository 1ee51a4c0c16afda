//go:build !(386 || arm)

package sandbox

import (
	"unsafe"

	"modernc.org/libc"
	lib "modernc.org/libquickjs"
)

// Running out of memory must end the run (§7.4: exceeding a limit throws
// SandboxLimitError), but the engine reports it as an ordinary, catchable
// InternalError: `try { bomb() } catch {}` in a loop would hit the limit
// again and again until the timeout, and a script that catches it once
// would finish as if nothing had happened. Memory is often free again by
// the time the script is done (the bomb is garbage), so the limit cannot be
// recognised afterwards from the accounting either.
//
// So the runtime's allocation functions are wrapped: the engine allocates
// through them only for its arenas and for large blocks (small objects come
// from the arenas), so the wrapper costs nothing measurable. When one fails,
// the VM is marked exhausted and interrupted; the run reports
// SANDBOX_LIMIT maxMemoryBytes at the next point where Go regains control.

// The engine passes the address of its malloc state, which is where the
// wrapper finds the VM.
const mallocStateOffset = unsafe.Offsetof(lib.TJSRuntime{}.Fmalloc_ctx) + unsafe.Offsetof(lib.TJSMallocContext{}.Fmalloc_state)

// engineMalloc and engineRealloc are the engine's own allocation functions,
// the same for every runtime (JS_NewRuntime installs the defaults).
var engineMalloc, engineRealloc uintptr

// hookAllocator wraps the allocation functions of t's runtime. It reports
// false if they are not the defaults it knows how to call.
func (t *internals) hookAllocator() bool {
	mf := &(*lib.TJSRuntime)(cMemory(t.rt)).Fmalloc_ctx.Fmf
	byContextMu.Lock()
	defer byContextMu.Unlock()
	if engineMalloc == 0 {
		engineMalloc, engineRealloc = mf.Fjs_malloc, mf.Fjs_realloc
	}
	if mf.Fjs_malloc != engineMalloc || mf.Fjs_realloc != engineRealloc {
		return false
	}
	var m, r any = limitedMalloc, limitedRealloc
	mf.Fjs_malloc = (*[2]uintptr)(unsafe.Pointer(&m))[1]
	mf.Fjs_realloc = (*[2]uintptr)(unsafe.Pointer(&r))[1]
	return true
}

func limitedMalloc(tls *libc.TLS, state uintptr, size uint64) uintptr {
	p := (*(*func(*libc.TLS, uintptr, uint64) uintptr)(unsafe.Pointer(&struct{ uintptr }{engineMalloc})))(tls, state, size)
	if p == 0 {
		exhausted(state)
	}
	return p
}

func limitedRealloc(tls *libc.TLS, state, ptr uintptr, size uint64) uintptr {
	p := (*(*func(*libc.TLS, uintptr, uintptr, uint64) uintptr)(unsafe.Pointer(&struct{ uintptr }{engineRealloc})))(tls, state, ptr, size)
	if p == 0 && size != 0 {
		exhausted(state)
	}
	return p
}

// exhausted marks the VM whose malloc state is at state, on that VM's own
// goroutine, and stops its JavaScript at the next tick. It allocates
// nothing from the engine.
func exhausted(state uintptr) {
	byContextMu.RLock()
	defer byContextMu.RUnlock()
	for _, t := range byContext {
		if t.rt+mallocStateOffset == state {
			t.exhausted = true
			t.v.m.Interrupt()
			t.kick()
			return
		}
	}
}

// memoryExhausted reports whether an allocation has failed at the limit
// since the VM was created.
func (t *internals) memoryExhausted() bool { return t.exhausted }
