package redact

import (
	"encoding/json"
	"strings"
	"testing"
)

// A result is redacted value by value, so that it stays valid JSON whatever
// the secret looks like: a number containing a secret becomes the string
// "[REDACTED]", keys and strings are redacted as text, the rest is kept
// byte for byte.
func TestRedactResultStaysValidJSON(t *testing.T) {
	d := New([]string{"123456789012", "sk-live-abcdef", `pa"ss-word`})
	for _, tc := range []struct{ in, want string }{
		// The reported case: a plain text replacement gave
		// {"account":[REDACTED],"n":9[REDACTED]3}.
		{`{"account":123456789012,"n":91234567890123}`, `{"account":"[REDACTED]","n":"[REDACTED]"}`},
		{`123456789012`, `"[REDACTED]"`},
		{`-1234567890123e5`, `"[REDACTED]"`},
		{`[1.123456789012,12345678901]`, `["[REDACTED]",12345678901]`},
		{`{"a":"x123456789012y","b":"sk-live-abcdef"}`, `{"a":"x[REDACTED]y","b":"[REDACTED]"}`},
		// Keys are redacted; key order is kept.
		{`{"z":1,"123456789012":2,"a":3}`, `{"z":1,"[REDACTED]":2,"a":3}`},
		// Keys that collide after redaction get a suffix.
		{`{"123456789012_a":1,"sk-live-abcdef_a":2}`, `{"[REDACTED]_a":1,"[REDACTED]_a#2":2}`},
		{`{"123456789012":1,"[REDACTED]":2,"[REDACTED]#2":3}`, `{"[REDACTED]":1,"[REDACTED]#2":2,"[REDACTED]#2#2":3}`},
		{`{"[REDACTED]":1,"sk-live-abcdef":2,"sk-live-abcdef":3}`, `{"[REDACTED]":1,"[REDACTED]#2":2,"[REDACTED]#3":3}`},
		// Keys are per object: the same key in two objects is no collision.
		{`{"a":[{"123456789012":{"123456789012":1}}],"123456789012":{"x":"123456789012"}}`,
			`{"a":[{"[REDACTED]":{"[REDACTED]":1}}],"[REDACTED]":{"x":"[REDACTED]"}}`},
		// Whitespace, escapes and HTML characters of untouched tokens are
		// kept as they are.
		{"{ \"a\" : [1, \"123456789012\", true, null, \"\\u003c\\/b>\"],\n \"b\":{} }",
			"{ \"a\" : [1, \"[REDACTED]\", true, null, \"\\u003c\\/b>\"],\n \"b\":{} }"},
		{`{"h":"<b>&123456789012"}`, `{"h":"<b>&[REDACTED]"}`},
		// A secret with a quote, as it appears in a JSON string.
		{`{"p":"pa\"ss-word!"}`, `{"p":"[REDACTED]!"}`},
		// A secret written with \u escapes is found in the decoded string
		// once the raw text shows some secret.
		{`["123456789012","\u0031\u0032\u0033\u0034\u0035\u0036\u0037\u0038\u0039\u0030\u0031\u0032"]`, `["[REDACTED]","[REDACTED]"]`},
	} {
		got := string(d.JSON(json.RawMessage(tc.in)))
		if got != tc.want {
			t.Errorf("redact %s\n got %s\nwant %s", tc.in, got, tc.want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("redact %s: invalid JSON %s", tc.in, got)
		}
	}
}

// Without secrets, or when none occurs in the raw text, the result is
// returned as it is (the same bytes, not a copy).
func TestRedactResultUntouched(t *testing.T) {
	in := json.RawMessage(`{"a": [1, 2, "x\u00e9"], "n": 12345678901}`)
	for _, d := range []*Redactor{New(nil), New([]string{"123456789012"})} {
		got := d.JSON(in)
		if &got[0] != &in[0] || string(got) != string(in) {
			t.Errorf("redactor %v changed %s into %s", d, in, got)
		}
	}
	if got := New(nil).JSON(nil); got != nil {
		t.Errorf("nil result became %q", got)
	}
}

// Text that is not JSON (never a run's result) still comes out as valid
// JSON without the secret.
func TestRedactResultInvalidJSON(t *testing.T) {
	got := New([]string{"123456789012"}).JSON(json.RawMessage(`{"a":123456789012`))
	if !json.Valid(got) || strings.Contains(string(got), "123456789012") {
		t.Fatalf("got %s", got)
	}
}

func FuzzRedactResult(f *testing.F) {
	for _, s := range []string{`{"account":123456789012,"n":91234567890123}`, `[1,"a123456789012",{"123456789012":null}]`,
		`{"123456789012a":1,"123456789012b":2}`, `"\u0031234567890123"`, ` 123456789012 `, `{"[REDACTED]":0,"123456789012":1}`, `"\u123456789012"`} {
		f.Add(s)
	}
	d := New([]string{"123456789012"})
	f.Fuzz(func(t *testing.T, in string) {
		if !json.Valid([]byte(in)) {
			return
		}
		got := d.JSON(json.RawMessage(in))
		if !json.Valid(got) {
			t.Fatalf("redact %s: invalid JSON %s", in, got)
		}
		// No value holds the secret. (The raw text may still show its
		// digits right after an escape, as in "\u123456789012", whose
		// value is "\u1234" followed by "56789012".)
		dec := json.NewDecoder(strings.NewReader(string(got)))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil || holds(v, "123456789012") {
			t.Fatalf("redact %s: secret left in %s", in, got)
		}
		if !strings.Contains(in, `\`) && strings.Contains(string(got), "123456789012") {
			t.Fatalf("redact %s: secret left in the text %s", in, got)
		}
	})
}

// holds reports whether a decoded JSON value has secret in a string, a key
// or a number.
func holds(v any, secret string) bool {
	switch v := v.(type) {
	case string:
		return strings.Contains(v, secret)
	case json.Number:
		return strings.Contains(string(v), secret)
	case []any:
		for _, x := range v {
			if holds(x, secret) {
				return true
			}
		}
	case map[string]any:
		for k, x := range v {
			if strings.Contains(k, secret) || holds(x, secret) {
				return true
			}
		}
	}
	return false
}
