package schema

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// doublingSchema is an upstream's schema whose definitions each apply the
// previous one twice, in place: validating one value visits d0 2^n times.
func doublingSchema(n int, applicator string) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","required":["x"],"properties":{"x":{"$ref":"#/$defs/d` + fmt.Sprint(n) + `"}},"$defs":{"d0":{"type":"object","properties":{"s":{"type":"string"}}}`)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `,"d%d":{"%s":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}],"properties":{"p%d":{"type":"integer"}}}`, i, applicator, i-1, i-1, i)
	}
	b.WriteString(`}}`)
	return b.String()
}

// A schema that is exponential to validate is given up on (the input goes
// to the upstream, which checks its own input) instead of holding the
// caller's core forever; so is finding an example of it.
func TestExponentialSchemaIsGivenUp(t *testing.T) {
	for _, app := range []string{"allOf", "anyOf", "oneOf"} {
		v, err := Compile(json.RawMessage(doublingSchema(40, app)))
		if err != nil {
			t.Fatal(err)
		}
		if viol := v.Validate(map[string]any{"x": map[string]any{"s": 1.0}}); viol != nil {
			t.Errorf("%s: %v (want it given up: nil)", app, viol)
		}
		if app == "allOf" {
			v.Example() // returns, whatever it finds
		}
	}
	// A recursive schema whose cost doubles with each level of the input.
	v, err := Compile(json.RawMessage(`{"$defs":{"n":{"anyOf":[{"type":"object","properties":{"a":{"$ref":"#/$defs/n"}}},{"type":"object","properties":{"a":{"$ref":"#/$defs/n"}},"required":["b"]}]}},"$ref":"#/$defs/n"}`))
	if err != nil {
		t.Fatal(err)
	}
	in := any(map[string]any{})
	for range 60 {
		in = map[string]any{"a": in, "c": 1}
	}
	v.Validate(in)
}

// The budget grows with the input: a large input against an ordinary
// schema is validated in full, and its violations found.
func TestBudgetAllowsLargeInputs(t *testing.T) {
	v, err := Compile(json.RawMessage(`{"type":"object","properties":{"rows":{"type":"array","items":{"type":"object","properties":{"id":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}},"kind":{"anyOf":[{"const":"a"},{"const":"b"},{"const":"c"},{"type":"integer"}]}},"required":["id"]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	rows := make([]any, 20_000)
	for i := range rows {
		rows[i] = map[string]any{"id": float64(i), "tags": []any{"x", "y"}, "kind": 7.0}
	}
	rows[len(rows)-1] = map[string]any{"tags": []any{}}
	viol := v.Validate(map[string]any{"rows": rows})
	if viol == nil || !strings.Contains(viol.Message, "/rows/19999") {
		t.Fatalf("violation in the last row not found: %v", viol)
	}
}
