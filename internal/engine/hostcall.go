//go:build !(386 || arm)

package engine

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
// bindings (docs/BENCHMARKS.md has what each crossing costs):
//
//   - The function DefineHostCall defines is native. It starts the host
//     operation and returns a promise made with JS_NewPromiseCapability; the
//     promise's resolving functions stay in Go (Promise), so no JavaScript
//     executor closure is created per call.
//   - Promise.Resolve settles that promise from Go: JS_ParseJSON of the
//     result, then the resolve function. No JavaScript runs for a
//     successful call. Promise.Fail hands the reject function to a
//     JavaScript function of the caller's (which builds the error).
//   - The call site, the innermost frame of the caller's chosen module, is
//     noted at the call (a reference to the function and its bytecode
//     offset, a few memory reads) and turned into a line and column only if
//     asked (Promise.Site): new Error() at every call would cost as much as
//     the rest of the call.
//
// Invariants: every engine value a Promise holds is a counted reference,
// freed exactly once, by Free. Nothing here panics into the engine: the
// native function recovers and turns a Go failure into a refused call.

// HostCall is the Go side of a host call function: it starts operation op
// with payload and keeps p, to settle it later on the VM's goroutine, and
// free it. An error refuses the call: p is freed, and the function returns
// refusal(err) (a string) to the script instead of a promise.
type HostCall func(op, payload string, p *Promise) error

type hostCall struct {
	call     HostCall
	refusal  func(error) string
	siteAtom lib.TJSAtom // the file name of the module whose frames are call sites
}

// Promise is the promise of one host call, until it is settled and freed.
type Promise struct {
	e               *Engine
	resolve, reject lib.TJSValue
	site            lib.TJSValue // the function that made the call, or undefined
	pc              uint32       // offset of the call in site's bytecode
	freed           bool
}

// DefineHostCall defines the global function name(op, payload), two
// strings, which calls call. Its promise's Site is the innermost frame of
// the module whose file name is siteModule. refusal turns an error of call
// (or a panic) into the string the function returns instead of a promise.
func (e *Engine) DefineHostCall(name, siteModule string, call HostCall, refusal func(error) string) error {
	cname, err := libc.CString(name)
	if err != nil {
		return err
	}
	defer libc.Xfree(e.tls, cname)
	site, err := libc.CString(siteModule)
	if err != nil {
		return err
	}
	defer libc.Xfree(e.tls, site)
	c := &hostCall{call: call, refusal: refusal, siteAtom: lib.XJS_NewAtom(e.tls, e.ctx, site)}
	e.calls = append(e.calls, c) // Detach frees the atom
	fn := lib.XJS_NewCFunction2(e.tls, e.ctx, funcPtr(nativeCall), cname, 2, lib.EJS_CFUNC_generic_magic, int32(len(e.calls)-1))
	if fn.Ftag == lib.EJS_TAG_EXCEPTION {
		lib.XFreeValue(e.tls, e.ctx, lib.XJS_GetException(e.tls, e.ctx))
		return errors.New("creating the host call function failed")
	}
	global := lib.XJS_GetGlobalObject(e.tls, e.ctx)
	defer lib.XFreeValue(e.tls, e.ctx, global)
	if lib.XJS_SetPropertyStr(e.tls, e.ctx, global, cname, fn) < 0 { // takes fn
		lib.XFreeValue(e.tls, e.ctx, lib.XJS_GetException(e.tls, e.ctx))
		return errors.New("defining the host call function failed")
	}
	return nil
}

// nativeCall is every host call function; magic says which.
func nativeCall(tls *libc.TLS, ctx uintptr, _ lib.TJSValue, argc int32, argv uintptr, magic int32) (r lib.TJSValue) {
	e := engineOf(ctx)
	if e == nil || int(magic) >= len(e.calls) {
		return newString(tls, ctx, "host calls are not available in this VM")
	}
	c := e.calls[magic]
	defer func() {
		// A Go panic must not unwind through the engine's frames.
		if p := recover(); p != nil {
			r = newString(tls, ctx, c.refusal(fmt.Errorf("internal error in a host call: %v", p)))
		}
	}()
	if argc < 2 {
		return newString(tls, ctx, c.refusal(errors.New("host call: missing arguments")))
	}
	args := unsafe.Slice((*lib.TJSValue)(cMemory(argv)), 2)
	op, ok1 := e.goString(args[0])
	payload, ok2 := e.goString(args[1])
	if !ok1 || !ok2 {
		return lib.TJSValue{Ftag: lib.EJS_TAG_EXCEPTION} // the conversion's exception is pending
	}
	funcs := e.tls.Alloc(int(2 * unsafe.Sizeof(lib.TJSValue{})))
	defer e.tls.Free(int(2 * unsafe.Sizeof(lib.TJSValue{})))
	promise := lib.XJS_NewPromiseCapability(tls, ctx, funcs)
	if promise.Ftag == lib.EJS_TAG_EXCEPTION {
		return promise // out of memory, most likely; the exception is pending
	}
	rf := unsafe.Slice((*lib.TJSValue)(cMemory(funcs)), 2)
	p := &Promise{e: e, resolve: rf[0], reject: rf[1]}
	p.site, p.pc = e.callSite(c.siteAtom)
	if err := c.call(op, payload, p); err != nil {
		p.Free()
		lib.XFreeValue(tls, ctx, promise)
		return newString(tls, ctx, c.refusal(err))
	}
	return promise
}

// Resolve resolves the promise with the value of JSON text data. When the
// value does not fit in the memory limit, the promise is rejected with what
// the engine threw instead. An error is an exception that escaped (an
// interrupt, running out of memory while rejecting).
func (p *Promise) Resolve(data string) error {
	e := p.e
	val := e.parseJSON(data)
	if val.Ftag == lib.EJS_TAG_EXCEPTION {
		exc := lib.XJS_GetException(e.tls, e.ctx)
		defer lib.XFreeValue(e.tls, e.ctx, exc)
		return e.callFree(p.reject, exc)
	}
	defer lib.XFreeValue(e.tls, e.ctx, val)
	return e.callFree(p.resolve, val)
}

// Fail rejects the promise through f, a JavaScript function of the
// caller's: f(reject, ...args), each arg a string. f builds the error and
// calls reject with it.
func (p *Promise) Fail(f quickjs.Value, args ...string) error {
	e := p.e
	vals := make([]lib.TJSValue, 0, 1+len(args))
	vals = append(vals, p.reject)
	defer func() {
		for _, v := range vals[1:] {
			lib.XFreeValue(e.tls, e.ctx, v)
		}
	}()
	for _, a := range args {
		v := newString(e.tls, e.ctx, a)
		if v.Ftag == lib.EJS_TAG_EXCEPTION {
			return e.pendingError()
		}
		vals = append(vals, v)
	}
	return e.callFree(rawOf(f), vals...)
}

// Site is the 1-based line and column of the call in the module named at
// DefineHostCall, if a frame of that module was on the stack.
func (p *Promise) Site() (line, col int, ok bool) {
	if p.site.Ftag != lib.EJS_TAG_OBJECT {
		return 0, 0, false
	}
	return lineOf(bytecodeOf(p.site), p.pc)
}

// Free releases the promise's references; it is safe to call twice.
func (p *Promise) Free() {
	if p.freed {
		return
	}
	p.freed = true
	e := p.e
	lib.XFreeValue(e.tls, e.ctx, p.resolve)
	lib.XFreeValue(e.tls, e.ctx, p.reject)
	lib.XFreeValue(e.tls, e.ctx, p.site)
}

// parseJSON parses data in the engine; running out of memory is an
// exception, as in any engine call.
func (e *Engine) parseJSON(data string) lib.TJSValue {
	buf := cCopy(e.tls, data)
	if buf == 0 {
		return lib.XJS_ThrowOutOfMemory(e.tls, e.ctx)
	}
	defer libc.Xfree(e.tls, buf)
	return lib.XJS_ParseJSON(e.tls, e.ctx, buf, libc.Tsize_t(len(data)), jsonFilename())
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

// goString reads a JavaScript string argument as UTF-8; a lone surrogate
// becomes U+FFFD, as in the rest of the engine's strings. false means the
// conversion threw (out of memory) and its exception is pending.
func (e *Engine) goString(v lib.TJSValue) (string, bool) {
	plen := e.tls.Alloc(int(unsafe.Sizeof(libc.Tsize_t(0))))
	defer e.tls.Free(int(unsafe.Sizeof(libc.Tsize_t(0))))
	p := lib.XJS_ToCStringLen2(e.tls, e.ctx, plen, v, 0)
	if p == 0 {
		return "", false
	}
	defer lib.XJS_FreeCString(e.tls, e.ctx, p)
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

// callSite finds the innermost frame of the module named by atom on the
// engine's stack and returns a new reference to its function and the offset
// of the call in its bytecode, or undefined when no such frame is there.
func (e *Engine) callSite(atom lib.TJSAtom) (lib.TJSValue, uint32) {
	rt := (*lib.TJSRuntime)(cMemory(e.rt))
	for sf := rt.Fcurrent_stack_frame; sf != 0; {
		f := (*lib.TJSStackFrame)(cMemory(sf))
		if f.Fjs_mode&lib.MJS_MODE_BACKTRACE_BARRIER != 0 {
			break
		}
		if b := bytecodeOf(f.Fcur_func); b != 0 && f.Fcur_pc != 0 {
			fb := (*lib.TJSFunctionBytecode)(cMemory(b))
			if *(*uint8)(cMemory(b + bytecodeFlagsOffset))&bytecodeHasDebug != 0 && fb.Fdebug.Ffilename == atom &&
				f.Fcur_pc > fb.Fbyte_code_buf {
				return lib.XDupValue(e.tls, e.ctx, f.Fcur_func), uint32(f.Fcur_pc - fb.Fbyte_code_buf - 1)
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
			op -= lib.MPC2LINE_OP_FIRST
			pos += op / lib.MPC2LINE_RANGE
			newLine = line + int(op%lib.MPC2LINE_RANGE) + lib.MPC2LINE_BASE
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
