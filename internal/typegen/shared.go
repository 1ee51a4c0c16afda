package typegen

import (
	"fmt"
	"strings"
)

// Servers generated from one framework repeat parameters verbatim across
// tools: every Azure tool takes the same tenant, auth-method and seven retry
// options with the same long descriptions, every Twilio list tool the same
// paging trio. Declaring such a property group once as a named type, and
// writing `{ own props } & TenantParams` in each tool, is the largest single
// saving in tokens, and the model reads each description once.
//
// A group is the set of top-level properties (same name, type, optionality
// and doc) that occur in exactly the same set of tools' inputs (or outputs).
// It is factored out only when that saves a lot: groups of short properties
// stay inline, where they are easier to read.

const (
	minGroupBytes   = 80  // printed size of the group's properties
	minGroupSavings = 200 // bytes saved over the whole server
)

// factorShared rewrites the top-level input and output object types of the
// tools to reference shared property groups.
func factorShared(g *gen, tools []*toolIR) {
	factorSide(g, tools, func(t *toolIR) **tsType { return &t.input }, "Param")
	factorSide(g, tools, func(t *toolIR) **tsType { return &t.output }, "Field")
}

type propGroup struct {
	sig   string // the tools it occurs in
	keys  []string
	props []*prop
	tools []int
}

func factorSide(g *gen, tools []*toolIR, slot func(*toolIR) **tsType, noun string) {
	uses := map[string][]int{}
	var order []string
	first := map[string]*prop{}
	for i, t := range tools {
		root := *slot(t)
		if !factorable(root) {
			continue
		}
		if root.kind == tInter {
			root = root.members[0]
		}
		for _, p := range root.props {
			k := propKey(p)
			if _, ok := uses[k]; !ok {
				order = append(order, k)
				first[k] = p
			}
			if u := uses[k]; len(u) == 0 || u[len(u)-1] != i {
				uses[k] = append(u, i)
			}
		}
	}
	bySig := map[string]*propGroup{}
	var groups []*propGroup
	for _, k := range order {
		if len(uses[k]) < 2 {
			continue
		}
		sig := fmt.Sprint(uses[k])
		gr := bySig[sig]
		if gr == nil {
			gr = &propGroup{sig: sig, tools: uses[k]}
			bySig[sig] = gr
			groups = append(groups, gr)
		}
		gr.keys = append(gr.keys, k)
		gr.props = append(gr.props, first[k])
	}
	for _, gr := range groups {
		var b strings.Builder
		p := printer{}
		p.object(&b, &tsType{kind: tObject, props: gr.props}, "  ")
		size := b.Len()
		name := pascal(gr.props[0].name)
		if name == "" {
			name = "Shared"
		}
		if len(gr.props) == 1 {
			name += noun
		} else {
			name += noun + "s"
		}
		ref := len(name) + 3
		savings := (len(gr.tools)-1)*size - len(gr.tools)*ref - (ref + 16)
		if size < minGroupBytes || savings < minGroupSavings {
			continue
		}
		n := g.addNamed(name, "\x00group "+noun+gr.sig+strings.Join(gr.keys, "\x00"))
		n.body = &tsType{kind: tObject, props: gr.props}
		inGroup := map[string]bool{}
		for _, k := range gr.keys {
			inGroup[k] = true
		}
		for _, i := range gr.tools {
			s := slot(tools[i])
			*s = withGroup(*s, n, inGroup)
		}
	}
}

// factorable reports whether properties can move out of t into an
// intersection member without changing what it accepts: t must be an object
// whose only index signature, if any, is `[key: string]: unknown` (a
// narrower one would constrain the moved properties too).
func factorable(t *tsType) bool {
	if t == nil {
		return false
	}
	if t.kind == tInter {
		return len(t.members) > 0 && factorable(t.members[0])
	}
	if t.kind != tObject {
		return false
	}
	for _, s := range t.index {
		if s.prefix != "" || !isUnknown(s.t) {
			return false
		}
	}
	return true
}

// withGroup removes the group's properties from t (an object, or an
// intersection whose first member is the tool's own object) and adds a
// reference to the group.
func withGroup(t *tsType, n *named, inGroup map[string]bool) *tsType {
	own, rest := t, []*tsType(nil)
	if t.kind == tInter {
		own, rest = t.members[0], t.members[1:]
	}
	o := &tsType{kind: tObject, index: own.index, warn: own.warn}
	for _, p := range own.props {
		if !inGroup[propKey(p)] {
			o.props = append(o.props, p)
		}
	}
	ms := []*tsType{o}
	if len(o.props) == 0 && len(o.index) == 0 {
		ms = nil // a closed object with nothing left adds nothing to the intersection
	}
	ms = append(ms, rest...)
	ms = append(ms, &tsType{kind: tRef, ref: n})
	if len(ms) == 1 {
		return ms[0]
	}
	return &tsType{kind: tInter, members: ms}
}

// propKey identifies a property with everything that is printed for it.
func propKey(p *prop) string {
	return strings.Join([]string{p.name, fmt.Sprint(p.optional), key(p.t), p.doc.text, strings.Join(p.doc.tags, "\x01"), strings.Join(hoist(p.t), "\x01")}, "\x00")
}
