//go:build !(386 || arm)

package sandbox

import (
	"reflect"
	"sync"
	"unsafe"

	"modernc.org/libc"
	lib "modernc.org/libquickjs"
	"modernc.org/quickjs"
)

// This file gives the sandbox QuickJS's host promise rejection tracker, which
// modernc.org/quickjs does not expose. Without it a script like
//
//	async function main() { throw new Error("x") }
//	main()
//
// fails silently: the rejected promise is garbage and the run reports
// success. With it, a rejection that no handler has taken once the VM is
// idle is reported as UNCAUGHT_EXCEPTION, as Node does.
//
// Reaching the engine needs the VM's unexported runtime and context, read
// with reflect+unsafe, and a Go function passed to C as the transpiled code
// passes them (the address of a funcval). Both depend on the exact versions
// of modernc.org/quickjs and libquickjs that go.sum pins; TestTrackerInstalled
// fails loudly if an upgrade changes either, and installTracker degrades to
// "no tracker" rather than crash if the fields are not found.

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
}

// rejectionTracker holds the rejections of one VM that have no handler yet.
// It is only touched on the goroutine running that VM.
type rejectionTracker struct {
	m       *quickjs.VM
	tls     *libc.TLS
	ctx     uintptr
	id      uintptr
	pending []trackedRejection
}

var (
	trackersMu sync.Mutex
	trackers   = map[uintptr]*rejectionTracker{}
	trackerSeq uintptr
)

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

func installTracker(m *quickjs.VM, _ *qjsVM) *rejectionTracker {
	ctx, rt, tls, ok := engineHandles(m)
	if !ok || ctx == 0 || rt == 0 || tls == nil {
		return nil
	}
	t := &rejectionTracker{m: m, tls: tls, ctx: ctx}
	trackersMu.Lock()
	trackerSeq++
	t.id = trackerSeq
	trackers[t.id] = t
	trackersMu.Unlock()
	var cb any = trackRejection
	lib.XJS_SetHostPromiseRejectionTracker(tls, rt, (*[2]uintptr)(unsafe.Pointer(&cb))[1], t.id)
	return t
}

// trackRejection is called by the engine, on the VM's goroutine, when a
// promise is rejected with no handler (handled == 0) and when a handler is
// later added to such a promise (handled != 0).
func trackRejection(tls *libc.TLS, ctx uintptr, promise, reason lib.TJSValue, handled int32, opaque uintptr) {
	trackersMu.Lock()
	t := trackers[opaque]
	trackersMu.Unlock()
	if t == nil {
		return
	}
	if handled == 0 {
		// Keep the promise alive too, so its address cannot be reused by
		// another promise while we track it.
		t.pending = append(t.pending, trackedRejection{
			promise: lib.XDupValue(tls, ctx, promise),
			reason:  lib.XDupValue(tls, ctx, reason),
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

func (t *rejectionTracker) pendingAny() bool { return len(t.pending) > 0 }

// take describes and forgets the rejections still unhandled.
func (t *rejectionTracker) take(v *qjsVM) ([]string, error) {
	var infos []string
	for len(t.pending) > 0 {
		p := t.pending[0]
		t.pending = t.pending[1:]
		rv := rawValue{vm: t.m, v: p.reason}
		info, err := v.describe(*(*quickjs.Value)(unsafe.Pointer(&rv)))
		lib.XFreeValue(t.tls, t.ctx, p.promise)
		lib.XFreeValue(t.tls, t.ctx, p.reason)
		if err != nil {
			return infos, err
		}
		infos = append(infos, info)
	}
	return infos, nil
}

// release frees what is still tracked; the VM is about to close.
func (t *rejectionTracker) release() {
	for _, p := range t.pending {
		lib.XFreeValue(t.tls, t.ctx, p.promise)
		lib.XFreeValue(t.tls, t.ctx, p.reason)
	}
	t.pending = nil
	trackersMu.Lock()
	delete(trackers, t.id)
	trackersMu.Unlock()
}
