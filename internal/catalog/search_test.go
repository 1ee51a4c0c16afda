package catalog

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/upstream"
)

// corpusServer loads testdata/corpus/<name>.tools.json as a Server.
func corpusServer(t testing.TB, name string) *Server {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "corpus", name+".tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	var list struct{ Tools []*mcp.Tool }
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	return FromSnapshot(&upstream.Snapshot{ServerID: name, Name: name, Tools: list.Tools})
}

func allCorpus(t testing.TB) []*Server {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "corpus", "*.tools.json"))
	var out []*Server
	for _, f := range files {
		out = append(out, corpusServer(t, strings.TrimSuffix(filepath.Base(f), ".tools.json")))
	}
	if len(out) < 20 {
		t.Fatalf("corpus has %d servers", len(out))
	}
	return out
}

func TestSearchFindsSumForAddTwoNumbers(t *testing.T) {
	everything := corpusServer(t, "server-everything")
	hits := Search([]*Server{everything}, "add two numbers", 3)
	if len(hits) == 0 || hits[0].Tool.Name != "get-sum" {
		t.Fatalf("want get-sum first, got %v", names(hits))
	}
	// Across the whole corpus it must still rank in the top results.
	hits = Search(allCorpus(t), "add two numbers", 5)
	if !containsTool(hits, "server-everything", "get-sum") {
		t.Fatalf("get-sum not in top 5 over the corpus: %v", names(hits))
	}
}

func TestSearchQueries(t *testing.T) {
	servers := allCorpus(t)
	for _, tc := range []struct {
		query, server, tool string
		top                 int
	}{
		{"read a file", "server-filesystem", "read_text_file", 5},
		{"create entities in the knowledge graph", "server-memory", "create_entities", 3},
		{"list pull requests", "github-mcp-server", "list_pull_requests", 3},
		{"take a screenshot of the page", "playwright-mcp", "browser_take_screenshot", 5},
		{"directory tree", "server-filesystem", "directory_tree", 3},
		{"createEntities", "server-memory", "create_entities", 1},
	} {
		hits := Search(servers, tc.query, tc.top)
		if !containsTool(hits, tc.server, tc.tool) {
			t.Errorf("%q: want %s/%s in top %d, got %v", tc.query, tc.server, tc.tool, tc.top, names(hits))
		}
	}
}

func TestSearchNoMatch(t *testing.T) {
	if hits := Search(allCorpus(t), "zzqxv", 10); len(hits) != 0 {
		t.Fatalf("got %v", names(hits))
	}
	if hits := Search(allCorpus(t), "the of and", 10); len(hits) != 0 {
		t.Fatalf("stop words matched: %v", names(hits))
	}
}

// A query of stop words only ("get") cannot be ranked; it is read as the
// start of tool names.
func TestSearchStopWordsMatchNames(t *testing.T) {
	everything := corpusServer(t, "server-everything")
	hits := Search([]*Server{everything}, "get", 0)
	if len(hits) < 2 || !containsTool(hits, "server-everything", "get-sum") {
		t.Fatalf("get: %v", names(hits))
	}
	for _, h := range hits {
		if !strings.HasPrefix(h.Tool.Name, "get") {
			t.Errorf("get matched %s", h.Tool.Name)
		}
	}
}

func TestWords(t *testing.T) {
	got := strings.Join(words("getHTTPResponse2 list_pull-requests"), " ")
	if got != "get http response 2 list pull requests" {
		t.Fatalf("words = %q", got)
	}
}

func containsTool(hits []Hit, server, tool string) bool {
	for _, h := range hits {
		if h.Server.ID == server && h.Tool.Name == tool {
			return true
		}
	}
	return false
}

func names(hits []Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Server.ID+"/"+h.Tool.Name)
	}
	return out
}

func BenchmarkSearchCorpus(b *testing.B) {
	servers := allCorpus(b)
	Search(servers, "warm", 1)
	for b.Loop() {
		Search(servers, "list open pull requests for a repository", 10)
	}
}

// Parameter names are indexed whether a schema is the SDK's map or the
// JSON a stdio server sent (upstream keeps that, for its key order).
func TestSearchParamsOfRawSchemas(t *testing.T) {
	s := FromSnapshot(&upstream.Snapshot{ServerID: "fs", Name: "fs", Tools: []*mcp.Tool{
		{Name: "edit", Description: "Edits a file", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{},"replacementText":{}}}`)},
		{Name: "other", Description: "Something else", InputSchema: map[string]any{"type": "object"}},
	}})
	if hits := Search([]*Server{s}, "replacement", 5); len(hits) != 1 || hits[0].Tool.Name != "edit" {
		t.Errorf("replacement: %v", names(hits))
	}
}
