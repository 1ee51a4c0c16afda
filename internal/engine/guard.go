//go:build !(386 || arm)

package engine

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"unsafe"

	"modernc.org/libc"
	lib "modernc.org/libquickjs"
)

// The engine checks for an interrupt (the deadline, cancellation) only when
// it calls a function or jumps backwards in bytecode. Most built-ins loop
// over their input without doing either, which is harmless when the input
// is data the script holds (its memory limit bounds it), but
// Array.prototype's generic methods loop over a *length*, and a length
// costs nothing: Array.prototype.indexOf.call({length: 2**53 - 1}, 1), or
// new Array(2**32 - 1).join(""), runs for hours at 100% CPU, and no
// deadline, cancellation or shutdown can stop it.
//
// So GuardArrayMethods guards those methods: each of the VM's
// Array.prototype functions below gets a native function of ours in front
// of the engine's own (same function object: same name, length, identity
// and "[native code]"). It finds the length the method will loop over
// without running any script code, and:
//   - up to the caller's maximum it calls the engine's function;
//   - past it, it tells the caller (who ends the run) and throws a
//     RangeError;
//   - where the length cannot be known without running script code (a
//     Proxy, a getter, an object whose valueOf answers), it refuses the call
//     with a TypeError: the engine would read the length again itself, and
//     a getter or a Proxy trap may answer differently the second time.
//     Array.from(obj) makes an array of such an object.
//
// Array.prototype.flat and flatMap also loop over the lengths of the arrays
// nested in their input, which only walking it could bound: the sandbox's
// bootstrap replaces them with JavaScript versions, whose loops check the
// interrupt. Memory bounds every other built-in loop (docs/ARCHITECTURE.md
// lists what was measured).

// guardedMethod is one guarded function of Array.prototype.
type guardedMethod struct {
	name   string
	magic  bool // cproto generic_magic rather than generic
	concat bool // loops over its arguments too (Array.prototype.concat)
	// str: a String.prototype search (strguard.go), of kind search.
	str    bool
	search int
	// orig is the engine's own function, the same in every VM (JS_NewContext
	// installs the same table); front is ours, a closure kept alive here
	// because only the engine holds its address (see funcPtr).
	orig  uintptr
	front any
	ptr   uintptr
}

var guardedMethods = []*guardedMethod{
	{name: "concat", concat: true},
	{name: "copyWithin"},
	// fill writes every index, which usually costs memory, but not on an
	// object whose prototype is a typed array: a write past the typed
	// array's end is dropped without a trace, so
	// Array.prototype.fill.call(Object.setPrototypeOf({length: 2**53 - 1},
	// new Uint8Array(0)), 0) looped for ever and allocated nothing.
	{name: "fill"},
	{name: "every", magic: true},
	{name: "some", magic: true},
	{name: "forEach", magic: true},
	{name: "map", magic: true},
	{name: "filter", magic: true},
	{name: "reduce", magic: true},
	{name: "reduceRight", magic: true},
	{name: "indexOf"},
	{name: "lastIndexOf"},
	{name: "includes"},
	{name: "join", magic: true},
	{name: "toLocaleString", magic: true},
	{name: "shift", magic: true},
	{name: "unshift", magic: true},
	{name: "reverse"},
	{name: "sort"},
	{name: "slice", magic: true},
	{name: "splice", magic: true},
}

// cfuncLayout mirrors u.cfunc of the engine's JSObject (layout.go checks
// its fields).
type cfuncLayout struct {
	realm     uintptr
	cFunction uintptr
	length    uint8
	cproto    uint8
	magic     int16
}

// objectUnionOffset is where a JSObject's union u starts (u.cfunc for a
// native function, u.object_data for a Date).
const objectUnionOffset = unsafe.Offsetof(lib.TJSObject{}.Fu)

var (
	frontsOnce sync.Once
	guardsMu   sync.Mutex // orig, set by the first VM
)

// makeFronts builds the native functions the engine calls instead.
func makeFronts() {
	for _, m := range append(guardedMethods[:len(guardedMethods):len(guardedMethods)], stringMethods...) {
		guard := guardCall
		if m.str {
			guard = stringGuard
		}
		var f any
		if m.magic {
			f = func(tls *libc.TLS, ctx uintptr, this lib.TJSValue, argc int32, argv uintptr, magic int32) lib.TJSValue {
				if r, refused := guard(tls, ctx, m, this, argc, argv); refused {
					return r
				}
				return (*(*func(*libc.TLS, uintptr, lib.TJSValue, int32, uintptr, int32) lib.TJSValue)(unsafe.Pointer(&struct{ uintptr }{m.orig})))(tls, ctx, this, argc, argv, magic)
			}
		} else {
			f = func(tls *libc.TLS, ctx uintptr, this lib.TJSValue, argc int32, argv uintptr) lib.TJSValue {
				if r, refused := guard(tls, ctx, m, this, argc, argv); refused {
					return r
				}
				return (*(*func(*libc.TLS, uintptr, lib.TJSValue, int32, uintptr) lib.TJSValue)(unsafe.Pointer(&struct{ uintptr }{m.orig})))(tls, ctx, this, argc, argv)
			}
		}
		m.front = f
		m.ptr = funcPtr(m.front)
	}
}

// GuardArrayMethods puts the guards in front of this VM's Array.prototype
// methods (see above). max returns the most elements a call may loop over,
// when it is made; tooLong is called, on the VM's goroutine, when a call
// is refused for looping over more (the engine then throws a RangeError,
// which the script may catch: the caller ends the run).
func (e *Engine) GuardArrayMethods(max func() uint64, tooLong func(method string, length, max uint64)) error {
	frontsOnce.Do(makeFronts)
	e.guardMax, e.guardTooLong = max, tooLong
	proto := lib.XJS_GetClassProto(e.tls, e.ctx, lib.EJS_CLASS_ARRAY)
	defer lib.XFreeValue(e.tls, e.ctx, proto)
	for _, m := range guardedMethods {
		if err := e.installGuard(proto, m); err != nil {
			return fmt.Errorf("%w: %v", ErrLayout, err)
		}
	}
	// %TypedArray%.prototype's length getter: built in, it runs no script.
	ta := lib.XJS_GetClassProto(e.tls, e.ctx, lib.EJS_CLASS_UINT8_ARRAY)
	defer lib.XFreeValue(e.tls, e.ctx, ta)
	base := lib.XJS_GetPrototype(e.tls, e.ctx, ta)
	defer lib.XFreeValue(e.tls, e.ctx, base)
	getter, kind := e.ownProperty(base, lib.EJS_ATOM_length)
	if kind != ownAccessor {
		lib.XFreeValue(e.tls, e.ctx, getter)
		return fmt.Errorf("%w: the typed arrays' length getter was not found", ErrLayout)
	}
	e.taLength = getter
	return nil
}

func (t *Engine) installGuard(proto lib.TJSValue, m *guardedMethod) error {
	name, err := libc.CString(m.name)
	if err != nil {
		return err
	}
	defer libc.Xfree(t.tls, name)
	fn := lib.XJS_GetPropertyStr(t.tls, t.ctx, proto, name)
	defer lib.XFreeValue(t.tls, t.ctx, fn)
	if fn.Ftag != lib.EJS_TAG_OBJECT || classID(fn) != lib.EJS_CLASS_C_FUNCTION {
		return fmt.Errorf("Array.prototype.%s is not a native function", m.name)
	}
	cf := (*cfuncLayout)(cMemory(uintptr(fn.Fu.Fuint641) + objectUnionOffset))
	want := uint8(lib.EJS_CFUNC_generic)
	if m.magic {
		want = lib.EJS_CFUNC_generic_magic
	}
	if cf.cproto != want {
		return fmt.Errorf("Array.prototype.%s has calling convention %d, want %d", m.name, cf.cproto, want)
	}
	guardsMu.Lock()
	defer guardsMu.Unlock()
	if m.orig == 0 {
		m.orig = cf.cFunction
	}
	if cf.cFunction != m.orig {
		return fmt.Errorf("Array.prototype.%s is not the engine's own function", m.name)
	}
	cf.cFunction = m.ptr
	return nil
}

// classID is the class of an object value.
func classID(v lib.TJSValue) uint16 {
	return (*lib.TJSObject)(cMemory(uintptr(v.Fu.Fuint641))).Fclass_id
}

// guardCall decides whether m may run on this (and, for concat, its
// arguments). refused means the call is answered with r, an exception.
func guardCall(tls *libc.TLS, ctx uintptr, m *guardedMethod, this lib.TJSValue, argc int32, argv uintptr) (r lib.TJSValue, refused bool) {
	t := engineOf(ctx)
	if t == nil || t.guardMax == nil {
		return r, false
	}
	defer func() {
		// A Go panic must not unwind through the engine's frames.
		if p := recover(); p != nil {
			r, refused = t.throw(lib.XJS_ThrowInternalError, fmt.Sprintf("internal error in the guard of Array.prototype.%s", m.name)), true
		}
	}()
	n, known := t.lengthOf(this)
	if known && m.concat {
		// concat loops over every argument that spreads, one after the
		// other: their lengths add up.
		args := unsafe.Slice((*lib.TJSValue)(cMemory(argv)), max(argc, 0))
		for _, a := range args {
			if a.Ftag != lib.EJS_TAG_OBJECT {
				continue
			}
			spreads, ok := t.spreads(a)
			if !ok {
				known = false
				break
			}
			if spreads {
				k, ok := t.lengthOf(a)
				if !ok {
					known = false
					break
				}
				n = satAdd(n, k)
			}
		}
	}
	if !known {
		return t.throw(lib.XJS_ThrowTypeError, fmt.Sprintf(
			"Array.prototype.%s: in this sandbox the length of a non-array (or an argument that spreads) must be a plain number, not a getter, a Proxy or an object; copy it first with Array.from(obj)", m.name)), true
	}
	if bound := t.guardMax(); n > bound {
		t.guardTooLong(m.name, n, bound)
		return t.throw(lib.XJS_ThrowRangeError, fmt.Sprintf("Array.prototype.%s over %d elements: more than the sandbox allows (%d)", m.name, n, bound)), true
	}
	return r, false
}

func satAdd(a, b uint64) uint64 {
	if a+b < a {
		return math.MaxUint64
	}
	return a + b
}

// throw raises a JavaScript error with message msg (at most 255 bytes
// reach the engine).
func (t *Engine) throw(f func(*libc.TLS, uintptr, uintptr, uintptr) lib.TJSValue, msg string) lib.TJSValue {
	c, err := libc.CString(strings.ReplaceAll(msg, "%", "%%"))
	if err != nil {
		return lib.XJS_ThrowOutOfMemory(t.tls, t.ctx)
	}
	defer libc.Xfree(t.tls, c)
	return f(t.tls, t.ctx, c, 0)
}

// ownKind is what an object's own length property is.
type ownKind int

const (
	ownNone ownKind = iota
	ownData
	ownAccessor
	ownUnknown // the lookup would run script code (a Proxy) or threw
)

// ownProperty looks up o's own property atom without running script code.
// It returns a new reference to the value (ownData) or the getter
// (ownAccessor), or undefined.
func (t *Engine) ownProperty(o lib.TJSValue, atom lib.TJSAtom) (lib.TJSValue, ownKind) {
	if classID(o) == lib.EJS_CLASS_PROXY {
		return undefinedValue, ownUnknown
	}
	size := int(unsafe.Sizeof(lib.TJSPropertyDescriptor{}))
	pd := t.tls.Alloc(size)
	defer t.tls.Free(size)
	switch lib.XJS_GetOwnProperty(t.tls, t.ctx, pd, o, atom) {
	case 0:
		return undefinedValue, ownNone
	case 1:
	default:
		lib.XFreeValue(t.tls, t.ctx, lib.XJS_GetException(t.tls, t.ctx))
		return undefinedValue, ownUnknown
	}
	d := (*lib.TJSPropertyDescriptor)(cMemory(pd))
	if d.Fflags&lib.MJS_PROP_GETSET != 0 {
		lib.XFreeValue(t.tls, t.ctx, d.Fvalue)
		lib.XFreeValue(t.tls, t.ctx, d.Fsetter)
		return d.Fgetter, ownAccessor
	}
	lib.XFreeValue(t.tls, t.ctx, d.Fgetter)
	lib.XFreeValue(t.tls, t.ctx, d.Fsetter)
	return d.Fvalue, ownData
}

// lookup finds property atom of v along its prototype chain without
// running script code: a new reference to the value or getter of the
// first own property found, and its kind (ownNone if there is none).
// holder is the object that has it.
func (t *Engine) lookup(v lib.TJSValue, atom lib.TJSAtom) (val lib.TJSValue, kind ownKind) {
	o := lib.XDupValue(t.tls, t.ctx, v)
	for depth := 0; o.Ftag == lib.EJS_TAG_OBJECT; depth++ {
		if depth > 10000 {
			lib.XFreeValue(t.tls, t.ctx, o)
			return undefinedValue, ownUnknown
		}
		val, kind = t.ownProperty(o, atom)
		if kind != ownNone {
			lib.XFreeValue(t.tls, t.ctx, o)
			return val, kind
		}
		p := lib.XJS_GetPrototype(t.tls, t.ctx, o) // no script: o is not a Proxy
		lib.XFreeValue(t.tls, t.ctx, o)
		if p.Ftag == lib.EJS_TAG_EXCEPTION {
			lib.XFreeValue(t.tls, t.ctx, lib.XJS_GetException(t.tls, t.ctx))
			return undefinedValue, ownUnknown
		}
		o = p
	}
	lib.XFreeValue(t.tls, t.ctx, o)
	return undefinedValue, ownNone
}

// lengthOf returns LengthOfArrayLike(v), the count a generic array method
// loops over, if it can be found without running script code.
func (t *Engine) lengthOf(v lib.TJSValue) (uint64, bool) {
	var start lib.TJSValue
	switch v.Ftag {
	case lib.EJS_TAG_OBJECT:
		if classID(v) == lib.EJS_CLASS_ARRAY {
			// An array's length is its first property, a number the
			// engine keeps there (an int, or a float64 past 2**31 - 1):
			// the common case, read without a lookup.
			lv := *(*lib.TJSValue)(cMemory((*lib.TJSObject)(cMemory(uintptr(v.Fu.Fuint641))).Fprop))
			switch lv.Ftag {
			case lib.EJS_TAG_INT:
				return uint64(uint32(int32(lv.Fu.Fuint641))), true
			case lib.EJS_TAG_FLOAT64:
				return uint64(*(*float64)(unsafe.Pointer(&lv.Fu))), true
			}
		}
		start = lib.XDupValue(t.tls, t.ctx, v)
	case lib.EJS_TAG_STRING, lib.EJS_TAG_STRING_ROPE:
		// A string's own length, read without running anything.
		n := lib.XJS_GetPropertyInternal(t.tls, t.ctx, v, lib.EJS_ATOM_length, v, 0)
		return t.toLength(n)
	case lib.EJS_TAG_INT, lib.EJS_TAG_FLOAT64:
		start = lib.XJS_GetClassProto(t.tls, t.ctx, lib.EJS_CLASS_NUMBER)
	case lib.EJS_TAG_BOOL:
		start = lib.XJS_GetClassProto(t.tls, t.ctx, lib.EJS_CLASS_BOOLEAN)
	case lib.EJS_TAG_SYMBOL:
		start = lib.XJS_GetClassProto(t.tls, t.ctx, lib.EJS_CLASS_SYMBOL)
	case lib.EJS_TAG_BIG_INT, lib.EJS_TAG_SHORT_BIG_INT:
		start = lib.XJS_GetClassProto(t.tls, t.ctx, lib.EJS_CLASS_BIG_INT)
	default:
		return 0, true // undefined or null: the method throws a TypeError
	}
	val, kind := t.lookup(start, lib.EJS_ATOM_length)
	lib.XFreeValue(t.tls, t.ctx, start)
	switch kind {
	case ownNone:
		return 0, true
	case ownData:
		return t.toLength(val)
	case ownAccessor:
		if val.Ftag == lib.EJS_TAG_UNDEFINED {
			return 0, true
		}
		builtin := val.Ftag == lib.EJS_TAG_OBJECT && val.Fu.Fuint641 == t.taLength.Fu.Fuint641
		lib.XFreeValue(t.tls, t.ctx, val)
		if builtin && v.Ftag == lib.EJS_TAG_OBJECT {
			c := classID(v)
			if c >= lib.EJS_CLASS_UINT8C_ARRAY && c <= lib.EJS_CLASS_FLOAT64_ARRAY {
				// The typed arrays' own getter: no script runs.
				n := lib.XJS_GetPropertyInternal(t.tls, t.ctx, v, lib.EJS_ATOM_length, v, 0)
				return t.toLength(n)
			}
		}
		return 0, false
	}
	return 0, false
}

// toLength is ToLength(n) for a primitive n (takes the reference);
// an object needs its valueOf, which is script code.
func (t *Engine) toLength(n lib.TJSValue) (uint64, bool) {
	defer lib.XFreeValue(t.tls, t.ctx, n)
	switch n.Ftag {
	case lib.EJS_TAG_EXCEPTION:
		lib.XFreeValue(t.tls, t.ctx, lib.XJS_GetException(t.tls, t.ctx))
		return 0, false
	case lib.EJS_TAG_OBJECT:
		return 0, false
	case lib.EJS_TAG_SYMBOL, lib.EJS_TAG_BIG_INT, lib.EJS_TAG_SHORT_BIG_INT:
		return 0, true // ToNumber throws a TypeError: the method does too
	}
	p := t.tls.Alloc(8)
	defer t.tls.Free(8)
	if lib.XJS_ToFloat64(t.tls, t.ctx, p, n) < 0 {
		lib.XFreeValue(t.tls, t.ctx, lib.XJS_GetException(t.tls, t.ctx))
		return 0, false
	}
	f := *(*float64)(cMemory(p))
	switch {
	case math.IsNaN(f) || f <= 0:
		return 0, true
	case f >= 1<<53-1:
		return 1<<53 - 1, true
	}
	return uint64(f), true
}

// spreads is IsConcatSpreadable(o) when it needs no script code: o's
// Symbol.isConcatSpreadable, else whether o is an array. ok is false when
// a getter, a Proxy or an object would have to answer.
func (t *Engine) spreads(o lib.TJSValue) (spreads, ok bool) {
	val, kind := t.lookup(o, lib.EJS_ATOM_Symbol_isConcatSpreadable)
	defer lib.XFreeValue(t.tls, t.ctx, val)
	switch kind {
	case ownUnknown:
		return false, false
	case ownAccessor:
		return false, val.Ftag == lib.EJS_TAG_UNDEFINED
	case ownData:
		if val.Ftag != lib.EJS_TAG_UNDEFINED {
			if val.Ftag == lib.EJS_TAG_OBJECT {
				return true, true // any object is truthy
			}
			return lib.XJS_ToBool(t.tls, t.ctx, val) != 0, true
		}
	}
	// IsArray: a Proxy's answer is its target's, found without script
	// code, but the lengths of a Proxy are not.
	if classID(o) == lib.EJS_CLASS_PROXY {
		return false, false
	}
	return classID(o) == lib.EJS_CLASS_ARRAY, true
}
