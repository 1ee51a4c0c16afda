package typegen

import (
	"sort"
	"strings"
)

// Besides whole properties (shared.go), servers repeat whole types: the same
// eight-value reaction enum on five GitHub tools, the same nested filter
// object on several Grafana tools. A type literal that is long and occurs
// more than once in a server is declared once as a named type, named after
// the first property that uses it.

const (
	minSubtreeBytes   = 80  // printed size of a type worth naming
	minSubtreeSavings = 120 // bytes saved over the whole server
)

// shareSubtrees replaces repeated large object and union types in every
// tool signature and named type by references to new named types.
func shareSubtrees(g *gen, tools []*toolIR) {
	type cand struct {
		key   string
		t     *tsType
		name  string
		count int
		first int // discovery order, for determinism
	}
	cands := map[string]*cand{}
	var walk func(t *tsType, name string)
	walk = func(t *tsType, name string) {
		if t == nil {
			return
		}
		switch t.kind {
		case tObject, tUnion:
			k := fullKey(t)
			if len(k) >= minSubtreeBytes {
				c := cands[k]
				if c == nil {
					c = &cand{key: k, t: t, name: name, first: len(cands)}
					cands[k] = c
				}
				c.count++
			}
		}
		switch t.kind {
		case tArray:
			walk(t.elem, singular(name))
		case tTuple:
			for _, e := range t.elems {
				walk(e, name)
			}
			walk(t.elem, singular(name))
		case tObject:
			for _, p := range t.props {
				walk(p.t, p.name)
			}
			for _, s := range t.index {
				walk(s.t, name)
			}
		case tUnion, tInter:
			for _, m := range t.members {
				walk(m, name)
			}
		}
	}
	for _, t := range tools {
		walk(t.input, t.export+"_input")
		walk(t.output, t.export+"_output")
	}
	for _, n := range g.named {
		walk(n.body, n.name)
	}
	var list []*cand
	for _, c := range cands {
		if c.count < 2 {
			continue
		}
		if (c.count-1)*len(c.key)-c.count*16-len(c.key)/8 < minSubtreeSavings {
			continue
		}
		list = append(list, c)
	}
	if len(list) == 0 {
		return
	}
	// Largest first: a repeated object that contains a repeated enum is
	// named whole, and the enum inside it then occurs once less.
	sort.Slice(list, func(i, j int) bool {
		if len(list[i].key) != len(list[j].key) {
			return len(list[i].key) > len(list[j].key)
		}
		return list[i].first < list[j].first
	})
	repl := map[string]*named{}
	for _, c := range list {
		n := g.addNamed(pascal(c.name), "\x00subtree "+c.key)
		n.body = c.t
		repl[c.key] = n
	}
	// Rewrite bottom-up so named bodies reference each other too; a body is
	// never replaced by a reference to itself.
	memo := map[*tsType]*tsType{}
	var rw func(t *tsType, self *named) *tsType
	rw = func(t *tsType, self *named) *tsType {
		if t == nil {
			return nil
		}
		if r, ok := memo[t]; ok && self == nil {
			return r
		}
		out := t
		switch t.kind {
		case tArray:
			if e := rw(t.elem, nil); e != t.elem {
				c := *t
				c.elem = e
				out = &c
			}
		case tTuple:
			c := *t
			changed := false
			c.elems = make([]*tsType, len(t.elems))
			for i, e := range t.elems {
				c.elems[i] = rw(e, nil)
				changed = changed || c.elems[i] != e
			}
			c.elem = rw(t.elem, nil)
			if changed || c.elem != t.elem {
				out = &c
			}
		case tObject:
			c := *t
			changed := false
			c.props = make([]*prop, len(t.props))
			for i, p := range t.props {
				q := *p
				q.t = rw(p.t, nil)
				c.props[i] = &q
				changed = changed || q.t != p.t
			}
			c.index = make([]*indexSig, len(t.index))
			for i, s := range t.index {
				q := *s
				q.t = rw(s.t, nil)
				c.index[i] = &q
				changed = changed || q.t != s.t
			}
			if changed {
				out = &c
			}
		case tUnion, tInter:
			c := *t
			changed := false
			c.members = make([]*tsType, len(t.members))
			for i, m := range t.members {
				c.members[i] = rw(m, nil)
				changed = changed || c.members[i] != m
			}
			if changed {
				out = &c
			}
		}
		if t.kind == tObject || t.kind == tUnion {
			if n := repl[fullKey(t)]; n != nil && n != self {
				r := &tsType{kind: tRef, ref: n, note: t.note}
				if self == nil {
					memo[t] = r
				}
				return r
			}
		}
		if self == nil {
			memo[t] = out
		}
		return out
	}
	for _, t := range tools {
		t.input = rw(t.input, nil)
		t.output = rw(t.output, nil)
	}
	for _, n := range g.named {
		n.body = rw(n.body, n)
	}
}

// singular names the element of an array property: "relations" →
// "relation", "entries" → "entry". Good enough for names; never empty.
func singular(name string) string {
	switch {
	case strings.HasSuffix(name, "ies") && len(name) > 3:
		return name[:len(name)-3] + "y"
	case strings.HasSuffix(name, "s") && !strings.HasSuffix(name, "ss") && len(name) > 1:
		return name[:len(name)-1]
	}
	return name
}

// fullKey is the multi-line rendering of t with its doc comments: two types
// with equal full keys print identically.
func fullKey(t *tsType) string {
	var b strings.Builder
	var p printer
	p.typ(&b, t, "", ctxTop)
	return b.String()
}
