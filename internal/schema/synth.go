package schema

import (
	"iter"
	"slices"
	"strconv"
	"time"
)

// The generator builds example values by generate-and-test: for each
// subschema it proposes candidates in order of preference (the schema's
// examples and default, const, enum members, then a value built from the
// type and constraints) and keeps the first that the compiled subschema
// accepts. Checking locally keeps one bad choice deep in the tree from
// spoiling the whole payload; the final check at the root is what counts.

const (
	noPtr          = "\x00" // a subschema whose compiled form cannot be found
	maxSynthDepth  = 24     // nesting of generated values
	maxRefRepeats  = 2      // expansions of one $ref along one path (recursion guard)
	maxRefDepth    = 6      // $ref expansions along one path (see below)
	maxEnumTried   = 16     // enum members tried per subschema
	maxItemsBuilt  = 64     // minItems beyond this is not an example
	synthBudget    = 20000  // subschema visits per example, against pathological schemas
	synthTimeLimit = 250 * time.Millisecond
	defaultString  = "string"
	maxPartsInView = 64
)

// Checking a candidate costs a validation, and the validator explores every
// failing anyOf/oneOf branch in full: a value nested d levels deep through
// b-way unions can cost b^d. Real schemas keep d small; the limits on $ref
// depth and time keep contrived ones (twenty distinct $defs, each a union
// leading to the next) from stalling an error message.
type generator struct {
	v        *Validator
	hints    bool // use examples/example/default
	budget   int
	deadline time.Time
}

func newGenerator(v *Validator, hints bool, deadline time.Time) *generator {
	return &generator{v: v, hints: hints, budget: synthBudget, deadline: deadline}
}

// spend uses one unit of the budget and reports whether any is left.
func (g *generator) spend() bool {
	g.budget--
	if g.budget > 0 && time.Now().After(g.deadline) {
		g.budget = 0
	}
	return g.budget > 0
}

// part is one schema object that applies to the value being built: the
// subschema itself, its $ref target or an allOf member. Together they form
// the view the value must satisfy.
type part struct {
	m       map[string]any
	ptr     string // JSON Pointer of m in the document, or noPtr
	seen    bool   // hints, const and enum already proposed
	altDone bool   // anyOf/oneOf already expanded
}

// synth returns a value for node (a subschema at ptr) and whether it was
// checked valid there. variant > 0 asks for a different value of the same
// shape (distinct array items under uniqueItems).
func (g *generator) synth(node any, ptr string, depth int, refs []string) (any, bool) {
	return g.synthVariant(node, ptr, depth, refs, 0)
}

func (g *generator) synthVariant(node any, ptr string, depth int, refs []string, variant int) (any, bool) {
	if depth > maxSynthDepth || !g.spend() {
		return nil, false
	}
	m, ok := node.(map[string]any)
	if !ok {
		b, isBool := node.(bool)
		return nil, !isBool || b // a missing subschema or true accepts anything
	}
	view, refs := g.parts(m, ptr, refs, nil)
	var first any
	n := 0
	for c := range g.candidates(view, depth, refs, variant) {
		if n == 0 {
			first = c
		}
		n++
		if g.check(ptr, c) {
			return c, true
		}
		if !g.spend() {
			break
		}
	}
	return first, false
}

func (g *generator) check(ptr string, c any) bool {
	if ptr == noPtr || g.v.sch == nil {
		return true
	}
	s := g.v.schemaAtPointer(ptr)
	return s == nil || g.v.valid(s, c)
}

// parts flattens node, its $ref target and its allOf members into the view.
func (g *generator) parts(node any, ptr string, refs []string, out []part) ([]part, []string) {
	m, ok := node.(map[string]any)
	if !ok || len(out) >= maxPartsInView {
		return out, refs
	}
	out = append(out, part{m: m, ptr: ptr})
	if ref, ok := m["$ref"].(string); ok && len(refs) < maxRefDepth && countOf(refs, ref) < maxRefRepeats {
		if target, tptr, ok := g.resolve(ref); ok {
			out, refs = g.parts(target, tptr, append(slices.Clip(refs), ref), out)
		}
	}
	if all, ok := m["allOf"].([]any); ok {
		for i, sub := range all {
			out, refs = g.parts(sub, childPtr(ptr, "allOf", strconv.Itoa(i)), refs, out)
		}
	}
	return out, refs
}

// candidates proposes values for a view, best first.
func (g *generator) candidates(view []part, depth int, refs []string, variant int) iter.Seq[any] {
	return func(yield func(any) bool) {
		g.viewCandidates(view, depth, refs, variant, yield)
	}
}

func (g *generator) viewCandidates(view []part, depth int, refs []string, variant int, yield func(any) bool) bool {
	for i := range view {
		if view[i].seen {
			continue
		}
		if !g.proposeFixed(view[i].m, variant, yield) {
			return false
		}
	}
	// Expand the first anyOf/oneOf not yet expanded: each branch joins the
	// view in turn (first branch first), so nested alternatives work too.
	for i, p := range view {
		if p.altDone {
			continue
		}
		for _, kw := range []string{"anyOf", "oneOf"} {
			branches, ok := p.m[kw].([]any)
			if !ok || len(branches) == 0 {
				continue
			}
			base := slices.Clone(view)
			for j := range base {
				base[j].seen = true
			}
			base[i].altDone = true
			for _, b := range nullLast(branches) {
				br := branches[b]
				if g.budget <= 0 {
					return false
				}
				bview, brefs := g.parts(br, childPtr(p.ptr, kw, strconv.Itoa(b)), refs, slices.Clone(base))
				if !g.viewCandidates(bview, depth, brefs, variant, yield) {
					return false
				}
			}
			return true
		}
	}
	return g.typed(view, depth, refs, variant, yield)
}

// proposeFixed proposes the values a subschema names outright.
func (g *generator) proposeFixed(m map[string]any, variant int, yield func(any) bool) bool {
	if g.hints && variant == 0 {
		if ex, ok := m["examples"].([]any); ok && len(ex) > 0 && !yield(ex[0]) {
			return false
		}
		for _, kw := range []string{"example", "default"} {
			if x, ok := m[kw]; ok && !yield(x) {
				return false
			}
		}
	}
	if c, ok := m["const"]; ok && !yield(c) {
		return false
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		for i := range min(len(e), maxEnumTried) {
			if !yield(e[(i+variant)%len(e)]) {
				return false
			}
		}
	}
	return true
}

// nullLast orders branch indexes so that a bare {"type":"null"} branch
// (how Zod and Pydantic write "optional") comes last: the other branch
// makes the more informative example.
func nullLast(branches []any) []int {
	var idx, nulls []int
	for i, br := range branches {
		if m, ok := br.(map[string]any); ok && len(m) == 1 && m["type"] == "null" {
			nulls = append(nulls, i)
		} else {
			idx = append(idx, i)
		}
	}
	return append(idx, nulls...)
}

// typed proposes values built from the view's types and constraints.
func (g *generator) typed(view []part, depth int, refs []string, variant int, yield func(any) bool) bool {
	for _, t := range viewTypes(view) {
		switch t {
		case "object":
			if !yield(g.object(view, depth, refs)) {
				return false
			}
		case "array":
			if !yield(g.array(view, depth, refs)) {
				return false
			}
		case "string":
			for _, s := range stringCandidates(view, variant) {
				if !yield(s) {
					return false
				}
			}
		case "integer", "number":
			for _, n := range numberCandidates(view, t == "integer", variant) {
				if !yield(n) {
					return false
				}
			}
		case "boolean":
			if !yield(variant%2 == 1) {
				return false
			}
		case "null":
			if !yield(nil) {
				return false
			}
		case "any":
			// Unconstrained (or constrained only by not/if): null is the
			// honest example; the others are for schemas that exclude it.
			for _, x := range []any{nil, defaultString, 0.0, false, map[string]any{}, []any{}} {
				if !yield(x) {
					return false
				}
			}
		}
	}
	return true
}
