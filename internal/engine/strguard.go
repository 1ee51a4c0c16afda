//go:build !(386 || arm)

package engine

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"unsafe"

	"modernc.org/libc"
	lib "modernc.org/libquickjs"
	"modernc.org/quickjs"
)

// String.prototype's searches with a string to find compare it at every
// position of the string searched, each comparison up to its length, and
// check no interrupt while they do: "a".repeat(2e6).indexOf("a".repeat(1e6)
// + "b") compares 10^12 characters, an hour of one core, and strings of the
// size a 64 MiB sandbox holds take days. indexOf, lastIndexOf and includes
// do so, and so do split, replace and replaceAll with a string to find.
//
// GuardStringMethods puts a native function of ours in front of each (as
// GuardArrayMethods does for arrays: same function objects). When the
// receiver and the string to find are both strings, the most comparisons
// the engine can make, m·(n-m+1) for a string of n code units to find one of
// m, is known at once:
//   - up to the caller's maximum, the engine's own function runs;
//   - past it, indexOf, lastIndexOf and includes search in linear time here
//     (Rabin–Karp, with a base chosen at random per process, so that no
//     script can pick inputs that collide), reading the engine's strings in
//     place; split, replace and replaceAll call the bootstrap's
//     implementation (the specification's steps, in JavaScript, whose loops
//     check the interrupt), which finds each match with the guarded indexOf.
//
// When only script code can tell the strings (an object's toString, a
// getter for Symbol.split), the bootstrap's implementation is called too: it
// converts them in the order the specification gives and calls the guarded
// method again on strings. Receivers and arguments whose conversion is
// short and runs no script (numbers, booleans, undefined), and a search
// value whose own Symbol.split or Symbol.replace method the engine would
// call (a RegExp, whose search checks the interrupt), go to the engine.

// String search kinds: the first argument of the bootstrap's fallback.
const (
	searchIndexOf = iota
	searchLastIndexOf
	searchIncludes
	searchSplit
	searchReplace
	searchReplaceAll
)

var stringMethods = []*guardedMethod{
	{name: "indexOf", magic: true, str: true, search: searchIndexOf},
	{name: "lastIndexOf", magic: true, str: true, search: searchLastIndexOf},
	{name: "includes", magic: true, str: true, search: searchIncludes},
	{name: "split", str: true, search: searchSplit},
	{name: "replace", magic: true, str: true, search: searchReplace},
	{name: "replaceAll", magic: true, str: true, search: searchReplaceAll},
}

// GuardStringMethods puts the guards in front of this VM's String.prototype
// searches (see above). fallback is the bootstrap's implementation, called
// as fallback(kind, receiver, arg0, arg1) with kind one of the search
// constants; the Engine keeps a reference until Detach. maxCompares
// returns the most character comparisons the engine's own search may make
// in one call.
func (e *Engine) GuardStringMethods(fallback quickjs.Value, maxCompares func() uint64) error {
	frontsOnce.Do(makeFronts)
	proto := lib.XJS_GetClassProto(e.tls, e.ctx, lib.EJS_CLASS_STRING)
	defer lib.XFreeValue(e.tls, e.ctx, proto)
	for _, m := range stringMethods {
		if err := e.installGuard(proto, m); err != nil {
			return fmt.Errorf("%w: %v", ErrLayout, err)
		}
	}
	lib.XFreeValue(e.tls, e.ctx, e.strFallback)
	e.strFallback = lib.XDupValue(e.tls, e.ctx, rawOf(fallback))
	e.strMax = maxCompares
	return nil
}

// stringGuard decides how a guarded string search runs; handled means it
// ran here (or in the fallback), and r is its value or an exception.
func stringGuard(tls *libc.TLS, ctx uintptr, m *guardedMethod, this lib.TJSValue, argc int32, argv uintptr) (r lib.TJSValue, handled bool) {
	t := engineOf(ctx)
	if t == nil || t.strFallback.Ftag != lib.EJS_TAG_OBJECT {
		return r, false
	}
	defer func() {
		// A Go panic must not unwind through the engine's frames.
		if p := recover(); p != nil {
			r, handled = t.throw(lib.XJS_ThrowInternalError, fmt.Sprintf("internal error in the guard of String.prototype.%s", m.name)), true
		}
	}()
	args := unsafe.Slice((*lib.TJSValue)(cMemory(argv)), max(argc, 0))
	arg := func(i int) lib.TJSValue {
		if i < len(args) {
			return args[i]
		}
		return undefinedValue
	}
	a := arg(0)
	switch {
	case isString(this) && isString(a):
		n, k := uint64(stringLen(this)), uint64(stringLen(a))
		if k > n || k*(n-k+1) <= t.strMax() {
			return r, false
		}
		if m.search >= searchSplit {
			return t.fallback(m.search, this, a, arg(1)), true
		}
		return t.search(m.search, this, a, arg(1)), true
	case (isString(this) || shortToString(this)) && (isString(a) || shortToString(a)):
		return r, false // one of them converts without script to a few characters
	case isString(this) && m.search >= searchSplit && a.Ftag == lib.EJS_TAG_OBJECT:
		// The engine calls the search value's own method (a RegExp's), when
		// finding it runs no script.
		atom := lib.TJSAtom(lib.EJS_ATOM_Symbol_split)
		if m.search != searchSplit {
			atom = lib.EJS_ATOM_Symbol_replace
		}
		if m.search == searchReplaceAll && classID(a) == lib.EJS_CLASS_REGEXP {
			break // its flags are checked first, by a getter
		}
		val, kind := t.lookup(a, atom)
		defined := val.Ftag != lib.EJS_TAG_UNDEFINED && val.Ftag != lib.EJS_TAG_NULL
		lib.XFreeValue(t.tls, t.ctx, val)
		if kind == ownData && defined {
			return r, false
		}
	}
	return t.fallback(m.search, this, a, arg(1)), true
}

func isString(v lib.TJSValue) bool {
	return v.Ftag == lib.EJS_TAG_STRING || v.Ftag == lib.EJS_TAG_STRING_ROPE
}

// shortToString: ToString(v) runs no script code and gives a short string
// (or throws, for a Symbol, before any search), or the engine throws first
// (a receiver that is undefined or null).
func shortToString(v lib.TJSValue) bool {
	switch v.Ftag {
	case lib.EJS_TAG_INT, lib.EJS_TAG_FLOAT64, lib.EJS_TAG_BOOL, lib.EJS_TAG_UNDEFINED, lib.EJS_TAG_NULL, lib.EJS_TAG_SYMBOL:
		return true
	}
	return false
}

// stringLen is the length of a string value, in code units.
func stringLen(v lib.TJSValue) uint32 {
	p := uintptr(v.Fu.Fuint641)
	if v.Ftag == lib.EJS_TAG_STRING_ROPE {
		return (*lib.TJSStringRope)(cMemory(p)).Flen1
	}
	return (*lib.TJSString)(cMemory(p)).F__ccgo0 & 0x7fffffff
}

// fallback calls the bootstrap's implementation.
func (t *Engine) fallback(kind int, this, a, b lib.TJSValue) lib.TJSValue {
	const n = 4
	size := int(unsafe.Sizeof(lib.TJSValue{})) * n
	argv := t.tls.Alloc(size)
	defer t.tls.Free(size)
	v := unsafe.Slice((*lib.TJSValue)(cMemory(argv)), n)
	v[0], v[1], v[2], v[3] = intValue(int32(kind)), this, a, b
	return lib.XJS_Call(t.tls, t.ctx, t.strFallback, undefinedValue, n, argv)
}

// search runs indexOf, lastIndexOf or includes of a in this, both strings,
// in linear time, position being the method's second argument.
func (t *Engine) search(kind int, this, a, position lib.TJSValue) lib.TJSValue {
	hay, ok := t.flat(this)
	if !ok {
		return lib.TJSValue{Ftag: lib.EJS_TAG_EXCEPTION}
	}
	defer lib.XFreeValue(t.tls, t.ctx, hay)
	needle, ok := t.flat(a)
	if !ok {
		return lib.TJSValue{Ftag: lib.EJS_TAG_EXCEPTION}
	}
	defer lib.XFreeValue(t.tls, t.ctx, needle)
	// ToNumber(position) may run script code (valueOf); strings do not
	// move, and both are held.
	pos := 0.0
	if position.Ftag != lib.EJS_TAG_UNDEFINED {
		p := t.tls.Alloc(8)
		defer t.tls.Free(8)
		if lib.XJS_ToFloat64(t.tls, t.ctx, p, position) < 0 {
			return lib.TJSValue{Ftag: lib.EJS_TAG_EXCEPTION}
		}
		pos = *(*float64)(cMemory(p))
	} else if kind == searchLastIndexOf {
		pos = math.NaN()
	}
	h, s := textOf(hay), textOf(needle)
	n := h.len()
	switch kind {
	case searchLastIndexOf:
		start := n
		if !math.IsNaN(pos) {
			start = clampPos(pos, n)
		}
		return intValue(int32(lastIndex(h, s, start)))
	case searchIncludes:
		return boolValue(index(h, s, clampPos(pos, n)) >= 0)
	}
	return intValue(int32(index(h, s, clampPos(pos, n))))
}

// flat returns a new reference to v, a string, linearized if it is a rope.
func (t *Engine) flat(v lib.TJSValue) (lib.TJSValue, bool) {
	if v.Ftag == lib.EJS_TAG_STRING {
		return lib.XDupValue(t.tls, t.ctx, v), true
	}
	s := lib.XJS_ToString(t.tls, t.ctx, v)
	return s, s.Ftag == lib.EJS_TAG_STRING
}

// clampPos is ToIntegerOrInfinity(pos) clamped to [0, n].
func clampPos(pos float64, n int) int {
	switch {
	case math.IsNaN(pos) || pos <= 0:
		return 0
	case pos >= float64(n):
		return n
	}
	return int(pos)
}

func intValue(i int32) lib.TJSValue {
	return lib.TJSValue{Ftag: lib.EJS_TAG_INT, Fu: lib.TJSValueUnion{Fuint641: uint64(uint32(i))}}
}

func boolValue(b bool) lib.TJSValue {
	v := lib.TJSValue{Ftag: lib.EJS_TAG_BOOL}
	if b {
		v.Fu.Fuint641 = 1
	}
	return v
}

// text is an engine string read in place: Latin-1 bytes or UTF-16 code
// units. It is valid while the string is referenced.
type text struct {
	b []byte
	w []uint16
}

// jsStringData is where a JSString's characters start (after its three
// 32-bit words; layout.go checks the size).
const jsStringData = unsafe.Sizeof(lib.TJSString{})

func textOf(v lib.TJSValue) text {
	p := uintptr(v.Fu.Fuint641)
	hdr := (*lib.TJSString)(cMemory(p)).F__ccgo0
	n := int(hdr & 0x7fffffff)
	if n == 0 {
		return text{}
	}
	data := cMemory(p + jsStringData)
	if hdr&0x80000000 != 0 {
		return text{w: unsafe.Slice((*uint16)(data), n)}
	}
	return text{b: unsafe.Slice((*byte)(data), n)}
}

func (s text) len() int {
	if s.w != nil {
		return len(s.w)
	}
	return len(s.b)
}

func (s text) at(i int) uint64 {
	if s.w != nil {
		return uint64(s.w[i])
	}
	return uint64(s.b[i])
}

// Rabin–Karp over code units, modulo the Mersenne prime 2^61 - 1, with a
// base chosen at random per process.
const mersenne61 = 1<<61 - 1

var rkBase = func() uint64 {
	var b [8]byte
	rand.Read(b[:])
	return 1<<32 + binary.LittleEndian.Uint64(b[:])%(mersenne61-1<<33)
}()

func mulMod(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	r := (hi<<3 | lo>>61) + lo&mersenne61
	if r >= mersenne61 {
		r -= mersenne61
	}
	return r
}

func addMod(a, b uint64) uint64 {
	r := a + b
	if r >= mersenne61 {
		r -= mersenne61
	}
	return r
}

func subMod(a, b uint64) uint64 {
	if a >= b {
		return a - b
	}
	return a + mersenne61 - b
}

// equalAt reports whether s occurs in h at i.
func equalAt(h, s text, i int) bool {
	for j := range s.len() {
		if h.at(i+j) != s.at(j) {
			return false
		}
	}
	return true
}

// index is the first position at or after from (0 ≤ from ≤ len(h)) where s
// occurs in h, or -1.
func index(h, s text, from int) int {
	n, m := h.len(), s.len()
	if m == 0 {
		return from
	}
	if m > n-from {
		return -1
	}
	// hash(i) = Σ h[i+j]·B^(m-1-j)
	var hs, hh, top uint64 = 0, 0, 1
	for j := range m {
		hs = addMod(mulMod(hs, rkBase), s.at(j))
		hh = addMod(mulMod(hh, rkBase), h.at(from+j))
		if j > 0 {
			top = mulMod(top, rkBase)
		}
	}
	for i := from; ; i++ {
		if hh == hs && equalAt(h, s, i) {
			return i
		}
		if i+m >= n {
			return -1
		}
		hh = addMod(mulMod(subMod(hh, mulMod(h.at(i), top)), rkBase), h.at(i+m))
	}
}

// lastIndex is the last position at or before start (0 ≤ start ≤ len(h))
// where s occurs in h, or -1.
func lastIndex(h, s text, start int) int {
	n, m := h.len(), s.len()
	if m == 0 {
		return start
	}
	i := min(start, n-m)
	if i < 0 {
		return -1
	}
	// hash(i) = Σ h[i+j]·B^j, which moves left without an inverse.
	var hs, hh, top uint64 = 0, 0, 1
	for j := m - 1; j >= 0; j-- {
		hs = addMod(mulMod(hs, rkBase), s.at(j))
		hh = addMod(mulMod(hh, rkBase), h.at(i+j))
		if j < m-1 {
			top = mulMod(top, rkBase)
		}
	}
	for ; ; i-- {
		if hh == hs && equalAt(h, s, i) {
			return i
		}
		if i == 0 {
			return -1
		}
		hh = addMod(mulMod(subMod(hh, mulMod(h.at(i+m-1), top)), rkBase), h.at(i-1))
	}
}
