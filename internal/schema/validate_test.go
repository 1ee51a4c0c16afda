package schema

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
)

// mustJSON decodes a JSON literal the way tool inputs arrive (float64).
func mustJSON(t testing.TB, s string) any {
	t.Helper()
	if s == "" {
		return nil
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad JSON %s: %v", s, err)
	}
	return v
}

func mustCompile(t testing.TB, schema string) *Validator {
	t.Helper()
	v, err := Compile(json.RawMessage(schema))
	if err != nil {
		t.Fatalf("Compile(%s): %v", schema, err)
	}
	return v
}

// One case per kind of message: each checks the path, expected and
// received parts, and the sentence that joins them.
func TestViolationMessages(t *testing.T) {
	person := `{"type":"object","properties":{
		"name":{"type":"string","minLength":2,"maxLength":5},
		"age":{"type":"integer","minimum":0,"maximum":150},
		"score":{"type":"number","exclusiveMinimum":0,"multipleOf":0.5},
		"order":{"enum":["asc","desc"]},
		"kind":{"const":"person"},
		"slug":{"type":"string","pattern":"^[a-z]+$"},
		"tags":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":2,"uniqueItems":true},
		"user":{"type":"object","properties":{"age":{"type":"number"}}},
		"when":{"type":"string","format":"date-time"},
		"site":{"type":"string","format":"uri"}
	},"required":["name"]}`
	closed := `{"type":"object","properties":{"a":{},"b":{},"userName":{}},"additionalProperties":false}`
	union := `{"type":"object","properties":{"x":{"oneOf":[
		{"type":"object","properties":{"kind":{"const":"a"},"a":{"type":"string"}},"required":["kind","a"]},
		{"type":"object","properties":{"kind":{"const":"b"},"b":{"type":"number"}},"required":["kind","b"]}
	]},"n":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`

	tests := []struct {
		name, schema, input      string
		path, expected, received string
		message                  string
	}{
		{"type", person, `{"name":"ab","user":{"age":"42"}}`,
			"/user/age", "number", `string "42"`, `input/user/age: expected number, received string "42"`},
		{"root type", person, `"hello"`,
			"", "object", `string "hello"`, `input: expected object, received string "hello"`},
		{"integer", person, `{"name":"ab","age":1.5}`,
			"/age", "integer", "number 1.5", ""},
		{"required", person, `{}`,
			"/name", `required property "name" (string)`, "nothing (the property is missing)",
			`input/name: expected required property "name" (string), received nothing (the property is missing)`},
		{"required when input absent", person, ``,
			"/name", `required property "name" (string)`, "nothing (the property is missing)", ""},
		{"enum", person, `{"name":"ab","order":"up"}`,
			"/order", `one of "asc", "desc"`, `string "up"`, ""},
		{"const", person, `{"name":"ab","kind":"robot"}`,
			"/kind", `"person"`, `string "robot"`, ""},
		{"pattern", person, `{"name":"ab","slug":"Hello World"}`,
			"/slug", "string matching ^[a-z]+$", `string "Hello World"`, ""},
		{"minimum", person, `{"name":"ab","age":-1}`,
			"/age", "number >= 0", "number -1", ""},
		{"maximum", person, `{"name":"ab","age":200}`,
			"/age", "number <= 150", "number 200", ""},
		{"exclusiveMinimum", person, `{"name":"ab","score":0}`,
			"/score", "number > 0", "number 0", ""},
		{"multipleOf", person, `{"name":"ab","score":0.7}`,
			"/score", "multiple of 0.5", "number 0.7", ""},
		{"minLength", person, `{"name":"a"}`,
			"/name", "string of at least 2 characters", `string "a" (1 character)`, ""},
		{"maxLength", person, `{"name":"abcdefg"}`,
			"/name", "string of at most 5 characters", `string "abcdefg" (7 characters)`, ""},
		{"minItems", person, `{"name":"ab","tags":[]}`,
			"/tags", "array with at least 1 item", "array with 0 items", ""},
		{"maxItems", person, `{"name":"ab","tags":["a","b","c"]}`,
			"/tags", "array with at most 2 items", "array with 3 items", ""},
		{"uniqueItems", person, `{"name":"ab","tags":["a","a"]}`,
			"/tags", "unique items (items 0 and 1 are equal)", "array with 2 items", ""},
		{"array index", person, `{"name":"ab","tags":["a",7]}`,
			"/tags/1", "string", "number 7", `input/tags/1: expected string, received number 7`},
		{"format asserted", person, `{"name":"ab","when":"yesterday"}`,
			"/when", "string in date-time format, e.g. 2024-01-01T00:00:00Z", `string "yesterday"`, ""},
		{"additionalProperties false", closed, `{"a":1,"foo":"x"}`,
			"/foo", `no property "foo" (allowed: a, b, userName)`, `string "x"`,
			`input/foo: expected no property "foo" (allowed: a, b, userName), received string "x"`},
		{"additionalProperties near miss", closed, `{"user_name":"x"}`,
			"/user_name", `no property "user_name" (allowed: a, b, userName; did you mean "userName"?)`, `string "x"`, ""},
		{"oneOf furthest branch", union, `{"x":{"kind":"b"}}`,
			"/x/b", `required property "b" (number)`, "nothing (the property is missing)", ""},
		{"oneOf furthest branch deep", union, `{"x":{"kind":"a","a":5}}`,
			"/x/a", "string", "number 5", ""},
		{"oneOf summary", union, `{"x":{"kind":"c"}}`,
			"/x/kind", `one of "a", "b"`, `string "c"`, ""},
		{"anyOf summary of types", union, `{"n":5}`,
			"/n", "string or null", "number 5", ""},
		{"additionalProperties with patternProperties", `{"properties":{"a":{}},"patternProperties":{"^x-":{}},"additionalProperties":false}`,
			`{"b":null}`, "/b", `no property "b" (allowed: a, names matching ^x-)`, "null", ""},
		{"no properties allowed", `{"type":"object","additionalProperties":false}`, `{"b":[1]}`,
			"/b", `no property "b" (no properties are allowed here)`, "array with 1 item", ""},
		{"false subschema", `{"properties":{"x":false}}`, `{"x":1}`,
			"/x", "nothing (no value is allowed here)", "number 1", ""},
		{"propertyNames", `{"propertyNames":{"pattern":"^[a-z]+$"}}`, `{"ok":1,"Bad":2}`,
			"/Bad", "property name matching ^[a-z]+$", `property "Bad"`, ""},
		{"dependentRequired", `{"dependentRequired":{"card":["cvc"]}}`, `{"card":"4242"}`,
			"/cvc", `required property "cvc" (required when "card" is present)`, "nothing (the property is missing)", ""},
		{"minProperties", `{"type":"object","minProperties":1}`, `{}`,
			"", "object with at least 1 property", "empty object", ""},
		{"not", `{"properties":{"x":{"not":{"type":"string"}}}}`, `{"x":"s"}`,
			"/x", `a value that does not match the "not" schema`, `string "s"`, ""},
		{"oneOf matches twice", `{"oneOf":[{"type":"number"},{"type":"integer"}]}`, `1`,
			"", "a value matching exactly one alternative (alternatives 0 and 1 both match)", "number 1", ""},
		{"valid with extra properties", person, `{"name":"ab","user":{"age":1,"x":true},"site":"not a uri"}`,
			"", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := mustCompile(t, tt.schema)
			viol := v.Validate(mustJSON(t, tt.input))
			if tt.path == "" && tt.expected == "" {
				if viol != nil {
					t.Fatalf("unexpected violation: %s", viol.Message)
				}
				return
			}
			if viol == nil {
				t.Fatal("no violation")
			}
			if viol.Path != tt.path || viol.Expected != tt.expected || viol.Received != tt.received {
				t.Errorf("got  path %q expected %q received %q\nwant path %q expected %q received %q",
					viol.Path, viol.Expected, viol.Received, tt.path, tt.expected, tt.received)
			}
			if tt.message != "" && viol.Message != tt.message {
				t.Errorf("message %q, want %q", viol.Message, tt.message)
			}
		})
	}
}

// Independent problems all reach the model: the deepest first, the rest in
// Others, in a stable order.
func TestViolationOthers(t *testing.T) {
	v := mustCompile(t, `{"type":"object","required":["a","b"],"additionalProperties":false,
		"properties":{"a":{"type":"string"},"b":{"type":"string"},"c":{"type":"object","properties":{"d":{"type":"number"}}}}}`)
	for range 20 { // map iteration order must not show
		viol := v.Validate(mustJSON(t, `{"c":{"d":"x"},"zz":1}`))
		if viol == nil {
			t.Fatal("no violation")
		}
		want := []string{
			`input/a: expected required property "a" (string), received nothing (the property is missing)`,
			`input/b: expected required property "b" (string), received nothing (the property is missing)`,
			`input/zz: expected no property "zz" (allowed: a, b, c), received number 1`,
		}
		if viol.Path != "/c/d" || !slices.Equal(viol.Others, want) {
			t.Fatalf("got %q, others %q", viol.Message, viol.Others)
		}
	}
}

// §5.3.1: with no inputSchema (or {}), no argument and {} are both fine.
func TestEmptySchema(t *testing.T) {
	for _, schema := range []any{nil, map[string]any{}, json.RawMessage(`{}`), json.RawMessage(``), json.RawMessage(`null`),
		map[string]any{"$schema": "https://json-schema.org/draft/2020-12/schema"}} {
		v, err := Compile(schema)
		if err != nil {
			t.Fatalf("Compile(%v): %v", schema, err)
		}
		for _, ok := range []any{nil, map[string]any{}, map[string]any{"x": 1.0}} {
			if viol := v.Validate(ok); viol != nil {
				t.Errorf("Compile(%v).Validate(%v): %s", schema, ok, viol.Message)
			}
		}
		if viol := v.Validate("x"); viol == nil || viol.Expected != "an object or no argument (the tool declares no input)" {
			t.Errorf("Compile(%v).Validate(\"x\"): %+v", schema, viol)
		}
		if ex := v.Example(); !isEmptyObject(ex) {
			t.Errorf("Compile(%v).Example() = %v", schema, ex)
		}
	}
}

func isEmptyObject(x any) bool {
	m, ok := x.(map[string]any)
	return ok && len(m) == 0
}

// Drafts come from $schema, 2020-12 when absent: in draft-07 "items" as an
// array is a tuple, in 2020-12 it is an error (prefixItems replaced it)...
// and $ref siblings are ignored in draft-07 but not in 2020-12.
func TestDrafts(t *testing.T) {
	refSibling := `"$defs":{"s":{"type":"string"}},"definitions":{"s":{"type":"string"}},"type":"object",
		"properties":{"x":{"$ref":"#/definitions/s","maxLength":1}}`
	input := mustJSON(t, `{"x":"long"}`)
	d7 := mustCompile(t, `{"$schema":"http://json-schema.org/draft-07/schema#",`+refSibling+`}`)
	if viol := d7.Validate(input); viol != nil {
		t.Errorf("draft-07 applied a $ref sibling: %s", viol.Message)
	}
	for _, s := range []string{`{` + refSibling + `}`, `{"$schema":"https://json-schema.org/draft/2020-12/schema",` + refSibling + `}`,
		`{"$schema":"https://json-schema.org/draft/2019-09/schema",` + refSibling + `}`} {
		if viol := mustCompile(t, s).Validate(input); viol == nil || viol.Path != "/x" {
			t.Errorf("%s: maxLength beside $ref not applied: %+v", s, viol)
		}
	}
	// An unknown $schema falls back to 2020-12 instead of failing the tool.
	v := mustCompile(t, `{"$schema":"http://json-schema.org/draft-2020-12/schema",`+refSibling+`}`)
	if viol := v.Validate(input); viol == nil {
		t.Error("unknown $schema: not validated as 2020-12")
	}
}

// Nothing outside the document is ever loaded: such $refs fail Compile.
func TestExternalRefsRefused(t *testing.T) {
	for _, ref := range []string{"https://example.com/schema.json", "other.json#/a", "file:///etc/passwd", "/etc/passwd"} {
		_, err := Compile(map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"$ref": ref}}})
		if err == nil {
			t.Errorf("$ref %q compiled", ref)
		}
	}
	if _, err := Compile(map[string]any{"$schema": "file:///etc/passwd", "$id": "https://x.invalid/a",
		"properties": map[string]any{"a": map[string]any{"$id": "https://x.invalid/b", "$schema": "file:///etc/passwd"}}}); err == nil {
		t.Error("nested $schema to a file compiled")
	}
}

func TestInvalidSchemas(t *testing.T) {
	for _, s := range []string{
		`{"type":"object","required":true}`,     // draft-03 style
		`{"type":"objekt"}`,                     // unknown type
		`{"properties":{"a":{"pattern":"(["}}}`, // no engine compiles it
		`{"$ref":"#/$defs/missing"}`,
		`[1,2]`,
		`{`,
	} {
		if _, err := Compile(json.RawMessage(s)); err == nil {
			t.Errorf("Compile(%s) succeeded", s)
		}
	}
}

// A $ref loop that consumes no input compiles but fails every input that
// reaches it. That is the schema's fault, not the input's: the input is let
// through (the upstream decides) instead of being blamed with the
// validator's internal wording.
func TestRefCycleLetsInputThrough(t *testing.T) {
	v, err := Compile(json.RawMessage(`{"type":"object","$defs":{"x":{"$ref":"#/$defs/y"},"y":{"$ref":"#/$defs/x"}},"properties":{"a":{"$ref":"#/$defs/x"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if viol := v.Validate(map[string]any{"a": 5.0}); viol != nil {
		t.Errorf("input blamed for the schema's cycle: %s", viol.Message)
	}
	if viol := v.Validate("not an object"); viol == nil {
		t.Error("an input wrong before the cycle is reached passed")
	}
}

// Numbers arrive as float64 (json.Unmarshal), json.Number (UseNumber) or
// Go integers; all validate alike, and hostile json.Numbers are refused
// instead of reaching math/big.
func TestNumberRepresentations(t *testing.T) {
	v := mustCompile(t, `{"type":"object","properties":{"n":{"type":"integer","minimum":1,"enum":[1,2,9007199254740993]}}}`)
	for _, n := range []any{1.0, json.Number("2"), 2, int64(1), json.Number("9007199254740993")} {
		if viol := v.Validate(map[string]any{"n": n}); viol != nil {
			t.Errorf("%T %v: %s", n, n, viol.Message)
		}
	}
	// 9007199254740992 is a different integer, though equal as float64.
	if viol := v.Validate(map[string]any{"n": json.Number("9007199254740992")}); viol == nil {
		t.Error("json.Number compared as float64")
	}
	for _, n := range []json.Number{"1e999999", "1e9999999", "abc", "", "1 ", "NaN"} {
		viol := v.Validate(map[string]any{"n": n})
		if viol == nil || viol.Path != "/n" {
			t.Errorf("json.Number %q: %+v", n, viol)
		}
	}
}

func TestUnsupportedGoValues(t *testing.T) {
	v := mustCompile(t, `{"type":"object","properties":{"a":{"type":"array"}}}`)
	viol := v.Validate(map[string]any{"a": []string{"x"}})
	if viol == nil || viol.Path != "/a" || viol.Received != "a Go []string, which is not a JSON value" {
		t.Errorf("got %+v", viol)
	}
}

// Patterns RE2 cannot compile (lookarounds) still validate, through the
// ECMAScript engine; one that backtracks past the timeout stops being
// checked rather than stalling every call (2^40 steps each: without the
// timeout, the test would hold until go test's -timeout).
func TestECMAScriptPatterns(t *testing.T) {
	v := mustCompile(t, `{"type":"object","properties":{"id":{"type":"string","pattern":"^(?!tmp-)[a-z-]+$"},
		"slow":{"type":"array","items":{"type":"string","pattern":"^(?=a)(a+)+$"}}}}`)
	if viol := v.Validate(mustJSON(t, `{"id":"prod-db"}`)); viol != nil {
		t.Errorf("valid id rejected: %s", viol.Message)
	}
	viol := v.Validate(mustJSON(t, `{"id":"tmp-db"}`))
	if viol == nil || viol.Expected != "string matching ^(?!tmp-)[a-z-]+$" {
		t.Errorf("lookahead not applied: %+v", viol)
	}
	evil := strings.Repeat("a", 40) + "b"
	if viol := v.Validate(map[string]any{"slow": []any{evil, evil, evil, evil, evil, evil, evil, evil}}); viol != nil {
		t.Errorf("timed-out pattern rejected the value: %s", viol.Message)
	}
}

// A format outside assertedFormats is an annotation: servers use "uri"
// for bare hosts and paths.
func TestFormatPolicy(t *testing.T) {
	for _, draft := range []string{`"$schema":"http://json-schema.org/draft-07/schema#",`, ``} {
		v := mustCompile(t, `{`+draft+`"type":"object","properties":{
			"u":{"type":"string","format":"uri"},"h":{"type":"string","format":"hostname"},
			"x":{"type":"string","format":"no-such-format"},"id":{"type":"string","format":"uuid"}}}`)
		if viol := v.Validate(mustJSON(t, `{"u":"example.com/a b","h":"my_host","x":"?"}`)); viol != nil {
			t.Errorf("%s loose format asserted: %s", draft, viol.Message)
		}
		if viol := v.Validate(mustJSON(t, `{"id":"42"}`)); viol == nil || viol.Path != "/id" {
			t.Errorf("%s uuid not asserted: %+v", draft, viol)
		}
	}
}

// Received stays short whatever the input: long strings, many keys, long
// keys, long numbers.
func TestReceivedIsShort(t *testing.T) {
	long := strings.Repeat("é", 500)
	keys := map[string]any{}
	for i := range 50 {
		keys[strings.Repeat("k", i*7)] = i
	}
	for _, v := range []any{long, keys, map[string]any{long: 1}, json.Number(strings.Repeat("9", 400)), []any{long}} {
		if got := describe(v); len([]rune(got)) > 100 {
			t.Errorf("describe: %d characters: %s", len([]rune(got)), got)
		}
	}
	if got := describe(long); got != `string "`+strings.Repeat("é", 48)+`"… (500 characters)` {
		t.Errorf("describe(long string) = %s", got)
	}
	if got := describe(map[string]any{"b": 1, "a": 2}); got != "object with keys a, b" {
		t.Errorf("describe(object) = %s", got)
	}
}

// A Validator is shared by every run of a catalog version: Validate and
// Example must be safe concurrently, including the lazy first use.
func TestConcurrentUse(t *testing.T) {
	v := mustCompile(t, `{"type":"object","additionalProperties":false,"required":["a"],
		"properties":{"a":{"type":"string","pattern":"^(?!x)"},"b":{"type":"integer"}}}`)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 50 {
				if viol := v.Validate(map[string]any{"b": "x", "c": i}); viol == nil || viol.Path != "/a" {
					t.Errorf("got %+v", viol)
				}
				if viol := v.Validate(v.Example()); viol != nil {
					t.Errorf("example invalid: %s", viol.Message)
				}
			}
		})
	}
	wg.Wait()
}

// Schemas built as Go values (not decoded JSON) work too.
func TestGoBuiltSchema(t *testing.T) {
	v, err := Compile(map[string]any{"type": "object", "required": []string{"a"},
		"properties": map[string]any{"a": map[string]any{"type": "integer", "maximum": 3}}})
	if err != nil {
		t.Fatal(err)
	}
	if viol := v.Validate(map[string]any{"a": 4}); viol == nil || viol.Expected != "number <= 3" {
		t.Errorf("got %+v", viol)
	}
	type schemaStruct struct {
		Type     string   `json:"type"`
		Required []string `json:"required"`
	}
	v, err = Compile(schemaStruct{Type: "object", Required: []string{"b"}})
	if err != nil {
		t.Fatal(err)
	}
	if viol := v.Validate(nil); viol == nil || viol.Path != "/b" {
		t.Errorf("got %+v", viol)
	}
}

// The backtracking patterns of one schema share one timeout: after one
// times out, the others count as matching without being run, so a schema
// full of catastrophic patterns costs one timeout, not one per pattern.
func TestBacktrackingPatternsShareATimeout(t *testing.T) {
	engine := regexpEngine()
	slow, err := engine(`^(?=a)(a+)+$`) // a lookahead: not RE2, so backtracking
	if err != nil {
		t.Fatal(err)
	}
	other, err := engine(`^(?=x)x$`)
	if err != nil {
		t.Fatal(err)
	}
	if other.MatchString("y") {
		t.Fatal("a pattern matched a string it does not match before any timeout")
	}
	if !slow.MatchString(strings.Repeat("a", 40) + "b") {
		t.Fatal("a timed-out match must count as matching")
	}
	if !other.MatchString("y") {
		t.Fatal("after a timeout, the schema's other backtracking patterns must count as matching")
	}
	// Another schema has its own.
	fresh, _ := regexpEngine()(`^(?=x)x$`)
	if fresh.MatchString("y") {
		t.Fatal("a timeout leaked into another schema")
	}
}
