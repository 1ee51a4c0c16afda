package schema

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// resolve finds a $ref target within the document: "#", "#/json/pointer"
// or "#anchor". Other documents are never consulted.
func (g *generator) resolve(ref string) (any, string, bool) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		frag, ok = strings.CutPrefix(ref, rootURL+"#")
	}
	if !ok {
		return nil, "", false
	}
	frag, err := url.PathUnescape(frag)
	if err != nil {
		return nil, "", false
	}
	if frag == "" || strings.HasPrefix(frag, "/") {
		node := lookupPointer(g.v.doc, frag)
		return node, frag, node != nil
	}
	return findAnchor(g.v.doc, frag, "")
}

func lookupPointer(doc any, ptr string) any {
	if ptr == "" {
		return doc
	}
	toks := strings.Split(ptr[1:], "/")
	for i, t := range toks {
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return lookup(doc, toks)
}

// findAnchor searches for {"$anchor": name} (or draft-07's {"$id": "#name"}).
func findAnchor(node any, name, ptr string) (any, string, bool) {
	switch n := node.(type) {
	case map[string]any:
		if n["$anchor"] == name || n["$id"] == "#"+name || n["$dynamicAnchor"] == name {
			return n, ptr, true
		}
		for _, k := range sortedKeys(n) {
			if x, p, ok := findAnchor(n[k], name, childPtr(ptr, k)); ok {
				return x, p, true
			}
		}
	case []any:
		for i, e := range n {
			if x, p, ok := findAnchor(e, name, childPtr(ptr, strconv.Itoa(i))); ok {
				return x, p, true
			}
		}
	}
	return nil, "", false
}

func childPtr(ptr string, toks ...string) string {
	if ptr == noPtr {
		return noPtr
	}
	return ptr + pointer(toks)
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// stringList returns the string members of a JSON array.
func stringList(v any) []string {
	arr, _ := v.([]any)
	var out []string
	for _, x := range arr {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
