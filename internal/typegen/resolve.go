package typegen

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// This file indexes one schema document (a tool's inputSchema or
// outputSchema) so that `$ref` can be resolved within it: JSON Pointers
// (with ~0/~1 escapes and percent-encoding), `$id`-relative URIs, `$anchor`,
// `$dynamicAnchor` and draft-07 `"$id": "#name"` anchors. References that
// leave the document cannot be resolved and become `unknown` with a warning.

// defaultBase is the base URI of a document without `$id`. Any hierarchical
// URI works: it only has to let relative `$id`s and refs resolve.
const defaultBase = "https://codemode.invalid/schema.json"

// A doc is one schema document and its index.
type doc struct {
	root    *value
	base    map[*value]*url.URL // base URI in effect at each schema node
	ptr     map[*value]string   // JSON Pointer of each indexed node
	ids     map[string]*value   // absolute URI (no fragment) → schema
	anchors map[string]*value   // absolute URI + "#" + anchor → schema
}

// Keywords whose value is a subschema, an array of them, or a map of them.
// `items` is both: an array (draft-07 tuple) or a schema.
var (
	subKeys = map[string]bool{
		"additionalProperties": true, "additionalItems": true, "items": true,
		"unevaluatedItems": true, "unevaluatedProperties": true, "contains": true,
		"propertyNames": true, "not": true, "if": true, "then": true, "else": true,
		"contentSchema": true,
	}
	subArrayKeys = map[string]bool{
		"items": true, "prefixItems": true, "allOf": true, "anyOf": true, "oneOf": true,
	}
	subMapKeys = map[string]bool{
		"properties": true, "patternProperties": true, "$defs": true,
		"definitions": true, "dependentSchemas": true, "dependencies": true,
	}
)

func isSchema(v *value) bool { return v != nil && (v.kind == kObject || v.kind == kBool) }

// eachSub calls f for every immediate subschema of s, in document order, with
// the pointer segments leading to it. Definition containers ($defs,
// definitions) are skipped unless defs is set: their members are only part of
// the type when something refers to them.
func eachSub(s *value, defs bool, f func(sub *value, segs ...string)) {
	if s == nil || s.kind != kObject {
		return
	}
	for i, k := range s.keys {
		m := s.items[i]
		switch {
		case subMapKeys[k] && m.kind == kObject:
			if !defs && (k == "$defs" || k == "definitions") {
				continue
			}
			for j, name := range m.keys {
				if isSchema(m.items[j]) {
					f(m.items[j], k, name)
				}
			}
		case subArrayKeys[k] && m.kind == kArray:
			for j, e := range m.arr {
				if isSchema(e) {
					f(e, k, strconv.Itoa(j))
				}
			}
		case subKeys[k] && isSchema(m):
			f(m, k)
		}
	}
}

func escapeSeg(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func joinPtr(p string, segs ...string) string {
	for _, s := range segs {
		p += "/" + escapeSeg(s)
	}
	return p
}

func newDoc(root *value) *doc {
	d := &doc{
		root:    root,
		base:    map[*value]*url.URL{},
		ptr:     map[*value]string{},
		ids:     map[string]*value{},
		anchors: map[string]*value{},
	}
	b, _ := url.Parse(defaultBase)
	d.ids[defaultBase] = root
	d.index(root, "", b, 0)
	return d
}

// index records pointer, base URI, ids and anchors of s and its subschemas.
// The first occurrence of an id or anchor wins, so resolution is
// deterministic even for documents that repeat one.
func (d *doc) index(s *value, ptr string, base *url.URL, depth int) {
	if depth > maxJSONDepth {
		return
	}
	if _, seen := d.ptr[s]; seen {
		return
	}
	d.ptr[s] = ptr
	if s.kind == kObject {
		if id, ok := s.str("$id"); ok {
			if u, err := url.Parse(id); err == nil {
				abs := base.ResolveReference(u)
				frag := abs.Fragment
				abs.Fragment, abs.RawFragment = "", ""
				if id != "" && id[0] != '#' {
					base = abs
					d.claimID(abs.String(), s)
				}
				if frag != "" && frag[0] != '/' {
					d.claimAnchor(abs.String()+"#"+frag, s)
				}
			}
		}
		for _, key := range [...]string{"$anchor", "$dynamicAnchor"} {
			if a, ok := s.str(key); ok && a != "" {
				d.claimAnchor(base.String()+"#"+a, s)
			}
		}
	}
	d.base[s] = base
	eachSub(s, true, func(sub *value, segs ...string) {
		d.index(sub, joinPtr(ptr, segs...), base, depth+1)
	})
}

func (d *doc) claimID(k string, s *value) {
	if _, ok := d.ids[k]; !ok {
		d.ids[k] = s
	}
}

func (d *doc) claimAnchor(k string, s *value) {
	if _, ok := d.anchors[k]; !ok {
		d.anchors[k] = s
	}
}

// refOf returns the reference keyword of a schema: `$ref`, or the 2019-09
// `$recursiveRef` and 2020-12 `$dynamicRef`, which we resolve statically
// (their dynamic scope is the document itself in every single-document
// schema, which is all a tool has).
func refOf(s *value) (string, bool) {
	for _, k := range [...]string{"$ref", "$dynamicRef", "$recursiveRef"} {
		if r, ok := s.str(k); ok {
			return r, true
		}
	}
	return "", false
}

// resolve finds the schema ref points to, as seen from the schema at. It
// returns the target and its JSON Pointer from the document root.
func (d *doc) resolve(ref string, at *value) (*value, string, error) {
	base := d.base[at]
	if base == nil {
		base, _ = url.Parse(defaultBase)
	}
	var docKey, frag string
	if u, err := url.Parse(ref); err == nil {
		abs := base.ResolveReference(u)
		frag = abs.Fragment
		abs.Fragment, abs.RawFragment = "", ""
		docKey = abs.String()
	} else if strings.HasPrefix(ref, "#") {
		// Not a valid URI reference (a stray '%' or space): read the fragment
		// literally, which is what every lenient validator does.
		b := *base
		b.Fragment, b.RawFragment = "", ""
		docKey, frag = b.String(), ref[1:]
	} else {
		return nil, "", fmt.Errorf("invalid $ref %q", ref)
	}
	start := d.ids[docKey]
	if start == nil {
		return nil, "", fmt.Errorf("$ref %q points outside the schema", ref)
	}
	if frag == "" {
		return start, d.ptr[start], nil
	}
	if frag[0] != '/' {
		t := d.anchors[docKey+"#"+frag]
		if t == nil {
			return nil, "", fmt.Errorf("$ref %q: no such anchor", ref)
		}
		return t, d.ptr[t], nil
	}
	cur, ptr := start, d.ptr[start]
	for _, seg := range strings.Split(frag[1:], "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		var next *value
		switch cur.kind {
		case kObject:
			next = cur.get(seg)
		case kArray:
			if i, err := strconv.Atoi(seg); err == nil && i >= 0 && i < len(cur.arr) && strconv.Itoa(i) == seg {
				next = cur.arr[i]
			}
		}
		if next == nil {
			return nil, "", fmt.Errorf("$ref %q: no such location", ref)
		}
		cur, ptr = next, joinPtr(ptr, seg)
	}
	if !isSchema(cur) {
		return nil, "", fmt.Errorf("$ref %q does not point to a schema", ref)
	}
	if _, ok := d.ptr[cur]; !ok {
		// A location the index did not visit (inside an unknown keyword):
		// adopt it so that later passes know its pointer and base.
		d.index(cur, ptr, d.base[start], 0)
	}
	return cur, d.ptr[cur], nil
}
