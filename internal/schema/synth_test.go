package schema

import (
	"encoding/json"
	"fmt"
	"testing"
)

// Examples for schemas harder than the corpus's: each must validate, and
// where the minimal answer is obvious it must be that answer.
func TestExample(t *testing.T) {
	tests := []struct {
		name, schema, want string // want "" means: any valid value
	}{
		{"required only", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"number"}},"required":["a"]}`,
			`{"a":"string"}`},
		{"root examples", `{"type":"object","examples":[{"q":"cats"}],"properties":{"q":{"type":"string"}},"required":["q"]}`,
			`{"q":"cats"}`},
		{"root example invalid", `{"type":"object","examples":[{"q":1}],"properties":{"q":{"type":"string"}},"required":["q"]}`,
			`{"q":"string"}`},
		{"property examples and default", `{"type":"object","properties":{"q":{"type":"string","examples":["cats"]},
			"n":{"type":"integer","default":10}},"required":["q","n"]}`, `{"n":10,"q":"cats"}`},
		{"bad default", `{"type":"object","properties":{"n":{"type":"integer","minimum":1,"default":0}},"required":["n"]}`,
			`{"n":1}`},
		{"enum and const", `{"type":"object","properties":{"o":{"enum":["asc","desc"]},"k":{"const":"x"}},"required":["o","k"]}`,
			`{"k":"x","o":"asc"}`},
		{"formats", `{"type":"object","required":["a","b","c","d","e","f"],"properties":{
			"a":{"type":"string","format":"date-time"},"b":{"type":"string","format":"email"},
			"c":{"type":"string","format":"uuid"},"d":{"type":"string","format":"uri"},
			"e":{"type":"string","format":"date"},"f":{"type":"string","format":"ipv4"}}}`,
			`{"a":"2024-01-01T00:00:00Z","b":"user@example.com","c":"123e4567-e89b-42d3-a456-426614174000",` +
				`"d":"https://example.com","e":"2024-01-01","f":"192.0.2.1"}`},
		{"pattern", `{"type":"string","pattern":"^[A-Z]{3}-\\d{4}$"}`, `"AAA-0000"`},
		{"pattern and minLength", `{"type":"string","pattern":"^[0-9]+$","minLength":5}`, `"00000"`},
		{"ECMAScript pattern", `{"type":"string","pattern":"^(?!test)[a-z]+$"}`, `"string"`},
		{"minLength", `{"type":"string","minLength":8,"maxLength":8}`, `"stringxx"`},
		{"maxLength", `{"type":"string","maxLength":3}`, `"str"`},
		{"number bounds", `{"type":"number","exclusiveMinimum":0,"multipleOf":0.1}`, `0.1`},
		{"multipleOf in range", `{"type":"integer","minimum":10,"maximum":20,"multipleOf":7}`, `14`},
		{"exclusiveMaximum integer", `{"type":"integer","exclusiveMaximum":0}`, `-1`},
		{"draft-04 exclusiveMinimum", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"integer","minimum":5,"exclusiveMinimum":true}`, `6`},
		{"number between", `{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1}`, `0.5`},
		{"minItems", `{"type":"array","items":{"type":"number"},"minItems":2}`, `[0,0]`},
		{"uniqueItems strings", `{"type":"array","items":{"type":"string"},"minItems":3,"uniqueItems":true}`, `["string","string1","string2"]`},
		{"uniqueItems enum", `{"type":"array","items":{"enum":["a","b","c"]},"minItems":2,"uniqueItems":true}`, `["a","b"]`},
		{"uniqueItems numbers", `{"type":"array","items":{"type":"integer"},"minItems":2,"uniqueItems":true}`, `[0,1]`},
		{"prefixItems", `{"type":"array","prefixItems":[{"type":"string"},{"type":"number"}],"minItems":2}`, `["string",0]`},
		{"draft-07 tuple", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"array","items":[{"type":"boolean"},{"const":1}],"minItems":2}`,
			`[false,1]`},
		{"contains", `{"type":"array","contains":{"const":"x"}}`, `["x"]`},
		{"$ref", `{"$defs":{"s":{"type":"string","minLength":2}},"type":"object","properties":{"a":{"$ref":"#/$defs/s"}},"required":["a"]}`,
			`{"a":"string"}`},
		{"draft-07 definitions", `{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"n":{"type":"integer","minimum":3}},
			"type":"object","properties":{"a":{"$ref":"#/definitions/n"}},"required":["a"]}`, `{"a":3}`},
		{"$anchor", `{"$defs":{"s":{"$anchor":"str","type":"string","const":"hi"}},"type":"object","properties":{"a":{"$ref":"#str"}},"required":["a"]}`,
			`{"a":"hi"}`},
		{"recursive", `{"$defs":{"node":{"type":"object","properties":{"value":{"type":"string"},
			"children":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["value","children"]}},"$ref":"#/$defs/node"}`,
			`{"children":[],"value":"string"}`},
		{"recursive with minItems", `{"$defs":{"node":{"type":"object","properties":{"kids":{"type":"array","minItems":1,
			"items":{"$ref":"#/$defs/node"}}}}},"type":"object","properties":{"root":{"$ref":"#/$defs/node"}},"required":["root"]}`,
			`{"root":{}}`},
		{"allOf merged", `{"allOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},
			{"properties":{"b":{"type":"integer","minimum":5}},"required":["b"]}]}`, `{"a":"string","b":5}`},
		{"allOf same property", `{"type":"object","allOf":[{"properties":{"a":{"type":"string"}}},{"properties":{"a":{"minLength":7}}}],"required":["a"]}`,
			`{"a":"stringx"}`},
		{"anyOf first branch", `{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"type":"string"}]}`,
			`{"a":"string"}`},
		{"anyOf nullable prefers the value", `{"type":"object","properties":{"x":{"anyOf":[{"type":"null"},{"type":"integer"}]}},"required":["x"]}`,
			`{"x":0}`},
		{"oneOf needs exactly one", `{"oneOf":[{"type":"number"},{"type":"integer"}]}`, `0.5`},
		{"oneOf discriminated", `{"type":"object","properties":{"x":{"oneOf":[
			{"type":"object","properties":{"kind":{"const":"a"},"a":{"type":"string"}},"required":["kind","a"]},
			{"type":"object","properties":{"kind":{"const":"b"}},"required":["kind"]}]}},"required":["x"]}`,
			`{"x":{"a":"string","kind":"a"}}`},
		{"anyOf beside properties", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},
			"anyOf":[{"required":["a"]},{"required":["b"]}]}`, `{"a":"string"}`},
		{"dependentRequired", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"number"}},"required":["a"],"dependentRequired":{"a":["b"]}}`,
			`{"a":"string","b":0}`},
		{"minProperties", `{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"number"}},"minProperties":1}`, `{"a":0}`},
		{"minProperties invented", `{"type":"object","minProperties":2,"additionalProperties":{"type":"boolean"}}`, `{"key1":false,"key2":false}`},
		{"not", `{"type":"object","properties":{"x":{"not":{"type":"null"}}},"required":["x"]}`, `{"x":"string"}`},
		{"untyped property", `{"type":"object","properties":{"x":{"description":"anything"}},"required":["x"]}`, `{"x":null}`},
		{"type list", `{"type":["null","string"]}`, `"string"`},
		{"implied object", `{"properties":{"a":{"type":"boolean"}},"required":["a"]}`, `{"a":false}`},
		{"non-object root", `{"type":"array","items":{"type":"number"},"minItems":1}`, `[0]`},
		{"if then", `{"type":"object","properties":{"a":{"type":"string"}},"if":{"required":["a"]},"then":{"required":["b"]}}`, `{}`},
		{"true schema", `true`, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := mustCompile(t, tt.schema)
			ex := v.Example()
			b, _ := json.Marshal(ex)
			if viol := v.Validate(ex); viol != nil {
				t.Fatalf("example %s invalid: %s", b, viol.Message)
			}
			if tt.want != "" && string(b) != tt.want {
				t.Errorf("example %s, want %s", b, tt.want)
			}
		})
	}
}

// Schemas no value satisfies give nil, promptly.
func TestExampleImpossible(t *testing.T) {
	for _, s := range []string{
		`false`,
		`{"type":"string","minLength":3,"maxLength":2}`,
		`{"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}},"required":["next"]}},"$ref":"#/$defs/n"}`,
		`{"allOf":[{"type":"string"},{"type":"number"}]}`,
	} {
		if ex := mustCompile(t, s).Example(); ex != nil {
			t.Errorf("%s: example %v", s, ex)
		}
	}
}

// Example works on uncompiled schemas and returns fresh copies.
func TestExampleFunc(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}, "required": []any{"a"}}
	ex := Example(schema).(map[string]any)
	ex["a"] = "changed"
	if again := Example(schema).(map[string]any); again["a"] != "string" {
		t.Errorf("Example shares state: %v", again)
	}
	v, _ := Compile(schema)
	v.Example().(map[string]any)["a"] = "changed"
	if again := v.Example().(map[string]any); again["a"] != "string" {
		t.Errorf("Validator.Example shares state: %v", again)
	}
	// An invalid schema still gets a best guess for the error message.
	bad := map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string", "required": true}}, "required": []any{"a"}}
	if got, _ := json.Marshal(Example(bad)); string(got) != `{"a":"string"}` {
		t.Errorf("Example(invalid schema) = %s", got)
	}
}

// Twenty distinct $defs, each a union of objects leading to the next and
// the last impossible: validating a deep value costs 3^depth, so a naive
// generate-and-test would run for hours. The limits make it give up (a
// generator without them would hold the test until go test's -timeout).
func TestExampleGivesUpOnExponentialSchemas(t *testing.T) {
	defs := map[string]any{"n0": map[string]any{"type": "string", "minLength": 5.0, "maxLength": 2.0}}
	for d := 1; d <= 20; d++ {
		obj := map[string]any{"type": "object", "required": []any{"x"},
			"properties": map[string]any{"x": map[string]any{"$ref": fmt.Sprintf("#/$defs/n%d", d-1)}}}
		defs[fmt.Sprintf("n%d", d)] = map[string]any{"anyOf": []any{obj, obj, obj}}
	}
	v, err := Compile(map[string]any{"$defs": defs, "$ref": "#/$defs/n20"})
	if err != nil {
		t.Fatal(err)
	}
	if ex := v.Example(); ex != nil {
		t.Errorf("example %v for an impossible schema", ex)
	}
}
