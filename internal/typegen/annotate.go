package typegen

import (
	"strings"
	"unicode/utf8"
)

// This file turns the annotation keywords of a schema (description, default,
// format, examples, constraints) into doc comment content. Tags repeat only
// what the TypeScript type cannot say: there is no "@type string".

// constraintKeys are the validation keywords shown as tags, in this order.
var constraintKeys = []string{
	"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "multipleOf",
	"minLength", "maxLength", "pattern", "minItems", "maxItems", "uniqueItems",
	"minProperties", "maxProperties", "contentEncoding", "contentMediaType",
}

// maxTagValue bounds the JSON text of a default or example in a doc comment.
const maxTagValue = 100

// docOf builds the doc comment for schema s used as property name (or as a
// named type when name is ""). A schema that only refers to an inlined target
// borrows the target's description and tags; a named target carries its own.
func (c *conv) docOf(s *value, name string) docInfo {
	var d docInfo
	if s == nil || s.kind != kObject {
		return d
	}
	if !c.g.opts.OmitDescriptions {
		if desc, ok := s.str("description"); ok && !sameWords(desc, name) {
			d.text = desc
		} else if title, ok := s.str("title"); ok && !sameWords(title, name) {
			d.text = title
		}
	}
	if v := s.get("default"); v != nil {
		d.tags = append(d.tags, "@default "+clip(jsonText(v)))
	}
	if f, ok := s.str("format"); ok {
		d.tags = append(d.tags, "@format "+docLine(f))
	}
	if !c.g.opts.OmitDescriptions {
		if ex := s.get("examples"); ex != nil && ex.kind == kArray {
			for i, e := range ex.arr {
				if i == 3 {
					break
				}
				d.tags = append(d.tags, "@example "+clip(jsonText(e)))
			}
		} else if ex := s.get("example"); ex != nil {
			d.tags = append(d.tags, "@example "+clip(jsonText(ex)))
		}
	}
	tuple := s.has("prefixItems") || s.get("items") != nil && s.get("items").kind == kArray
	for _, k := range constraintKeys {
		v := s.get(k)
		if v == nil || tuple && (k == "minItems" || k == "maxItems") {
			continue
		}
		switch v.kind {
		case kNumber:
			d.tags = append(d.tags, "@"+k+" "+v.s)
		case kString:
			d.tags = append(d.tags, "@"+k+" "+docLine(v.s))
		case kBool:
			if v.b {
				d.tags = append(d.tags, "@"+k)
			}
		}
	}
	if s.isTrue("deprecated") {
		d.tags = append(d.tags, "@deprecated")
	}
	if ref, ok := refOf(s); ok {
		if t, _, err := c.d.resolve(ref, s); err == nil {
			if tg := c.targets[t]; tg != nil && tg.t != nil && tg.t.kind != tRef {
				d = mergeDoc(d, c.docOf(t, name))
			}
		}
	}
	return d
}

// mergeDoc completes d with what extra says and d does not.
func mergeDoc(d, extra docInfo) docInfo {
	if d.text == "" {
		d.text = extra.text
	}
	have := map[string]bool{}
	for _, t := range d.tags {
		have[tagName(t)] = true
	}
	for _, t := range extra.tags {
		if !have[tagName(t)] {
			d.tags = append(d.tags, t)
		}
	}
	return d
}

func tagName(t string) string {
	if i := strings.IndexByte(t, ' '); i >= 0 {
		return t[:i]
	}
	return t
}

// clip shortens a long JSON text for a doc comment and cleans it.
func clip(s string) string {
	s = docLine(s)
	if utf8.RuneCountInString(s) <= maxTagValue {
		return s
	}
	r := []rune(s)
	return string(r[:maxTagValue]) + "…"
}

// sameWords reports whether a title or description only restates a name
// ("Max Results" for max_results, which pydantic emits for every field;
// "Parameter name" for Parameter1.Name): the same letters, ignoring case,
// digits and punctuation.
func sameWords(text, name string) bool {
	norm := func(s string) string {
		var b strings.Builder
		for _, r := range strings.ToLower(s) {
			if r >= 'a' && r <= 'z' {
				b.WriteRune(r)
			}
		}
		return b.String()
	}
	n := norm(name)
	return n != "" && norm(text) == n
}

// pascal turns a name into a PascalCase ASCII identifier ("tree_node" →
// "TreeNode"), or "" if nothing usable is left.
func pascal(s string) string {
	var b strings.Builder
	up := true
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z':
			if up {
				r -= 'a' - 'A'
			}
			b.WriteRune(r)
			up = false
		case r >= 'A' && r <= 'Z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			up = false
		default:
			up = true
		}
	}
	out := b.String()
	if out != "" && out[0] >= '0' && out[0] <= '9' {
		out = "T" + out
	}
	return out
}
