package schema

import (
	"net/url"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaAt returns the compiled subschema at an absolute schema location
// (ValidationError.SchemaURL), or nil. The index is built on first use:
// most validators never see a failing input, so compiling stays cheap.
func (v *Validator) schemaAt(location string) *jsonschema.Schema {
	if v == nil || v.sch == nil {
		return nil
	}
	v.indexOnce.Do(func() {
		v.index = map[string]*jsonschema.Schema{}
		indexSchema(v.sch, v.index)
	})
	return v.index[location]
}

// schemaAtPointer returns the compiled subschema at a JSON Pointer into the
// schema document (only for subschemas not under a nested $id).
func (v *Validator) schemaAtPointer(ptr string) *jsonschema.Schema {
	return v.schemaAt(rootURL + "#" + encodeFragment(ptr))
}

// encodeFragment percent-encodes a JSON Pointer the way the library writes
// Schema.Location, so locations can be computed from pointers.
func encodeFragment(ptr string) string {
	toks := strings.Split(ptr, "/")
	for i, t := range toks {
		toks[i] = url.PathEscape(t)
	}
	return strings.Join(toks, "/")
}

// indexSchema records s and every schema reachable from it by Location.
func indexSchema(s *jsonschema.Schema, idx map[string]*jsonschema.Schema) {
	if s == nil {
		return
	}
	if _, seen := idx[s.Location]; seen {
		return
	}
	idx[s.Location] = s
	for _, c := range children(s) {
		indexSchema(c, idx)
	}
}

// children lists every subschema field of s.
func children(s *jsonschema.Schema) []*jsonschema.Schema {
	out := []*jsonschema.Schema{
		s.Ref, s.RecursiveRef, s.Not, s.If, s.Then, s.Else, s.PropertyNames,
		s.UnevaluatedProperties, s.Contains, s.Items2020, s.UnevaluatedItems, s.ContentSchema,
	}
	if s.DynamicRef != nil {
		out = append(out, s.DynamicRef.Ref)
	}
	out = append(out, s.AllOf...)
	out = append(out, s.AnyOf...)
	out = append(out, s.OneOf...)
	out = append(out, s.PrefixItems...)
	for _, c := range s.Properties {
		out = append(out, c)
	}
	for _, c := range s.PatternProperties {
		out = append(out, c)
	}
	for _, c := range s.DependentSchemas {
		out = append(out, c)
	}
	for _, d := range s.Dependencies {
		if c, ok := d.(*jsonschema.Schema); ok {
			out = append(out, c)
		}
	}
	for _, x := range []any{s.AdditionalProperties, s.Items, s.AdditionalItems} {
		switch x := x.(type) {
		case *jsonschema.Schema:
			out = append(out, x)
		case []*jsonschema.Schema:
			out = append(out, x...)
		}
	}
	return out
}
