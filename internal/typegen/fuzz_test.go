package typegen

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/evanw/esbuild/pkg/api"
)

// FuzzGenerate feeds arbitrary schemas and descriptions to the generator: it
// must never panic, must be deterministic, must never use `any`, and
// everything it emits must parse as TypeScript (esbuild's TS loader parses
// ambient declarations fully).
// Seeds are the first tools of every corpus server (all of them would make
// the fuzzer's baseline slow; TestTypeScript covers the whole corpus) and
// every golden schema. Run with
//
//	go test -fuzz FuzzGenerate ./internal/typegen
func FuzzGenerate(f *testing.F) {
	for _, cs := range loadCorpus(f) {
		for _, t := range cs.tools[:min(len(cs.tools), 8)] {
			f.Add([]byte(t.InputSchema), t.Description)
			if len(t.OutputSchema) > 0 {
				f.Add([]byte(t.OutputSchema), "")
			}
		}
	}
	for _, c := range loadGolden(f) {
		for _, t := range c.server.Tools {
			for _, s := range []any{t.InputSchema, t.OutputSchema} {
				if raw, ok := s.(json.RawMessage); ok {
					f.Add([]byte(raw), t.Description)
				}
			}
		}
	}
	f.Add([]byte(`{"$ref":"#"}`), "*/ /* */")
	f.Add([]byte(`{"type":"object","properties":{"a":{"$ref":"#/properties/a"}}}`), "\u2028")
	f.Fuzz(func(t *testing.T, schema []byte, desc string) {
		s := Server{ID: "fuzz-" + strings.Map(func(r rune) rune { return r % 128 }, desc), Description: desc, Tools: []Tool{
			{Name: desc, Description: desc, InputSchema: json.RawMessage(schema), OutputSchema: json.RawMessage(schema)},
			{Name: "second", Title: desc, InputSchema: json.RawMessage(schema)},
		}}
		mod, _ := ServerModule(s, nil)
		glob, _ := ServerGlobal(s, nil)
		tools := ToolDecls(s, nil)
		omit, _ := ServerModule(s, &Options{OmitDescriptions: true})
		if again, _ := ServerModule(s, nil); again != mod {
			t.Fatalf("not deterministic:\n%s\n---\n%s", mod, again)
		}
		for _, out := range append([]string{mod, glob, omit}, tools...) {
			mustParse(t, out)
			if typesMentionAny(out) {
				t.Fatalf("the declarations use any:\n%s", out)
			}
		}
	})
}

// mustParse fails unless src parses as TypeScript.
func mustParse(t *testing.T, src string) {
	t.Helper()
	res := api.Transform(src, api.TransformOptions{Loader: api.LoaderTS})
	if len(res.Errors) > 0 {
		var msgs []string
		for _, e := range res.Errors {
			line := ""
			if e.Location != nil {
				line = e.Location.LineText
			}
			msgs = append(msgs, e.Text+": "+line)
		}
		t.Fatalf("generated TypeScript does not parse: %s\n%s", strings.Join(msgs, "; "), src)
	}
}
