package serve_test

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// A result goes over the wire once and compact: 1 MiB of "<" is not sent
// twice (as text and as structuredContent) nor HTML-escaped (\u003c, six
// bytes for one). It once took 12.6 MB. tools/list's TypeScript (Promise<…>,
// =>) is not escaped either.
func TestWireFormIsCompact(t *testing.T) {
	t.Parallel()
	g := startStdio(t, "--config", writeConfig(t, upstreams{"everything": everythingEntry(t)}, nil))
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"codemode_run","arguments":{"code":"globalThis.__codemode_result__ = \"<\".repeat(1 << 20);","limits":{"maxResultBytes":2097152}}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
	}
	for _, l := range lines {
		g.stdin.Write([]byte(l + "\n"))
	}
	got := map[string]string{}
	sc := bufio.NewScanner(g.stdout)
	sc.Buffer(nil, 64<<20)
	deadline := time.AfterFunc(60*time.Second, func() { g.cmd.Process.Kill() })
	defer deadline.Stop()
	for (got["2"] == "" || got["3"] == "") && sc.Scan() {
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("stdout carries a non-JSON line %.200q", sc.Text())
		}
		got[string(m.ID)] = sc.Text()
	}
	call, list := got["2"], got["3"]
	if call == "" || list == "" {
		t.Fatalf("no answer: %v\n%s", sc.Err(), tail(g.stderr.String(), 2000))
	}
	var res struct {
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			StructuredContent json.RawMessage `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(call), &res); err != nil || len(res.Result.Content) == 0 {
		t.Fatalf("tools/call: %v: %.500s", err, call)
	}
	var resp struct {
		Result string `json:"result"`
	}
	if err := json.Unmarshal([]byte(res.Result.Content[0].Text), &resp); err != nil || resp.Result != strings.Repeat("<", 1<<20) {
		t.Fatalf("the result did not come back whole (%v): %.300s", err, call)
	}
	if len(res.Result.StructuredContent) > 0 {
		t.Errorf("the response is sent twice, as text and as structuredContent")
	}
	if strings.Contains(call, `\u003c`) || strings.Contains(list, `\u003c`) || strings.Contains(list, `\u003e`) {
		t.Errorf("HTML escapes on the wire: %d in tools/call, %d in tools/list", strings.Count(call, `\u003c`), strings.Count(list, `\u003c`)+strings.Count(list, `\u003e`))
	}
	if n := len(call); n > 1<<20+4096 {
		t.Errorf("a 1 MiB result took %d bytes on the wire, want it sent once, unescaped (about 1 MiB)", n)
	}
	if !strings.Contains(list, "Promise<") {
		t.Errorf("tools/list has no TypeScript declarations to check: %.300s", list)
	}
}
