//go:build !(386 || arm)

package engine

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unsafe"

	lib "modernc.org/libquickjs"
	"modernc.org/quickjs"
)

// The module versions this package was written for. TestPinnedVersions
// compares them with go.mod: after an upgrade of any of the three, check
// every field of layout below against the new sources (the C structures in
// libquickjs's ccgo_<os>_<arch>.go, quickjs.VM and quickjs.Value in
// quickjs.go, and how ccgo calls a function pointer: funcPtr), run the
// engine and sandbox tests, then update these.
const (
	PinnedQuickJS    = "v0.27.0" // modernc.org/quickjs
	PinnedLibQuickJS = "v0.14.0" // modernc.org/libquickjs
	PinnedLibc       = "v1.79.0" // modernc.org/libc
)

// field is one field this package reads or writes: where it is (path, from
// the root type; "*" steps through a pointer, "[]" into an array's
// element), its offset from the start of the struct the path last entered
// (the root, or what the last pointer points to), its size, and its Go
// type, or "" for a struct whose own fields are listed.
type field struct {
	name   string // of the root type, for messages
	root   reflect.Type
	path   string
	offset uintptr
	size   uintptr
	typ    string
}

// layout is every field this package relies on, as the pinned builds on
// 64-bit platforms have it.
var layout = []field{
	// quickjs.VM's unexported state (handles).
	{"quickjs.VM", reflect.TypeFor[quickjs.VM](), "state.cContext", 8, 8, "uintptr"},
	{"quickjs.VM", reflect.TypeFor[quickjs.VM](), "state.runtime", 56, 8, "*quickjs.runtime"},
	{"quickjs.VM", reflect.TypeFor[quickjs.VM](), "state.runtime*.cRuntime", 0, 8, "uintptr"},
	{"quickjs.VM", reflect.TypeFor[quickjs.VM](), "state.runtime*.tls", 8, 8, "*libc.TLS"},
	// The rest of quickjs.VM, which NewVM assembles as quickjs.NewVM does
	// and Drop marks abandoned (vm.go).
	{"quickjs.VM", reflect.TypeFor[quickjs.VM](), "intr", 0, 8, "*quickjs.interrupter"},
	{"quickjs.VM", reflect.TypeFor[quickjs.VM](), "intr*.data", 8, 8, "uintptr"},
	{"quickjs.VM", reflect.TypeFor[quickjs.VM](), "state.int32_16", 24, 16, ""},
	{"quickjs.VM", reflect.TypeFor[quickjs.VM](), "state.int32_2", 40, 16, ""},
	{"quickjs.VM", reflect.TypeFor[quickjs.VM](), "state.interruptData", 72, 8, "uintptr"},
	{"quickjs.VM", reflect.TypeFor[quickjs.VM](), "state.toStringArgv", 80, 8, "uintptr"},
	{"quickjs.VM", reflect.TypeFor[quickjs.VM](), "state.abandoned", 120, 1, "bool"},
	// quickjs.Value, mirrored by rawValue.
	{"quickjs.Value", reflect.TypeFor[quickjs.Value](), "vm", 0, 8, "*quickjs.VM"},
	{"quickjs.Value", reflect.TypeFor[quickjs.Value](), "v", 8, 16, ""},
	{"JSValue", reflect.TypeFor[lib.TJSValue](), "Fu.Fuint641", 0, 8, "uint64"},
	{"JSValue", reflect.TypeFor[lib.TJSValue](), "Ftag", 8, 8, "int64"},
	// JSContext.interrupt_counter (Kick) and random_state (seedRandom).
	{"JSContext", reflect.TypeFor[lib.TJSContext](), "Finterrupt_counter", 424, 4, "int32"},
	{"JSContext", reflect.TypeFor[lib.TJSContext](), "Frandom_state", 416, 8, "uint64"},
	// JSRuntime's allocator and accounting (alloc.go, Memory) and its
	// stack of frames (call sites).
	{"JSRuntime", reflect.TypeFor[lib.TJSRuntime](), "Fmalloc_ctx.Fmf.Fjs_malloc", 1000, 8, "uintptr"},
	{"JSRuntime", reflect.TypeFor[lib.TJSRuntime](), "Fmalloc_ctx.Fmf.Fjs_realloc", 1016, 8, "uintptr"},
	{"JSRuntime", reflect.TypeFor[lib.TJSRuntime](), "Fmalloc_ctx.Fmalloc_state", 1032, 32, ""},
	{"JSRuntime", reflect.TypeFor[lib.TJSRuntime](), "Fmalloc_ctx.Fmalloc_state.Fmalloc_size", 1040, 8, "uint64"},
	{"JSRuntime", reflect.TypeFor[lib.TJSRuntime](), "Fmalloc_ctx.Fmalloc_state.Fmalloc_limit", 1048, 8, "uint64"},
	{"JSRuntime", reflect.TypeFor[lib.TJSRuntime](), "Fcurrent_stack_frame", 1264, 8, "uintptr"},
	// JSRuntime's interrupt handler (NewVM sets quickjs's) and the malloc
	// state's opaque field, which holds a VM's heap handle (vm.go).
	{"JSRuntime", reflect.TypeFor[lib.TJSRuntime](), "Finterrupt_handler", 1272, 8, "uintptr"},
	{"JSRuntime", reflect.TypeFor[lib.TJSRuntime](), "Fmalloc_ctx.Fmalloc_state.Fopaque", 1056, 8, "uintptr"},
	{"JSRuntime", reflect.TypeFor[lib.TJSRuntime](), "Fmalloc_ctx.Fmf.Fjs_free", 1008, 8, "uintptr"},
	{"JSRuntime", reflect.TypeFor[lib.TJSRuntime](), "Fmalloc_ctx.Fmf.Fjs_malloc_usable_size", 1024, 8, "uintptr"},
	// JSRuntime's module loader hooks, which SetModuleLoader replaces
	// keeping quickjs.VM's normalizer (modules.go).
	{"JSRuntime", reflect.TypeFor[lib.TJSRuntime](), "Fmodule_normalize_func", 1320, 8, "uintptr"},
	{"JSRuntime", reflect.TypeFor[lib.TJSRuntime](), "Fmodule_loader_opaque", 1352, 8, "uintptr"},
	// JSStackFrame (call sites).
	{"JSStackFrame", reflect.TypeFor[lib.TJSStackFrame](), "Fprev_frame", 0, 8, "uintptr"},
	{"JSStackFrame", reflect.TypeFor[lib.TJSStackFrame](), "Fcur_func", 8, 16, ""},
	{"JSStackFrame", reflect.TypeFor[lib.TJSStackFrame](), "Fcur_pc", 48, 8, "uintptr"},
	{"JSStackFrame", reflect.TypeFor[lib.TJSStackFrame](), "Fjs_mode", 60, 4, "int32"},
	// JSString: the word holding len (31 bits) and is_wide_char (bit 31),
	// and JSStringRope's len (strguard.go).
	{"JSString", reflect.TypeFor[lib.TJSString](), "F__ccgo0", 0, 4, "uint32"},
	{"JSStringRope", reflect.TypeFor[lib.TJSStringRope](), "Flen1", 0, 4, "uint32"},
	// JSObject: the class and, for a bytecode function, its bytecode.
	{"JSObject", reflect.TypeFor[lib.TJSObject](), "Fclass_id", 18, 2, "uint16"},
	{"JSObject", reflect.TypeFor[lib.TJSObject](), "Fu", 40, 24, ""},
	{"JSObject", reflect.TypeFor[lib.TJSObject](), "Fu.Ffunc1[].Ffunction_bytecode", 40, 8, "uintptr"},
	// JSObject.prop: an array's length is its first property (guard.go).
	{"JSObject", reflect.TypeFor[lib.TJSObject](), "Fprop", 32, 8, "uintptr"},
	{"JSProperty", reflect.TypeFor[lib.TJSProperty](), "Fu", 0, 16, ""},
	// JSObject.u.cfunc of a native function, mirrored by cfuncLayout
	// (guard.go puts its own function in front of the engine's).
	{"JSObject", reflect.TypeFor[lib.TJSObject](), "Fu.Fcfunc[].Frealm", 40, 8, "uintptr"},
	{"JSObject", reflect.TypeFor[lib.TJSObject](), "Fu.Fcfunc[].Fc_function", 48, 8, ""},
	{"JSObject", reflect.TypeFor[lib.TJSObject](), "Fu.Fcfunc[].Flength", 56, 1, "uint8"},
	{"JSObject", reflect.TypeFor[lib.TJSObject](), "Fu.Fcfunc[].Fcproto", 57, 1, "uint8"},
	{"JSObject", reflect.TypeFor[lib.TJSObject](), "Fu.Fcfunc[].Fmagic", 58, 2, "int16"},
	// JSObject.u.object_data: a Date's time value (describe.go).
	{"JSObject", reflect.TypeFor[lib.TJSObject](), "Fu.Fobject_data[]", 40, 16, ""},
	// What JS_GetOwnProperty and JS_GetOwnPropertyNames fill in (guard.go,
	// describe.go).
	{"JSPropertyDescriptor", reflect.TypeFor[lib.TJSPropertyDescriptor](), "Fflags", 0, 4, "int32"},
	{"JSPropertyDescriptor", reflect.TypeFor[lib.TJSPropertyDescriptor](), "Fvalue", 8, 16, ""},
	{"JSPropertyDescriptor", reflect.TypeFor[lib.TJSPropertyDescriptor](), "Fgetter", 24, 16, ""},
	{"JSPropertyDescriptor", reflect.TypeFor[lib.TJSPropertyDescriptor](), "Fsetter", 40, 16, ""},
	{"JSPropertyEnum", reflect.TypeFor[lib.TJSPropertyEnum](), "Fatom", 4, 4, "uint32"},
	// JSFunctionBytecode: the bitfield byte holding has_debug (bit 2, see
	// bytecodeHasDebug), the bytecode and the debug info.
	{"JSFunctionBytecode", reflect.TypeFor[lib.TJSFunctionBytecode](), "F__ccgo18", 18, 1, "uint8"},
	{"JSFunctionBytecode", reflect.TypeFor[lib.TJSFunctionBytecode](), "Fbyte_code_buf", 24, 8, "uintptr"},
	{"JSFunctionBytecode", reflect.TypeFor[lib.TJSFunctionBytecode](), "Fdebug.Ffilename", 96, 4, "uint32"},
	{"JSFunctionBytecode", reflect.TypeFor[lib.TJSFunctionBytecode](), "Fdebug.Fpc2line_len", 104, 4, "int32"},
	{"JSFunctionBytecode", reflect.TypeFor[lib.TJSFunctionBytecode](), "Fdebug.Fpc2line_buf", 112, 8, "uintptr"},
}

// Sizes of whole types this package copies or mirrors.
var sizes = []struct {
	name string
	t    reflect.Type
	size uintptr
}{
	{"JSValue", reflect.TypeFor[lib.TJSValue](), 16},
	{"quickjs.Value", reflect.TypeFor[quickjs.Value](), 24},
	{"rawValue", reflect.TypeFor[rawValue](), 24},
	{"cfuncLayout", reflect.TypeFor[cfuncLayout](), 24},
	{"JSPropertyDescriptor", reflect.TypeFor[lib.TJSPropertyDescriptor](), 56},
	{"JSPropertyEnum", reflect.TypeFor[lib.TJSPropertyEnum](), 8},
	// A string's characters follow its header (strguard.go).
	{"JSString", reflect.TypeFor[lib.TJSString](), 12},
}

// Constants of the engine this package uses, with the values it was
// written for.
var constants = []struct {
	name       string
	got, wrote int64
}{
	{"JS_MODE_BACKTRACE_BARRIER", lib.MJS_MODE_BACKTRACE_BARRIER, 8},
	{"PC2LINE_OP_FIRST", lib.MPC2LINE_OP_FIRST, 1},
	{"PC2LINE_RANGE", lib.MPC2LINE_RANGE, 5},
	{"PC2LINE_BASE", lib.MPC2LINE_BASE, -1},
	{"JS_CFUNC_generic_magic", lib.EJS_CFUNC_generic_magic, 1},
	{"JS_CFUNC_generic", lib.EJS_CFUNC_generic, 0},
	{"JS_PROP_GETSET", lib.MJS_PROP_GETSET, 16},
	// modules.go: a module value's tag, and the flags of reading, writing
	// and compiling one.
	{"JS_TAG_MODULE", lib.EJS_TAG_MODULE, -3},
	{"JS_READ_OBJ_BYTECODE", lib.MJS_READ_OBJ_BYTECODE, 1},
	{"JS_WRITE_OBJ_BYTECODE", lib.MJS_WRITE_OBJ_BYTECODE, 1},
	{"JS_EVAL_FLAG_COMPILE_ONLY", lib.MJS_EVAL_FLAG_COMPILE_ONLY, 32},
	{"JS_STRIP_SOURCE", lib.MJS_STRIP_SOURCE, 1},
	// guard.go takes the typed array classes as one range.
	{"JS_CLASS_UINT8C_ARRAY", lib.EJS_CLASS_UINT8C_ARRAY, 21},
	{"JS_CLASS_FLOAT64_ARRAY", lib.EJS_CLASS_FLOAT64_ARRAY, 32},
	{"JS_CLASS_STRING", lib.EJS_CLASS_STRING, 5},
	{"JS_CLASS_REGEXP", lib.EJS_CLASS_REGEXP, 18},
}

// bytecodeFlagsOffset is the offset of JSFunctionBytecode's bitfield byte
// that holds has_debug (listed in layout).
const bytecodeFlagsOffset = unsafe.Offsetof(lib.TJSFunctionBytecode{}.F__ccgo18)

// bytecodeHasDebug is has_debug's bit in that byte: the C declaration
// order of the bitfields (is_direct_or_indirect_eval, ..., has_debug)
// that ccgo packs into it; pinned by the version, and by the call-site
// tests, which find no line without it.
const bytecodeHasDebug = 1 << 2

// mallocStateOffset is where a runtime's malloc state is: the allocator
// gets its address, which is how alloc.go finds the Engine.
const mallocStateOffset = unsafe.Offsetof(lib.TJSRuntime{}.Fmalloc_ctx) + unsafe.Offsetof(lib.TJSMallocContext{}.Fmalloc_state)

// checkLayout compares the engine's layout with what this package was
// written for, once per process.
var checkLayout = sync.OnceValue(func() error {
	if problems := layoutProblems(layout); len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrLayout, strings.Join(problems, "; "))
	}
	return nil
})

// layoutProblems lists every difference between the engine's layout and
// what this package was written for.
func layoutProblems(fields []field) []string {
	var out []string
	for _, f := range fields {
		off, size, typ, err := locate(f.root, f.path)
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("%s.%s: %v", f.name, f.path, err))
		case off != f.offset || size != f.size || (f.typ != "" && typ != f.typ):
			out = append(out, fmt.Sprintf("%s.%s is at offset %d, %d bytes, %s; written for offset %d, %d bytes, %s",
				f.name, f.path, off, size, shortType(typ), f.offset, f.size, orStruct(f.typ)))
		}
	}
	for _, s := range sizes {
		if s.t.Size() != s.size {
			out = append(out, fmt.Sprintf("%s is %d bytes; written for %d", s.name, s.t.Size(), s.size))
		}
	}
	for _, c := range constants {
		if c.got != c.wrote {
			out = append(out, fmt.Sprintf("%s is %d; written for %d", c.name, c.got, c.wrote))
		}
	}
	return out
}

// shortType names a type in a message: an anonymous struct (the C
// structures) is "a struct", not its whole definition.
func shortType(t string) string {
	if strings.HasPrefix(t, "struct {") {
		return "a struct"
	}
	return t
}

func orStruct(t string) string {
	if t == "" {
		return "a struct"
	}
	return t
}

// locate follows path from t and returns the field's offset (from the
// struct the path last entered), size and type.
func locate(t reflect.Type, path string) (off, size uintptr, typ string, err error) {
	cur := t
	for _, step := range strings.Split(path, ".") {
		deref := strings.HasSuffix(step, "*")
		elem := strings.HasSuffix(step, "[]")
		name := strings.TrimSuffix(strings.TrimSuffix(step, "*"), "[]")
		if cur.Kind() != reflect.Struct {
			return 0, 0, "", fmt.Errorf("%s is not a struct", cur)
		}
		sf, ok := cur.FieldByName(name)
		if !ok {
			return 0, 0, "", fmt.Errorf("no field %s", name)
		}
		off += sf.Offset
		cur = sf.Type
		switch {
		case deref:
			if cur.Kind() != reflect.Pointer {
				return 0, 0, "", fmt.Errorf("%s is not a pointer", name)
			}
			cur, off = cur.Elem(), 0
		case elem:
			if cur.Kind() != reflect.Array {
				return 0, 0, "", fmt.Errorf("%s is not an array", name)
			}
			cur = cur.Elem()
		}
	}
	return off, cur.Size(), cur.String(), nil
}
