package schema

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// printer renders the library's own message for kinds explained nowhere
// else (vocabulary extensions, $ref cycles).
var printer = message.NewPrinter(language.English)

// leaves explains one concrete failure; some kinds (required,
// additionalProperties) name several properties and give a leaf each.
func (v *Validator) leaves(e *jsonschema.ValidationError, input any) []leaf {
	path := e.InstanceLocation
	val := lookup(input, path)
	one := func(expected, received string) []leaf {
		return []leaf{{path: path, expected: expected, received: received}}
	}
	got := describe(val)
	switch k := e.ErrorKind.(type) {
	case *kind.Type:
		return []leaf{{path: path, expected: strings.Join(k.Want, " or "), received: got, alts: k.Want}}
	case *kind.Enum:
		return []leaf{{path: path, expected: oneOfValues(k.Want), received: got, alts: displayAll(k.Want), values: true}}
	case *kind.Const:
		return []leaf{{path: path, expected: display(k.Want), received: got, alts: []string{display(k.Want)}, values: true}}
	case *kind.Required:
		return v.missing(e, k.Missing, "")
	case *kind.DependentRequired:
		return v.missing(e, k.Missing, fmt.Sprintf(" (required when %q is present)", k.Prop))
	case *kind.Dependency:
		return v.missing(e, k.Missing, fmt.Sprintf(" (required when %q is present)", k.Prop))
	case *kind.AdditionalProperties:
		return v.unknownProperties(e, k.Properties, input)
	case *kind.Format:
		return one("string in "+k.Want+" format"+formatHint(k.Want), got)
	case *kind.Pattern:
		return one("string matching "+k.Want, got)
	case *kind.MinLength:
		return one("string of at least "+plural(k.Want, "character"), withCount(got, k.Got, "character"))
	case *kind.MaxLength:
		return one("string of at most "+plural(k.Want, "character"), withCount(got, k.Got, "character"))
	case *kind.MinItems:
		return one("array with at least "+plural(k.Want, "item"), got)
	case *kind.MaxItems:
		return one("array with at most "+plural(k.Want, "item"), got)
	case *kind.AdditionalItems:
		return one("array with at most "+plural(arrayLen(val)-k.Count, "item"), got)
	case *kind.UniqueItems:
		return one(fmt.Sprintf("unique items (items %d and %d are equal)", k.Duplicates[0], k.Duplicates[1]), got)
	case *kind.MinProperties:
		return one("object with at least "+plural(k.Want, "property"), got)
	case *kind.MaxProperties:
		return one("object with at most "+plural(k.Want, "property"), got)
	case *kind.Minimum:
		return one("number >= "+rat(k.Want), got)
	case *kind.Maximum:
		return one("number <= "+rat(k.Want), got)
	case *kind.ExclusiveMinimum:
		return one("number > "+rat(k.Want), got)
	case *kind.ExclusiveMaximum:
		return one("number < "+rat(k.Want), got)
	case *kind.MultipleOf:
		return one("multiple of "+rat(k.Want), got)
	case *kind.Contains:
		return one(`array with at least one item matching the "contains" schema`, got)
	case *kind.MinContains:
		return one(fmt.Sprintf(`array with at least %s matching the "contains" schema`, plural(k.Want, "item")), got)
	case *kind.MaxContains:
		return one(fmt.Sprintf(`array with at most %s matching the "contains" schema`, plural(k.Want, "item")), got)
	case *kind.PropertyNames:
		return v.badPropertyName(e, k.Property, input)
	case *kind.OneOf:
		return one(fmt.Sprintf("a value matching exactly one alternative (alternatives %d and %d both match)",
			k.Subschemas[0], k.Subschemas[1]), got)
	case *kind.FalseSchema:
		if len(path) > 0 {
			return one("nothing (no value is allowed here)", got)
		}
		return one("nothing (the schema accepts no input)", got)
	case *kind.Not:
		return one(`a value that does not match the "not" schema`, got)
	case *kind.InvalidJsonValue:
		return one("a JSON value", got)
	}
	return one(e.ErrorKind.LocalizedString(printer), got)
}

// missing gives one leaf per missing property, pointing at the property.
func (v *Validator) missing(e *jsonschema.ValidationError, names []string, why string) []leaf {
	props := v.schemaAt(e.SchemaURL)
	out := make([]leaf, 0, len(names))
	for _, name := range names {
		expected := fmt.Sprintf("required property %q", name) + why
		if props != nil {
			if brief := briefType(props.Properties[name]); brief != "" {
				expected += " (" + brief + ")"
			}
		}
		out = append(out, leaf{
			path:     append(slices.Clip(e.InstanceLocation), name),
			expected: expected,
			received: "nothing (the property is missing)",
		})
	}
	return out
}

// unknownProperties gives one leaf per property additionalProperties:false
// rejects, listing what is allowed and suggesting a near miss.
func (v *Validator) unknownProperties(e *jsonschema.ValidationError, names []string, input any) []leaf {
	var allowed []string
	if s := v.schemaAt(e.SchemaURL); s != nil {
		for name := range s.Properties {
			allowed = append(allowed, name)
		}
		slices.Sort(allowed)
		var patterns []string
		for re := range s.PatternProperties {
			patterns = append(patterns, "names matching "+re.String())
		}
		slices.Sort(patterns)
		allowed = append(allowed, patterns...)
	}
	var out []leaf
	for _, name := range names {
		expected := fmt.Sprintf("no property %q", name)
		switch {
		case len(allowed) == 0:
			expected += " (no properties are allowed here)"
		default:
			expected += " (allowed: " + list(allowed, maxExpectedShown)
			if near := nearMiss(name, allowed); near != "" {
				expected += fmt.Sprintf("; did you mean %q?", near)
			}
			expected += ")"
		}
		path := append(slices.Clip(e.InstanceLocation), name)
		out = append(out, leaf{path: path, expected: expected, received: describe(lookup(input, path))})
	}
	return out
}

// nearMiss finds an allowed name equal to name but for case, '_' and '-'
// (userName vs user_name), the commonest way models get a property wrong.
func nearMiss(name string, allowed []string) string {
	n := normName(name)
	for _, a := range allowed {
		if normName(a) == n {
			return a
		}
	}
	return ""
}

var separators = strings.NewReplacer("_", "", "-", "")

func normName(s string) string { return strings.ToLower(separators.Replace(s)) }

// badPropertyName explains a propertyNames failure at the offending
// property, using the failure of the name itself for the expectation.
func (v *Validator) badPropertyName(e *jsonschema.ValidationError, name string, input any) []leaf {
	expected := `property name matching the "propertyNames" schema`
	var inner []leaf
	for _, c := range e.Causes {
		inner = append(inner, v.collect(c, name)...)
	}
	if len(inner) > 0 {
		expected = "property name that is a " + inner[0].expected
		if rest, ok := strings.CutPrefix(inner[0].expected, "string "); ok {
			expected = "property name " + rest
		}
	}
	path := append(slices.Clip(e.InstanceLocation), name)
	return []leaf{{path: path, expected: expected, received: fmt.Sprintf("property %q", truncate(name, maxStringShown))}}
}

// briefType summarises a property's schema for "required property" hints.
func briefType(s *jsonschema.Schema) string {
	for i := 0; s != nil && s.Ref != nil && i < 8 && s.Types == nil && s.Enum == nil && s.Const == nil; i++ {
		s = s.Ref
	}
	switch {
	case s == nil:
		return ""
	case s.Const != nil:
		return display(*s.Const)
	case s.Enum != nil:
		return oneOfValues(s.Enum.Values)
	case s.Types != nil:
		return strings.Join(s.Types.ToStrings(), " or ")
	}
	return ""
}

func formatHint(format string) string {
	if ex, ok := formatExamples[format]; ok {
		return ", e.g. " + ex
	}
	return ""
}

func withCount(got string, n int, unit string) string {
	if strings.Contains(got, "characters)") {
		return got
	}
	return got + " (" + plural(n, unit) + ")"
}

func displayAll(vals []any) []string {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = display(v)
	}
	return out
}

func arrayLen(v any) int {
	a, _ := v.([]any)
	return len(a)
}

// lookup returns the value at path in v, or nil.
func lookup(v any, path []string) any {
	for _, tok := range path {
		switch c := v.(type) {
		case map[string]any:
			v = c[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			v = c[i]
		default:
			return nil
		}
	}
	return v
}
