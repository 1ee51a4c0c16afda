package typegen

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

func TestInvalidSchemas(t *testing.T) {
	cyclic := map[string]any{"type": "object"}
	cyclic["properties"] = map[string]any{"self": cyclic}
	deep := strings.Repeat(`{"type":"array","items":`, 150) + `{"type":"string"}` + strings.Repeat(`}`, 150)
	tooDeep := strings.Repeat(`[`, 20000) + strings.Repeat(`]`, 20000)
	for name, schema := range map[string]any{
		"truncated JSON":  json.RawMessage(`{"type": "object", "properties": {`),
		"trailing data":   json.RawMessage(`{"type": "string"} {}`),
		"cyclic Go value": cyclic,
		"NaN":             map[string]any{"const": func() {}},
		"deep":            json.RawMessage(deep),
		"too deep":        json.RawMessage(tooDeep),
		"bytes":           []byte(`{"type": "boolean"}`),
	} {
		t.Run(name, func(t *testing.T) {
			s := Server{ID: "x", Tools: []Tool{{Name: "t", InputSchema: schema, OutputSchema: schema}}}
			out, warns := ServerModule(s, nil)
			mustParse(t, out)
			if strings.Contains(out, " any") {
				t.Errorf("output mentions any:\n%s", out)
			}
			if name != "bytes" && len(warns) == 0 {
				t.Errorf("no warning for %s:\n%s", name, out)
			}
		})
	}
}

func TestGoValuesAreSorted(t *testing.T) {
	raw := json.RawMessage(`{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"number"}}}`)
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	fromRaw, _ := ServerModule(Server{ID: "x", Tools: []Tool{{Name: "t", InputSchema: raw}}}, nil)
	fromMap, _ := ServerModule(Server{ID: "x", Tools: []Tool{{Name: "t", InputSchema: m}}}, nil)
	if !strings.Contains(fromRaw, "b?: string; a?: number") {
		t.Errorf("raw JSON lost its property order:\n%s", fromRaw)
	}
	if !strings.Contains(fromMap, "a?: number; b?: string") {
		t.Errorf("a Go map was not sorted:\n%s", fromMap)
	}
}

func TestExportNames(t *testing.T) {
	s := Server{ID: "x", Tools: []Tool{
		{Name: "b-tool"}, {Name: "b_tool"}, {Name: "given", ExportName: "custom"},
		{Name: "interface"}, {Name: "enum"}, {Name: "enum$"}, {Name: "odd", ExportName: "not-an-identifier"},
	}}
	out, _ := ServerModule(s, nil)
	mustParse(t, out)
	glob, _ := ServerGlobal(s, nil)
	mustParse(t, glob)
	for _, want := range []string{
		"export function b_tool(", "export function b_tool__2(", "export function custom(",
		"function interface$(", "function enum$2(", "export function enum$(",
		`export { interface$ as interface, enum$2 as enum, not_an_identifier$ as "not-an-identifier" };`,
		`"not-an-identifier"(input?: Record<string, unknown>)`,
	} {
		if !strings.Contains(out+glob, want) {
			t.Errorf("missing %q in:\n%s\n%s", want, out, glob)
		}
	}
}

func TestToolDeclNotFound(t *testing.T) {
	if _, err := ToolDecl(Server{ID: "x"}, "nope", nil); err == nil {
		t.Error("ToolDecl of a missing tool: no error")
	}
}

func TestIndex(t *testing.T) {
	got := Index([]Server{{
		ID: "memory", Name: "Memory", Version: "1.0", Description: "A knowledge graph. It remembers.",
		Tools: []Tool{
			{Name: "read-graph", Description: "Read the whole graph. Slow for big graphs."},
			{Name: "search", Description: strings.Repeat("word ", 40)},
			{Name: "bare"},
		},
	}}, nil)
	want := "memory — Memory 1.0: A knowledge graph.\n" +
		"  read_graph — Read the whole graph.\n" +
		"  search — " + strings.TrimSpace(strings.Repeat("word ", 24)) + "…\n" +
		"  bare\n"
	if got != want {
		t.Errorf("Index:\n%s\nwant:\n%s", got, want)
	}
}

func TestCountTokens(t *testing.T) {
	if n := CountTokens("hello world"); n != 2 {
		t.Errorf("CountTokens(hello world) = %d, want 2", n)
	}
	if n := CountTokens("<|endoftext|>"); n < 2 {
		t.Errorf("special token text counted as %d tokens, want it read as text", n)
	}
	if n := CountTokens(""); n != 0 {
		t.Errorf("CountTokens(\"\") = %d", n)
	}
}

func TestCleanLines(t *testing.T) {
	got := cleanLines("\n    First */ line\r\n\n\n      indented\x00\n    last  \n\n")
	want := []string{"First *\\/ line", "", "  indented", "last"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("cleanLines = %q, want %q", got, want)
	}
}

func TestLiteralPrefix(t *testing.T) {
	for pat, want := range map[string]string{
		"^x-": "x-", "^data\\.": "data.", "^foo.*$": "foo", "^a_b.+": "a_b",
		"^[a-z]": "", "x-": "", "^": "", "^a|b": "", "^a$": "",
	} {
		got, ok := literalPrefix(pat)
		if got != want || ok != (want != "") {
			t.Errorf("literalPrefix(%q) = %q, %v; want %q", pat, got, ok, want)
		}
	}
}

func TestTypesMentionAny(t *testing.T) {
	for src, want := range map[string]bool{
		"x: any;":                       true,
		"x: string | any;":              true,
		"f(): Promise<any>;":            true,
		"any?: unknown;":                false,
		"any: string;":                  false,
		"/** any value */ x: unknown;":  false,
		`"any"?: string; y: "any";`:     false,
		"/** a *\\/ any */ x: unknown;": false,
	} {
		if got := typesMentionAny(src); got != want {
			t.Errorf("typesMentionAny(%q) = %v, want %v", src, got, want)
		}
	}
}

// A chain of $defs, each wrapping the next once, is inlined; it must not
// nest without bound.
func TestLongRefChain(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"$ref":"#/$defs/D0","$defs":{`)
	const n = 3000
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"D` + strconv.Itoa(i) + `":{"type":"object","properties":{"a":{"$ref":"#/$defs/D` + strconv.Itoa(i+1) + `"}}}`)
	}
	b.WriteString(`,"D` + strconv.Itoa(n) + `":{"type":"string"}}}`)
	out, warns := ServerModule(Server{ID: "x", Tools: []Tool{{Name: "t", InputSchema: json.RawMessage(b.String())}}}, nil)
	if len(out) > 1<<20 {
		t.Errorf("output is %d bytes", len(out))
	}
	if len(warns) == 0 {
		t.Error("no warning about the depth")
	}
	mustParse(t, out)
}
