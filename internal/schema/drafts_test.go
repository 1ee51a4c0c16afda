package schema

import (
	"strings"
	"testing"
)

// A schema is compiled in the draft its $schema names, else 2020-12, and
// when that draft refuses it, in draft-07 and then draft-04: servers write
// older drafts without saying so (§6.2 lists the draft-07 tuple), and
// calling their tools without validation is what this avoids.
func TestDraftDetection(t *testing.T) {
	tuple := `"type":"object","properties":{"p":{"type":"array","items":[{"type":"number"},{"type":"string"}],"additionalItems":false}},"required":["p"]`
	for _, c := range []struct {
		name, schema, draft string
		ok, bad             []string // inputs that validate, that do not
		badPath             string
	}{
		{"draft-07 tuple, no $schema", `{` + tuple + `}`, "draft-07",
			[]string{`{"p":[1,"a"]}`, `{"p":[1]}`}, []string{`{"p":["a",1]}`, `{"p":[1,"a",3]}`, `{"p":"x"}`}, "/p/0"},
		{"draft-07 tuple labelled 2020-12", `{"$schema":"https://json-schema.org/draft/2020-12/schema",` + tuple + `}`, "draft-07",
			[]string{`{"p":[1,"a"]}`}, []string{`{"p":["a",1]}`}, "/p/0"},
		{"draft-07 tuple labelled draft-07", `{"$schema":"http://json-schema.org/draft-07/schema#",` + tuple + `}`, "draft-07",
			[]string{`{"p":[1,"a"]}`}, []string{`{"p":["a",1]}`}, "/p/0"},
		{"draft-07 tuple under an unknown $schema", `{"$schema":"http://json-schema.org/draft-2020-12/schema",` + tuple + `}`, "draft-07",
			[]string{`{"p":[1,"a"]}`}, []string{`{"p":["a",1]}`}, "/p/0"},
		{"draft-04 boolean exclusiveMinimum", `{"type":"object","properties":{"n":{"type":"number","minimum":0,"exclusiveMinimum":true}}}`, "draft-04",
			[]string{`{"n":0.5}`}, []string{`{"n":0}`, `{"n":-1}`}, "/n"},
		{"draft-04 labelled", `{"$schema":"http://json-schema.org/draft-04/schema#","id":"urn:x","type":"object","properties":{"n":{"type":"integer","maximum":3,"exclusiveMaximum":true}}}`, "draft-04",
			[]string{`{"n":2}`}, []string{`{"n":3}`}, "/n"},
		{"2020-12 prefixItems", `{"type":"object","properties":{"p":{"type":"array","prefixItems":[{"type":"number"}],"items":false}}}`, "2020-12",
			[]string{`{"p":[1]}`}, []string{`{"p":[1,2]}`}, "/p/1"},
		{"plain, no $schema", `{"type":"object","properties":{"a":{"type":"string"}}}`, "2020-12",
			[]string{`{"a":"x"}`}, []string{`{"a":1}`}, "/a"},
	} {
		v := mustCompile(t, c.schema)
		if v.Draft() != c.draft {
			t.Errorf("%s: compiled as %q, want %q", c.name, v.Draft(), c.draft)
		}
		for _, in := range c.ok {
			if viol := v.Validate(mustJSON(t, in)); viol != nil {
				t.Errorf("%s: %s refused: %s", c.name, in, viol.Message)
			}
		}
		for i, in := range c.bad {
			viol := v.Validate(mustJSON(t, in))
			if viol == nil {
				t.Errorf("%s: %s accepted", c.name, in)
			} else if i == 0 && viol.Path != c.badPath {
				t.Errorf("%s: %s: path %q, want %q (%s)", c.name, in, viol.Path, c.badPath, viol.Message)
			}
		}
		if ex := v.Example(); ex != nil {
			if viol := v.Validate(ex); viol != nil {
				t.Errorf("%s: the example %v does not validate: %s", c.name, ex, viol.Message)
			}
		}
	}
	// No draft accepts it: the error says which drafts were tried.
	_, err := Compile(map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": 5}}})
	if err == nil || !strings.Contains(err.Error(), "2020-12, draft-07, draft-04") {
		t.Errorf("err = %v", err)
	}
}
