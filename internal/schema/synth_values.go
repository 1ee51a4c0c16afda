package schema

import (
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxStringBuilt caps minLength padding: a longer string is no example.
const maxStringBuilt = 1024

// stringCandidates proposes strings for the view: a sample of its format,
// samples of its pattern, then a placeholder, each fitted to min/maxLength.
func stringCandidates(view []part, variant int) []string {
	format, _ := firstKeyword(view, "format").(string)
	pattern, _ := firstKeyword(view, "pattern").(string)
	minLen := min(lowerBound(view, "minLength"), maxStringBuilt)
	maxLen, hasMax := upperBound(view, "maxLength")

	var bases []string
	if ex, ok := formatExamples[format]; ok {
		bases = append(bases, ex)
	}
	if pattern != "" {
		for _, grow := range []int{0, 1, minLen} {
			if s, ok := patternSample(pattern, grow); ok {
				bases = append(bases, s)
			}
		}
	}
	plain := defaultString
	if variant > 0 {
		plain += strconv.Itoa(variant)
	}
	bases = append(bases, plain)

	var out []string
	for _, b := range bases {
		out = append(out, fitLength(b, minLen, maxLen, hasMax, "x"))
		if r, _ := utf8.DecodeLastRuneInString(b); b != "" && r != 'x' {
			// A pattern like ^[0-9]+$ only survives padding with its own kind.
			out = append(out, fitLength(b, minLen, maxLen, hasMax, string(r)))
		}
	}
	return slices.Compact(out)
}

func fitLength(s string, minLen, maxLen int, hasMax bool, pad string) string {
	if n := utf8.RuneCountInString(s); n < minLen {
		s += strings.Repeat(pad, minLen-n)
	}
	if hasMax && maxLen >= 0 {
		s = truncate(s, maxLen)
	}
	return s
}

// numberCandidates proposes numbers within the view's bounds: the value
// nearest 0 (or nearest variant) that satisfies minimum, exclusiveMinimum,
// maximum, exclusiveMaximum and multipleOf, then the bounds' midpoint.
// Arithmetic is exact (big.Rat) so that multipleOf 0.1 gives 0.3, not
// 0.30000000000000004.
func numberCandidates(view []part, integer bool, variant int) []any {
	b := numericBounds(view)
	step := func() *big.Rat {
		switch {
		case b.mult != nil:
			return b.mult
		case integer || b.lo == nil || b.hi == nil:
			return big.NewRat(1, 1)
		}
		half := new(big.Rat).Quo(new(big.Rat).Sub(b.hi, b.lo), big.NewRat(2, 1))
		if half.Cmp(big.NewRat(1, 1)) > 0 {
			return big.NewRat(1, 1)
		}
		return half
	}
	x := big.NewRat(int64(variant), 1)
	if b.lo != nil && (x.Cmp(b.lo) < 0 || b.loEx && x.Cmp(b.lo) == 0) {
		x.Set(b.lo)
		if b.loEx {
			x.Add(x, step())
		}
	}
	if integer {
		x = ceilRat(x)
	}
	if b.mult != nil && b.mult.Sign() > 0 {
		x = new(big.Rat).Mul(ceilRat(new(big.Rat).Quo(x, b.mult)), b.mult)
	}
	if b.hi != nil && (x.Cmp(b.hi) > 0 || b.hiEx && x.Cmp(b.hi) == 0) {
		x.Set(b.hi)
		if b.hiEx {
			x.Sub(x, step())
		}
		if integer {
			x = floorRat(x)
		}
		if b.mult != nil && b.mult.Sign() > 0 {
			x = new(big.Rat).Mul(floorRat(new(big.Rat).Quo(x, b.mult)), b.mult)
		}
	}
	out := []any{ratValue(x)}
	if !integer && b.mult == nil {
		// A non-integer, for oneOf [{type: number}, {type: integer}].
		half := new(big.Rat).Add(x, big.NewRat(1, 2))
		if b.hi == nil || half.Cmp(b.hi) < 0 {
			out = append(out, ratValue(half))
		}
	}
	if b.lo != nil && b.hi != nil {
		mid := new(big.Rat).Quo(new(big.Rat).Add(b.lo, b.hi), big.NewRat(2, 1))
		if integer {
			mid = floorRat(mid)
		}
		out = append(out, ratValue(mid))
	}
	return out
}

type bounds struct {
	lo, hi     *big.Rat
	loEx, hiEx bool
	mult       *big.Rat
}

// numericBounds takes the tightest bounds over the view's parts, in both
// the numeric (draft-06+) and boolean (draft-04) exclusive forms.
func numericBounds(view []part) bounds {
	var b bounds
	tighten := func(r *big.Rat, ex bool, lower bool) {
		if r == nil {
			return
		}
		cur := &b.hi
		curEx := &b.hiEx
		sign := -1
		if lower {
			cur, curEx, sign = &b.lo, &b.loEx, 1
		}
		if *cur == nil || r.Cmp(*cur)*sign > 0 || r.Cmp(*cur) == 0 && ex {
			*cur, *curEx = r, ex
		}
	}
	for _, p := range view {
		exMin, _ := p.m["exclusiveMinimum"].(bool)
		exMax, _ := p.m["exclusiveMaximum"].(bool)
		tighten(ratOf(p.m["minimum"]), exMin, true)
		tighten(ratOf(p.m["maximum"]), exMax, false)
		tighten(ratOf(p.m["exclusiveMinimum"]), true, true)
		tighten(ratOf(p.m["exclusiveMaximum"]), true, false)
		if m := ratOf(p.m["multipleOf"]); m != nil && b.mult == nil && m.Sign() > 0 {
			b.mult = m
		}
	}
	return b
}

// ratOf reads a schema number exactly; non-numbers and JSON numbers with
// absurd exponents (which math/big refuses) give nil.
func ratOf(v any) *big.Rat {
	var s string
	switch v := v.(type) {
	case json.Number:
		s = string(v)
	case float64:
		s = strconv.FormatFloat(v, 'g', -1, 64)
	case int, int64:
		s = fmt.Sprint(v)
	default:
		return nil
	}
	if !validNumber(s) {
		return nil
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil
	}
	return r
}

// ratValue converts back to a JSON number: float64 when that round-trips
// through its shortest decimal form, else an exact json.Number.
func ratValue(r *big.Rat) any {
	f, _ := r.Float64()
	if back, ok := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64)); ok && back.Cmp(r) == 0 {
		return f
	}
	if r.IsInt() {
		return json.Number(r.Num().String())
	}
	return json.Number(r.FloatString(20))
}

func floorRat(r *big.Rat) *big.Rat {
	q := new(big.Int).Div(r.Num(), r.Denom()) // Euclidean: floor for a positive divisor
	return new(big.Rat).SetInt(q)
}

func ceilRat(r *big.Rat) *big.Rat {
	neg := new(big.Rat).Neg(r)
	return new(big.Rat).Neg(floorRat(neg))
}

// firstKeyword returns the first value of kw in the view.
func firstKeyword(view []part, kw string) any {
	for _, p := range view {
		if v, ok := p.m[kw]; ok {
			return v
		}
	}
	return nil
}

// lowerBound is the largest of an integer keyword (minLength, minItems...)
// over the view, 0 when absent.
func lowerBound(view []part, kw string) int {
	n := 0
	for _, p := range view {
		if r := ratOf(p.m[kw]); r != nil && r.IsInt() && r.Num().IsInt64() {
			n = max(n, int(min(r.Num().Int64(), 1<<30)))
		}
	}
	return n
}

// upperBound is the smallest of an integer keyword (maxLength...) over the
// view, and whether there is one.
func upperBound(view []part, kw string) (int, bool) {
	n, ok := 0, false
	for _, p := range view {
		if r := ratOf(p.m[kw]); r != nil && r.IsInt() && r.Num().IsInt64() {
			v := int(max(min(r.Num().Int64(), 1<<30), -1))
			if !ok || v < n {
				n, ok = v, true
			}
		}
	}
	return n, ok
}
