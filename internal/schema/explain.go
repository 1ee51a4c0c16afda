package schema

import (
	"cmp"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// leaf is one concrete problem at one place in the input.
type leaf struct {
	path     []string
	expected string
	received string
	// alts is set for type, const and enum failures: the values or types
	// that would have been accepted here. Such a failure in an anyOf/oneOf
	// branch means "wrong branch" rather than "nearly right".
	alts   []string
	values bool // alts are JSON values rather than type names
}

func (l leaf) mismatch() bool { return l.alts != nil }

// explain turns the validator's error tree into one Violation: the leaves
// are collected (choosing one branch per failed anyOf/oneOf), and the
// deepest comes first, as the most specific.
func (v *Validator) explain(verr *jsonschema.ValidationError, input any) *Violation {
	leaves := v.collect(verr, input)
	if len(leaves) == 0 {
		return newViolation(nil, "valid input", describe(input))
	}
	slices.SortStableFunc(leaves, func(a, b leaf) int {
		if c := cmp.Compare(len(b.path), len(a.path)); c != 0 {
			return c
		}
		if c := cmp.Compare(pointer(a.path), pointer(b.path)); c != 0 {
			return c
		}
		return cmp.Compare(a.expected, b.expected)
	})
	leaves = slices.CompactFunc(leaves, func(a, b leaf) bool {
		return slices.Equal(a.path, b.path) && a.expected == b.expected
	})
	viol := newViolation(leaves[0].path, leaves[0].expected, leaves[0].received)
	for _, l := range leaves[1:min(len(leaves), 1+maxOthers)] {
		viol.Others = append(viol.Others, newViolation(l.path, l.expected, l.received).Message)
	}
	return viol
}

func (v *Validator) collect(e *jsonschema.ValidationError, input any) []leaf {
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf:
		var out []leaf
		for _, c := range e.Causes {
			out = append(out, v.collect(c, input)...)
		}
		return out
	case *kind.AnyOf:
		return v.pickBranch(e, input)
	case *kind.OneOf:
		if len(k.Subschemas) == 0 {
			return v.pickBranch(e, input)
		}
	}
	return v.leaves(e, input)
}

// pickBranch explains a failed anyOf/oneOf, whose causes are the failures
// of each branch in order. If every branch failed on its type, const or
// enum at the same place, the input matches none of the alternatives and
// the answer is a summary of them; otherwise the branch that got furthest
// (fewest such mismatches, then deepest failure, then fewest failures) is
// the one the caller most likely meant.
func (v *Validator) pickBranch(e *jsonschema.ValidationError, input any) []leaf {
	branches := make([][]leaf, len(e.Causes))
	for i, c := range e.Causes {
		branches[i] = v.collect(c, input)
	}
	if l, ok := summarise(branches, input); ok {
		return []leaf{l}
	}
	type score struct{ mismatches, depth, n int }
	scoreOf := func(b []leaf) score {
		s := score{n: len(b)}
		for _, l := range b {
			if l.mismatch() {
				s.mismatches++
			}
			s.depth = max(s.depth, len(l.path))
		}
		return s
	}
	best, bestScore := -1, score{}
	for i, b := range branches {
		if len(b) == 0 {
			continue
		}
		s := scoreOf(b)
		if best < 0 || s.mismatches < bestScore.mismatches ||
			s.mismatches == bestScore.mismatches && (s.depth > bestScore.depth ||
				s.depth == bestScore.depth && s.n < bestScore.n) {
			best, bestScore = i, s
		}
	}
	if best < 0 {
		return nil
	}
	return branches[best]
}

// summarise merges the branches' type/const/enum failures into
// `one of: ...` when every branch has one at the same, shallowest place.
func summarise(branches [][]leaf, input any) (leaf, bool) {
	var at []string
	var alts []string
	values := true
	for i, b := range branches {
		first := -1
		for j, l := range b {
			if l.mismatch() && (first < 0 || len(l.path) < len(b[first].path)) {
				first = j
			}
		}
		if first < 0 || i > 0 && !slices.Equal(b[first].path, at) {
			return leaf{}, false
		}
		at = b[first].path
		values = values && b[first].values
		for _, a := range b[first].alts {
			if !slices.Contains(alts, a) {
				alts = append(alts, a)
			}
		}
	}
	if len(branches) == 0 {
		return leaf{}, false
	}
	var expected string
	switch {
	case len(alts) == 1:
		expected = alts[0]
	case values:
		expected = "one of " + list(alts, maxExpectedShown)
	case allTypeNames(alts):
		expected = strings.Join(alts, " or ")
	default:
		expected = "one of: " + list(alts, maxExpectedShown)
	}
	return leaf{path: at, expected: expected, received: describe(lookup(input, at)), alts: alts, values: values}, true
}

func allTypeNames(alts []string) bool {
	for _, a := range alts {
		switch a {
		case "null", "boolean", "number", "integer", "string", "array", "object":
		default:
			return false
		}
	}
	return true
}
