package schema

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzValidate feeds arbitrary schema and input JSON through Compile,
// Validate and Example: none may panic, a Violation must be well formed,
// and an example must validate.
//
//	go test ./internal/schema -run '^$' -fuzz FuzzValidate -fuzztime 1m
func FuzzValidate(f *testing.F) {
	seeds := [][2]string{
		{`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, `{"a":1}`},
		{`{"type":"object","additionalProperties":false,"properties":{"a":{}}}`, `{"b":[1,2,{"c":null}]}`},
		{`{"oneOf":[{"type":"string"},{"type":"object","properties":{"k":{"const":1}},"required":["k"]}]}`, `{"k":2}`},
		{`{"anyOf":[{"$ref":"#/$defs/a"},{"type":"null"}],"$defs":{"a":{"type":"array","items":{"$ref":"#/$defs/a"},"minItems":1}}}`, `[[[]]]`},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"x":{"pattern":"^(?!a)\\w+$"}},"properties":{"p":{"$ref":"#/definitions/x"}}}`, `{"p":"abc"}`},
		{`{"type":"number","multipleOf":0.01,"exclusiveMaximum":1e308}`, `1e308`},
		{`{"properties":{"n":{"type":"integer","minimum":1e400}}}`, `{"n":1e999}`},
		{`{"type":"array","prefixItems":[{"const":[1,{"a":2}]}],"contains":{"enum":[1,"x",null]},"uniqueItems":true,"minItems":3}`, `[1,1]`},
		{`{"propertyNames":{"pattern":"^[a-z]+$","maxLength":3},"minProperties":2,"patternProperties":{"^x":{"type":"boolean"}}}`, `{"Abcd":1}`},
		{`{"dependentRequired":{"a":["b"]},"dependentSchemas":{"b":{"required":["c"]}},"if":{"required":["a"]},"then":{"not":{}}}`, `{"a":1}`},
		{`{"$ref":"https://example.com/x"}`, `{}`},
		{`true`, `"x"`},
		{`{}`, ``},
	}
	for _, tool := range loadCorpus(f)[:40] {
		b, _ := json.Marshal(tool.schema)
		seeds = append(seeds, [2]string{string(b), `{"x":1}`})
	}
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, schema, input string) {
		v, err := Compile(json.RawMessage(schema))
		if err != nil {
			Example(json.RawMessage(schema)) // must not panic either
			return
		}
		for _, useNumber := range []bool{false, true} {
			in, ok := decodeInput(input, useNumber)
			if !ok {
				continue
			}
			if viol := v.Validate(in); viol != nil {
				if viol.Message == "" || viol.Expected == "" || viol.Received == "" ||
					viol.Path != "" && !strings.HasPrefix(viol.Path, "/") {
					t.Fatalf("malformed violation %+v", viol)
				}
			}
		}
		if ex := v.Example(); ex != nil && v.sch != nil && !v.valid(v.sch, ex) {
			b, _ := json.Marshal(ex)
			t.Fatalf("example %s does not validate", b)
		}
	})
}

func decodeInput(s string, useNumber bool) (any, bool) {
	if s == "" {
		return nil, true
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	if useNumber {
		dec.UseNumber()
	}
	var v any
	if dec.Decode(&v) != nil {
		return nil, false
	}
	return v, true
}
