package typegen

import (
	"crypto/sha256"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// This file converts one schema document into a tsType. The rules, in the
// order they apply to a schema object:
//
//   - a `$ref` (or $dynamicRef/$recursiveRef) contributes the referenced type;
//     siblings that say more than `type` are intersected with it (2019-09+
//     semantics; under draft-07 they are redundant in practice);
//   - `const` and `enum` become literal types, `type` (a string or an array)
//     becomes a union of the types it names, object and array keywords infer
//     the type when `type` is absent;
//   - allOf is an intersection, anyOf and oneOf are unions whose branches
//     inherit the parent's `type` when they have none (so `{"required":[…]}`
//     branches are objects);
//   - if/then/else adds then|else; `not` and other constraints that types
//     cannot express are left out (the type is wider, never wrong);
//   - OpenAPI `nullable: true` adds `| null`.
//
// Anything else that leaves no type at all (an unresolvable `$ref`, an unknown
// `type`, a schema that is not an object) becomes `unknown` with a warning.

// maxSchemaDepth bounds how deeply conversion nests. Real schemas stay far
// below it; beyond it the rest is `unknown` with a warning.
const maxSchemaDepth = 100

type conv struct {
	g          *gen
	d          *doc
	tool       string // MCP tool name, for warnings
	side       string // "inputSchema" or "outputSchema"
	exportName string
	targets    map[*value]*target
	order      []*value // targets in discovery order
	// The reference graph analyze builds, kept for fingerprints: what each
	// walk root refers to, its strongly connected components, and
	// memoised hashes.
	edges  map[*value][]*value
	sccs   [][]*value
	sccOf  map[*value]int
	sccFP  map[int]string
	jsonFP map[*value][sha256.Size]byte
}

func newConv(g *gen, root *value, tool, side, exportName string) *conv {
	c := &conv{g: g, d: newDoc(root), tool: tool, side: side, exportName: exportName, targets: map[*value]*target{}}
	c.analyze()
	return c
}

// warnAt records a warning and returns `unknown` carrying it.
func (c *conv) warnAt(path, msg string) *tsType {
	c.g.warns = append(c.g.warns, Warning{Tool: c.tool, Path: "/" + c.side + path, Message: msg})
	return unknownWarn(msg)
}

// root converts the whole document.
func (c *conv) root() *tsType { return c.convert(c.d.root, "", 0, nil) }

// inherit is what a oneOf/anyOf branch takes from its parent.
type inherit struct {
	typ *value // the parent's `type`, for branches without one
	// closed: the parent is an object, whose part decides which other keys
	// are allowed; a branch adds no index signature of its own, and one
	// that adds nothing at all is `{}`, not a closed empty object.
	closed bool
}

// holdsObjects reports whether t is `{}` or a union with a `{}` member (at
// any depth: a branch with a description stays a union of its own).
func holdsObjects(t *tsType) bool {
	if isEmpty(t) {
		return true
	}
	if t.kind == tUnion {
		for _, m := range t.members {
			if holdsObjects(m) {
				return true
			}
		}
	}
	return false
}

func (c *conv) convert(s *value, path string, depth int, in *inherit) *tsType {
	if tg := c.targets[s]; tg != nil {
		if tg.t == nil && tg.busy {
			// analyze found no cycle through s, so this cannot happen; stay
			// total anyway.
			return c.warnAt(path, "circular $ref")
		}
		return c.site(s, depth)
	}
	return c.body(s, path, depth, in)
}

// body converts schema s itself, ignoring that it may be a target.
func (c *conv) body(s *value, path string, depth int, in *inherit) *tsType {
	if depth > maxSchemaDepth {
		return c.warnAt(path, "schema nested too deeply; shown as unknown")
	}
	switch s.kind {
	case kBool:
		if s.b {
			return tUnknown
		}
		return tNever
	case kObject:
	default:
		return c.warnAt(path, "schema is not an object or boolean")
	}
	var parts []*tsType
	ref, hasRef := refOf(s)
	if hasRef {
		if t, _, err := c.d.resolve(ref, s); err == nil {
			parts = append(parts, c.convert(t, path, depth+1, nil))
		} else {
			parts = append(parts, c.warnAt(path, err.Error()))
		}
	}
	comb := s.has("allOf") || s.has("anyOf") || s.has("oneOf")
	typ := s.get("type")
	if typ == nil && in != nil && !hasRef && !s.has("enum") && !s.has("const") {
		typ = in.typ
	}
	base := hasBaseKeywords(s) || (!hasRef && !comb)
	if base {
		// Next to a $ref, an object part only adds constraints: the
		// referenced type decides which other keys are allowed.
		inherited := in != nil && in.closed || hasRef
		parts = append(parts, c.typed(s, typ, path, depth, inherited))
	}
	branchIn := &inherit{typ: typ, closed: base && isObjectish(s)}
	if all := s.get("allOf"); all != nil {
		parts = append(parts, inter(c.branches(all, "allOf", path, depth, branchIn, false)...))
	}
	// Next to the object part, a union with a `{}` branch (one that adds no
	// property, `{}` or {"not": …}) holds for every value: it is left out.
	alt := func(u *tsType) *tsType {
		if branchIn.closed && holdsObjects(u) {
			return withWarn(tUnknown, hoist(u))
		}
		return u
	}
	for _, k := range [...]string{"anyOf", "oneOf"} {
		if v := s.get(k); v != nil {
			parts = append(parts, alt(union(c.branches(v, k, path, depth, branchIn, true)...)))
		}
	}
	if th, el := s.get("then"), s.get("else"); isSchema(th) && isSchema(el) && s.has("if") {
		parts = append(parts, alt(union(c.convert(th, path+"/then", depth+1, branchIn), c.convert(el, path+"/else", depth+1, branchIn))))
	}
	var t *tsType
	switch len(parts) {
	case 0:
		t = tUnknown
	case 1:
		t = parts[0]
	default:
		t = inter(parts...)
	}
	if isUnknown(t) && len(t.warn) == 0 && s.has("not") && len(s.keys) == 1 {
		t = c.warnAt(path, "`not` cannot be expressed as a type")
	}
	if s.isTrue("nullable") {
		t = union(t, tNull)
	}
	return t
}

func (c *conv) branches(v *value, kw, path string, depth int, in *inherit, notes bool) []*tsType {
	if v.kind != kArray {
		return []*tsType{c.warnAt(path+"/"+kw, kw+" is not an array")}
	}
	var out []*tsType
	for i, b := range v.arr {
		t := c.convert(b, path+"/"+kw+"/"+strconv.Itoa(i), depth+1, in)
		if notes && !c.g.opts.OmitDescriptions {
			if d, ok := b.str("description"); ok {
				t = withNote(t, d)
			}
		}
		out = append(out, t)
	}
	return out
}

// hasBaseKeywords reports whether s constrains values beyond `type`, so that
// its own part matters next to a `$ref` or combinator.
func hasBaseKeywords(s *value) bool {
	for _, k := range s.keys {
		switch k {
		case "properties", "patternProperties", "additionalProperties", "required",
			"items", "prefixItems", "additionalItems", "enum", "const":
			return true
		}
	}
	return false
}

// isObjectish reports whether s describes objects: its branches then leave
// extra keys to it.
func isObjectish(s *value) bool {
	if t, ok := s.str("type"); ok {
		return t == "object"
	}
	return s.has("properties") || s.has("additionalProperties") || s.has("patternProperties")
}

// typed converts const, enum or type of s; typ is s's `type` or the one it
// inherits. inherited says that another part of the schema (the parent
// object or a $ref) decides which keys an object may have.
func (c *conv) typed(s, typ *value, path string, depth int, inherited bool) *tsType {
	if cv := s.get("const"); cv != nil {
		return literal(cv, 0)
	}
	if ev := s.get("enum"); ev != nil {
		if ev.kind != kArray {
			return c.warnAt(path+"/enum", "enum is not an array")
		}
		var ms []*tsType
		for _, e := range ev.arr {
			if typeAllows(typ, e) {
				ms = append(ms, literal(e, 0))
			}
		}
		return union(ms...)
	}
	var names []string
	switch {
	case typ == nil:
		switch {
		case isObjectish(s) || s.has("required"):
			names = []string{"object"}
		case s.has("items") || s.has("prefixItems"):
			names = []string{"array"}
		default:
			return tUnknown
		}
	case typ.kind == kString:
		names = []string{typ.s}
	case typ.kind == kArray:
		for _, e := range typ.arr {
			if e.kind != kString {
				return c.warnAt(path+"/type", "type array holds a non-string")
			}
			names = append(names, e.s)
		}
	default:
		return c.warnAt(path+"/type", "type is neither a string nor an array")
	}
	var ms []*tsType
	for _, n := range names {
		switch n {
		case "string":
			ms = append(ms, tString)
		case "number", "integer":
			ms = append(ms, tNumber)
		case "boolean":
			ms = append(ms, tBoolean)
		case "null":
			ms = append(ms, tNull)
		case "object":
			ms = append(ms, c.object(s, path, depth, inherited))
		case "array":
			ms = append(ms, c.array(s, path, depth))
		default:
			ms = append(ms, c.warnAt(path+"/type", fmt.Sprintf("unsupported type %s", quote(n))))
		}
	}
	return union(ms...)
}

// typeAllows reports whether enum value e is allowed by `type` typ (nil: any).
func typeAllows(typ, e *value) bool {
	if typ == nil {
		return true
	}
	allows := func(n string) bool {
		switch n {
		case "string":
			return e.kind == kString
		case "number":
			return e.kind == kNumber
		case "integer":
			// The value, not its spelling: 1.0 and 1e2 are integers.
			if e.kind != kNumber {
				return false
			}
			f, ok := jsonNumber(e.s)
			return ok && f == math.Trunc(f)
		case "boolean":
			return e.kind == kBool
		case "null":
			return e.kind == kNull
		case "object":
			return e.kind == kObject
		case "array":
			return e.kind == kArray
		}
		return true
	}
	switch typ.kind {
	case kString:
		return allows(typ.s)
	case kArray:
		for _, t := range typ.arr {
			if t.kind != kString || allows(t.s) {
				return true
			}
		}
		return false
	}
	return true
}

// literal is the literal type of a JSON value: objects and arrays become
// closed object and tuple types.
func literal(v *value, depth int) *tsType {
	if depth > maxSchemaDepth {
		return tUnknown
	}
	switch v.kind {
	case kNull:
		return tNull
	case kBool:
		return &tsType{kind: tLit, name: strconv.FormatBool(v.b)}
	case kNumber:
		f, ok := jsonNumber(v.s)
		if !ok {
			// Beyond float64 (1e400): JavaScript reads it as Infinity, which
			// no JSON value a script sends can equal.
			return tNever
		}
		return &tsType{kind: tLit, name: jsNumber(f)}
	case kString:
		return &tsType{kind: tLit, name: quote(v.s)}
	case kArray:
		t := &tsType{kind: tTuple, minLen: len(v.arr)}
		for _, e := range v.arr {
			t.elems = append(t.elems, literal(e, depth+1))
		}
		return t
	default:
		o := &tsType{kind: tObject}
		for i, k := range v.keys {
			o.props = append(o.props, &prop{name: k, t: literal(v.items[i], depth+1)})
		}
		return o
	}
}

// jsonNumber is the float64 a JSON number literal denotes, as JavaScript's
// JSON.parse reads it; false if it is not finite there.
func jsonNumber(text string) (float64, bool) {
	f, err := strconv.ParseFloat(text, 64)
	return f, err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
}

// jsNumber writes a finite number as JavaScript's Number.prototype.toString
// does, which is also how TypeScript prints a numeric literal type: 100 for
// 1e2 or 100.0, 1e+21, 1.5e-7, 0 for -0. Equal values get equal text, so
// union deduplication sees them as one literal.
func jsNumber(f float64) string {
	if f == 0 {
		return "0"
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	// Shortest round-trip digits d1.d2d3…e±x: value = 0.d1d2d3… × 10^n.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	n, k := x+1, len(digits)
	switch {
	case k <= n && n <= 21:
		return sign + digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		return sign + digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		return sign + "0." + strings.Repeat("0", -n) + digits
	}
	out := digits[:1]
	if k > 1 {
		out += "." + digits[1:]
	}
	if n-1 >= 0 {
		return sign + out + "e+" + strconv.Itoa(n-1)
	}
	return sign + out + "e" + strconv.Itoa(n-1)
}
