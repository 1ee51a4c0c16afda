package proxy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codemode-mcp/codemode/internal/proxy"
	"github.com/codemode-mcp/codemode/internal/testutil"
)

// The proxy end to end: the official openai npm client (testdata/npm) as
// the client, owning a web search tool, and a scripted OpenAI-compatible
// model server (a real HTTP server answering canned completions: no model
// is reachable here) that writes the seed's example code. The client runs
// its own tool when asked; the model sees only execute_code and its
// result; the client gets the model's final text.

// seedCode reads the code of one of the seed's example conversations.
func seedCode(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "replay", "testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	var msgs []map[string]any
	json.Unmarshal(b, &msgs)
	return msgs[1]["code"].(string)
}

// scriptedModel answers the first request of a conversation with an
// execute_code call of code, and a request whose last message is that
// call's result with "FINAL: " and the result, streamed when asked.
type scriptedModel struct {
	t      *testing.T
	code   string
	callID string

	mu       sync.Mutex
	requests []map[string]any
}

func (m *scriptedModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	var req map[string]any
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.requests = append(m.requests, req)
	m.mu.Unlock()
	msgs := req["messages"].([]any)
	last := msgs[len(msgs)-1].(map[string]any)
	stream, _ := req["stream"].(bool)
	if last["role"] == "tool" && last["tool_call_id"] == m.callID {
		final := "FINAL: " + last["content"].(string)
		if !stream {
			writeJSON(w, map[string]any{"id": "chatcmpl-2", "object": "chat.completion", "created": 1, "model": "test-model",
				"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": final}, "finish_reason": "stop"}},
				"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
			return
		}
		third := len(final) / 3
		sse(w, chunk(map[string]any{"role": "assistant", "content": ""}, nil),
			chunk(map[string]any{"content": final[:third]}, nil),
			chunk(map[string]any{"content": final[third : 2*third]}, nil),
			chunk(map[string]any{"content": final[2*third:]}, nil),
			chunk(map[string]any{}, "stop"))
		return
	}
	args := string(mustJSON(map[string]string{"code": m.code}))
	if !stream {
		writeJSON(w, map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "test-model",
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": nil,
				"tool_calls": []any{map[string]any{"id": m.callID, "type": "function", "function": map[string]any{"name": "execute_code", "arguments": args}}}},
				"finish_reason": "tool_calls"}},
			"usage": map[string]any{"prompt_tokens": 20, "completion_tokens": 30, "total_tokens": 50}})
		return
	}
	half := len(args) / 2
	sse(w, chunk(map[string]any{"role": "assistant", "content": nil}, nil),
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": m.callID, "type": "function", "function": map[string]any{"name": "execute_code", "arguments": ""}}}}, nil),
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": args[:half]}}}}, nil),
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": args[half:]}}}}, nil),
		chunk(map[string]any{}, "tool_calls"))
}

func chunk(delta map[string]any, finish any) map[string]any {
	return map[string]any{"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 1, "model": "test-model",
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
}

func sse(w http.ResponseWriter, chunks ...map[string]any) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, c := range chunks {
		fmt.Fprintf(w, "data: %s\n\n", mustJSON(c))
		w.(http.Flusher).Flush()
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(mustJSON(v))
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

type clientOut struct {
	Final string
	Calls []struct {
		ID        string
		Name      string
		Arguments map[string]any
	}
	Requests     int
	CodeMessages []string
}

// runClient runs testdata/client.mjs against the proxy.
func runClient(t *testing.T, baseURL, toolName, prompt string, stream bool) clientOut {
	t.Helper()
	plan := mustJSON(map[string]any{"baseURL": baseURL, "apiKey": "sk-test", "toolName": toolName, "prompt": prompt, "stream": stream})
	ctx := testutil.Context(t)
	cmd := exec.CommandContext(ctx, testutil.Node(t), "testdata/client.mjs", string(plan))
	cmd.Env = append(os.Environ(), "CODEMODE_TEST_OPENAI="+filepath.Join(testutil.Root(), "testdata", "npm", "node_modules", "openai", "index.mjs"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("client: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.String(), stdout.String())
	}
	var out clientOut
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("client output %q: %v\nstderr:\n%s", stdout.String(), err, stderr.String())
	}
	return out
}

func TestProxyEndToEnd(t *testing.T) {
	for _, tc := range []struct {
		name, file, callID, toolName string
		// batches: the calls of each client round, by query.
		batches [][]string
		data    string // keys of the code's result
	}{
		{"parallel", "seed-parallel.json", "call_par1", "web_search", [][]string{{"sport news", "international affaires news"}}, `"sportNews"`},
		{"sequential", "seed-sequential.json", "call_seq1", "webSearch", [][]string{{"news in France today"}, {"news in US today"}}, `"france"`},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, stream), func(t *testing.T) {
				m := &scriptedModel{t: t, code: seedCode(t, tc.file), callID: tc.callID}
				modelSrv := httptest.NewServer(m)
				defer modelSrv.Close()
				p, err := proxy.New(&proxy.Options{Upstream: modelSrv.URL + "/v1", Now: func() time.Time { return time.UnixMilli(1_750_000_000_000) }})
				if err != nil {
					t.Fatal(err)
				}
				proxySrv := httptest.NewServer(p.Handler())
				defer proxySrv.Close()

				out := runClient(t, proxySrv.URL+"/v1", tc.toolName, "Compare the news", stream)

				// The client ran its own tool, batch by batch, with our ids.
				var got [][]string
				pos := 0
				for i, n := range tc.batches {
					var b []string
					for range n {
						c := out.Calls[pos]
						if c.Name != tc.toolName || c.ID != fmt.Sprintf("%s_%d", tc.callID, pos) {
							t.Errorf("call %d: %s %s", pos, c.ID, c.Name)
						}
						b = append(b, fmt.Sprint(c.Arguments["query"]))
						pos++
					}
					got = append(got, b)
					_ = i
				}
				if fmt.Sprint(got) != fmt.Sprint(tc.batches) || len(out.Calls) != pos {
					t.Errorf("client calls %+v, want batches %v", out.Calls, tc.batches)
				}
				if out.Requests != len(tc.batches)+1 || len(out.CodeMessages) != len(tc.batches) || out.CodeMessages[0] != tc.callID {
					t.Errorf("client made %d requests, code messages %v", out.Requests, out.CodeMessages)
				}
				// The model saw execute_code only, then its result.
				if len(m.requests) != 2 {
					t.Fatalf("the model got %d requests, want 2", len(m.requests))
				}
				tools := m.requests[0]["tools"].([]any)
				fn := tools[0].(map[string]any)["function"].(map[string]any)
				if len(tools) != 1 || fn["name"] != "execute_code" || !strings.Contains(fn["description"].(string), "export function "+tc.toolName+"(input: { query: string") {
					t.Errorf("tools offered to the model: %s", mustJSON(tools))
				}
				second := m.requests[1]["messages"].([]any)
				if len(second) != 4 {
					t.Fatalf("the model's second request has %d messages: %s", len(second), mustJSON(second))
				}
				for _, raw := range second {
					s := string(mustJSON(raw))
					if strings.Contains(s, "code_message") || strings.Contains(s, `"name":"`+tc.toolName+`"`) {
						t.Errorf("the model sees the client's side of the block: %s", s)
					}
				}
				result := second[3].(map[string]any)
				content := result["content"].(string)
				if result["tool_call_id"] != tc.callID || !strings.Contains(content, `"status":"success"`) || !strings.Contains(content, tc.data) || !strings.Contains(content, "Real Madrid") && tc.name == "parallel" {
					t.Errorf("code result sent to the model: %s", mustJSON(result))
				}
				// The client got the model's final answer.
				if out.Final != "FINAL: "+content {
					t.Errorf("final %q\nwant %q", out.Final, "FINAL: "+content)
				}
			})
		}
	}
}

// TestProxyPassThrough: without tools, requests and answers go through as
// they are.
func TestProxyPassThrough(t *testing.T) {
	var got map[string]any
	modelSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewDecoder(r.Body).Decode(&got)
		writeJSON(w, map[string]any{"id": "x", "object": "chat.completion", "choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": "hi"}, "finish_reason": "stop"}}})
	}))
	defer modelSrv.Close()
	p, _ := proxy.New(&proxy.Options{Upstream: modelSrv.URL + "/v1", Model: "forced"})
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","temperature":0.5,"messages":[{"role":"user","content":"hello"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != 200 || got["model"] != "forced" || got["temperature"] != 0.5 || body["id"] != "x" {
		t.Errorf("status %d, upstream got %v, client got %v", resp.StatusCode, got, body)
	}
}

// TestProxyErrors: bad requests and an upstream failure come back in
// OpenAI's error shape.
func TestProxyErrors(t *testing.T) {
	modelSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		w.Write([]byte(`{"error":{"message":"slow down","type":"rate_limit"}}`))
	}))
	defer modelSrv.Close()
	p, _ := proxy.New(&proxy.Options{Upstream: modelSrv.URL + "/v1", AuthToken: "tok"})
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	post := func(body, token string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	tools := `"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]`
	for _, tc := range []struct {
		body, token string
		status      int
		want        string
	}{
		{`{"messages":[{"role":"user","content":"x"}]}`, "", 401, "Bearer"},
		{`not json`, "tok", 400, "not a JSON"},
		{`{"messages":[]}`, "tok", 400, "non-empty"},
		{`{"messages":[{"role":"user","content":"x"}],` + tools + `}`, "tok", 429, "slow down"},
		{`{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":null,"tool_calls":[{"id":"c_0","type":"function","function":{"name":"f","arguments":"{}"}}],"code_message":{"role":"code","id":"c","code":"await f({})"}}],` + tools + `}`, "tok", 400, "no tool message"},
	} {
		status, body := post(tc.body, tc.token)
		if status != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s, want %d with %q", tc.body, status, body, tc.status, tc.want)
		}
	}
	// A page of another site, and DNS rebinding without a token.
	p2, _ := proxy.New(&proxy.Options{Upstream: modelSrv.URL + "/v1"})
	open := httptest.NewServer(p2.Handler())
	defer open.Close()
	for _, h := range []map[string]string{{"Origin": "https://evil.example"}, {"Host": "evil.example"}} {
		req, _ := http.NewRequest(http.MethodPost, open.URL+"/v1/chat/completions", strings.NewReader(`{"messages":[{"role":"user","content":"x"}]}`))
		for k, v := range h {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%v: status %d, want 403", h, resp.StatusCode)
		}
	}
	if _, err := proxy.New(&proxy.Options{Upstream: "api.openai.com"}); err == nil {
		t.Error("an upstream without a scheme was accepted")
	}
}

// An upstream API whose answer is larger than the proxy reads (a 64 MiB
// body, written until the proxy stops reading): the client gets a 502 that
// says so, and the proxy read no more than its bound. It read answers
// whole, so an upstream answering with gigabytes took the gateway's memory.
func TestProxyHugeAnswer(t *testing.T) {
	var wrote atomic.Int64
	const size = 64 << 20
	modelSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		chunk := []byte(strings.Repeat(" ", 64<<10))
		w.Write([]byte(`{"id":"x","choices":[`))
		for wrote.Load() < size {
			n, err := w.Write(chunk)
			wrote.Add(int64(n))
			if err != nil {
				return
			}
		}
		w.Write([]byte(`]}`))
	}))
	defer modelSrv.Close()
	p, _ := proxy.New(&proxy.Options{Upstream: modelSrv.URL + "/v1"})
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	// With tools, so that the proxy reads the answer (without, it passes
	// the answer on as it comes).
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"hello"}],`+
		`"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(b), "larger than 16 MiB") {
		t.Errorf("status %d: %.300s", resp.StatusCode, b)
	}
	modelSrv.CloseClientConnections()
	if n := wrote.Load(); n >= size {
		t.Errorf("the proxy read the whole %d MiB answer", n>>20)
	}
}
