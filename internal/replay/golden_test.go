package replay

// Golden transcripts of the wire format: testdata/golden/<name>.txtar holds
// step requests (N.request.json) and the responses they must get
// (N.response.json), byte for byte: a step is a pure function of its
// request. After an intended change to the wire format:
//
//	go test -run TestGolden -update ./internal/replay
//
// and review the diff.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite the responses of testdata/golden/*.txtar")

// wireAnswer is what `codemode replay step` and POST /v1/code/step answer
// for a request: the response, or {"error": ...}.
func wireAnswer(t *testing.T, request []byte) []byte {
	t.Helper()
	var req Request
	if err := json.Unmarshal(request, &req); err != nil {
		t.Fatalf("request: %v", err)
	}
	var v any
	resp, err := Step(context.Background(), req)
	v = resp
	if err != nil {
		var re *Error
		if !errors.As(err, &re) {
			t.Fatalf("step: %v", err)
		}
		v = map[string]any{"error": re}
	}
	var b bytes.Buffer
	if err := json.Indent(&b, Marshal(v), "", "  "); err != nil {
		t.Fatal(err)
	}
	b.WriteByte('\n')
	return b.Bytes()
}

func TestGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/golden/*.txtar")
	if len(files) == 0 {
		t.Fatal("no transcripts")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			a, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			changed := false
			for i := range a.Files {
				f := &a.Files[i]
				name, ok := strings.CutSuffix(f.Name, ".request.json")
				if !ok {
					continue
				}
				got := wireAnswer(t, f.Data)
				j := i + 1
				if j >= len(a.Files) || a.Files[j].Name != name+".response.json" {
					t.Fatalf("%s is not followed by %s.response.json", f.Name, name)
				}
				if bytes.Equal(got, a.Files[j].Data) {
					continue
				}
				if *update {
					a.Files[j].Data, changed = got, true
					continue
				}
				t.Errorf("%s: response differs (go test -run TestGolden -update ./internal/replay, then review)\ngot:\n%s\nwant:\n%s", name, got, a.Files[j].Data)
			}
			if changed {
				if err := os.WriteFile(file, txtar.Format(a), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
