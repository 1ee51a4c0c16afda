package typegen

import "strings"

// The generator converts schemas into a small TypeScript type tree (tsType)
// and prints that. The tree exists so that unions can be flattened and
// deduplicated, objects merged for allOf, index signatures widened to stay
// compatible with their properties, and printing can choose between one line
// and many. Trees are never mutated once built: subtrees are shared between
// every place a `$ref` target is inlined.

type tsKind uint8

const (
	tPrim   tsKind = iota // name is string, number, boolean, null, undefined, unknown or never
	tLit                  // name is a literal type: "a", 1, true
	tRaw                  // name is TypeScript text that needs no parentheses ({}, Object["toString"])
	tRef                  // a named type
	tArray                // elem[]
	tTuple                // [elems..., ...rest[]]
	tObject               // { props; index signatures }
	tUnion                // members joined by |
	tInter                // members joined by &
)

type tsType struct {
	kind    tsKind
	name    string
	ref     *named
	elem    *tsType   // tArray: element; tTuple: rest element type, nil if closed
	elems   []*tsType // tTuple
	minLen  int       // tTuple: elements at index >= minLen are optional
	props   []*prop   // tObject
	index   []*indexSig
	members []*tsType // tUnion, tInter
	// warn are §6.2 warnings about this node: the printer hoists them into
	// the doc comment of the nearest property, type or function.
	warn []string
	// note is the description of a oneOf/anyOf branch, printed as a comment
	// in front of the branch.
	note string
}

type prop struct {
	name     string
	optional bool
	t        *tsType
	doc      docInfo
}

// indexSig is `[key: K]: T`, where K is "string" or a template literal type
// such as `x-${string}` (for a patternProperties prefix).
type indexSig struct {
	key    string
	prefix string // the literal prefix for a template key; "" for string
	t      *tsType
	doc    docInfo
}

// A named type is a `type Name = ...;` declaration shared by every tool of a
// server that needs it: recursive schemas and reused `$defs`.
type named struct {
	name string
	body *tsType
	doc  docInfo
	// tool and path say where the type comes from, for warnings about it.
	tool, path string
}

var (
	tString    = &tsType{kind: tPrim, name: "string"}
	tNumber    = &tsType{kind: tPrim, name: "number"}
	tBoolean   = &tsType{kind: tPrim, name: "boolean"}
	tNull      = &tsType{kind: tPrim, name: "null"}
	tUndefined = &tsType{kind: tPrim, name: "undefined"}
	tUnknown   = &tsType{kind: tPrim, name: "unknown"}
	tNever     = &tsType{kind: tPrim, name: "never"}
)

// tEmpty is `{}`, every value but null and undefined: an object part that
// adds nothing, such as a oneOf branch of an object schema that only says
// what it does not require. (An object without members that is really
// closed prints as Record<string, never>.)
var tEmpty = &tsType{kind: tRaw, name: "{}"}

func isUnknown(t *tsType) bool { return t.kind == tPrim && t.name == "unknown" }
func isEmpty(t *tsType) bool   { return t.kind == tRaw && t.name == "{}" }
func isNever(t *tsType) bool   { return t.kind == tPrim && t.name == "never" }

// unknownWarn is `unknown` carrying a warning (§6.2).
func unknownWarn(msg string) *tsType {
	return &tsType{kind: tPrim, name: "unknown", warn: []string{msg}}
}

func withNote(t *tsType, note string) *tsType {
	if note == "" || t.note == note {
		return t
	}
	c := *t
	c.note = note
	return &c
}

func withWarn(t *tsType, warn []string) *tsType {
	if len(warn) == 0 {
		return t
	}
	c := *t
	c.warn = append(append([]string(nil), t.warn...), warn...)
	return &c
}

// key is a canonical one-line rendering, used to deduplicate union members
// and to compare index signature types.
func key(t *tsType) string {
	var p printer
	s, _ := p.flat(t, ctxTop, -1)
	return s
}

// union builds a simplified union: nested unions are flattened, `unknown`
// absorbs everything, `never` disappears, duplicates go, literals that a
// primitive member already covers go, and true|false becomes boolean.
func union(ms ...*tsType) *tsType {
	var flat []*tsType
	var warn []string
	for _, m := range ms {
		if m.kind == tUnion && m.note == "" {
			flat = append(flat, m.members...)
			warn = append(warn, m.warn...)
			continue
		}
		flat = append(flat, m)
	}
	for _, m := range flat {
		if isUnknown(m) {
			for _, o := range flat {
				warn = append(warn, hoist(o)...)
			}
			return withWarn(tUnknown, dedupStrings(warn))
		}
	}
	// `{}` holds every value but null and undefined.
	empty := false
	for _, m := range flat {
		empty = empty || isEmpty(m)
	}
	has := map[string]bool{}
	seen := map[string]bool{}
	var out []*tsType
	for _, m := range flat {
		if isNever(m) {
			warn = append(warn, m.warn...)
			continue
		}
		if empty && !isEmpty(m) && !(m.kind == tPrim && (m.name == "null" || m.name == "undefined")) {
			warn = append(warn, hoist(m)...)
			continue
		}
		k := key(m)
		if seen[k] {
			continue
		}
		seen[k] = true
		if m.kind == tPrim {
			has[m.name] = true
		}
		out = append(out, m)
	}
	if seen["true"] && seen["false"] && !has["boolean"] {
		has["boolean"] = true
		for i, m := range out {
			if m.kind == tLit && (m.name == "true" || m.name == "false") {
				out[i] = tBoolean
				break
			}
		}
	}
	kept := out[:0]
	for _, m := range out {
		if m.kind == tLit {
			switch {
			case m.name == "true" || m.name == "false":
				if has["boolean"] {
					continue
				}
			case m.name[0] == '"':
				if has["string"] {
					continue
				}
			default:
				if has["number"] {
					continue
				}
			}
		}
		kept = append(kept, m)
	}
	switch len(kept) {
	case 0:
		return withWarn(tNever, warn)
	case 1:
		return withWarn(kept[0], warn)
	}
	return &tsType{kind: tUnion, members: kept, warn: dedupStrings(warn)}
}

// inter builds a simplified intersection. Object members are merged into one
// object literal, which reads better than `{a} & {b}` and is what allOf of
// object schemas means.
func inter(ms ...*tsType) *tsType {
	var flat []*tsType
	var warn []string
	for _, m := range ms {
		if m.kind == tInter {
			flat = append(flat, m.members...)
			warn = append(warn, m.warn...)
			continue
		}
		flat = append(flat, m)
	}
	seen := map[string]bool{}
	var out []*tsType
	objAt := -1
	dropped := false // an unknown member was left out
	for _, m := range flat {
		if isUnknown(m) {
			warn = append(warn, m.warn...)
			dropped = true
			continue
		}
		if isNever(m) {
			return withWarn(tNever, append(warn, m.warn...))
		}
		k := key(m)
		if seen[k] {
			continue
		}
		seen[k] = true
		if m.kind == tObject && m.note == "" {
			if objAt >= 0 {
				out[objAt] = mergeObjects(out[objAt], m)
				continue
			}
			objAt = len(out)
		}
		out = append(out, m)
	}
	// X & {} is X without null and undefined: leaving {} out keeps the type
	// wide, never wrong. unknown & {} is unknown here, where unknown stands
	// for a part that could not be typed.
	if len(out) > 1 || dropped {
		kept := out[:0]
		for _, m := range out {
			if isEmpty(m) {
				warn = append(warn, m.warn...)
				continue
			}
			kept = append(kept, m)
		}
		out = kept
	}
	switch len(out) {
	case 0:
		return withWarn(tUnknown, warn)
	case 1:
		return withWarn(out[0], warn)
	}
	return &tsType{kind: tInter, members: out, warn: dedupStrings(warn)}
}

// mergeObjects is the object literal equivalent to a & b.
func mergeObjects(a, b *tsType) *tsType {
	o := &tsType{kind: tObject, warn: append(append([]string(nil), a.warn...), b.warn...)}
	at := map[string]int{}
	for _, p := range a.props {
		at[p.name] = len(o.props)
		c := *p
		o.props = append(o.props, &c)
	}
	for _, p := range b.props {
		if i, ok := at[p.name]; ok {
			q := o.props[i]
			q.optional = q.optional && p.optional
			q.t = inter(q.t, p.t)
			if q.doc.empty() {
				q.doc = p.doc
			}
			continue
		}
		at[p.name] = len(o.props)
		c := *p
		o.props = append(o.props, &c)
	}
	ix := map[string]int{}
	for _, s := range a.index {
		ix[s.key] = len(o.index)
		c := *s
		o.index = append(o.index, &c)
	}
	for _, s := range b.index {
		if i, ok := ix[s.key]; ok {
			o.index[i].t = inter(o.index[i].t, s.t)
			continue
		}
		ix[s.key] = len(o.index)
		c := *s
		o.index = append(o.index, &c)
	}
	return finishObject(o)
}

// maxWidenedIndex bounds the text of a widened index signature type; a longer
// union is replaced by `unknown`, which keeps output linear in the schema.
const maxWidenedIndex = 100

// finishObject makes every index signature compatible with the properties it
// covers, as TypeScript requires (TS2411): the index type is widened to the
// union of itself, the covered property types and `undefined` for optional
// ones, or to `unknown` when that union would be long. A `string` index also
// covers every template index.
func finishObject(o *tsType) *tsType {
	for _, s := range o.index {
		if isUnknown(s.t) {
			continue
		}
		ms := []*tsType{s.t}
		for _, p := range o.props {
			if strings.HasPrefix(p.name, s.prefix) {
				ms = append(ms, p.t)
				if p.optional {
					ms = append(ms, tUndefined)
				}
			}
		}
		if s.prefix == "" {
			for _, other := range o.index {
				if other.prefix != "" {
					ms = append(ms, other.t)
				}
			}
		}
		u := union(ms...)
		if len(key(u)) > maxWidenedIndex || strings.Contains(key(u), "\n") {
			u = withWarn(tUnknown, u.warn)
		}
		s.t = u
	}
	return o
}

// hoist collects the warnings of t and of everything printed inside it that
// has no doc comment of its own (array elements, union members, tuple
// elements), in order. Object properties and named types carry their own.
func hoist(t *tsType) []string {
	var out []string
	var walk func(t *tsType)
	walk = func(t *tsType) {
		if t == nil {
			return
		}
		out = append(out, t.warn...)
		switch t.kind {
		case tArray:
			walk(t.elem)
		case tTuple:
			for _, e := range t.elems {
				walk(e)
			}
			walk(t.elem)
		case tUnion, tInter:
			for _, m := range t.members {
				walk(m)
			}
		}
	}
	walk(t)
	return dedupStrings(out)
}

func dedupStrings(ss []string) []string {
	if len(ss) < 2 {
		return ss
	}
	seen := map[string]bool{}
	out := ss[:0:0]
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
