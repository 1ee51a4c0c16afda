//go:build !(386 || arm)

package engine

import (
	"errors"

	"modernc.org/libc"
	lib "modernc.org/libquickjs"
)

// The runtime's allocation functions are wrapped to learn, at once, that an
// allocation failed at the memory limit: the engine reports it as an
// ordinary, catchable InternalError, and by the time a script is done the
// memory is often free again (the bomb is garbage), so the limit cannot be
// recognised afterwards from the accounting. The engine allocates through
// these functions only for its arenas and for large blocks (small objects
// come from the arenas), so the wrapper costs nothing measurable.

// WrapAllocator wraps the allocation functions of the runtime: when one
// fails (at the memory limit), onExhausted is called, on the VM's
// goroutine, from inside the engine: it must not call into the engine (it
// may Kick, and interrupt the VM). It refuses if the runtime's allocation
// functions are not the engine's defaults. A VM made by NewVM allocates
// through functions of this package that report already.
func (e *Engine) WrapAllocator(onExhausted func()) error {
	d, err := engineDefaults()
	if err != nil {
		return err
	}
	mf := &(*lib.TJSRuntime)(cMemory(e.rt)).Fmalloc_ctx.Fmf
	registryMu.Lock()
	defer registryMu.Unlock()
	if e.heap != nil {
		e.onExhausted = onExhausted
		return nil
	}
	if e.onExhausted == nil && (mf.Fjs_malloc != d.mf.Fjs_malloc || mf.Fjs_realloc != d.mf.Fjs_realloc) {
		return errors.New("the engine's allocator is not the one the sandbox was written for (see internal/engine/layout.go)")
	}
	e.onExhausted = onExhausted
	mf.Fjs_malloc = funcPtr(limitedMalloc)
	mf.Fjs_realloc = funcPtr(limitedRealloc)
	return nil
}

func limitedMalloc(tls *libc.TLS, state uintptr, size uint64) uintptr {
	d, _ := engineDefaults()
	p := callMalloc(d.mf.Fjs_malloc, tls, state, size)
	if p == 0 {
		exhausted(state)
	}
	return p
}

func limitedRealloc(tls *libc.TLS, state, ptr uintptr, size uint64) uintptr {
	d, _ := engineDefaults()
	p := callRealloc(d.mf.Fjs_realloc, tls, state, ptr, size)
	if p == 0 && size != 0 {
		exhausted(state)
	}
	return p
}

// exhausted tells the Engine whose malloc state is at state. It allocates
// nothing from the engine.
func exhausted(state uintptr) {
	registryMu.RLock()
	e := byMalloc[state]
	registryMu.RUnlock()
	if e != nil && e.onExhausted != nil {
		e.onExhausted()
	}
}
