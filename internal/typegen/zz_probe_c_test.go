package typegen

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Probe harness: reads /tmp/probe/in/*.json (tools/list shape), writes
// module, global, tool decls and index into /tmp/probe/out.
func TestZZProbeC(t *testing.T) {
	in := os.Getenv("PROBE_IN")
	out := os.Getenv("PROBE_OUT")
	if in == "" || out == "" {
		t.Skip("probe")
	}
	files, _ := filepath.Glob(filepath.Join(in, "*.json"))
	os.WriteFile(filepath.Join(out, "codemode.d.ts"), []byte(Stdlib()), 0o644)
	var servers []Server
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var list struct {
			Name  string       `json:"name"`
			Tools []corpusTool `json:"tools"`
		}
		if err := json.Unmarshal(data, &list); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		id := strings.TrimSuffix(filepath.Base(f), ".json")
		cs := corpusServer{id: id, tools: list.Tools}
		s := cs.server()
		servers = append(servers, s)
		mod, warns := ServerModule(s, nil)
		mod2, _ := ServerModule(s, nil)
		if mod != mod2 {
			t.Errorf("%s: nondeterministic", id)
		}
		glob, _ := ServerGlobal(s, nil)
		os.MkdirAll(filepath.Join(out, "module"), 0o755)
		os.MkdirAll(filepath.Join(out, "global"), 0o755)
		os.MkdirAll(filepath.Join(out, "tool", id), 0o755)
		os.WriteFile(filepath.Join(out, "module", id+".d.ts"), []byte(mod), 0o644)
		os.WriteFile(filepath.Join(out, "global", id+".d.ts"), []byte(glob), 0o644)
		for i, d := range ToolDecls(s, nil) {
			os.WriteFile(filepath.Join(out, "tool", id, strings.Repeat("0", 3-len(itoa(i)))+itoa(i)+".d.ts"), []byte(d+"export {};\n"), 0o644)
		}
		var ws []string
		for _, w := range warns {
			ws = append(ws, w.String())
		}
		os.WriteFile(filepath.Join(out, "module", id+".warnings"), []byte(strings.Join(ws, "\n")+"\n"), 0o644)
	}
	os.WriteFile(filepath.Join(out, "index.txt"), []byte(Index(servers, nil)), 0o644)
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
