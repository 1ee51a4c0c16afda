package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
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
	// budget bounds the work of each validation (budget.go); every
	// schema object of sch counts against it.
	budget *budget
	doc    any               // the decoded schema, for examples and messages
	draft  *jsonschema.Draft // what sch was compiled as

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
// The draft is the one the schema's $schema names, else 2020-12 (MCP's
// default). Servers often write an older draft without saying so (a
// draft-07 tuple, `items: [...]`; a draft-04 boolean exclusiveMinimum), so
// when the schema is not valid in that draft, draft-07 and then draft-04
// are tried, and the first that accepts it is used (see Validator.Draft).
//
// An error means no draft accepts the schema (invalid against every
// metaschema, a $ref to another document, a pattern no regexp engine
// accepts); callers should log it, call the tool without validation, and
// say so to the caller.
func Compile(schema any) (*Validator, error) {
	doc, err := decodeSchema(schema)
	if err != nil {
		return nil, err
	}
	if isEmptySchema(doc) {
		return &Validator{doc: doc}, nil
	}
	order := fallbackDrafts
	declared := declaredDraft(doc)
	if declared != nil {
		order = append([]*jsonschema.Draft{declared}, slices.DeleteFunc(slices.Clone(fallbackDrafts), func(d *jsonschema.Draft) bool { return d == declared })...)
	}
	var first error
	for i, d := range order {
		src := withoutDraft(doc)
		if i == 0 && declared != nil {
			src = doc // as the schema says
		}
		b := &budget{}
		sch, err := compileAs(src, d, b)
		if err == nil {
			return &Validator{sch: sch, doc: doc, draft: d, budget: b}, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, fmt.Errorf("schema: the inputSchema is not valid JSON Schema (tried %s); as %s, %s", draftNames(order), draftName(order[0]), compileErrorText(first))
}

// compileErrorText is a compile error in one line: for a schema that its
// metaschema refuses, where and why (the first innermost cause), instead of
// the library's tree of every branch it tried.
func compileErrorText(err error) string {
	var sve *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	if !errors.As(err, &sve) || !errors.As(sve.Err, &ve) {
		return err.Error()
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	at := "/" + strings.Join(ve.InstanceLocation, "/")
	if len(ve.InstanceLocation) == 0 {
		at = "the top level"
	}
	return fmt.Sprintf("at %s: %s", at, ve.ErrorKind.LocalizedString(printer))
}

// fallbackDrafts are the drafts Compile tries, in order, for a schema that
// names none or is invalid in the one it names.
var fallbackDrafts = []*jsonschema.Draft{jsonschema.Draft2020, jsonschema.Draft7, jsonschema.Draft4}

// compileAs compiles doc as draft d, unless doc names its own draft.
func compileAs(doc any, d *jsonschema.Draft, b *budget) (sch *jsonschema.Schema, err error) {
	// The compiler has one known panic ("baseres is nil") and is third-party
	// code walking untrusted input: a bad schema must cost one tool its
	// validation, never the process.
	defer func() {
		if r := recover(); r != nil {
			sch, err = nil, fmt.Errorf("internal error: %v", r)
		}
	}()
	c := newCompiler()
	c.DefaultDraft(d)
	c.RegisterVocabulary(budgetVocab(b))
	c.AssertVocabs() // in every draft, and without a $vocabulary naming it
	if err := c.AddResource(rootURL, doc); err != nil {
		return nil, err
	}
	return c.Compile(rootURL)
}

// Draft names the draft the schema was compiled as: "2020-12",
// "2019-09", "draft-07", "draft-06" or "draft-04"; "" for an empty schema.
func (v *Validator) Draft() string { return draftName(v.draft) }

func draftName(d *jsonschema.Draft) string {
	switch d {
	case jsonschema.Draft2020:
		return "2020-12"
	case jsonschema.Draft2019:
		return "2019-09"
	case jsonschema.Draft7:
		return "draft-07"
	case jsonschema.Draft6:
		return "draft-06"
	case jsonschema.Draft4:
		return "draft-04"
	}
	return ""
}

func draftNames(ds []*jsonschema.Draft) string {
	names := make([]string, len(ds))
	for i, d := range ds {
		names[i] = draftName(d)
	}
	return strings.Join(names, ", ")
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

// declaredDraft returns the draft a root $schema names, or nil when there
// is none or it names no draft the library knows (servers write things like
// ".../draft-2020-12/schema", which the library would try to load as a
// custom metaschema).
func declaredDraft(doc any) *jsonschema.Draft {
	m, ok := doc.(map[string]any)
	if !ok {
		return nil
	}
	s, ok := m["$schema"].(string)
	if !ok {
		return nil
	}
	switch trimDraftURL(s) {
	case "json-schema.org/schema", "json-schema.org/draft/2020-12/schema":
		return jsonschema.Draft2020
	case "json-schema.org/draft/2019-09/schema":
		return jsonschema.Draft2019
	case "json-schema.org/draft-07/schema":
		return jsonschema.Draft7
	case "json-schema.org/draft-06/schema":
		return jsonschema.Draft6
	case "json-schema.org/draft-04/schema":
		return jsonschema.Draft4
	}
	return nil
}

// withoutDraft returns doc without its root $schema, so that the compiler
// uses the draft it is told to.
func withoutDraft(doc any) any {
	m, ok := doc.(map[string]any)
	if !ok {
		return doc
	}
	if _, ok := m["$schema"]; !ok {
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
