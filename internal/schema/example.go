package schema

import (
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Example returns a minimal payload that is valid against schema (same
// forms as Compile accepts), for SchemaValidationError.example, or nil when
// none could be found. Prefer Validator.Example when a Validator exists.
func Example(schema any) any {
	v, err := Compile(schema)
	if err == nil {
		return v.Example()
	}
	// An uncompilable schema cannot check its example; the best unchecked
	// guess still shows the model the shape of the input.
	doc, err := decodeSchema(schema)
	if err != nil {
		return nil
	}
	g := newGenerator(&Validator{doc: doc}, true, time.Now().Add(synthTimeLimit))
	ex, _ := g.synth(doc, "", 0, nil)
	return ex
}

// Example returns a minimal payload that is valid against the schema, or
// nil when none could be found. In order, it is the schema's first
// `examples` entry, its `default`, or a synthesised value in which each
// property again prefers its own examples and default; every candidate is
// checked against the compiled schema and the first valid one wins. The
// result is computed once and a fresh copy is returned on each call.
func (v *Validator) Example() any {
	v.exampleOnce.Do(func() {
		v.example = v.findExample()
	})
	return deepCopy(v.example)
}

func (v *Validator) findExample() any {
	if v.sch == nil {
		return map[string]any{} // §5.3.1: {} is always accepted
	}
	// Servers' own examples and defaults are sometimes wrong for the schema
	// they sit in; if they spoil the whole payload, try without them.
	deadline := time.Now().Add(synthTimeLimit)
	for _, hints := range []bool{true, false} {
		if time.Now().After(deadline) {
			break
		}
		g := newGenerator(v, hints, deadline)
		if ex, _ := g.synth(v.doc, "", 0, nil); v.valid(v.sch, ex) {
			return ex
		}
	}
	return nil
}

// valid checks a candidate against s, v's compiled schema or one of its
// subschemas, treating a panic in the validator, or a validation stopped
// for its work, as "no".
func (v *Validator) valid(s *jsonschema.Schema, x any) bool {
	err, exceeded, panicked := v.check(s, x)
	return err == nil && !exceeded && !panicked
}

func deepCopy(x any) any {
	switch x := x.(type) {
	case map[string]any:
		c := make(map[string]any, len(x))
		for k, e := range x {
			c[k] = deepCopy(e)
		}
		return c
	case []any:
		c := make([]any, len(x))
		for i, e := range x {
			c[i] = deepCopy(e)
		}
		return c
	}
	return x
}

// formatExamples are values for well-known string formats; they are valid
// for the library's format checks and for common stricter ones (Zod's).
var formatExamples = map[string]string{
	"date-time":             "2024-01-01T00:00:00Z",
	"date":                  "2024-01-01",
	"time":                  "00:00:00Z",
	"email":                 "user@example.com",
	"idn-email":             "user@example.com",
	"uri":                   "https://example.com",
	"url":                   "https://example.com",
	"iri":                   "https://example.com",
	"uri-reference":         "https://example.com",
	"iri-reference":         "https://example.com",
	"uri-template":          "https://example.com/{id}",
	"uuid":                  "123e4567-e89b-42d3-a456-426614174000",
	"hostname":              "example.com",
	"idn-hostname":          "example.com",
	"ipv4":                  "192.0.2.1",
	"ipv6":                  "2001:db8::1",
	"duration":              "PT1H",
	"json-pointer":          "/a",
	"relative-json-pointer": "0",
	"regex":                 "^.*$",
	"semver":                "1.0.0",
	"byte":                  "aGVsbG8=",
}
