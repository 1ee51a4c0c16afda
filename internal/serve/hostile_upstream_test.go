package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/codemode-mcp/codemode/internal/testutil"
)

// hostileSecret is the configured secret of testdata/hostile.mjs (its
// entry's env names it HOSTILE_SECRET, a secret by its name).
const hostileSecret = "hs-9f8e7d6c5b4a39281706"

// hostileGateway is `codemode serve --log-level debug` over stdio with
// testdata/hostile.mjs as the server "hostile", driven by raw JSON-RPC
// lines: the test sees every byte the client would.
type hostileGateway struct {
	g     *stdioGateway
	sc    *bufio.Scanner
	id    int
	wire  map[string]string // answers by id
	stall func() bool
}

func startHostile(t *testing.T) *hostileGateway {
	t.Helper()
	entry := scriptEntry(t, "hostile.mjs")
	entry["env"].(map[string]string)["HOSTILE_SECRET"] = hostileSecret
	cfg := writeConfig(t, upstreams{"hostile": entry}, nil)
	h := &hostileGateway{g: startStdio(t, "--config", cfg, "--log-level", "debug"), wire: map[string]string{}}
	h.sc = bufio.NewScanner(h.g.stdout)
	h.sc.Buffer(nil, 64<<20)
	// The hang guard: a gateway that never answers is killed shortly
	// before the test binary's deadline, which fails the test instead of
	// holding it.
	h.stall = context.AfterFunc(testutil.Context(t), func() { h.g.cmd.Process.Kill() })
	t.Cleanup(func() { h.stall() })
	h.send(t, "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`)
	h.g.stdin.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"))
	return h
}

// send sends a request and returns its answer, as the raw line.
func (h *hostileGateway) send(t *testing.T, method, params string) string {
	t.Helper()
	h.id++
	id := fmt.Sprint(h.id)
	fmt.Fprintf(h.g.stdin, `{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`+"\n", id, method, params)
	for h.wire[id] == "" && h.sc.Scan() {
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal(h.sc.Bytes(), &m); err != nil {
			t.Fatalf("stdout carries a non-JSON line %.200q", h.sc.Text())
		}
		if len(m.ID) > 0 {
			h.wire[string(m.ID)] = h.sc.Text()
		}
	}
	if h.wire[id] == "" {
		t.Fatalf("no answer to %s: %v\n%s", method, h.sc.Err(), tail(h.g.stderr.String(), 3000))
	}
	return h.wire[id]
}

// run runs code on codemode_run and returns the raw answer.
func (h *hostileGateway) run(t *testing.T, code string, limits string) string {
	t.Helper()
	b, _ := json.Marshal(code)
	return h.send(t, "tools/call", fmt.Sprintf(`{"name":"codemode_run","arguments":{"code":%s,"limits":%s}}`, b, limits))
}

// A server that puts its configured secret everywhere it can (log
// notifications, stderr lines long enough to be cut, JSON-RPC error
// messages and isError texts with the secret across every clip the
// gateway makes, its environment, a task's statusMessage when it cancels
// the task), and that answers with a 1 MiB result
// of "<" as structured content: nothing of the secret reaches the client
// or the gateway's own log (at debug level), and the result goes over the
// wire once, unescaped.
func TestHostileUpstream(t *testing.T) {
	t.Parallel()
	h := startHostile(t)
	var out []string
	out = append(out, h.run(t, `import * as h from "@codemode/servers/hostile";
const out = {};
for (const [name, args] of [["leak", {}], ["fail", {}], ["throw", {}], ["notify", {n: 5}], ["env", {}], ["escaped", {}], ["task", {}]]) {
  try { out[name] = await h[name](args); } catch (e) { out[name] = [String(e), e.hint, e.result]; }
}
globalThis.__codemode_result__ = out;`, "{}"))
	out = append(out, h.send(t, "tools/list", "{}"))
	big := h.run(t, `import * as h from "@codemode/servers/hostile";
const r = await h.big({n: 1 << 20, structured: true});
globalThis.__codemode_result__ = r.s ?? r.structuredContent?.s ?? r;`, `{"maxResultBytes":2097152}`)
	if !strings.Contains(big, strings.Repeat("<", 1<<20)) {
		t.Errorf("the 1 MiB result did not come back whole: %.500s", big)
	}
	if n := strings.Count(big, `\u003c`); n > 0 {
		t.Errorf("%d HTML escapes on the wire", n)
	}
	if n := len(big); n > 1<<20+8192 {
		t.Errorf("a 1 MiB result took %d bytes on the wire, want about 1 MiB", n)
	}

	// The server writes the secret on stderr across every cut, then dies:
	// its stderr tail is in the diagnostic.
	out = append(out, h.run(t, `import * as h from "@codemode/servers/hostile";
await h.stderr({});`, "{}"))

	h.g.stdin.Close()
	select {
	case <-h.g.exited:
	case <-testutil.Expiry(t): // the hang guard
		t.Error("the gateway did not exit once its stdin closed")
	}
	logs := h.g.stderr.String()
	if !strings.Contains(logs, "upstream log") {
		t.Errorf("the server's log notifications were not logged at debug level:\n%s", tail(logs, 3000))
	}
	// Any 10 bytes of the secret (a clip keeps a piece of what it cuts).
	for i := 0; i+10 <= len(hostileSecret); i++ {
		piece := hostileSecret[i : i+10]
		for j, o := range out {
			if strings.Contains(o, piece) {
				t.Errorf("answer %d holds %q:\n%.3000s", j, piece, o)
			}
		}
		if strings.Contains(logs, piece) {
			at := strings.Index(logs, piece)
			t.Errorf("the gateway's log holds %q: …%s…", piece, logs[max(at-300, 0):min(at+300, len(logs))])
		}
	}
}
