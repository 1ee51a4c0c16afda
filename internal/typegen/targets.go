package typegen

import (
	"crypto/sha256"
	"encoding/binary"
	"io"
	"sort"
	"strconv"
	"strings"
)

// This file decides what a `$ref` becomes. Every schema a reference points
// to is a target; analyze counts references and finds the recursive ones
// before conversion starts. A recursive target is a named type (its name
// must exist before its body can mention it); another target is converted
// once and then inlined where it is small and used once, or named where it
// is large and reused or lives in $defs. Named types are shared by all tools
// of a server when they are the same type.

// A target is a schema that a `$ref` points to (or the document root when
// something refers to it).
type target struct {
	ptr       string
	sites     int  // references to it, plus one if it also occurs in place
	recursive bool // it refers to itself, directly or not
	inDefs    bool // it lives in $defs or definitions
	t         *tsType
	busy      bool
}

// analyze finds every `$ref` target reachable from the root, counts its
// references and decides which targets are recursive. Recursive targets must
// become named types before their body is converted; the others are inlined
// or named once converted, depending on size and reuse.
func (c *conv) analyze() {
	root := c.d.root
	// Collect targets, following references.
	seen := map[*value]bool{}
	var collect func(s *value)
	collect = func(s *value) {
		if seen[s] {
			return
		}
		seen[s] = true
		if r, ok := refOf(s); ok {
			if t, ptr, err := c.d.resolve(r, s); err == nil {
				c.addTarget(t, ptr)
				collect(t)
			}
		}
		eachSub(s, false, func(sub *value, _ ...string) { collect(sub) })
	}
	collect(root)

	// Edges: what converting each walk root (the document root and every
	// target) reaches before stopping at other targets.
	edges := map[*value][]*value{}
	walkRoots := append([]*value{root}, c.order...)
	done := map[*value]bool{}
	for _, r := range walkRoots {
		if done[r] {
			continue
		}
		done[r] = true
		var walk func(s *value, top bool)
		walk = func(s *value, top bool) {
			if !top {
				if tg := c.targets[s]; tg != nil {
					tg.sites++
					edges[r] = append(edges[r], s)
					return
				}
			}
			if ref, ok := refOf(s); ok {
				if t, _, err := c.d.resolve(ref, s); err == nil && c.targets[t] != nil {
					c.targets[t].sites++
					edges[r] = append(edges[r], t)
				}
			}
			eachSub(s, false, func(sub *value, _ ...string) { walk(sub, false) })
		}
		walk(r, true)
	}
	c.edges = edges
	c.sccs = components(walkRoots, edges)
	c.sccOf = make(map[*value]int, len(walkRoots))
	for i, scc := range c.sccs {
		for _, v := range scc {
			c.sccOf[v] = i
		}
	}
	for _, scc := range c.sccs {
		if len(scc) > 1 {
			for _, t := range scc {
				if tg := c.targets[t]; tg != nil {
					tg.recursive = true
				}
			}
			continue
		}
		for _, e := range edges[scc[0]] {
			if e == scc[0] {
				if tg := c.targets[e]; tg != nil {
					tg.recursive = true
				}
			}
		}
	}
}

func (c *conv) addTarget(t *value, ptr string) {
	if c.targets[t] != nil {
		return
	}
	segs := strings.Split(ptr, "/")
	inDefs := len(segs) >= 2 && (segs[len(segs)-2] == "$defs" || segs[len(segs)-2] == "definitions")
	c.targets[t] = &target{ptr: ptr, inDefs: inDefs}
	c.order = append(c.order, t)
}

// components returns the strongly connected components of the graph
// (Tarjan's algorithm, linear in its size): a target is recursive when its
// component has more than one node or an edge to itself. A component comes
// after every component it reaches.
func components(nodes []*value, edges map[*value][]*value) [][]*value {
	index := map[*value]int{}
	low := map[*value]int{}
	onStack := map[*value]bool{}
	var stack []*value
	var out [][]*value
	var strong func(v *value)
	strong = func(v *value) {
		index[v] = len(index)
		low[v] = index[v]
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range edges[v] {
			if _, seen := index[w]; !seen {
				strong(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var scc []*value
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				scc = append(scc, w)
				if w == v {
					break
				}
			}
			out = append(out, scc)
		}
	}
	for _, v := range nodes {
		if _, seen := index[v]; !seen {
			strong(v)
		}
	}
	return out
}

// site returns the type used where target s is referenced: a named type or
// the inlined conversion, decided once per target. depth is the nesting at
// the first reference: an inlined target counts towards it, so that a chain
// of targets each wrapping the next cannot nest without bound.
func (c *conv) site(s *value, depth int) *tsType {
	tg := c.targets[s]
	if tg.t != nil {
		return tg.t
	}
	if tg.recursive {
		// The name must exist before the body can refer to it, so two
		// recursive targets are the same type when their schemas (and
		// everything they reach) are the same text.
		fp := c.fingerprint(s)
		if n := c.g.byFP[fp]; n != nil {
			tg.t = &tsType{kind: tRef, ref: n}
			return tg.t
		}
		n := c.g.addNamed(c.typeName(s, tg.ptr), fp)
		n.tool, n.path = c.tool, "/"+c.side+tg.ptr
		tg.t = &tsType{kind: tRef, ref: n}
		tg.busy = true
		n.body = c.body(s, tg.ptr, 0, nil)
		n.doc = c.docOf(s, "")
		tg.busy = false
		return tg.t
	}
	tg.busy = true
	body := c.body(s, tg.ptr, depth+1, nil)
	tg.busy = false
	if (tg.sites >= 2 || tg.inDefs) && !small(body) {
		// Other targets are the same type when they print the same, whatever
		// their JSON spelling ($defs or definitions, ref strings).
		name, doc := c.typeName(s, tg.ptr), c.docOf(s, "")
		fp := "\x00type " + name + "\x00" + fullKey(body) + "\x00" + doc.text + "\x00" + strings.Join(doc.tags, "\x00")
		n := c.g.byFP[fp]
		if n == nil {
			n = c.g.addNamed(name, fp)
			n.tool, n.path = c.tool, "/"+c.side+tg.ptr
			n.body, n.doc = body, doc
		}
		tg.t = &tsType{kind: tRef, ref: n}
	} else {
		tg.t = body
	}
	return tg.t
}

// small reports whether a type is short enough to repeat rather than name.
func small(t *tsType) bool {
	var p printer
	_, ok := p.flat(t, ctxTop, 40)
	return ok
}

// fingerprint identifies what converting target s produces: its candidate
// name, its pointer, and the fingerprint of its component of the reference
// graph, which covers every target s reaches. Two tools of a server whose
// targets have equal fingerprints share one named type.
func (c *conv) fingerprint(s *value) string {
	return c.typeName(s, c.targets[s].ptr) + "\x00" + c.d.ptr[s] + "\x00" + c.componentFP(c.sccOf[s])
}

// componentFP hashes a component of the reference graph: for each member
// (by pointer), its pointer, its JSON and the pointers of the targets it
// refers to, and for each reference out of the component the fingerprint of
// the component it leads to. It is computed once per component, and the
// JSON once per node, so fingerprinting a document is linear in its size
// however many recursive targets it has.
func (c *conv) componentFP(i int) string {
	if fp, ok := c.sccFP[i]; ok {
		return fp
	}
	if c.sccFP == nil {
		c.sccFP = map[int]string{}
	}
	members := append([]*value(nil), c.sccs[i]...)
	sort.Slice(members, func(a, b int) bool { return c.d.ptr[members[a]] < c.d.ptr[members[b]] })
	h := sha256.New()
	for _, m := range members {
		writeField(h, c.d.ptr[m])
		jh := c.jsonHash(m)
		h.Write(jh[:])
		for _, e := range c.edges[m] {
			writeField(h, "ref "+c.d.ptr[e])
			if j := c.sccOf[e]; j != i {
				writeField(h, c.componentFP(j))
			}
		}
		writeField(h, "end")
	}
	fp := string(h.Sum(nil))
	c.sccFP[i] = fp
	return fp
}

// jsonHash is a hash of v's JSON (keys in document order), memoised per node.
func (c *conv) jsonHash(v *value) [sha256.Size]byte {
	if h, ok := c.jsonFP[v]; ok {
		return h
	}
	if c.jsonFP == nil {
		c.jsonFP = map[*value][sha256.Size]byte{}
	}
	h := sha256.New()
	h.Write([]byte{byte(v.kind)})
	switch v.kind {
	case kBool:
		writeField(h, strconv.FormatBool(v.b))
	case kNumber, kString:
		writeField(h, v.s)
	case kArray:
		for _, e := range v.arr {
			eh := c.jsonHash(e)
			h.Write(eh[:])
		}
	case kObject:
		for i, k := range v.keys {
			writeField(h, k)
			eh := c.jsonHash(v.items[i])
			h.Write(eh[:])
		}
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	c.jsonFP[v] = out
	return out
}

// writeField writes s length-prefixed, so that fields cannot run together.
func writeField(w io.Writer, s string) {
	var n [binary.MaxVarintLen64]byte
	w.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
	io.WriteString(w, s)
}

// typeName proposes a name for target s: the root is <ExportName>Input or
// Output, an anchor names its schema, otherwise the last property or
// definition name in its pointer.
func (c *conv) typeName(s *value, ptr string) string {
	suffix := "Input"
	if c.side == "outputSchema" {
		suffix = "Output"
	}
	if s == c.d.root {
		return pascal(c.exportName) + suffix
	}
	if a, ok := s.str("$anchor"); ok && pascal(a) != "" {
		return pascal(a)
	}
	segs := strings.Split(ptr, "/")
	for i := len(segs) - 1; i >= 1; i-- {
		if subMapKeys[segs[i-1]] && (i < 2 || !subMapKeys[segs[i-2]]) {
			if n := pascal(strings.ReplaceAll(strings.ReplaceAll(segs[i], "~1", "/"), "~0", "~")); n != "" {
				return n
			}
		}
	}
	return pascal(c.exportName) + suffix + "Part"
}
