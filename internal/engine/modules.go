//go:build !(386 || arm)

package engine

import (
	"fmt"
	"strings"
	"unsafe"

	"modernc.org/libc"
	lib "modernc.org/libquickjs"
)

// Modules from bytecode. Parsing is the dearest thing this engine does per
// byte of input (about a thousand instructions per byte of module source,
// docs/BENCHMARKS.md), and a sandbox imports the same modules in every run:
// its own internal modules, and each server's generated module, the same
// text for as long as the server's tools do not change. A module compiled
// once and written with JS_WriteObject is read back with JS_ReadObject in
// a tenth of the time, and reading makes the same module a parse would.
//
// quickjs.VM.SetModuleLoader only takes source text: SetModuleLoader
// below replaces its loader function (keeping its normalizer) with one
// that takes either. Bytecode never comes from outside the process: the
// caller hands back what Compiled gave it for the same name and source.

// ModuleLoader answers the engine's request for module name: its bytecode
// (from a Compiled callback of an earlier load of the same name and
// source), or its source text. If compiled is not nil, a module loaded from
// source is written as bytecode and handed to it, for the next load; strip
// says whether that compilation leaves out the functions' source text (see
// StripSource), which only modules of the host's own should. An error
// fails the import with it, as quickjs.VM's loader does.
type ModuleLoader func(name string) (m Module, err error)

// Module is what a ModuleLoader answers.
type Module struct {
	Code     []byte       // bytecode, or nil
	Source   string       // source text, when Code is nil
	Strip    bool         // compile Source without its functions' source text
	Compiled func([]byte) // receives Source's bytecode, if not nil
}

// SetModuleLoader makes load answer the engine's module loads. Call it
// after quickjs.VM.SetModuleLoader, whose normalizer it keeps.
func (e *Engine) SetModuleLoader(load ModuleLoader) {
	e.loader = load
	rt := (*lib.TJSRuntime)(cMemory(e.rt))
	lib.XJS_SetModuleLoaderFunc2(e.tls, e.rt, rt.Fmodule_normalize_func, funcPtr(moduleLoader), 0, rt.Fmodule_loader_opaque)
}

// moduleLoader is the engine's module loader function for every VM with a
// ModuleLoader. It returns the module definition, or 0 with an exception
// pending.
func moduleLoader(tls *libc.TLS, ctx, name, _ uintptr, _ lib.TJSValue) (r uintptr) {
	e := engineOf(ctx)
	if e == nil || e.loader == nil {
		throwTypeError(tls, ctx, "module load failed: no module loader")
		return 0
	}
	defer func() {
		// A Go panic must not unwind through the engine's frames.
		if p := recover(); p != nil {
			throwTypeError(tls, ctx, fmt.Sprintf("module load failed: internal error: %v", p))
			r = 0
		}
	}()
	goName := libc.GoString(name)
	m, err := e.loader(goName)
	if err != nil {
		throwTypeError(tls, ctx, "module load failed: "+err.Error())
		return 0
	}
	if m.Code != nil {
		return e.readModule(m.Code)
	}
	return e.compileModule(name, m)
}

// readModule reads a module written by compileModule.
func (e *Engine) readModule(code []byte) uintptr {
	if len(code) == 0 {
		throwTypeError(e.tls, e.ctx, "module load failed: empty bytecode")
		return 0
	}
	buf := libc.Xmalloc(e.tls, libc.Tsize_t(len(code)))
	if buf == 0 {
		lib.XJS_ThrowOutOfMemory(e.tls, e.ctx)
		return 0
	}
	defer libc.Xfree(e.tls, buf)
	copy(unsafe.Slice((*byte)(cMemory(buf)), len(code)), code)
	v := lib.XJS_ReadObject(e.tls, e.ctx, buf, libc.Tsize_t(len(code)), lib.MJS_READ_OBJ_BYTECODE)
	if v.Ftag == lib.EJS_TAG_EXCEPTION {
		return 0
	}
	if v.Ftag != lib.EJS_TAG_MODULE {
		lib.XFreeValue(e.tls, e.ctx, v)
		throwTypeError(e.tls, e.ctx, "module load failed: the bytecode is not a module")
		return 0
	}
	return moduleDef(e.tls, e.ctx, v)
}

// compileModule compiles source as module name (as quickjs.VM's loader
// does) and, if asked, writes its bytecode for the next load.
func (e *Engine) compileModule(name uintptr, m Module) uintptr {
	src, err := libc.CString(m.Source)
	if err != nil {
		lib.XJS_ThrowOutOfMemory(e.tls, e.ctx)
		return 0
	}
	defer libc.Xfree(e.tls, src)
	if m.Strip {
		prev := lib.XJS_GetStripInfo(e.tls, e.rt)
		lib.XJS_SetStripInfo(e.tls, e.rt, prev|lib.MJS_STRIP_SOURCE)
		defer lib.XJS_SetStripInfo(e.tls, e.rt, prev)
	}
	v := lib.XJS_Eval(e.tls, e.ctx, src, libc.Tsize_t(len(m.Source)), name, lib.MJS_EVAL_TYPE_MODULE|lib.MJS_EVAL_FLAG_COMPILE_ONLY)
	if v.Ftag == lib.EJS_TAG_EXCEPTION {
		return 0
	}
	if m.Compiled != nil {
		if code, ok := e.writeObject(v); ok {
			m.Compiled(code)
		}
	}
	return moduleDef(e.tls, e.ctx, v)
}

// writeObject writes v as bytecode. A failure (out of memory) is not the
// load's: the module is there, only not kept.
func (e *Engine) writeObject(v lib.TJSValue) ([]byte, bool) {
	psize := e.tls.Alloc(int(unsafe.Sizeof(libc.Tsize_t(0))))
	defer e.tls.Free(int(unsafe.Sizeof(libc.Tsize_t(0))))
	buf := lib.XJS_WriteObject(e.tls, e.ctx, psize, v, lib.MJS_WRITE_OBJ_BYTECODE)
	if buf == 0 {
		lib.XFreeValue(e.tls, e.ctx, lib.XJS_GetException(e.tls, e.ctx))
		return nil, false
	}
	defer lib.Xjs_free(e.tls, e.ctx, buf)
	n := *(*libc.Tsize_t)(cMemory(psize))
	return append([]byte(nil), unsafe.Slice((*byte)(cMemory(buf)), n)...), true
}

// moduleDef returns the module definition module value v points to, and
// frees v, as quickjs.VM's loader does: the engine's loader function
// returns a definition without a reference of its own (the context's list
// of modules holds it). Kept, the reference would keep the module, and all
// its top-level variables hold, alive after the context is freed.
func moduleDef(tls *libc.TLS, ctx uintptr, v lib.TJSValue) uintptr {
	p := uintptr(*(*unsafe.Pointer)(unsafe.Pointer(&v.Fu)))
	lib.XFreeValue(tls, ctx, v)
	return p
}

// throwTypeError throws a TypeError with msg (e.throw without an Engine).
func throwTypeError(tls *libc.TLS, ctx uintptr, msg string) {
	c, err := libc.CString(strings.ReplaceAll(msg, "%", "%%"))
	if err != nil {
		lib.XJS_ThrowOutOfMemory(tls, ctx)
		return
	}
	defer libc.Xfree(tls, c)
	lib.XJS_ThrowTypeError(tls, ctx, c, 0)
}

// DefineChunkLoader defines the global function name(chunk), which reads
// the bytecode load(chunk) answers (a global script compiled with
// quickjs.VM.Compile), runs it and returns its completion value: code that
// a VM reads only when a script first needs it. An error of load becomes a
// TypeError.
func (e *Engine) DefineChunkLoader(name string, load func(chunk string) ([]byte, error)) error {
	e.chunks = load
	cname, err := libc.CString(name)
	if err != nil {
		return err
	}
	defer libc.Xfree(e.tls, cname)
	fn := lib.XJS_NewCFunction2(e.tls, e.ctx, funcPtr(nativeChunk), cname, 1, lib.EJS_CFUNC_generic, 0)
	if fn.Ftag == lib.EJS_TAG_EXCEPTION {
		lib.XFreeValue(e.tls, e.ctx, lib.XJS_GetException(e.tls, e.ctx))
		return fmt.Errorf("creating %s failed", name)
	}
	global := lib.XJS_GetGlobalObject(e.tls, e.ctx)
	defer lib.XFreeValue(e.tls, e.ctx, global)
	if lib.XJS_SetPropertyStr(e.tls, e.ctx, global, cname, fn) < 0 { // takes fn
		lib.XFreeValue(e.tls, e.ctx, lib.XJS_GetException(e.tls, e.ctx))
		return fmt.Errorf("defining %s failed", name)
	}
	return nil
}

// nativeChunk is the function DefineChunkLoader defines.
func nativeChunk(tls *libc.TLS, ctx uintptr, _ lib.TJSValue, argc int32, argv uintptr) (r lib.TJSValue) {
	e := engineOf(ctx)
	if e == nil || e.chunks == nil || argc < 1 {
		return e0throw(tls, ctx, "chunks are not available in this VM")
	}
	defer func() {
		// A Go panic must not unwind through the engine's frames.
		if p := recover(); p != nil {
			r = e0throw(tls, ctx, fmt.Sprintf("internal error loading a chunk: %v", p))
		}
	}()
	name, ok := e.goString(unsafe.Slice((*lib.TJSValue)(cMemory(argv)), 1)[0])
	if !ok {
		return lib.TJSValue{Ftag: lib.EJS_TAG_EXCEPTION}
	}
	code, err := e.chunks(name)
	if err != nil {
		return e0throw(tls, ctx, "loading "+name+": "+err.Error())
	}
	buf := libc.Xmalloc(tls, libc.Tsize_t(len(code)))
	if buf == 0 {
		return lib.XJS_ThrowOutOfMemory(tls, ctx)
	}
	defer libc.Xfree(tls, buf)
	copy(unsafe.Slice((*byte)(cMemory(buf)), len(code)), code)
	fun := lib.XJS_ReadObject(tls, ctx, buf, libc.Tsize_t(len(code)), lib.MJS_READ_OBJ_BYTECODE)
	if fun.Ftag == lib.EJS_TAG_EXCEPTION {
		return fun
	}
	return lib.XJS_EvalFunction(tls, ctx, fun) // takes fun
}

// e0throw throws a TypeError with msg and returns the exception marker.
func e0throw(tls *libc.TLS, ctx uintptr, msg string) lib.TJSValue {
	throwTypeError(tls, ctx, msg)
	return lib.TJSValue{Ftag: lib.EJS_TAG_EXCEPTION}
}
