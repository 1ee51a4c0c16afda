package typegen

import (
	"strconv"
	"strings"
)

// This file converts the two structured types: objects (properties,
// required, additionalProperties, patternProperties) and arrays (items,
// tuples in both drafts' spellings).

// object converts an object schema. inherited says that another part
// decides which other keys are allowed (the parent of a branch, or the
// target of a $ref next to s): s then adds no index signature, and if it
// adds no property either it is `{}`. Only s's own additionalProperties or
// unevaluatedProperties can close it.
func (c *conv) object(s *value, path string, depth int, inherited bool) *tsType {
	o := &tsType{kind: tObject}
	req := map[string]bool{}
	var reqOrder []string
	if r := s.get("required"); r != nil && r.kind == kArray {
		for _, e := range r.arr {
			if e.kind == kString && !req[e.s] {
				req[e.s] = true
				reqOrder = append(reqOrder, e.s)
			}
		}
	}
	declared := map[string]bool{}
	if ps := s.get("properties"); ps != nil && ps.kind == kObject {
		for i, name := range ps.keys {
			sub := ps.items[i]
			declared[name] = true
			p := &prop{
				name:     name,
				optional: !req[name] && !sub.isTrue("required"),
				t:        c.convert(sub, path+"/properties/"+escapeSeg(name), depth+1, nil),
				doc:      c.docOf(sub, name),
			}
			if p.optional {
				p.t = widenInherited(name, p.t)
			}
			o.props = append(o.props, p)
		}
	}
	for _, name := range reqOrder {
		if !declared[name] {
			o.props = append(o.props, &prop{name: name, t: tUnknown})
		}
	}
	// Index signatures: patternProperties with a literal prefix become
	// template keys; other patterns and additionalProperties share the
	// string index.
	var strTypes []*tsType
	var strPatterns []string
	if pp := s.get("patternProperties"); pp != nil && pp.kind == kObject {
		for i, pat := range pp.keys {
			t := c.convert(pp.items[i], path+"/patternProperties/"+escapeSeg(pat), depth+1, nil)
			if pre, ok := literalPrefix(pat); ok {
				o.index = append(o.index, &indexSig{prefix: pre, t: t})
				continue
			}
			strTypes = append(strTypes, t)
			strPatterns = append(strPatterns, "/"+pat+"/")
		}
	}
	open, explicit := !inherited, false
	if ap := s.get("additionalProperties"); ap != nil {
		explicit = ap.kind == kBool || ap.kind == kObject
		switch {
		case ap.kind == kBool:
			open = ap.b
		case ap.kind == kObject:
			open = false
			strTypes = append(strTypes, c.convert(ap, path+"/additionalProperties", depth+1, nil))
		}
	} else if u := s.get("unevaluatedProperties"); u != nil && u.kind == kBool && !u.b {
		open, explicit = false, true
	}
	if open {
		strTypes = append(strTypes, tUnknown)
	}
	if len(strTypes) > 0 {
		sig := &indexSig{t: union(strTypes...)}
		if len(strPatterns) > 0 && !isUnknown(sig.t) {
			sig.doc.tags = []string{"@keys match " + docLine(strings.Join(strPatterns, " or "))}
		}
		o.index = append(o.index, sig)
	}
	if inherited && !explicit && len(o.props) == 0 && len(o.index) == 0 {
		return withWarn(tEmpty, o.warn)
	}
	return finishObject(o)
}

// objectMembers are the members of TypeScript's Object interface, which
// every object type has. TypeScript compares an optional property of a
// parameter type with the argument's apparent member of that name, so a
// `constructor?: string` rejects every call that leaves it out ("Function is
// not assignable to string").
var objectMembers = map[string]bool{
	"constructor": true, "toString": true, "toLocaleString": true, "valueOf": true,
	"hasOwnProperty": true, "isPrototypeOf": true, "propertyIsEnumerable": true,
}

// widenInherited widens the type of an optional property named after an
// Object member with that member's type, `string | Object["constructor"]`:
// leaving it out type-checks again, and a value of a wrong type is still
// flagged unless it happens to be a function.
func widenInherited(name string, t *tsType) *tsType {
	if !objectMembers[name] || isUnknown(t) {
		return t
	}
	return union(t, &tsType{kind: tRaw, name: "Object[" + quote(name) + "]"})
}

// literalPrefix recognises the patterns `^prefix`, `^prefix.*` and
// `^prefix.*$` with a literal, non-empty prefix.
func literalPrefix(pat string) (string, bool) {
	if !strings.HasPrefix(pat, "^") {
		return "", false
	}
	rest := pat[1:]
	for _, tail := range [...]string{".*$", ".+$", ".*", ".+"} {
		if strings.HasSuffix(rest, tail) {
			rest = strings.TrimSuffix(rest, tail)
			break
		}
	}
	var b strings.Builder
	for i := 0; i < len(rest); i++ {
		ch := rest[i]
		switch {
		case ch == '\\' && i+1 < len(rest) && strings.IndexByte(`.-/\$^*+?()[]{}|`, rest[i+1]) >= 0:
			i++
			b.WriteByte(rest[i])
		case ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' ||
			strings.IndexByte("-_:/@,=! ", ch) >= 0:
			b.WriteByte(ch)
		default:
			return "", false
		}
	}
	return b.String(), b.Len() > 0
}

func (c *conv) array(s *value, path string, depth int) *tsType {
	items := s.get("items")
	var elems []*tsType
	var rest *value
	var restKey string // the keyword rest comes from, for warning paths
	tuple := false
	if pi := s.get("prefixItems"); pi != nil && pi.kind == kArray {
		// 2020-12: the rest element is `items`.
		tuple = true
		for i, e := range pi.arr {
			elems = append(elems, c.convert(e, path+"/prefixItems/"+strconv.Itoa(i), depth+1, nil))
		}
		rest, restKey = items, "items"
	} else if items != nil && items.kind == kArray {
		// draft-07: an items array, and the rest element is additionalItems.
		tuple = true
		for i, e := range items.arr {
			elems = append(elems, c.convert(e, path+"/items/"+strconv.Itoa(i), depth+1, nil))
		}
		rest, restKey = s.get("additionalItems"), "additionalItems"
	}
	if !tuple {
		if items == nil || !isSchema(items) {
			return &tsType{kind: tArray, elem: tUnknown}
		}
		if items.kind == kBool && !items.b {
			return &tsType{kind: tTuple}
		}
		return &tsType{kind: tArray, elem: c.convert(items, path+"/items", depth+1, nil)}
	}
	t := &tsType{kind: tTuple, elems: elems}
	switch {
	case rest == nil || rest.kind == kBool && rest.b:
		t.elem = tUnknown
	case rest.kind == kBool:
	case rest.kind == kObject:
		t.elem = c.convert(rest, path+"/"+restKey, depth+1, nil)
	}
	if n, ok := intKeyword(s, "maxItems"); ok && n <= len(t.elems) {
		t.elems, t.elem = t.elems[:n], nil
	}
	if n, ok := intKeyword(s, "minItems"); ok {
		t.minLen = min(n, len(t.elems))
	}
	if t.elem != nil && isNever(t.elem) {
		t.elem = nil
	}
	return t
}

// intKeyword reads a non-negative integer keyword.
func intKeyword(s *value, k string) (int, bool) {
	v := s.get(k)
	if v == nil || v.kind != kNumber {
		return 0, false
	}
	f, err := strconv.ParseFloat(v.s, 64)
	if err != nil || f < 0 || f != float64(int64(f)) || f > 1e9 {
		return 0, false
	}
	return int(f), true
}
