package serve_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codemode-mcp/codemode/internal/replay"
)

// POST /v1/code/step on `codemode serve --http`: the replay step function
// (package replay) over HTTP, behind /mcp's token, Origin check and body
// size limit.

const stepRequest = `{"messages": [{"role": "code", "id": "c1", "code": "const [a, b] = await Promise.all([web_search({ query: \"x\" }), web_search({ query: \"y\" })]); return a + b;"}],
 "tools": [{"type": "function", "function": {"name": "web_search", "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}}]}`

func postStep(t *testing.T, url, body string, headers map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestHTTPCodeStep(t *testing.T) {
	t.Parallel()
	gw := startHTTP(t, minimalConfig(t), "--auth-token", "s3cret")
	url := strings.TrimSuffix(gw.url, "/mcp") + "/v1/code/step"
	auth := map[string]string{"Authorization": "Bearer s3cret"}

	// One step, then the next with the client's results.
	status, body := postStep(t, url, stepRequest, auth)
	var resp struct {
		Message struct {
			Role      string
			ToolCalls []struct {
				ID       string
				Function struct{ Name, Arguments string }
			} `json:"tool_calls"`
			Result *struct {
				Status string
				Data   any
			}
		}
		Logs, Diagnostics []any
	}
	if status != http.StatusOK || json.Unmarshal([]byte(body), &resp) != nil || resp.Message.Role != "assistant" || len(resp.Message.ToolCalls) != 2 ||
		resp.Message.ToolCalls[0].ID != "c1_0" || resp.Message.ToolCalls[1].Function.Arguments != `{"query":"y"}` || resp.Logs == nil || resp.Diagnostics == nil {
		t.Fatalf("status %d: %s", status, body)
	}
	var req map[string]any
	json.Unmarshal([]byte(stepRequest), &req)
	var asst any
	json.Unmarshal([]byte(body), &struct{ Message *any }{&asst})
	req["messages"] = append(req["messages"].([]any), asst,
		map[string]any{"role": "tool", "tool_call_id": "c1_0", "content": "A"},
		map[string]any{"role": "tool", "tool_call_id": "c1_1", "content": "B"})
	next, _ := json.Marshal(req)
	status, body = postStep(t, url, string(next), auth)
	resp.Message.Result = nil
	if status != http.StatusOK || json.Unmarshal([]byte(body), &resp) != nil || resp.Message.Role != "code_result" || resp.Message.Result == nil || resp.Message.Result.Data != "AB" {
		t.Fatalf("second step: status %d: %s", status, body)
	}

	// The token, the Origin check and the body size limit of /mcp.
	if status, body := postStep(t, url, stepRequest, nil); status != http.StatusUnauthorized {
		t.Errorf("without the token: %d %s", status, body)
	}
	if status, _ := postStep(t, url, stepRequest, map[string]string{"Authorization": "Bearer s3cret", "Origin": "https://evil.example"}); status != http.StatusForbidden {
		t.Errorf("foreign Origin: %d", status)
	}
	huge := `{"messages": [{"role": "code", "id": "c", "code": "` + strings.Repeat("x", 5<<20) + `"}]}`
	if status, body := postStep(t, url, huge, auth); status != http.StatusRequestEntityTooLarge || !strings.Contains(body, "larger than") {
		t.Errorf("5 MiB body: %d %.200s", status, body)
	}
	// A malformed request: 400 with what to fix.
	if status, body := postStep(t, url, `{"messages": [{"role": "user", "content": "hi"}]}`, auth); status != http.StatusBadRequest || !strings.Contains(body, "no code message") || !strings.Contains(body, "hint") {
		t.Errorf("no code message: %d %s", status, body)
	}
	req2, _ := http.NewRequest(http.MethodGet, url, nil)
	req2.Header.Set("Authorization", "Bearer s3cret")
	if r, err := http.DefaultClient.Do(req2); err != nil || r.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %v %v", r, err)
	}
}

// TestServeRecordDir: with codemode.recordDir, every run of a serving
// surface is recorded; the bundle replays offline to the same outcome.
func TestServeRecordDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeConfig(t, upstreams{"everything": everythingEntry(t)}, map[string]any{"recordDir": dir, "surfaces": []string{"run", "search-execute"}})
	out := runTS(t, stdioConn(t, cfg), runStep(`import { get_sum } from "@codemode/servers/everything";
globalThis.__codemode_result__ = [await get_sum({ a: 1, b: 2 }), Math.random(), Date.now()];`),
		callStep("execute", map[string]any{"code": `async () => { const r = await everything.get_sum({ a: 3, b: 4 }); return r; }`}))
	first, second := okRun(t, out[0]), okRun(t, out[1])
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != 2 {
		t.Fatalf("%d bundles in the record dir, want 2 (results %s, %s)", len(files), first, second)
	}
	for _, f := range files {
		b, err := replay.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := replay.Replay(context.Background(), b)
		if err != nil || !rep.Reproduced {
			t.Errorf("%s: %v %s", f, err, replay.Marshal(rep))
		}
	}
}
