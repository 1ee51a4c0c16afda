package schema

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// corpusTool is one tool of testdata/corpus, its inputSchema decoded the
// way the MCP Go SDK decodes it (map[string]any, float64 numbers).
type corpusTool struct {
	id     string // server/tool
	schema any
}

func loadCorpus(tb testing.TB) []corpusTool {
	tb.Helper()
	files, err := filepath.Glob("../../testdata/corpus/*.tools.json")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no corpus files: %v", err)
	}
	var tools []corpusTool
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		var list struct {
			Tools []struct {
				Name        string `json:"name"`
				InputSchema any    `json:"inputSchema"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(b, &list); err != nil {
			tb.Fatalf("%s: %v", f, err)
		}
		server := strings.TrimSuffix(filepath.Base(f), ".tools.json")
		for _, t := range list.Tools {
			tools = append(tools, corpusTool{id: server + "/" + t.Name, schema: t.InputSchema})
		}
	}
	return tools
}

// Every corpus inputSchema compiles. In the 2026-11-20 corpus (1,184 tools,
// 21 servers; 808 without $schema, 222 draft-07, 154 2020-12) none is
// invalid against its metaschema or refers outside itself, so there is no
// list of known-invalid tools to skip.
//
// Each compiles in the draft it names, or in 2020-12 when it names none
// (the fallback to older drafts is never needed here; TestDraftDetection
// covers it).
func TestCorpusCompiles(t *testing.T) {
	tools := loadCorpus(t)
	failed := 0
	drafts := map[string]int{}
	for _, tool := range tools {
		v, err := Compile(tool.schema)
		if err != nil {
			failed++
			t.Errorf("%s: %v", tool.id, err)
			continue
		}
		drafts[v.Draft()]++
		want := "2020-12"
		if d := declaredDraft(v.doc); d != nil {
			want = draftName(d)
		}
		if v.Draft() != want && v.Draft() != "" {
			t.Errorf("%s: compiled as %s, want %s", tool.id, v.Draft(), want)
		}
	}
	t.Logf("compiled %d/%d corpus inputSchemas, by draft: %v", len(tools)-failed, len(tools), drafts)
}

// The example of every corpus inputSchema validates, also after a JSON
// round trip (which is how it reaches the model).
func TestCorpusExamplesValidate(t *testing.T) {
	tools := loadCorpus(t)
	var failures []string
	for _, tool := range tools {
		v, err := Compile(tool.schema)
		if err != nil {
			continue // reported by TestCorpusCompiles
		}
		ex := v.Example()
		b, err := json.Marshal(ex)
		if err != nil {
			failures = append(failures, tool.id+": example does not marshal: "+err.Error())
			continue
		}
		var back any
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if ex == nil {
			failures = append(failures, tool.id+": no example")
		} else if viol := v.Validate(back); viol != nil {
			failures = append(failures, tool.id+": "+string(b)+": "+viol.Message)
		}
	}
	rate := float64(len(tools)-len(failures)) / float64(len(tools))
	t.Logf("examples valid for %d/%d corpus tools (%.1f%%)", len(tools)-len(failures), len(tools), 100*rate)
	for _, f := range failures {
		t.Log("example failure: " + f)
	}
	if rate < 0.95 {
		t.Errorf("example pass rate %.1f%% < 95%%", 100*rate)
	}
}

func BenchmarkCompileCorpus(b *testing.B) {
	tools := loadCorpus(b)
	b.ReportAllocs()
	for b.Loop() {
		for _, tool := range tools {
			if _, err := Compile(tool.schema); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(tools)), "ns/tool")
}

func BenchmarkExampleCorpus(b *testing.B) {
	tools := loadCorpus(b)
	var vs []*Validator
	for _, tool := range tools {
		v, _ := Compile(tool.schema)
		vs = append(vs, v)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, v := range vs {
			v.findExample()
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(tools)), "ns/tool")
}

// BenchmarkValidateCorpus validates every corpus tool's example (valid)
// and an input with a wrong-typed unknown property (invalid, explained):
// whether validating on every call is cheap enough is a benchmark's
// question (docs/BENCHMARKS.md), not a test's.
func BenchmarkValidateCorpus(b *testing.B) {
	tools := loadCorpus(b)
	type pair struct {
		v  *Validator
		ex any
	}
	var pairs []pair
	for _, tool := range tools {
		v, _ := Compile(tool.schema)
		pairs = append(pairs, pair{v, v.Example()})
	}
	bad := map[string]any{"unexpected": []any{1.0, "x"}}
	for _, bc := range []struct {
		name  string
		input func(pair) any
	}{
		{"valid", func(p pair) any { return p.ex }},
		{"invalid", func(pair) any { return bad }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, p := range pairs {
					p.v.Validate(bc.input(p))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(pairs)), "ns/call")
		})
	}
}
