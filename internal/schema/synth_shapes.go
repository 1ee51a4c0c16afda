package schema

import (
	"slices"
	"strconv"
)

// object builds an object with the required properties only (plus what
// dependentRequired and minProperties demand).
func (g *generator) object(view []part, depth int, refs []string) map[string]any {
	obj := map[string]any{}
	add := func(name string) {
		if _, ok := obj[name]; ok {
			return
		}
		sub, ptr := propertySchema(view, name)
		obj[name], _ = g.synth(sub, ptr, depth+1, refs)
	}
	for _, p := range view {
		for _, r := range stringList(p.m["required"]) {
			add(r)
		}
	}
	for range 8 { // dependentRequired may chain; 8 rounds is plenty
		before := len(obj)
		for _, p := range view {
			for _, kw := range []string{"dependentRequired", "dependencies"} {
				deps, _ := p.m[kw].(map[string]any)
				for _, key := range sortedKeys(deps) {
					if _, ok := obj[key]; ok {
						for _, d := range stringList(deps[key]) {
							add(d)
						}
					}
				}
			}
		}
		if len(obj) == before {
			break
		}
	}
	want := min(lowerBound(view, "minProperties"), maxItemsBuilt)
	for _, p := range view {
		props, _ := p.m["properties"].(map[string]any)
		for _, name := range sortedKeys(props) {
			if len(obj) < want {
				add(name)
			}
		}
	}
	// Still short: invent names, matching a patternProperties key if any.
	for i := 1; len(obj) < want && i <= want+len(obj); i++ {
		name := "key" + strconv.Itoa(i)
		if pat, ok := firstKeyword(view, "patternProperties").(map[string]any); ok && len(pat) > 0 {
			if s, ok := patternSample(sortedKeys(pat)[0], i); ok {
				name = s
			}
		}
		add(name)
	}
	return obj
}

// propertySchema finds the subschema for property name across the view:
// properties, then patternProperties, then additionalProperties.
func propertySchema(view []part, name string) (any, string) {
	var found []any
	var ptr string
	for _, p := range view {
		if props, ok := p.m["properties"].(map[string]any); ok {
			if sub, ok := props[name]; ok {
				found = append(found, sub)
				ptr = childPtr(p.ptr, "properties", name)
			}
		}
	}
	switch len(found) {
	case 1:
		return found[0], ptr
	case 0:
	default:
		// Several allOf members constrain it: satisfy them together.
		return map[string]any{"allOf": found}, noPtr
	}
	for _, p := range view {
		pats, _ := p.m["patternProperties"].(map[string]any)
		for _, pat := range sortedKeys(pats) {
			if re, err := compileRegexp(pat); err == nil && re.MatchString(name) {
				return pats[pat], childPtr(p.ptr, "patternProperties", pat)
			}
		}
	}
	for _, p := range view {
		if ap, ok := p.m["additionalProperties"]; ok {
			return ap, childPtr(p.ptr, "additionalProperties")
		}
	}
	return nil, noPtr
}

// array builds an array of minItems items (one, if contains needs it).
func (g *generator) array(view []part, depth int, refs []string) []any {
	n := min(lowerBound(view, "minItems"), maxItemsBuilt)
	var prefix []any
	var items any
	var itemsPtr string
	var contains any
	var containsPtr string
	for _, p := range view {
		if pi, ok := p.m["prefixItems"].([]any); ok && prefix == nil {
			prefix = pi
			itemsPtr = p.ptr // items of this part follow its prefixItems
		}
		switch it := p.m["items"].(type) {
		case []any: // draft 2019-09 and before: a tuple, then additionalItems
			if prefix == nil {
				prefix = it
				if ai, ok := p.m["additionalItems"]; ok && items == nil {
					items, itemsPtr = ai, childPtr(p.ptr, "additionalItems")
				}
			}
		case map[string]any, bool:
			if items == nil {
				items, itemsPtr = it, childPtr(p.ptr, "items")
			}
		}
		if c, ok := p.m["contains"]; ok && contains == nil {
			contains, containsPtr = c, childPtr(p.ptr, "contains")
		}
	}
	if contains != nil {
		n = max(n, 1)
	}
	prefixPtr := func(i int) string {
		for _, p := range view {
			if _, ok := p.m["prefixItems"].([]any); ok {
				return childPtr(p.ptr, "prefixItems", strconv.Itoa(i))
			}
			if _, ok := p.m["items"].([]any); ok {
				return childPtr(p.ptr, "items", strconv.Itoa(i))
			}
		}
		return noPtr
	}
	unique, _ := firstKeyword(view, "uniqueItems").(bool)
	arr := make([]any, 0, n)
	for i := range n {
		variant := 0
		if unique {
			variant = i
		}
		var val any
		switch {
		case i == 0 && contains != nil:
			val, _ = g.synthVariant(contains, containsPtr, depth+1, refs, variant)
		case i < len(prefix):
			val, _ = g.synthVariant(prefix[i], prefixPtr(i), depth+1, refs, variant)
		default:
			val, _ = g.synthVariant(items, itemsPtr, depth+1, refs, variant)
		}
		arr = append(arr, val)
	}
	return arr
}

// viewTypes lists the JSON types the view allows, most useful first:
// declared types common to all parts, or types implied by the keywords.
func viewTypes(view []part) []string {
	var allowed []string
	declared := false
	for _, p := range view {
		ts := typeList(p.m["type"])
		if ts == nil {
			continue
		}
		if !declared {
			allowed, declared = ts, true
			continue
		}
		allowed = slices.DeleteFunc(allowed, func(t string) bool {
			return !slices.Contains(ts, t) && !(t == "integer" && slices.Contains(ts, "number"))
		})
		if slices.Contains(ts, "integer") && slices.Contains(allowed, "number") {
			allowed = append(allowed, "integer")
		}
	}
	if !declared {
		allowed = impliedTypes(view)
	}
	order := []string{"object", "string", "integer", "number", "boolean", "array", "null", "any"}
	slices.SortStableFunc(allowed, func(a, b string) int {
		return slices.Index(order, a) - slices.Index(order, b)
	})
	return slices.Compact(allowed)
}

func typeList(t any) []string {
	switch t := t.(type) {
	case string:
		return []string{t}
	case []any:
		return stringList(t)
	}
	return nil
}

var keywordTypes = map[string]string{
	"properties": "object", "required": "object", "additionalProperties": "object",
	"patternProperties": "object", "minProperties": "object", "propertyNames": "object",
	"items": "array", "prefixItems": "array", "minItems": "array", "contains": "array",
	"minLength": "string", "maxLength": "string", "pattern": "string", "format": "string",
	"minimum": "number", "maximum": "number", "exclusiveMinimum": "number",
	"exclusiveMaximum": "number", "multipleOf": "number",
}

func impliedTypes(view []part) []string {
	var out []string
	for _, p := range view {
		for kw, t := range keywordTypes {
			if _, ok := p.m[kw]; ok && !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	if len(out) == 0 {
		return []string{"any"}
	}
	return out
}
