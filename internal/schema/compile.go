package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// rootURL names the schema document being compiled. It is never fetched;
// it only gives relative $refs a base. The .invalid TLD cannot resolve.
const rootURL = "https://codemode.invalid/input-schema.json"

// Validator checks inputs against one compiled inputSchema. It is safe for
// concurrent use and immutable after Compile.
type Validator struct {
	sch *jsonschema.Schema // nil: empty or absent schema
	doc any                // the decoded schema, for examples and messages

	indexOnce sync.Once
	index     map[string]*jsonschema.Schema // Location → schema, built on the first violation

	exampleOnce sync.Once
	example     any
}

// Compile compiles a tool's inputSchema. schema may be nil (absent), a
// decoded JSON value (map[string]any as the MCP Go SDK gives it, or bool),
// json.RawMessage / []byte, or any other value that marshals to JSON.
// A decoded schema must not be modified afterwards: the Validator keeps it.
//
// An error means the schema itself is unusable (invalid against its
// metaschema, a $ref to another document, a pattern no regexp engine
// accepts); callers should log it and call the tool without validation.
func Compile(schema any) (v *Validator, err error) {
	doc, err := decodeSchema(schema)
	if err != nil {
		return nil, err
	}
	if isEmptySchema(doc) {
		return &Validator{doc: doc}, nil
	}
	// The compiler has one known panic ("baseres is nil") and is third-party
	// code walking untrusted input: a bad schema must cost one tool its
	// validation, never the process.
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("schema: compiling inputSchema: internal error: %v", r)
		}
	}()
	c := newCompiler()
	if err := c.AddResource(rootURL, withKnownDraft(doc)); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	sch, err := c.Compile(rootURL)
	if err != nil {
		return nil, fmt.Errorf("schema: invalid inputSchema: %w", err)
	}
	return &Validator{sch: sch, doc: doc}, nil
}

func newCompiler() *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020) // MCP: no $schema means 2020-12
	c.UseLoader(noLoader{})
	c.UseRegexpEngine(regexpEngine())
	// Assert the same formats for every draft (the library would assert all
	// of them for draft-07 and none for 2020-12), then switch off the ones
	// servers use loosely.
	c.AssertFormat()
	for _, f := range annotationOnlyFormats {
		c.RegisterFormat(&jsonschema.Format{Name: f, Validate: func(any) error { return nil }})
	}
	return c
}

// assertedFormats are checked: their syntax is unambiguous, a value that
// fails the check is near-certainly wrong, and the message (with an example
// value) tells the model exactly how to fix it.
var assertedFormats = []string{"date-time", "date", "time", "uuid", "email", "ipv4", "ipv6"}

// annotationOnlyFormats are the library's other built-in formats. Servers
// declare "uri" for bare hosts and file paths, "hostname" for names with
// underscores, and so on; rejecting those would block calls the upstream
// accepts. Formats the library does not know are never asserted.
var annotationOnlyFormats = []string{
	"uri", "iri", "uri-reference", "iri-reference", "uri-template",
	"hostname", "json-pointer", "relative-json-pointer", "duration", "period", "semver",
}

// noLoader refuses every external document: a $ref or $schema that points
// outside the inputSchema is a compile error, never a network or disk read.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, errors.New("external references are not supported (only $refs within the inputSchema)")
}

// decodeSchema turns the accepted schema representations into a decoded
// JSON value with json.Number numbers (nil for an absent schema).
func decodeSchema(schema any) (any, error) {
	switch s := schema.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		if s == nil {
			return nil, nil
		}
		if plainJSON(s) {
			return s, nil
		}
		// Built in Go (e.g. "required": []string{...}): the library only
		// understands decoded JSON, so decode it again.
	case bool:
		return s, nil
	case json.RawMessage:
		return decodeJSON(s)
	case []byte:
		return decodeJSON(s)
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("schema: inputSchema is not JSON: %w", err)
	}
	return decodeJSON(b)
}

// Keyword returns the value of a top-level keyword of a tool schema as the
// SDK or an upstream hands it over (a Go map, or the JSON itself), or nil
// when the schema has no such keyword or is not an object.
func Keyword(schema any, name string) any {
	doc, err := decodeSchema(schema)
	m, _ := doc.(map[string]any)
	if err != nil || m == nil {
		return nil
	}
	return m[name]
}

// plainJSON reports whether v holds only the types json.Unmarshal produces.
func plainJSON(v any) bool {
	switch v := v.(type) {
	case nil, bool, string, float64, json.Number:
		return true
	case map[string]any:
		for _, e := range v {
			if !plainJSON(e) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range v {
			if !plainJSON(e) {
				return false
			}
		}
		return true
	}
	return false
}

func decodeJSON(b []byte) (any, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("schema: inputSchema is not JSON: %w", err)
	}
	return doc, nil
}

// isEmptySchema reports whether doc declares nothing about the input: §5.3.1
// then asks for "no argument or {}", which Validate implements itself.
func isEmptySchema(doc any) bool {
	switch d := doc.(type) {
	case nil:
		return true
	case map[string]any:
		for k := range d {
			switch k {
			case "$schema", "$id", "$comment", "title", "description":
			default:
				return false
			}
		}
		return true
	}
	return false
}

// withKnownDraft drops a root $schema that names no draft the library
// knows (servers write things like ".../draft-2020-12/schema"): the library
// would try to load it as a custom metaschema and fail the whole tool. The
// default draft (2020-12) is the best guess for such a schema.
func withKnownDraft(doc any) any {
	m, ok := doc.(map[string]any)
	if !ok {
		return doc
	}
	s, ok := m["$schema"].(string)
	if !ok || knownDraft(s) {
		return doc
	}
	c := make(map[string]any, len(m))
	for k, v := range m {
		if k != "$schema" {
			c[k] = v
		}
	}
	return c
}

func knownDraft(url string) bool {
	switch trimDraftURL(url) {
	case "json-schema.org/schema",
		"json-schema.org/draft/2020-12/schema",
		"json-schema.org/draft/2019-09/schema",
		"json-schema.org/draft-07/schema",
		"json-schema.org/draft-06/schema",
		"json-schema.org/draft-04/schema":
		return true
	}
	return false
}

func trimDraftURL(u string) string {
	for _, p := range []string{"https://", "http://"} {
		if len(u) > len(p) && u[:len(p)] == p {
			u = u[len(p):]
			break
		}
	}
	if n := len(u); n > 0 && u[n-1] == '#' {
		u = u[:n-1]
	}
	return u
}
