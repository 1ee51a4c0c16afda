package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/codemode-mcp/codemode/internal/testutil"
)

// A line on stdin that is not a JSON-RPC message is answered with a
// JSON-RPC error (id null) and skipped; the session goes on, and a call in
// flight keeps its answer. The SDK alone ends the session at such a line.
func TestStdioSurvivesMalformedLines(t *testing.T) {
	t.Parallel()
	g := startStdio(t, "--config", minimalConfig(t))
	stdin, stdout, stderr := g.stdin, g.stdout, g.stderr
	lines := []string{
		// A byte order mark first, and trailing blanks, which the SDK's
		// reader alone refuses.
		"\uFEFF" + `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}  `,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"codemode_run","arguments":{"code":"await new Promise((r) => setTimeout(r, 300)); globalThis.__codemode_result__ = 42;"}}}`,
		`garbage{`,
		``,
		`123`,
		`{"id":3}`,
		`[`,
		`[]`,
		`[{"jsonrpc":"2.0","id":9,"method":"ping"}]`,
		`{"jsonrpc":"1.0","id":5,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":null,"error":"not an object"}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`,
	}
	for _, l := range lines {
		stdin.Write([]byte(l + "\n"))
	}
	got := map[string]json.RawMessage{} // by id
	var errs []int
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 1<<20)
	// Were an answer never to come, the scan would end when the process is
	// killed, shortly before the test's deadline.
	defer context.AfterFunc(testutil.Context(t), func() { g.cmd.Process.Kill() })()
	for (got["1"] == nil || got["2"] == nil || got["4"] == nil || got["5"] == nil) && sc.Scan() {
		var m struct {
			ID    json.RawMessage     `json:"id"`
			Error *struct{ Code int } `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("stdout carries a non-JSON line %q", sc.Text())
		}
		if string(m.ID) == "null" && m.Error != nil {
			errs = append(errs, m.Error.Code)
			continue
		}
		got[string(m.ID)] = append(json.RawMessage(nil), sc.Bytes()...)
	}
	if got["1"] == nil || !strings.Contains(string(got["1"]), "serverInfo") {
		t.Errorf("initialize after a byte order mark, with trailing blanks: %s\n%s", got["1"], tail(stderr.String(), 1500))
	}
	if got["2"] == nil || !strings.Contains(string(got["2"]), "42") {
		t.Errorf("the call in flight lost its answer: %s\n%s", got["2"], tail(stderr.String(), 1500))
	}
	if got["4"] == nil || !strings.Contains(string(got["4"]), "codemode_run") {
		t.Errorf("the session ended at the malformed lines: tools/list got %s\n%s", got["4"], tail(stderr.String(), 1500))
	}
	// garbage{, 123, [, [] and the batch; not the malformed response.
	if want := []int{-32700, -32600, -32700, -32600, -32600}; !slices.Equal(errs, want) {
		t.Errorf("errors with id null = %v, want %v (the malformed response unanswered)", errs, want)
	}
	// A bad request whose id can be read is answered under that id, so
	// that its caller stops waiting.
	for _, id := range []string{"3", "5"} {
		if e := got[id]; e == nil || !strings.Contains(string(e), "-32600") {
			t.Errorf("the bad request with id %s got %s", id, e)
		}
	}
}
