package typegen

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// Ordinary text is counted exactly as the tokenizer counts it whole, though
// it is encoded in segments; a run the tokenizer cannot split (which costs
// it the square of its length: a 1 MB run of letters in an upstream's
// description held a core for twenty minutes) is cut into segments of
// bounded length.
func TestCountTokensSegments(t *testing.T) {
	CountTokens("") // loads the vocabulary
	para := "/** Search the issues of a repository; `query` uses GitHub's syntax (is:open label:bug).\n" +
		" * Returns at most 100 results, newest first. Überprüft 日本語のテキスト, naïve café, 12345 67.89 -1e9.\n */\n" +
		"export function searchIssues(args: { owner: string; repo: string; query?: string; perPage?: number }): Promise<ToolResult>;\n" +
		`{"type":"object","properties":{"a":{"type":"string","enum":["x","y"]}},"required":["a"]}` + "\n\t  indented  twice \r\n" +
		"a  b   c    d / e // f {\n/ g ... (h) [i] 'j' \"k\" don't we'll I'M\n\n\n"
	for _, text := range []string{strings.Repeat(para, 40), strings.Repeat("word ", 3000), strings.Repeat("ab cd ", 2000) + strings.Repeat("x", 100)} {
		if len(text) <= segmentBytes {
			t.Fatalf("a text of %d bytes is one segment", len(text))
		}
		if got, want := CountTokens(text), referenceCount(text); got != want {
			t.Errorf("CountTokens of %d bytes = %d, want %d (the count of the whole)", len(text), got, want)
		}
	}
	for _, run := range []string{strings.Repeat("a", 1<<20), strings.Repeat(" ", 1<<20), strings.Repeat("é", 1<<19), strings.Repeat("ab", 1<<19) + " " + strings.Repeat("a", 5000)} {
		s, parts := run, 0
		for s != "" {
			cut := segmentEnd(s)
			if cut <= 0 || cut > segmentBytes || !utf8.ValidString(s[:cut]) {
				t.Fatalf("a segment of %d bytes (at most %d, on a character boundary)", cut, segmentBytes)
			}
			s = s[cut:]
			parts++
		}
		if parts < len(run)/segmentBytes {
			t.Errorf("%d segments for %d bytes", parts, len(run))
		}
	}
	// Counting up to a limit stops past it.
	long := strings.Repeat(para, 400)
	if n := CountTokensUpTo(long, 100); n <= 100 || n > 100+segmentBytes {
		t.Errorf("CountTokensUpTo(%d bytes, 100) = %d, want past 100 by at most one segment", len(long), n)
	}
	if n, want := CountTokensUpTo(para, 1<<20), CountTokens(para); n != want {
		t.Errorf("CountTokensUpTo under its limit = %d, want %d", n, want)
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

// cycleServer is one tool whose input is a cycle of n $defs, each referring
// to the next: n recursive targets, each reaching all the others.
func cycleServer(n int) Server {
	var b strings.Builder
	b.WriteString(`{"$ref":"#/$defs/D0","$defs":{`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"D%d":{"type":"object","properties":{"v":{"type":"string"},"next":{"$ref":"#/$defs/D%d"}}}`, i, (i+1)%n)
	}
	b.WriteString("}}")
	return Server{ID: "x", Tools: []Tool{{Name: "t", InputSchema: json.RawMessage(b.String())}}}
}

// A long cycle of $defs is converted in time linear in its length: each
// recursive target's fingerprint used to serialise every target it reaches
// (2000 defs took 130 s and 873 MB). The work is measured in allocations
// per def, which grew with n while it was quadratic.
func TestLongRefCycle(t *testing.T) {
	perDef := func(n int) float64 {
		s := cycleServer(n)
		out, warns := ServerModule(s, nil)
		if got := strings.Count(out, "export type D"); got != n {
			t.Errorf("n=%d: %d named types, want %d", n, got, n)
		}
		if len(warns) != 0 {
			t.Errorf("n=%d: warnings %v", n, warns)
		}
		return testing.AllocsPerRun(1, func() { ServerModule(s, nil) }) / float64(n)
	}
	const few, many = 250, 2000
	small, large := perDef(few), perDef(many)
	t.Logf("allocations per def: %.0f at %d defs, %.0f at %d", small, few, large, many)
	if large > 1.25*small {
		t.Errorf("allocations per def grow with the cycle: %.0f at %d defs, %.0f at %d", small, few, large, many)
	}
}

// Objects with many members ($defs of thousands) are indexed: get finds the
// member without a scan, and a repeated key keeps its last value at the
// place of its first occurrence, as for small objects.
func TestLargeObjectIndex(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	for i := range 100 {
		fmt.Fprintf(&b, `"k%d":%d,`, i, i)
	}
	b.WriteString(`"k7":"last"}`)
	v, err := decodeSchema(json.RawMessage(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if v.at == nil || len(v.keys) != 100 || len(v.at) != 100 {
		t.Fatalf("keys %d, index %v", len(v.keys), v.at != nil)
	}
	if got := v.get("k7"); got == nil || got.s != "last" || v.keys[7] != "k7" {
		t.Errorf("k7 = %+v", got)
	}
	if got := v.get("k99"); got == nil || got.s != "99" {
		t.Errorf("k99 = %+v", got)
	}
	if v.get("k100") != nil || v.has("nope") {
		t.Error("found a key that is not there")
	}
	small, _ := decodeSchema(json.RawMessage(`{"a":1,"b":2,"a":3}`))
	if small.at != nil || len(small.keys) != 2 || small.get("a").s != "3" {
		t.Errorf("small object: %+v", small)
	}
}

// Enum and const numbers are compared by value and printed as JavaScript
// prints them.
func TestNumberLiterals(t *testing.T) {
	for in, want := range map[string]string{
		"1": "1", "1.0": "1", "1e2": "100", "1E2": "100", "100.00": "100", "-0": "0", "-0.0": "0",
		"0.5": "0.5", "5e-1": "0.5", "-2.50": "-2.5", "1e21": "1e+21", "123456789012345678901": "123456789012345680000",
		"1e-7": "1e-7", "0.000001": "0.000001", "1.5e-7": "1.5e-7", "12345678901234567890": "12345678901234567000",
		"1.7976931348623157e308": "1.7976931348623157e+308", "5e-324": "5e-324", "-1e-7": "-1e-7", "0.1": "0.1",
	} {
		f, ok := jsonNumber(in)
		if !ok {
			t.Errorf("jsonNumber(%s) failed", in)
			continue
		}
		if got := jsNumber(f); got != want {
			t.Errorf("jsNumber(%s) = %s, want %s", in, got, want)
		}
	}
	for _, in := range []string{"1e400", "-1e400"} {
		if _, ok := jsonNumber(in); ok {
			t.Errorf("jsonNumber(%s) is finite", in)
		}
	}
	integer := &value{kind: kString, s: "integer"}
	for in, want := range map[string]bool{"1": true, "1.0": true, "1e2": true, "2.5": false, "1e-7": false, "1e400": false, "-0.0": true} {
		if got := typeAllows(integer, &value{kind: kNumber, s: in}); got != want {
			t.Errorf("integer allows %s: %v, want %v", in, got, want)
		}
	}
}

// A tool the gateway's policy puts to the user first says so first among
// its tags; a tool without approval does not mention it.
func TestRequiresApprovalTag(t *testing.T) {
	f := false
	s := Server{ID: "mem", Tools: []Tool{
		{Name: "write", Description: "Writes.", RequiresApproval: true, Annotations: &mcp.ToolAnnotations{DestructiveHint: &f}},
		{Name: "read", Description: "Reads.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
	}}
	for _, out := range []string{first(ServerModule(s, nil)), first(ServerGlobal(s, nil))} {
		mustParse(t, out)
		if !strings.Contains(out, "/** Writes. @requiresApproval @nonDestructive */") {
			t.Errorf("write is not marked:\n%s", out)
		}
		if strings.Count(out, "@requiresApproval") != 1 {
			t.Errorf("read is marked too:\n%s", out)
		}
	}
}

func first[A, B any](a A, _ B) A { return a }
