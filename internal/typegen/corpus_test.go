package typegen

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// corpusDir holds real tools/list results (see its README).
const corpusDir = "../../testdata/corpus"

// corpusTool is one tool of a tools/list result, schemas kept raw so that
// property order survives.
type corpusTool struct {
	Name         string               `json:"name"`
	Title        string               `json:"title,omitempty"`
	Description  string               `json:"description,omitempty"`
	InputSchema  json.RawMessage      `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage      `json:"outputSchema,omitempty"`
	Annotations  *mcp.ToolAnnotations `json:"annotations,omitempty"`
	Execution    *struct {
		TaskSupport string `json:"taskSupport"`
	} `json:"execution,omitempty"`
}

// taskSupport is the tool's declared execution.taskSupport, or "".
func (t corpusTool) taskSupport() string {
	if t.Execution == nil {
		return ""
	}
	return t.Execution.TaskSupport
}

type corpusServer struct {
	id    string
	tools []corpusTool
}

// loadCorpus reads every corpus server, sorted by id.
func loadCorpus(t testing.TB) []corpusServer {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(corpusDir, "*.tools.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus in %s: %v", corpusDir, err)
	}
	sort.Strings(files)
	var out []corpusServer
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var list struct {
			Tools []corpusTool `json:"tools"`
		}
		if err := json.Unmarshal(data, &list); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, corpusServer{id: strings.TrimSuffix(filepath.Base(f), ".tools.json"), tools: list.Tools})
	}
	return out
}

// server converts a corpus server to the generator's input.
func (cs corpusServer) server() Server {
	s := Server{ID: cs.id, Name: cs.id}
	for _, t := range cs.tools {
		tool := Tool{Name: t.Name, Title: t.Title, Description: t.Description, Annotations: t.Annotations, TaskSupport: t.taskSupport()}
		if len(t.InputSchema) > 0 {
			tool.InputSchema = t.InputSchema
		}
		if len(t.OutputSchema) > 0 {
			tool.OutputSchema = t.OutputSchema
		}
		s.Tools = append(s.Tools, tool)
	}
	return s
}

// original is what a client would have been sent for the tool: the minified
// JSON of name, title, description, inputSchema, outputSchema and
// annotations.
func (t corpusTool) original() string {
	b, _ := json.Marshal(t)
	var c bytes.Buffer
	if err := json.Compact(&c, b); err != nil {
		return string(b)
	}
	return c.String()
}
