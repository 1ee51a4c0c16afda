//go:build !(386 || arm)

package sandbox

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	"modernc.org/libc"
	lib "modernc.org/libquickjs"
	"modernc.org/quickjs"
)

// The host call is the hot path of every tool call, so it talks to the
// engine directly instead of through modernc.org/quickjs's reflection-based
// bindings (a registered Go function and Value.Call cost 2–4 µs per
// crossing, most of a tool call's engine cost):
//
//   - __cm_call(op, payload) is a native function. It starts the host
//     operation and returns a promise made with JS_NewPromiseCapability; the
//     promise's resolving functions stay in Go (hostOp), so no JavaScript
//     executor closure is created per call.
//   - settle resolves that promise from Go on the event-loop goroutine:
//     JS_ParseJSON of the result, then the resolve function. No JavaScript
//     runs for a successful call. A failure goes through the bootstrap's
//     fail(), which builds the @codemode/errors instance.
//   - The call site, the innermost frame of the agent's module, is noted at
//     the call (a reference to the function and its bytecode offset, a few
//     memory reads) and turned into a line and column only if the call
//     fails, so that an uncaught tool error points at the agent's code.
//     new Error() at every call would cost as much as the rest of the call.
//
// Invariants: every field of hostOp is a counted reference, freed exactly
// once, by settle or by release when the VM closes with the call pending.
// Nothing here panics into the engine: nativeCall recovers and turns a Go
// failure into a refused call.

// hostOp is a host operation whose promise has not been settled.
type hostOp struct {
	resolve, reject lib.TJSValue
	site            lib.TJSValue // the agent function that made the call, or undefined
	pc              uint32       // offset of the call in site's bytecode
}

var undefinedValue = lib.TJSValue{Ftag: lib.EJS_TAG_UNDEFINED}

// registerCall defines the global __cm_call, which the bootstrap captures.
func (t *internals) registerCall() error {
	name, err := libc.CString("__cm_call")
	if err != nil {
		return err
	}
	defer libc.Xfree(t.tls, name)
	var f any = nativeCall
	fn := lib.XJS_NewCFunction2(t.tls, t.ctx, (*[2]uintptr)(unsafe.Pointer(&f))[1], name, 2, lib.EJS_CFUNC_generic, 0)
	if fn.Ftag == lib.EJS_TAG_EXCEPTION {
		lib.XFreeValue(t.tls, t.ctx, lib.XJS_GetException(t.tls, t.ctx))
		return errors.New("creating the host call function failed")
	}
	global := lib.XJS_GetGlobalObject(t.tls, t.ctx)
	defer lib.XFreeValue(t.tls, t.ctx, global)
	if lib.XJS_SetPropertyStr(t.tls, t.ctx, global, name, fn) < 0 { // takes fn
		lib.XFreeValue(t.tls, t.ctx, lib.XJS_GetException(t.tls, t.ctx))
		return errors.New("defining the host call function failed")
	}
	agent, err := libc.CString(agentSpecifier)
	if err != nil {
		return err
	}
	defer libc.Xfree(t.tls, agent)
	t.agentAtom = lib.XJS_NewAtom(t.tls, t.ctx, agent)
	return nil
}

// nativeCall is __cm_call(op, payload): it starts host operation op with
// the JSON text payload ("" for none) and returns its promise, or, when the
// host refuses the call (a limit), a string: the JSON of the error, for the
// bootstrap's hostError().
func nativeCall(tls *libc.TLS, ctx uintptr, _ lib.TJSValue, argc int32, argv uintptr) (r lib.TJSValue) {
	t := internalsOf(ctx)
	if t == nil {
		return newString(tls, ctx, errorPayload(errors.New("host calls are not available in this VM")))
	}
	defer func() {
		// A Go panic must not unwind through the engine's frames.
		if p := recover(); p != nil {
			r = newString(tls, ctx, errorPayload(fmt.Errorf("internal error in a host call: %v", p)))
		}
	}()
	if argc < 2 {
		return newString(tls, ctx, errorPayload(errors.New("host call: missing arguments")))
	}
	args := unsafe.Slice((*lib.TJSValue)(cMemory(argv)), 2)
	op, ok1 := t.goString(args[0])
	payload, ok2 := t.goString(args[1])
	if !ok1 || !ok2 {
		return lib.TJSValue{Ftag: lib.EJS_TAG_EXCEPTION} // the conversion's exception is pending
	}
	funcs := t.tls.Alloc(int(2 * unsafe.Sizeof(lib.TJSValue{})))
	defer t.tls.Free(int(2 * unsafe.Sizeof(lib.TJSValue{})))
	promise := lib.XJS_NewPromiseCapability(tls, ctx, funcs)
	if promise.Ftag == lib.EJS_TAG_EXCEPTION {
		return promise // out of memory, most likely; the exception is pending
	}
	rf := unsafe.Slice((*lib.TJSValue)(cMemory(funcs)), 2)
	t.seq++
	id := t.seq
	// In the map before the host hears of it: whatever happens next, the
	// references are freed once, by settle or by release.
	o := &hostOp{resolve: rf[0], reject: rf[1], site: undefinedValue}
	t.ops[id] = o
	o.site, o.pc = t.callSite()
	if err := t.v.h.call(id, op, payload); err != nil {
		delete(t.ops, id)
		t.free(o)
		lib.XFreeValue(tls, ctx, promise)
		return newString(tls, ctx, errorPayload(err))
	}
	return promise
}

// settle resolves (ok) or rejects the promise of operation id with data: the
// JSON of the value, or the error description of errorPayload.
func (t *internals) settle(id int, ok bool, data string) error {
	o := t.ops[id]
	if o == nil {
		return nil
	}
	delete(t.ops, id)
	defer t.free(o)
	if ok {
		val := t.parseJSON(data)
		if val.Ftag == lib.EJS_TAG_EXCEPTION {
			// The value does not fit in the memory limit: the call fails
			// with what the engine threw.
			exc := lib.XJS_GetException(t.tls, t.ctx)
			defer lib.XFreeValue(t.tls, t.ctx, exc)
			return t.callFree(o.reject, exc)
		}
		defer lib.XFreeValue(t.tls, t.ctx, val)
		return t.callFree(o.resolve, val)
	}
	site := ""
	if o.site.Ftag == lib.EJS_TAG_OBJECT {
		if line, col, found := lineOf(bytecodeOf(o.site), o.pc); found {
			site = fmt.Sprintf("%s:%d:%d", agentSpecifier, line, col)
		}
	}
	msg := newString(t.tls, t.ctx, data)
	if msg.Ftag == lib.EJS_TAG_EXCEPTION {
		return t.pendingError()
	}
	defer lib.XFreeValue(t.tls, t.ctx, msg)
	at := newString(t.tls, t.ctx, site)
	if at.Ftag == lib.EJS_TAG_EXCEPTION {
		return t.pendingError()
	}
	defer lib.XFreeValue(t.tls, t.ctx, at)
	return t.callFree(rawOf(t.v.failFn), o.reject, msg, at)
}

// callFree calls f with args and frees what it returns; an exception becomes
// the error the loop reports (an interrupt, running out of memory).
func (t *internals) callFree(f lib.TJSValue, args ...lib.TJSValue) error {
	n := int(unsafe.Sizeof(lib.TJSValue{})) * len(args)
	argv := t.tls.Alloc(n)
	defer t.tls.Free(n)
	copy(unsafe.Slice((*lib.TJSValue)(cMemory(argv)), len(args)), args)
	r := lib.XJS_Call(t.tls, t.ctx, f, undefinedValue, int32(len(args)), argv)
	if r.Ftag == lib.EJS_TAG_EXCEPTION {
		return t.pendingError()
	}
	lib.XFreeValue(t.tls, t.ctx, r)
	return nil
}

// pendingError takes the engine's pending exception as a *quickjs.Error.
func (t *internals) pendingError() error {
	exc := lib.XJS_GetException(t.tls, t.ctx)
	defer lib.XFreeValue(t.tls, t.ctx, exc)
	rv := rawValue{vm: t.v.m, v: exc}
	return quickjs.ErrorFromValue(*(*quickjs.Value)(unsafe.Pointer(&rv)))
}

// parseJSON parses data in the engine; running out of memory is an
// exception, as in any engine call.
func (t *internals) parseJSON(data string) lib.TJSValue {
	buf := cCopy(t.tls, data)
	if buf == 0 {
		return lib.XJS_ThrowOutOfMemory(t.tls, t.ctx)
	}
	defer libc.Xfree(t.tls, buf)
	return lib.XJS_ParseJSON(t.tls, t.ctx, buf, libc.Tsize_t(len(data)), jsonFilename())
}

// jsonFilename names the source of parse errors. The engine reads it as a
// C string, so it lives outside the Go heap, made once, when first needed.
var jsonFilename = sync.OnceValue(func() uintptr {
	p, err := libc.CString("<host>")
	if err != nil {
		panic(err) // out of memory before any VM could exist
	}
	return p
})

// cCopy copies s, NUL-terminated (JS_ParseJSON wants that), into memory
// outside the Go heap, for the engine to read; 0 means out of memory. The
// caller frees it with libc.Xfree.
func cCopy(tls *libc.TLS, s string) uintptr {
	buf := libc.Xmalloc(tls, libc.Tsize_t(len(s)+1))
	if buf != 0 {
		b := unsafe.Slice((*byte)(cMemory(buf)), len(s)+1)
		b[copy(b, s)] = 0
	}
	return buf
}

func (t *internals) free(o *hostOp) {
	lib.XFreeValue(t.tls, t.ctx, o.resolve)
	lib.XFreeValue(t.tls, t.ctx, o.reject)
	lib.XFreeValue(t.tls, t.ctx, o.site)
}

// goString reads a JavaScript string argument as UTF-8; a lone surrogate
// becomes U+FFFD, as in the rest of the engine's strings. false means the
// conversion threw (out of memory) and its exception is pending.
func (t *internals) goString(v lib.TJSValue) (string, bool) {
	plen := t.tls.Alloc(int(unsafe.Sizeof(libc.Tsize_t(0))))
	defer t.tls.Free(int(unsafe.Sizeof(libc.Tsize_t(0))))
	p := lib.XJS_ToCStringLen2(t.tls, t.ctx, plen, v, 0)
	if p == 0 {
		return "", false
	}
	defer lib.XJS_FreeCString(t.tls, t.ctx, p)
	n := *(*libc.Tsize_t)(cMemory(plen))
	s := string(unsafe.Slice((*byte)(cMemory(p)), int(n)))
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return s, true
}

// newString makes a JavaScript string of s (UTF-8).
func newString(tls *libc.TLS, ctx uintptr, s string) lib.TJSValue {
	buf := cCopy(tls, s)
	if buf == 0 {
		return lib.XJS_ThrowOutOfMemory(tls, ctx)
	}
	defer libc.Xfree(tls, buf)
	return lib.XJS_NewStringLen(tls, ctx, buf, libc.Tsize_t(len(s)))
}

// --- call sites ------------------------------------------------------------

// Engine layout this file reads (checked against the structs of the pinned
// libquickjs; a change breaks the call-site tests, not memory):
const (
	frameBacktraceBarrier = 1 << 3 // JS_MODE_BACKTRACE_BARRIER in JSStackFrame.js_mode
	bytecodeFlagsOffset   = 18     // the bitfield byte of JSFunctionBytecode
	bytecodeHasDebug      = 1 << 2 // has_debug in that byte
	pc2lineOpFirst        = 1      // PC2LINE_OP_FIRST
	pc2lineRange          = 5      // PC2LINE_RANGE
	pc2lineBase           = -1     // PC2LINE_BASE
)

var _ [lib.MPC2LINE_OP_FIRST - pc2lineOpFirst]struct{}
var _ [pc2lineOpFirst - lib.MPC2LINE_OP_FIRST]struct{}
var _ [lib.MPC2LINE_RANGE - pc2lineRange]struct{}
var _ [pc2lineRange - lib.MPC2LINE_RANGE]struct{}
var _ [unsafe.Offsetof(lib.TJSFunctionBytecode{}.F__ccgo18) - bytecodeFlagsOffset]struct{}
var _ [bytecodeFlagsOffset - unsafe.Offsetof(lib.TJSFunctionBytecode{}.F__ccgo18)]struct{}

// callSite finds the innermost frame of the agent's module on the engine's
// stack and returns a new reference to its function and the offset of the
// call in its bytecode, or undefined when no agent code is on the stack.
func (t *internals) callSite() (lib.TJSValue, uint32) {
	rt := (*lib.TJSRuntime)(cMemory(t.rt))
	for sf := rt.Fcurrent_stack_frame; sf != 0; {
		f := (*lib.TJSStackFrame)(cMemory(sf))
		if f.Fjs_mode&frameBacktraceBarrier != 0 {
			break
		}
		if b := bytecodeOf(f.Fcur_func); b != 0 && f.Fcur_pc != 0 {
			fb := (*lib.TJSFunctionBytecode)(cMemory(b))
			if *(*uint8)(cMemory(b + bytecodeFlagsOffset))&bytecodeHasDebug != 0 && fb.Fdebug.Ffilename == t.agentAtom &&
				f.Fcur_pc > fb.Fbyte_code_buf {
				return lib.XDupValue(t.tls, t.ctx, f.Fcur_func), uint32(f.Fcur_pc - fb.Fbyte_code_buf - 1)
			}
		}
		sf = f.Fprev_frame
	}
	return undefinedValue, 0
}

// bytecodeOf returns the JSFunctionBytecode of a bytecode function object,
// or 0.
func bytecodeOf(fn lib.TJSValue) uintptr {
	if fn.Ftag != lib.EJS_TAG_OBJECT {
		return 0
	}
	p := uintptr(fn.Fu.Fuint641)
	switch uint32((*lib.TJSObject)(cMemory(p)).Fclass_id) {
	case lib.EJS_CLASS_BYTECODE_FUNCTION, lib.EJS_CLASS_GENERATOR_FUNCTION, lib.EJS_CLASS_ASYNC_FUNCTION, lib.EJS_CLASS_ASYNC_GENERATOR_FUNCTION:
		return *(*uintptr)(cMemory(p + unsafe.Offsetof(lib.TJSObject{}.Fu)))
	}
	return 0
}

// lineOf is the engine's find_line_num: the 1-based line and column of
// bytecode offset pc, decoded from the function's pc2line table.
func lineOf(b uintptr, pc uint32) (line, col int, ok bool) {
	if b == 0 || *(*uint8)(cMemory(b + bytecodeFlagsOffset))&bytecodeHasDebug == 0 {
		return 0, 0, false
	}
	fb := (*lib.TJSFunctionBytecode)(cMemory(b))
	if fb.Fdebug.Fpc2line_buf == 0 || fb.Fdebug.Fpc2line_len <= 0 {
		return 0, 0, false
	}
	buf := unsafe.Slice((*byte)(cMemory(fb.Fdebug.Fpc2line_buf)), int(fb.Fdebug.Fpc2line_len))
	d := pc2line{buf: buf}
	line = int(d.uleb()) + 1
	col = int(d.uleb()) + 1
	pos := uint32(0)
	for d.i < len(d.buf) && !d.bad {
		op := uint32(d.buf[d.i])
		d.i++
		var newLine int
		if op == 0 {
			pos += d.uleb()
			newLine = line + int(d.sleb())
		} else {
			op -= pc2lineOpFirst
			pos += op / pc2lineRange
			newLine = line + int(op%pc2lineRange) + pc2lineBase
		}
		newCol := col + int(d.sleb())
		if d.bad || pc < pos {
			break
		}
		line, col = newLine, newCol
	}
	return line, col, !d.bad
}

type pc2line struct {
	buf []byte
	i   int
	bad bool
}

func (d *pc2line) uleb() uint32 {
	var v uint32
	for n := 0; n < 5 && d.i < len(d.buf); n++ {
		a := d.buf[d.i]
		d.i++
		v |= uint32(a&0x7f) << (7 * n)
		if a&0x80 == 0 {
			return v
		}
	}
	d.bad = true
	return 0
}

func (d *pc2line) sleb() int32 {
	v := d.uleb()
	return int32(v>>1) ^ -int32(v&1)
}
