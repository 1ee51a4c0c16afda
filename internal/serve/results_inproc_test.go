package serve_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/serve"
	"github.com/codemode-mcp/codemode/internal/store"
	"github.com/codemode-mcp/codemode/internal/testutil"
)

// A result over maxResultBytes is not lost: the response carries a JSON
// preview within the limit and a resource_link, and resources/read returns
// the whole result, to the session that made it only. The log entry
// maxLogBytes cut and a tool result too large for the sandbox are kept the
// same way.
func TestLargeResultsAsResources(t *testing.T) {
	t.Parallel()
	slow := newSlowServer()
	st := store.New(&store.Options{Dir: t.TempDir()})
	t.Cleanup(func() { st.Close() })
	g := newLongGateway(t, map[string]*mcp.Server{"slow": slow.Server}, nil, &serve.Options{Store: st})
	cs := g.connect(t, nil)
	ctx := testutil.Context(t)

	code := `const rows = [];
for (let i = 0; i < 20000; i++) rows.push({ i, name: "row " + i, tags: ["a", "b"] });
console.log("x".repeat(5000));
globalThis.__codemode_result__ = { count: rows.length, rows };`
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "codemode_run", Arguments: map[string]any{"code": code, "limits": map[string]any{"maxResultBytes": 100000, "maxLogBytes": 1000}}})
	if err != nil {
		t.Fatal(err)
	}
	wire, _ := json.Marshal(res)
	if len(wire) > 100000 {
		t.Errorf("the answer is %d bytes, over maxResultBytes", len(wire))
	}
	var resp runResponse
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &resp); err != nil {
		t.Fatal(err)
	}
	var preview struct {
		Count int   `json:"count"`
		Rows  []any `json:"rows"`
	}
	if err := json.Unmarshal(resp.Result, &preview); err != nil || preview.Count != 20000 || len(preview.Rows) < 2 {
		t.Fatalf("preview %.300s: %v", resp.Result, err)
	}
	if last, _ := preview.Rows[len(preview.Rows)-1].(string); !strings.Contains(last, "more item(s) not shown") || !strings.Contains(last, serve.ResultURIPrefix) {
		t.Errorf("the preview's marker: %v", preview.Rows[len(preview.Rows)-1])
	}
	var links []*mcp.ResourceLink
	for _, c := range res.Content {
		if l, ok := c.(*mcp.ResourceLink); ok {
			links = append(links, l)
		}
	}
	if len(links) != 2 {
		t.Fatalf("resource links: %+v", res.Content)
	}
	var truncated bool
	for _, d := range resp.diags() {
		truncated = truncated || d.Code == "RESULT_TRUNCATED" && strings.Contains(d.Message, links[0].URI)
	}
	if !truncated || resp.errorDiag() != nil {
		t.Errorf("diagnostics: %+v", resp.diags())
	}
	logs := *resp.Logs
	if !strings.Contains(logs[len(logs)-1].Message, links[1].URI) {
		t.Errorf("the log truncation warning does not say where the entry is: %+v", logs)
	}

	whole, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: links[0].URI})
	if err != nil {
		t.Fatal(err)
	}
	var full struct {
		Count int `json:"count"`
		Rows  []struct {
			I    int    `json:"i"`
			Name string `json:"name"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(whole.Contents[0].Text), &full); err != nil || len(full.Rows) != 20000 || full.Rows[19999].Name != "row 19999" {
		t.Fatalf("resources/read: %d rows, %v", len(full.Rows), err)
	}
	if *links[0].Size != int64(len(whole.Contents[0].Text)) || whole.Contents[0].MIMEType != "application/json" {
		t.Errorf("link %+v vs %d bytes, %s", links[0], len(whole.Contents[0].Text), whole.Contents[0].MIMEType)
	}
	entry, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: links[1].URI})
	if err != nil || entry.Contents[0].Text != strings.Repeat("x", 5000) {
		t.Errorf("the cut log entry: %v", err)
	}

	// Another session cannot read it.
	other := g.connect(t, nil)
	if _, err := other.ReadResource(ctx, &mcp.ReadResourceParams{URI: links[0].URI}); err == nil {
		t.Error("another session read the result")
	}

	// A tool result too large for the sandbox: the script's error says
	// where it is kept.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "codemode_run", Arguments: map[string]any{"code": `import { big } from "@codemode/servers/slow";
try { await big({ bytes: 3000000 }); } catch (e) { globalThis.__codemode_result__ = { name: e.name, resource: e.resource, message: e.message }; }`,
		"limits": map[string]any{"maxMemoryBytes": 2000000}}})
	if err != nil {
		t.Fatal(err)
	}
	var caught struct {
		Result struct{ Name, Resource, Message string }
	}
	json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &caught)
	if caught.Result.Name != "SandboxLimitError" || !strings.HasPrefix(caught.Result.Resource, serve.ResultURIPrefix) {
		t.Fatalf("%+v", caught)
	}
	kept, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: caught.Result.Resource})
	if err != nil || len(kept.Contents[0].Text) != 3000002 {
		t.Errorf("the tool result: %v", err)
	}
}
