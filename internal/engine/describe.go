//go:build !(386 || arm)

package engine

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"modernc.org/libc"
	lib "modernc.org/libquickjs"
	"modernc.org/quickjs"
)

// Describe reads a thrown value for a diagnostic once the script has
// ended, when the host must not run any code the script can reach: a
// getter on the thrown error, a Proxy trap, a setter planted on
// Array.prototype[0] that JSON.stringify calls with the object it is
// serialising (it pushes onto an internal array), Symbol.hasInstance... A
// description built in JavaScript ran all of these, and a script used them
// to forge its diagnostic: a plain TypeError came out as SANDBOX_LIMIT "the
// host ran out of memory", and a getter that looped turned any uncaught
// error into a timeout.
//
// So Describe reads the engine's memory: own data properties along the
// prototype chain, without calling anything. A getter, a Proxy or a toJSON
// is not run: its place in the description says so instead (NotRun), or
// the value is left out.

// Description is what Describe found.
type Description struct {
	// IsError: Error.prototype is on the value's prototype chain (as
	// instanceof Error, without consulting Symbol.hasInstance).
	IsError bool
	// Class is the index in Describe's protos of the first (most derived)
	// of them on the prototype chain, or -1.
	Class int
	// Name, Message, Stack and Hint are an error's (Name defaults to
	// "Error"); for any other value, Message is its String() (a primitive)
	// or its JSON (an object: own enumerable data properties, a Date as
	// toJSON has it), or "[Unserializable Object]".
	Name, Message, Stack, Hint string
}

// NotRun stands, in a Description, for a value only script code could
// produce.
const NotRun = "[computed by a getter or a Proxy, not run once the script has ended]"

// Describe describes v without running script code. protos are the
// prototypes of the error classes to recognise (see Description.Class).
func (e *Engine) Describe(v quickjs.Value, protos []quickjs.Value) Description {
	return e.describe(rawOf(v), protos)
}

func (t *Engine) describe(v lib.TJSValue, protos []quickjs.Value) Description {
	d := Description{Class: -1}
	if v.Ftag != lib.EJS_TAG_OBJECT {
		d.Message = t.primitiveString(v)
		return d
	}
	// The prototype chain, as instanceof walks it, up to a Proxy (whose
	// getPrototypeOf trap is script code).
	errorProto := lib.XJS_GetClassProto(t.tls, t.ctx, lib.EJS_CLASS_ERROR)
	lib.XFreeValue(t.tls, t.ctx, errorProto) // the context keeps it alive
	o := lib.XDupValue(t.tls, t.ctx, v)
	for depth := 0; o.Ftag == lib.EJS_TAG_OBJECT && depth < 10000 && classID(o) != lib.EJS_CLASS_PROXY; depth++ {
		if o.Fu.Fuint641 == errorProto.Fu.Fuint641 {
			d.IsError = true
		}
		if d.Class < 0 {
			// Most derived first: the first prototype met.
			for i, p := range protos {
				if rawOf(p).Ftag == lib.EJS_TAG_OBJECT && o.Fu.Fuint641 == rawOf(p).Fu.Fuint641 {
					d.Class = i
				}
			}
		}
		p := lib.XJS_GetPrototype(t.tls, t.ctx, o)
		lib.XFreeValue(t.tls, t.ctx, o)
		o = p
	}
	lib.XFreeValue(t.tls, t.ctx, o)
	if !d.IsError {
		d.Class = -1
		d.Message = t.jsonOf(v)
		return d
	}
	if d.Name = t.stringAt(v, lib.EJS_ATOM_name, "Error"); d.Name == NotRun {
		d.Name = "Error"
	}
	d.Message = t.stringAt(v, lib.EJS_ATOM_message, "")
	if s, ok := t.ownString(v, lib.EJS_ATOM_stack); ok {
		d.Stack = s
	}
	if d.Class >= 0 {
		if t.hintAtom == 0 { // freed by Detach
			if c, err := libc.CString("hint"); err == nil {
				t.hintAtom = lib.XJS_NewAtom(t.tls, t.ctx, c)
				libc.Xfree(t.tls, c)
			}
		}
		if t.hintAtom != 0 {
			d.Hint = t.stringAt(v, t.hintAtom, "")
		}
	}
	return d
}

// stringAt is String(v[name]) for a data property found along v's
// prototype chain, def if there is none, and NotRun if only script code
// could tell.
func (t *Engine) stringAt(v lib.TJSValue, atom lib.TJSAtom, def string) string {
	val, kind := t.lookup(v, atom)
	defer lib.XFreeValue(t.tls, t.ctx, val)
	switch kind {
	case ownNone:
		return def
	case ownData:
		if val.Ftag == lib.EJS_TAG_UNDEFINED {
			return def
		}
		if val.Ftag == lib.EJS_TAG_OBJECT {
			return NotRun // String() of an object calls its toString
		}
		return t.primitiveString(val)
	case ownAccessor:
		if val.Ftag == lib.EJS_TAG_UNDEFINED {
			return def
		}
	}
	return NotRun
}

// ownString reads v's own data property atom if it is a string.
func (t *Engine) ownString(v lib.TJSValue, atom lib.TJSAtom) (string, bool) {
	val, kind := t.ownProperty(v, atom)
	defer lib.XFreeValue(t.tls, t.ctx, val)
	if kind != ownData || val.Ftag != lib.EJS_TAG_STRING && val.Ftag != lib.EJS_TAG_STRING_ROPE {
		return "", false
	}
	s, _ := t.goString(val)
	return s, true
}

// primitiveString is String(v) for a primitive v, which runs no script.
func (t *Engine) primitiveString(v lib.TJSValue) string {
	switch v.Ftag {
	case lib.EJS_TAG_SYMBOL:
		return "Symbol()" // its description would need the engine's atoms
	case lib.EJS_TAG_OBJECT:
		return NotRun
	}
	s := lib.XJS_ToString(t.tls, t.ctx, v)
	defer lib.XFreeValue(t.tls, t.ctx, s)
	if s.Ftag == lib.EJS_TAG_EXCEPTION {
		lib.XFreeValue(t.tls, t.ctx, lib.XJS_GetException(t.tls, t.ctx))
		return "[unprintable]"
	}
	out, _ := t.goString(s)
	return out
}

// jsonOf is the console's rendering of a thrown object (JSON), from its own
// enumerable data properties: toJSON, getters and Proxies are not run, and
// what needs them is left out, or the whole is "[Unserializable Object]"
// when it is a Proxy, a cycle or a BigInt.
func (t *Engine) jsonOf(v lib.TJSValue) string {
	j := jsonWriter{t: t}
	if !j.value(v, 0) {
		return "[Unserializable Object]"
	}
	return j.b.String()
}

type jsonWriter struct {
	t     *Engine
	b     strings.Builder
	stack []uint64
}

// jsonBudget bounds the text: a diagnostic's message is cut at
// diag.MaxMessageBytes anyway.
const jsonBudget = 8 << 10

// value writes v; false means the whole cannot be rendered. Values JSON
// leaves out (undefined, functions, symbols) write nothing and report
// true with b unchanged: callers check the length.
func (j *jsonWriter) value(v lib.TJSValue, depth int) bool {
	t := j.t
	switch v.Ftag {
	case lib.EJS_TAG_NULL:
		j.b.WriteString("null")
	case lib.EJS_TAG_BOOL:
		if *(*int32)(unsafe.Pointer(&v.Fu)) != 0 {
			j.b.WriteString("true")
		} else {
			j.b.WriteString("false")
		}
	case lib.EJS_TAG_INT:
		j.b.WriteString(strconv.Itoa(int(*(*int32)(unsafe.Pointer(&v.Fu)))))
	case lib.EJS_TAG_FLOAT64:
		f := *(*float64)(unsafe.Pointer(&v.Fu))
		if math.IsNaN(f) || math.IsInf(f, 0) {
			j.b.WriteString("null")
		} else {
			j.b.WriteString(t.primitiveString(v))
		}
	case lib.EJS_TAG_STRING, lib.EJS_TAG_STRING_ROPE:
		s, _ := t.goString(v)
		j.b.WriteString(quoteJSON(s))
	case lib.EJS_TAG_BIG_INT, lib.EJS_TAG_SHORT_BIG_INT:
		return false // JSON.stringify throws
	case lib.EJS_TAG_OBJECT:
		return j.object(v, depth)
	}
	return true
}

func (j *jsonWriter) object(v lib.TJSValue, depth int) bool {
	t := j.t
	switch classID(v) {
	case lib.EJS_CLASS_PROXY:
		return false
	case lib.EJS_CLASS_C_FUNCTION, lib.EJS_CLASS_BYTECODE_FUNCTION, lib.EJS_CLASS_BOUND_FUNCTION, lib.EJS_CLASS_C_FUNCTION_DATA,
		lib.EJS_CLASS_GENERATOR_FUNCTION, lib.EJS_CLASS_ASYNC_FUNCTION, lib.EJS_CLASS_ASYNC_GENERATOR_FUNCTION:
		return true // left out, as JSON does
	case lib.EJS_CLASS_DATE:
		// Date.prototype.toJSON, without looking it up.
		tv := *(*lib.TJSValue)(cMemory(uintptr(v.Fu.Fuint641) + objectUnionOffset))
		ms := math.NaN()
		switch tv.Ftag {
		case lib.EJS_TAG_FLOAT64:
			ms = *(*float64)(unsafe.Pointer(&tv.Fu))
		case lib.EJS_TAG_INT:
			ms = float64(*(*int32)(unsafe.Pointer(&tv.Fu)))
		}
		if math.IsNaN(ms) {
			j.b.WriteString("null")
		} else {
			j.b.WriteString(`"` + time.UnixMilli(int64(ms)).UTC().Format("2006-01-02T15:04:05.000Z") + `"`)
		}
		return true
	}
	if depth > 64 || j.b.Len() > jsonBudget {
		return false
	}
	for _, p := range j.stack {
		if p == v.Fu.Fuint641 {
			return false // a cycle
		}
	}
	j.stack = append(j.stack, v.Fu.Fuint641)
	defer func() { j.stack = j.stack[:len(j.stack)-1] }()
	if classID(v) == lib.EJS_CLASS_ARRAY {
		n, _ := t.lengthOf(v)
		j.b.WriteByte('[')
		for i := uint64(0); i < n; i++ {
			if i > 0 {
				j.b.WriteByte(',')
			}
			if j.b.Len() > jsonBudget {
				return false
			}
			atom := lib.XJS_NewAtomUInt32(t.tls, t.ctx, uint32(i))
			val, kind := t.lookup(v, atom)
			lib.XJS_FreeAtom(t.tls, t.ctx, atom)
			if kind == ownUnknown || kind == ownAccessor && val.Ftag != lib.EJS_TAG_UNDEFINED {
				lib.XFreeValue(t.tls, t.ctx, val)
				return false
			}
			before := j.b.Len()
			ok := j.value(val, depth+1)
			lib.XFreeValue(t.tls, t.ctx, val)
			if !ok {
				return false
			}
			if j.b.Len() == before {
				j.b.WriteString("null")
			}
		}
		j.b.WriteByte(']')
		return true
	}
	size := int(unsafe.Sizeof(uintptr(0)))
	ptab, plen := t.tls.Alloc(size), t.tls.Alloc(4)
	defer t.tls.Free(size)
	defer t.tls.Free(4)
	if lib.XJS_GetOwnPropertyNames(t.tls, t.ctx, ptab, plen, v, lib.MJS_GPN_STRING_MASK|lib.MJS_GPN_ENUM_ONLY) < 0 {
		lib.XFreeValue(t.tls, t.ctx, lib.XJS_GetException(t.tls, t.ctx))
		return false
	}
	tab, n := *(*uintptr)(cMemory(ptab)), *(*uint32)(cMemory(plen))
	defer lib.XJS_FreePropertyEnum(t.tls, t.ctx, tab, n)
	props := unsafe.Slice((*lib.TJSPropertyEnum)(cMemory(tab)), n)
	j.b.WriteByte('{')
	first := true
	for _, p := range props {
		if j.b.Len() > jsonBudget {
			return false
		}
		val, kind := t.ownProperty(v, p.Fatom)
		if kind != ownData {
			lib.XFreeValue(t.tls, t.ctx, val)
			if kind == ownUnknown {
				return false
			}
			continue // a getter: not run
		}
		mark := j.b.Len()
		if !first {
			j.b.WriteByte(',')
		}
		key := lib.XJS_AtomToString(t.tls, t.ctx, p.Fatom)
		k, _ := t.goString(key)
		lib.XFreeValue(t.tls, t.ctx, key)
		j.b.WriteString(quoteJSON(k) + ":")
		before := j.b.Len()
		ok := j.value(val, depth+1)
		lib.XFreeValue(t.tls, t.ctx, val)
		if !ok {
			return false
		}
		if j.b.Len() == before { // undefined, a function, a symbol
			s := j.b.String()[:mark]
			j.b.Reset()
			j.b.WriteString(s)
			continue
		}
		first = false
	}
	j.b.WriteByte('}')
	return true
}

// quoteJSON quotes s as JSON.stringify does (only ", \ and control
// characters are escaped).
func quoteJSON(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte("0123456789abcdef"[r>>4])
			b.WriteByte("0123456789abcdef"[r&15])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
