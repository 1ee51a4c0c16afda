package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits that keep Received and Expected short enough to read at a glance
// (about 80 characters) while still showing what matters.
const (
	maxStringShown   = 48  // characters of a received string
	maxKeysShown     = 40  // characters of a received object's key list
	maxExpectedShown = 240 // characters of an expected list: all the choices help
)

// describe renders a received value: its JSON type and a short form of it.
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean " + strconv.FormatBool(v)
	case string:
		n := utf8.RuneCountInString(v)
		if n <= maxStringShown {
			return "string " + strconv.Quote(v)
		}
		return fmt.Sprintf("string %s… (%d characters)", strconv.Quote(truncate(v, maxStringShown)), n)
	case json.Number:
		return "number " + truncate(string(v), maxStringShown)
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Sprintf("%v (not a JSON number)", v)
		}
		return "number " + strconv.FormatFloat(v, 'g', -1, 64)
	case float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return fmt.Sprintf("number %v", v)
	case []any:
		return "array with " + plural(len(v), "item")
	case map[string]any:
		if len(v) == 0 {
			return "empty object"
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, truncate(k, maxKeysShown))
		}
		slices.Sort(keys)
		return "object with " + pluralWord(len(keys), "key") + " " + list(keys, maxKeysShown)
	}
	return fmt.Sprintf("a Go %T, which is not a JSON value", v)
}

// display renders a schema value (enum member, const) as compact JSON.
func display(v any) string {
	if f, ok := v.(float64); ok && !math.IsNaN(f) && !math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return truncate(strings.TrimSpace(buf.String()), maxStringShown)
}

// oneOfValues renders enum members: `"asc"` or `one of "asc", "desc"`.
func oneOfValues(vals []any) string {
	if len(vals) == 1 {
		return display(vals[0])
	}
	shown := make([]string, len(vals))
	for i, v := range vals {
		shown[i] = display(v)
	}
	return "one of " + list(shown, maxExpectedShown)
}

// list joins items with ", " until about budget characters, then says how
// many there are in total.
func list(items []string, budget int) string {
	var sb strings.Builder
	for i, it := range items {
		if i > 0 && sb.Len()+len(it) > budget {
			fmt.Fprintf(&sb, ", … (%d in total)", len(items))
			return sb.String()
		}
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(it)
	}
	return sb.String()
}

// rat renders a number keyword's value: exact for integers, else float.
func rat(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func plural(n int, word string) string {
	return strconv.Itoa(n) + " " + pluralWord(n, word)
}

func pluralWord(n int, word string) string {
	if n == 1 {
		return word
	}
	if strings.HasSuffix(word, "y") && !strings.HasSuffix(word, "ey") {
		return word[:len(word)-1] + "ies" // property → properties, key → keys
	}
	return word + "s"
}

// truncate cuts s to at most n runes.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n])
}
