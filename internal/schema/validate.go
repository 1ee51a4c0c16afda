package schema

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// Violation says why an input failed validation, in the terms
// SchemaValidationError (§7.2) needs.
type Violation struct {
	// Path is a JSON Pointer (RFC 6901) into the input: "" for the input
	// itself, "/user/age" for a property, "/items/0" for an array element.
	// For a missing property it points at the property that should be there.
	Path string
	// Expected is what the schema wants there, e.g. `number`,
	// `one of "asc", "desc"`, `required property "name" (string)`.
	Expected string
	// Received is what the input has there, e.g. `string "42"`,
	// `nothing (the property is missing)`; at most about 80 characters.
	Received string
	// Message is one sentence with all three:
	// `input/user/age: expected number, received string "42"`.
	Message string
	// Others holds the messages of further, independent problems in the same
	// input (at most maxOthers), so a model can fix them all at once.
	Others []string
}

func (v *Violation) Error() string { return v.Message }

const maxOthers = 4

// Validate reports the most useful reason input does not match the schema,
// or nil when it does.
//
// input is a decoded JSON value: map[string]any, []any, string, bool, nil,
// and numbers as float64 (json.Unmarshal's default) or json.Number (exact,
// for integers beyond 2^53); Go integer types work too. nil stands for "no
// argument" and is checked as {} when the schema takes an object, as MCP
// sends arguments as an object (§5.3.1).
//
// For an absent or empty schema, no argument and any object are valid and
// anything else is not (§5.3.1).
func (v *Validator) Validate(input any) (viol *Violation) {
	if v == nil || v.sch == nil {
		return validateNoSchema(input)
	}
	if input == nil && acceptsObject(v.sch) {
		input = map[string]any{}
	}
	if viol := checkNumbers(input); viol != nil {
		return viol
	}
	// A panic in the third-party validator must not take down the run; the
	// upstream validates the call anyway, so let it through. So does a
	// validation stopped for its work (budget.go).
	err, exceeded, panicked := v.check(v.sch, input)
	if exceeded || panicked || err == nil {
		return nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return newViolation(nil, "valid input", describe(input))
	}
	if hasRefCycle(verr) {
		// The schema, not the input, is broken ($refs that loop without
		// consuming input): like a schema that does not compile, it costs
		// the tool its validation and the upstream decides.
		return nil
	}
	return v.explain(verr, input)
}

func hasRefCycle(e *jsonschema.ValidationError) bool {
	if _, ok := e.ErrorKind.(*kind.RefCycle); ok {
		return true
	}
	return slices.ContainsFunc(e.Causes, hasRefCycle)
}

func validateNoSchema(input any) *Violation {
	switch input.(type) {
	case nil, map[string]any:
		return nil
	}
	return newViolation(nil, "an object or no argument (the tool declares no input)", describe(input))
}

func acceptsObject(s *jsonschema.Schema) bool {
	if s.Bool != nil {
		return true
	}
	return s.Types == nil || slices.Contains(s.Types.ToStrings(), "object")
}

// maxExponent bounds json.Number exponents: the validator does exact
// arithmetic in math/big, where 1e999999 costs megabytes and 1e9999999
// makes it fail (and panic). Anything past float64's range is refused.
const maxExponent = 400

// checkNumbers finds a json.Number that is not a JSON number or is far
// outside float64's range. The path is built only on failure, so valid
// inputs cost a walk and no allocations.
func checkNumbers(v any) *Violation {
	if path, bad, ok := findBadNumber(v); ok {
		slices.Reverse(path)
		return newViolation(path, "a JSON number (within ±1e308)", "number "+truncate(string(bad), maxStringShown))
	}
	return nil
}

// findBadNumber returns the bad number and its path, innermost token first.
func findBadNumber(v any) ([]string, json.Number, bool) {
	switch v := v.(type) {
	case json.Number:
		return nil, v, !validNumber(string(v))
	case map[string]any:
		for k, e := range v {
			if path, bad, ok := findBadNumber(e); ok {
				return append(path, k), bad, true
			}
		}
	case []any:
		for i, e := range v {
			if path, bad, ok := findBadNumber(e); ok {
				return append(path, strconv.Itoa(i)), bad, true
			}
		}
	}
	return nil, "", false
}

func validNumber(s string) bool {
	if !json.Valid([]byte(s)) || strings.ContainsAny(s, `"[]{}tfn `) {
		return false
	}
	i := strings.IndexAny(s, "eE")
	if i < 0 {
		return len(s) <= maxExponent
	}
	exp, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
	return err == nil && exp >= -maxExponent && exp <= maxExponent && i <= maxExponent
}

func newViolation(path []string, expected, received string) *Violation {
	p := pointer(path)
	return &Violation{
		Path:     p,
		Expected: expected,
		Received: received,
		Message:  "input" + p + ": expected " + expected + ", received " + received,
	}
}

// pointer renders path tokens as a JSON Pointer.
func pointer(path []string) string {
	var sb strings.Builder
	for _, tok := range path {
		sb.WriteByte('/')
		tok = strings.ReplaceAll(tok, "~", "~0")
		sb.WriteString(strings.ReplaceAll(tok, "/", "~1"))
	}
	return sb.String()
}
