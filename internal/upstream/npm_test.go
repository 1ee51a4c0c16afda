package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tests against the real reference servers from testdata/npm.

// checkEverything exercises the everything server over whatever transport
// id uses.
func checkEverything(t *testing.T, m *Manager, id string) {
	t.Helper()
	snap := snapshot(t, m, id)
	if snap.Info == nil || snap.Info.Name != "mcp-servers/everything" {
		t.Errorf("serverInfo = %+v, want name mcp-servers/everything", snap.Info)
	}
	if snap.Capabilities == nil || snap.Capabilities.Tools == nil {
		t.Errorf("capabilities = %+v, want tools", snap.Capabilities)
	}
	if snap.Instructions == "" {
		t.Error("no instructions")
	}
	names := toolNames(snap)
	if !slices.IsSorted(names) {
		t.Errorf("tools not sorted: %v", names)
	}
	for _, want := range []string{"echo", "get-sum", "trigger-long-running-operation"} {
		if snap.Tool(want) == nil {
			t.Errorf("tool %q missing from %v", want, names)
		}
	}
	// Whatever the transport, schemas keep the server's key order (the
	// SDK's maps would sort them): name, data, outputType.
	if gz := snap.Tool("gzip-file-as-resource"); gz == nil {
		t.Errorf("gzip-file-as-resource missing")
	} else if raw, ok := gz.InputSchema.(json.RawMessage); !ok {
		t.Errorf("gzip-file-as-resource's inputSchema is %T, not the JSON the server sent", gz.InputSchema)
	} else if n, d := bytes.Index(raw, []byte(`"name"`)), bytes.Index(raw, []byte(`"data"`)); !(0 <= n && n < d) {
		t.Errorf("gzip-file-as-resource's inputSchema lost the server's order: %s", raw)
	}
	if got := call(t, m, id, "get-sum", map[string]any{"a": 2, "b": 3}); !strings.Contains(got, "is 5") {
		t.Errorf("get-sum(2, 3) = %q", got)
	}
	if got := call(t, m, id, "echo", []byte(`{"message":"héllo"}`)); !strings.Contains(got, "héllo") {
		t.Errorf("echo = %q", got)
	}
	// A failing tool is a result, not an error.
	ctx := context.Background()
	res, err := m.CallTool(ctx, id, "get-sum", map[string]any{"a": "x"})
	if err != nil {
		t.Fatalf("get-sum with bad input: %v", err)
	}
	if !res.IsError {
		t.Errorf("get-sum with bad input: IsError = false: %s", resultText(t, res))
	}
	// The emceepee surface.
	resources, err := m.ListResources(ctx, id)
	if err != nil || len(resources) == 0 {
		t.Fatalf("ListResources = %d, %v", len(resources), err)
	}
	read, err := m.ReadResource(ctx, id, resources[0].URI)
	if err != nil || len(read.Contents) == 0 {
		t.Fatalf("ReadResource(%s) = %+v, %v", resources[0].URI, read, err)
	}
	templates, err := m.ListResourceTemplates(ctx, id)
	if err != nil || len(templates) == 0 {
		t.Fatalf("ListResourceTemplates = %d, %v", len(templates), err)
	}
	prompts, err := m.ListPrompts(ctx, id)
	if err != nil || !slices.ContainsFunc(prompts, func(p *mcp.Prompt) bool { return p.Name == "args-prompt" }) {
		t.Fatalf("ListPrompts = %d, %v", len(prompts), err)
	}
	got, err := m.GetPrompt(ctx, id, "args-prompt", map[string]string{"city": "Lyon"})
	if err != nil || !strings.Contains(mustJSON(t, got), "Lyon") {
		t.Fatalf("GetPrompt(args-prompt) = %s, %v", mustJSON(t, got), err)
	}
	// An unknown tool is a JSON-RPC error from the server, or a tool error.
	res, err = m.CallTool(ctx, id, "no-such-tool", nil)
	if err == nil && !res.IsError {
		t.Errorf("unknown tool: no error")
	}
	if err != nil {
		asError(t, err, id, Rejected)
	}
}

func TestEverythingStdio(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, []config.Server{npmServer(t, "everything", "mcp-server-everything", "stdio")}, nil)
	checkEverything(t, m, "everything")
	if st := m.Status("everything"); st.State != StateConnected || st.PID == 0 {
		t.Errorf("Status = %+v, want connected with a pid", st)
	}
}

// The real server-everything behind a wrapper that prints a banner on
// stdout first, as many servers' start scripts do: the banner is skipped
// with a warning and the server works.
func TestEverythingAfterABanner(t *testing.T) {
	t.Parallel()
	node, script := npmPath(t, "node"), npmPath(t, "mcp-server-everything")
	s := config.Server{ID: "everything", Name: "everything", Transport: config.Stdio, Command: "/bin/sh",
		Args: []string{"-c", `echo "Everything MCP server v2026 - starting (stdio)"; exec "$0" "$1" stdio`, node, script}}
	m, logs := newManager(t, []config.Server{s}, nil)
	checkEverything(t, m, "everything")
	if !strings.Contains(logs.String(), `line="Everything MCP server v2026 - starting (stdio)"`) {
		t.Errorf("no warning quoting the banner:\n%s", logs)
	}
}

func TestEverythingStreamableHTTP(t *testing.T) {
	t.Parallel()
	base := startNpmHTTP(t, "mcp-server-everything", "streamableHttp")
	m, _ := newManager(t, []config.Server{{ID: "everything", Name: "everything", Transport: config.Streamable, URL: base + "/mcp"}}, nil)
	checkEverything(t, m, "everything")
}

func TestEverythingSSE(t *testing.T) {
	t.Parallel()
	base := startNpmHTTP(t, "mcp-server-everything", "sse")
	m, _ := newManager(t, []config.Server{{ID: "everything", Name: "everything", Transport: config.SSE, URL: base + "/sse"}}, nil)
	checkEverything(t, m, "everything")
}

// A remote server that went away is reported as unavailable from the first
// call on, not as a server rejecting the request.
func TestRemoteGoneIsUnavailable(t *testing.T) {
	t.Parallel()
	base, cmd := startNpmHTTPProc(t, "mcp-server-everything", "streamableHttp")
	m, _ := newManager(t, []config.Server{{ID: "everything", Name: "everything", Transport: config.Streamable, URL: base + "/mcp"}}, nil)
	if got := call(t, m, "everything", "get-sum", map[string]any{"a": 1, "b": 1}); !strings.Contains(got, "is 2") {
		t.Fatalf("get-sum = %q", got)
	}
	cmd.Process.Kill()
	cmd.Wait()
	_, err := m.CallTool(context.Background(), "everything", "get-sum", map[string]any{"a": 1, "b": 1})
	e := asError(t, err, "everything", Unavailable)
	if !strings.Contains(e.Hint, "running and reachable") {
		t.Errorf("hint %q", e.Hint)
	}
}

// The call timeout cancels a long-running tool, and the session survives.
func TestEverythingCallTimeout(t *testing.T) {
	t.Parallel()
	s := npmServer(t, "everything", "mcp-server-everything", "stdio")
	s.CallTimeout = 300 * time.Millisecond
	m, _ := newManager(t, []config.Server{s}, nil)
	snapshot(t, m, "everything")
	// The operation takes 20 s: without the timeout it would succeed.
	_, err := m.CallTool(context.Background(), "everything", "trigger-long-running-operation", map[string]any{"duration": 20, "steps": 2})
	e := asError(t, err, "everything", Timeout)
	if e.Hint == "" || !strings.Contains(e.Error(), "300ms") {
		t.Errorf("timeout error %q (hint %q) does not say the limit", e, e.Hint)
	}
	if got := call(t, m, "everything", "get-sum", map[string]any{"a": 1, "b": 1}); !strings.Contains(got, "is 2") {
		t.Errorf("after a timeout, get-sum = %q", got)
	}
}

func TestMemoryStdio(t *testing.T) {
	t.Parallel()
	s := npmServer(t, "memory", "mcp-server-memory")
	s.Env = map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}
	m, _ := newManager(t, []config.Server{s}, nil)
	call(t, m, "memory", "create_entities", map[string]any{"entities": []any{
		map[string]any{"name": "Ada", "entityType": "person", "observations": []string{"wrote the first program"}},
	}})
	if got := call(t, m, "memory", "read_graph", nil); !strings.Contains(got, "wrote the first program") {
		t.Errorf("read_graph = %q", got)
	}
	data, err := os.ReadFile(s.Env["MEMORY_FILE_PATH"])
	if err != nil || !strings.Contains(string(data), "Ada") {
		t.Errorf("the child did not get MEMORY_FILE_PATH from env: %q, %v", data, err)
	}
}

func TestFilesystemStdio(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "note.txt"), []byte("hello from the test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, _ := newManager(t, []config.Server{npmServer(t, "fs", "mcp-server-filesystem", dir)}, nil)
	// A stdio server's schemas keep its own key order (the SDK's maps
	// would sort them): path, edits, dryRun, not dryRun, edits, path.
	raw, ok := snapshot(t, m, "fs").Tool("edit_file").InputSchema.(json.RawMessage)
	if !ok {
		t.Fatalf("edit_file's inputSchema is not the JSON the server sent")
	}
	if p, e, d := bytes.Index(raw, []byte(`"path"`)), bytes.Index(raw, []byte(`"edits"`)), bytes.Index(raw, []byte(`"dryRun"`)); !(0 <= p && p < e && e < d) {
		t.Errorf("edit_file's inputSchema lost the server's order: %s", raw)
	}
	if got := call(t, m, "fs", "list_directory", map[string]any{"path": dir}); !strings.Contains(got, "note.txt") {
		t.Errorf("list_directory = %q", got)
	}
	if got := call(t, m, "fs", "read_text_file", map[string]any{"path": filepath.Join(dir, "note.txt")}); !strings.Contains(got, "hello from the test") {
		t.Errorf("read_text_file = %q", got)
	}
	res, err := m.CallTool(context.Background(), "fs", "read_text_file", map[string]any{"path": "/etc/passwd"})
	if err != nil || !res.IsError {
		t.Errorf("reading outside the allowed dir: %v, %+v", err, res)
	}
}

// A result larger than the SDK reads in one stdio message (16 MiB) costs
// that call, with an error that says so and how to ask for less; the server
// is not blamed, and the next call restarts it at once, even while the old
// process is still being closed (the filesystem server ignores EOF on stdin
// and waits for SIGTERM, TerminateTimeout later).
func TestHugeResultRestartsTheServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := filepath.Join(dir, "big.log")
	line := strings.Repeat("a log line with some text in it\n", 1<<10)
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	for written := 0; written <= mcp.DefaultMaxLineLength; written += len(line) {
		f.WriteString(line)
	}
	f.Close()
	m, _ := newManager(t, []config.Server{npmServer(t, "fs", "mcp-server-filesystem", dir)}, &Options{TerminateTimeout: 5 * time.Second})
	snapshot(t, m, "fs")
	_, err = m.CallTool(context.Background(), "fs", "read_text_file", map[string]any{"path": big})
	e := asError(t, err, "fs", Died)
	if !errors.Is(err, ErrMessageTooLarge) || !strings.Contains(e.Hint, "ask the tool for less") {
		t.Errorf("error %q (hint %q), want ErrMessageTooLarge with a hint to ask for less", err, e.Hint)
	}
	if strings.Contains(err.Error(), "other than JSON-RPC") || strings.Contains(e.Hint, "stdout") {
		t.Errorf("the server is blamed for writing garbage: %q (hint %q)", err, e.Hint)
	}
	if got := call(t, m, "fs", "list_allowed_directories", nil); !strings.Contains(got, filepath.Base(dir)) {
		t.Errorf("the next call = %q, want the server restarted at once", got)
	}
}

func TestSequentialThinkingStdio(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, []config.Server{npmServer(t, "think", "mcp-server-sequential-thinking")}, nil)
	snap := snapshot(t, m, "think")
	if snap.Tool("sequentialthinking") == nil {
		t.Fatalf("tools = %v", toolNames(snap))
	}
	got := call(t, m, "think", "sequentialthinking", map[string]any{
		"thought": "first step", "nextThoughtNeeded": true, "thoughtNumber": 1, "totalThoughts": 2,
	})
	if !strings.Contains(got, "thoughtNumber") {
		t.Errorf("sequentialthinking = %q", got)
	}
}
