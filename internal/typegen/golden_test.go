package typegen

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// A golden case is testdata/golden/<name>.txtar: a comment saying what it
// covers, the input `server.json`, and the expected renderings, which
// `go test -update` rewrites:
//
//	-- server.json --       {"id", "name", "version", "description", "tools": [...],
//	                         "options": {"omitDescriptions": true}, "goMaps": true}
//	-- module.d.ts --       ServerModule
//	-- global.d.ts --       ServerGlobal
//	-- tool/<name>.d.ts --  ToolDecl of each tool
//	-- warnings --          the warnings, one per line
//
// goMaps decodes the schemas into map[string]any before generation, to check
// that Go maps give sorted, deterministic output.
type goldenServer struct {
	ID          string       `json:"id"`
	Name        string       `json:"name"`
	Version     string       `json:"version"`
	Description string       `json:"description"`
	Tools       []corpusTool `json:"tools"`
	Options     *struct {
		OmitDescriptions bool `json:"omitDescriptions"`
	} `json:"options"`
	GoMaps bool `json:"goMaps"`
}

type goldenCase struct {
	name    string
	path    string
	archive *txtar.Archive
	server  Server
	opts    *Options
}

func loadGolden(t testing.TB) []goldenCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	sort.Strings(files)
	var out []goldenCase
	for _, f := range files {
		a, err := txtar.ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var in []byte
		for _, af := range a.Files {
			if af.Name == "server.json" {
				in = af.Data
			}
		}
		if in == nil {
			t.Fatalf("%s: no server.json", f)
		}
		var gs goldenServer
		if err := json.Unmarshal(in, &gs); err != nil {
			t.Fatalf("%s: server.json: %v", f, err)
		}
		s := Server{ID: gs.ID, Name: gs.Name, Version: gs.Version, Description: gs.Description}
		for _, ct := range gs.Tools {
			tool := Tool{Name: ct.Name, Title: ct.Title, Description: ct.Description, Annotations: ct.Annotations, TaskSupport: ct.taskSupport()}
			tool.InputSchema = schemaArg(t, ct.InputSchema, gs.GoMaps)
			tool.OutputSchema = schemaArg(t, ct.OutputSchema, gs.GoMaps)
			s.Tools = append(s.Tools, tool)
		}
		var opts *Options
		if gs.Options != nil {
			opts = &Options{OmitDescriptions: gs.Options.OmitDescriptions}
		}
		out = append(out, goldenCase{
			name:    strings.TrimSuffix(filepath.Base(f), ".txtar"),
			path:    f,
			archive: a,
			server:  s,
			opts:    opts,
		})
	}
	return out
}

// schemaArg is how a test hands a schema to the generator: raw JSON, or
// decoded Go values when goMaps is set. Absent stays nil.
func schemaArg(t testing.TB, raw json.RawMessage, goMaps bool) any {
	if len(raw) == 0 {
		return nil
	}
	if !goMaps {
		return raw
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// render produces every golden file of a case, in archive order.
func (c goldenCase) render(t testing.TB) []txtar.File {
	mod, warns := ServerModule(c.server, c.opts)
	glob, _ := ServerGlobal(c.server, c.opts)
	files := []txtar.File{
		{Name: "module.d.ts", Data: []byte(mod)},
		{Name: "global.d.ts", Data: []byte(glob)},
	}
	for i, d := range ToolDecls(c.server, c.opts) {
		name := c.server.Tools[i].Name
		if one, err := ToolDecl(c.server, name, c.opts); err != nil || one != d {
			t.Errorf("ToolDecl(%q) = %q, %v; ToolDecls gave %q", name, one, err, d)
		}
		files = append(files, txtar.File{Name: "tool/" + name + ".d.ts", Data: []byte(d)})
	}
	var w strings.Builder
	for _, x := range warns {
		w.WriteString(x.String() + "\n")
	}
	files = append(files, txtar.File{Name: "warnings", Data: []byte(w.String())})
	return files
}

func TestGolden(t *testing.T) {
	for _, c := range loadGolden(t) {
		t.Run(c.name, func(t *testing.T) {
			got := c.render(t)
			if *update {
				a := &txtar.Archive{Comment: c.archive.Comment}
				for _, f := range c.archive.Files {
					if f.Name == "server.json" {
						a.Files = append(a.Files, f)
					}
				}
				a.Files = append(a.Files, got...)
				if err := os.WriteFile(c.path, txtar.Format(a), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want := map[string][]byte{}
			for _, f := range c.archive.Files {
				want[f.Name] = f.Data
			}
			for _, f := range got {
				w, ok := want[f.Name]
				if !ok {
					t.Errorf("%s: missing from the golden file (run go test -update)", f.Name)
					continue
				}
				if !bytes.Equal(w, f.Data) {
					t.Errorf("%s differs (run go test -update and review the diff):\n--- got ---\n%s\n--- want ---\n%s", f.Name, f.Data, w)
				}
				delete(want, f.Name)
			}
			delete(want, "server.json")
			for name := range want {
				t.Errorf("%s: in the golden file but no longer generated", name)
			}
			// Generating twice gives the same bytes.
			again := c.render(t)
			for i := range got {
				if !bytes.Equal(got[i].Data, again[i].Data) {
					t.Errorf("%s: output is not deterministic", got[i].Name)
				}
			}
		})
	}
}

// TestStdlibGolden pins codemode.d.ts (testdata/stdlib.txtar, outside
// golden/ because it has no server.json).
func TestStdlibGolden(t *testing.T) {
	path := filepath.Join("testdata", "stdlib.txtar")
	if *update {
		a := &txtar.Archive{
			Comment: []byte("The standard library declarations, Stdlib(): @codemode/discovery, @codemode/errors,\nthe CodeMode namespace, ToolResult and the sandbox globals.\n"),
			Files:   []txtar.File{{Name: "codemode.d.ts", Data: []byte(Stdlib())}},
		}
		if err := os.WriteFile(path, txtar.Format(a), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	a, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Files) != 1 || a.Files[0].Name != "codemode.d.ts" || string(a.Files[0].Data) != Stdlib() {
		t.Errorf("Stdlib() differs from %s (run go test -update and review the diff)", path)
	}
}
