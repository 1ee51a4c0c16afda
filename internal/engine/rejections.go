//go:build !(386 || arm)

package engine

import (
	"modernc.org/libc"
	lib "modernc.org/libquickjs"
	"modernc.org/quickjs"
)

// rejection is a promise rejected with no handler, kept (both values are
// counted references) until a handler is added or it is taken.
type rejection struct {
	promise, reason lib.TJSValue
	noted           bool
}

// TrackRejections installs the engine's host promise rejection tracker:
// from now on a promise rejected with no handler is kept, with its reason,
// until a handler is added to it (then it is forgotten) or TakeRejections
// takes it. note is called on the VM's goroutine as each is rejected, with
// whether the reason is null, and its answer is kept with the rejection (the
// sandbox notes whether memory was at its limit then: the engine throws
// null when it runs out of memory while building its out-of-memory error,
// and by the time the rejection is taken memory may be free again).
//
// Without a tracker a script like `async function main() { throw new
// Error("x") }; main()` fails silently: the rejected promise is garbage.
func (e *Engine) TrackRejections(note func(reasonIsNull bool) bool) {
	e.note = note
	if !e.tracking {
		e.tracking = true
		lib.XJS_SetHostPromiseRejectionTracker(e.tls, e.rt, funcPtr(trackRejection), 0)
	}
}

// trackRejection is called by the engine, on the VM's goroutine, when a
// promise is rejected with no handler (handled == 0) and when a handler is
// later added to such a promise (handled != 0).
func trackRejection(tls *libc.TLS, ctx uintptr, promise, reason lib.TJSValue, handled int32, _ uintptr) {
	e := engineOf(ctx)
	if e == nil {
		return
	}
	if handled == 0 {
		noted := false
		if e.note != nil {
			noted = e.note(reason.Ftag == lib.EJS_TAG_NULL)
		}
		// Keep the promise alive too, so that its address cannot be
		// reused by another promise while it is tracked.
		e.pending = append(e.pending, rejection{
			promise: lib.XDupValue(tls, ctx, promise),
			reason:  lib.XDupValue(tls, ctx, reason),
			noted:   noted,
		})
		return
	}
	key := promise.Fu.Fuint641
	for i, p := range e.pending {
		if p.promise.Fu.Fuint641 == key && p.promise.Ftag == promise.Ftag {
			lib.XFreeValue(tls, ctx, p.promise)
			lib.XFreeValue(tls, ctx, p.reason)
			e.pending = append(e.pending[:i], e.pending[i+1:]...)
			return
		}
	}
}

// Unhandled reports whether rejections are waiting to be taken.
func (e *Engine) Unhandled() bool { return len(e.pending) > 0 }

// TakeRejections hands each rejection still unhandled to f, oldest first,
// with its reason (valid only during the call) and what note said of it,
// and forgets it. It stops at the first error of f.
func (e *Engine) TakeRejections(f func(reason quickjs.Value, noted bool) error) error {
	for len(e.pending) > 0 {
		p := e.pending[0]
		e.pending = e.pending[1:]
		err := f(e.value(p.reason), p.noted)
		lib.XFreeValue(e.tls, e.ctx, p.promise)
		lib.XFreeValue(e.tls, e.ctx, p.reason)
		if err != nil {
			return err
		}
	}
	return nil
}

func (e *Engine) freeRejections() {
	for _, p := range e.pending {
		lib.XFreeValue(e.tls, e.ctx, p.promise)
		lib.XFreeValue(e.tls, e.ctx, p.reason)
	}
	e.pending = nil
}
