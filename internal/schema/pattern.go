package schema

import (
	"regexp/syntax"
	"strings"
	"unicode"
)

// Bounds for strings generated from patterns: anything longer is not a
// useful example, and huge repeat counts must not cost memory.
const (
	maxPatternRepeat = 256
	maxPatternOutput = 1024
)

// patternSample returns a short string matching pattern, or false when the
// pattern is not RE2 syntax (lookarounds) or cannot be satisfied simply.
// Optional and repeated parts appear grow times (at least their minimum),
// which lets callers lengthen the sample to meet minLength.
func patternSample(pattern string, grow int) (string, bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", false
	}
	var sb strings.Builder
	if !writeSample(&sb, re, grow) {
		return "", false
	}
	return sb.String(), true
}

func writeSample(sb *strings.Builder, re *syntax.Regexp, grow int) bool {
	if sb.Len() > maxPatternOutput {
		return false
	}
	switch re.Op {
	case syntax.OpNoMatch:
		return false
	case syntax.OpLiteral:
		sb.WriteString(string(re.Rune))
	case syntax.OpCharClass:
		r, ok := pickRune(re.Rune)
		if !ok {
			return false
		}
		sb.WriteRune(r)
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		sb.WriteByte('a')
	case syntax.OpCapture:
		return writeSample(sb, re.Sub[0], grow)
	case syntax.OpStar:
		return repeatSample(sb, re.Sub[0], grow, grow)
	case syntax.OpPlus:
		return repeatSample(sb, re.Sub[0], max(1, grow), grow)
	case syntax.OpQuest:
		return repeatSample(sb, re.Sub[0], min(1, grow), grow)
	case syntax.OpRepeat:
		n := max(re.Min, grow)
		if re.Max >= 0 {
			n = min(n, re.Max)
		}
		return repeatSample(sb, re.Sub[0], n, grow)
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if !writeSample(sb, sub, grow) {
				return false
			}
		}
	case syntax.OpAlternate:
		return writeSample(sb, re.Sub[0], grow)
	}
	// Empty matches, anchors and word boundaries produce nothing.
	return true
}

func repeatSample(sb *strings.Builder, re *syntax.Regexp, n, grow int) bool {
	if n > maxPatternRepeat {
		return false
	}
	for range n {
		if !writeSample(sb, re, grow) {
			return false
		}
	}
	return true
}

// pickRune chooses a readable member of a character class given as
// [lo, hi] pairs, preferring letters and digits.
func pickRune(ranges []rune) (rune, bool) {
	in := func(r rune) bool {
		for i := 0; i+1 < len(ranges); i += 2 {
			if ranges[i] <= r && r <= ranges[i+1] {
				return true
			}
		}
		return false
	}
	for _, r := range "aA0x_-. " {
		if in(r) {
			return r, true
		}
	}
	for i := 0; i+1 < len(ranges); i += 2 {
		for r := ranges[i]; r <= ranges[i+1] && r < ranges[i]+128; r++ {
			if unicode.IsPrint(r) {
				return r, true
			}
		}
	}
	if len(ranges) >= 2 {
		return ranges[0], true
	}
	return 0, false
}
