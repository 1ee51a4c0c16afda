package serve_test

// Lifecycle of `codemode serve`: starting without a config, refusing a bad
// one, fresh sandboxes and true parallelism, upstream restarts, tool-list
// changes, and where the TypeScript declarations go (§4.4).

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/codemode-mcp/codemode/internal/testutil"
)

// With no configuration at all, serve starts, says on stderr how to add a
// server, and serves the built-in servers: a value set in one run is read
// in the next, over stdio and, after a restart, over HTTP.
func TestNoConfig(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	state := t.TempDir()
	env := baseEnv("XDG_STATE_HOME=" + state)
	conn := map[string]any{"transport": "stdio", "command": codemodeBin(t), "args": []string{"serve"}, "cwd": empty, "env": map[string]string{"XDG_STATE_HOME": state}}
	c := startTS(t, conn,
		listStep(),
		runStep(`import { listServers } from "@codemode/discovery"; globalThis.__codemode_result__ = (await listServers()).map((s) => s.serverId + ":" + s.status);`),
		runStep(`import { nope } from "@codemode/servers/github"; nope;`),
		runStep(`import { nope } from "@codemode/servers/github";`),
		runStep(`import { set } from "@codemode/servers/store"; import { thought } from "@codemode/servers/thoughtbox";
await set({ key: "greeting", value: { hello: "world" } });
globalThis.__codemode_result__ = (await thought({ thought: "first", thoughtType: "reasoning", nextThoughtNeeded: true })).thoughtNumber;`),
		runStep(`import { get } from "@codemode/servers/store"; import { thought } from "@codemode/servers/thoughtbox";
globalThis.__codemode_result__ = { v: (await get({ key: "greeting" })).value, n: (await thought({ thought: "second", thoughtType: "reasoning", nextThoughtNeeded: true })).thoughtNumber };`),
	)
	out := c.output(t)
	l := decode[toolList](t, out.Results[0])
	if !slices.Equal(l.names(), []string{"codemode_run"}) {
		t.Fatalf("tools = %q", l.names())
	}
	if d := l.Tools[0].Description; !strings.Contains(d, "@codemode/servers/thoughtbox") || !strings.Contains(d, "@codemode/servers/store") {
		t.Errorf("the description does not declare the built-in servers:\n%s", tail(d, 400))
	}
	if got := okRun(t, out.Results[1]); got != `["thoughtbox:connected","store:connected"]` {
		t.Errorf("listServers = %s, want the two built-ins", got)
	}
	if _, resp := asRun(t, out.Results[2]); resp.errorDiag() == nil || resp.errorDiag().Code != "IMPORT_FAILURE" {
		t.Errorf("importing from an unknown server succeeded: %s", out.Results[2])
	}
	// ES module semantics (§3.2.1): an import from a module that cannot be
	// resolved fails even if the imported name is never used. (TypeScript
	// transpilation drops unused imports unless told not to.)
	t.Run("unused import of an unknown server", func(t *testing.T) {
		if _, resp := asRun(t, out.Results[3]); resp.errorDiag() == nil || resp.errorDiag().Code != "IMPORT_FAILURE" {
			t.Errorf("an unused import from an unknown server was silently dropped: %s", out.Results[3])
		}
	})
	if got := okRun(t, out.Results[4]); got != "1" {
		t.Errorf("first thought numbered %s", got)
	}
	// Over stdio one MCP session is one current session: the second run's
	// thought follows the first.
	if got := okRun(t, out.Results[5]); got != `{"v":{"hello":"world"},"n":2}` {
		t.Errorf("the next run read %s", got)
	}
	if s := c.stderr.String(); !strings.Contains(s, "To add a server") || !strings.Contains(s, "mcpServers") || !strings.Contains(s, "built-in") {
		t.Errorf("stderr does not say how to add a server:\n%s", tail(s, 2000))
	}

	// The Inspector over stdio, in the same empty directory.
	var il toolList
	inspectJSON(t, &il, []string{codemodeBin(t), "serve"}, "--cwd", empty, "--method", "tools/list")
	if !slices.Equal(il.names(), []string{"codemode_run"}) {
		t.Errorf("Inspector tools/list = %q", il.names())
	}

	// And over HTTP, a new process on the same data: the value and the
	// session recorded through the first serve are there.
	p := startProc(t, env, empty, codemodeBin(t), "serve", "--http", "127.0.0.1:0")
	m, err := p.waitLine(urlLine)
	if err != nil {
		t.Fatal(err)
	}
	got := runTS(t, httpConn(m[1], nil), runStep(`import { get } from "@codemode/servers/store"; import { session_list } from "@codemode/servers/thoughtbox";
const s = await session_list({});
globalThis.__codemode_result__ = { v: (await get({ key: "greeting" })).value, sessions: s.total, thoughts: s.sessions[0].thoughtCount };`))
	if r := okRun(t, got[0]); r != `{"v":{"hello":"world"},"sessions":1,"thoughts":2}` {
		t.Errorf("after a restart, over HTTP: %s", r)
	}
	if !strings.Contains(p.stderr.String(), "To add a server") {
		t.Errorf("over HTTP, stderr does not say how to add a server:\n%s", tail(p.stderr.String(), 2000))
	}
}

// A bad configuration stops serve with exit status 2 and a message naming
// the file and the key.
func TestBadConfig(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body string
		want       []string // in stderr besides the file name
	}{
		{"syntax", `{"mcpServers": {"a": {"command": "x",}}}`, []string{"JSON"}},
		{"unknown surface", `{"mcpServers": {}, "codemode": {"surfaces": ["run", "nope"]}}`, []string{"codemode.surfaces", "nope"}},
		{"bad run tool name", `{"mcpServers": {}, "codemode": {"runToolName": "has space"}}`, []string{"codemode.runToolName"}},
		{"bad binding level", `{"mcpServers": {}, "codemode": {"bindingLevel": "method"}}`, []string{"codemode.bindingLevel"}},
		{"negative budget", `{"mcpServers": {}, "codemode": {"typesBudgetTokens": -5}}`, []string{"codemode.typesBudgetTokens"}},
		{"unknown codemode key", `{"mcpServers": {}, "codemode": {"surface": ["run"]}}`, []string{"codemode.surface"}},
		{"server without command", `{"mcpServers": {"memory": {"args": ["x"]}}}`, []string{"mcpServers.memory"}},
		{"unknown server key", `{"mcpServers": {"memory": {"command": "x", "comand": "y"}}}`, []string{"mcpServers.memory.comand"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "bad.json")
			if err := os.WriteFile(file, []byte(c.body), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, how := range []string{"flag", "env"} {
				env, args := baseEnv(), []string{"--config", file}
				if how == "env" {
					env, args = baseEnv("CODEMODE_CONFIG="+file), nil
				}
				code, stderr := serveExit(t, env, t.TempDir(), args...)
				if code != 2 {
					t.Errorf("%s: exit status %d, want 2; stderr:\n%s", how, code, stderr)
				}
				for _, w := range append([]string{file}, c.want...) {
					if !strings.Contains(stderr, w) {
						t.Errorf("%s: stderr does not name %q:\n%s", how, w, stderr)
					}
				}
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		t.Parallel()
		file := filepath.Join(t.TempDir(), "absent.json")
		code, stderr := serveExit(t, baseEnv(), t.TempDir(), "--config", file)
		if code != 2 || !strings.Contains(stderr, file) {
			t.Errorf("exit %d, stderr:\n%s", code, stderr)
		}
	})
}

// ---------------------------------------------------------------------------
// Fresh sandboxes, isolation and parallelism

// handshakeCode is a run that announces itself by writing a file through
// the filesystem server, then waits until every other party has done the
// same. Run one after the other, the first party would wait for the others
// until its tool calls ran out (1000 listings, 100 ms apart: no bound on
// how late a party may start, which a loaded machine decides), so parties
// that all succeed ran at the same time. Each keeps a global of its own and
// returns it: a sandbox shared with another party would return the other's.
func handshakeCode(dir, me string, others []string) string {
	return fmt.Sprintf(`import { write_file, list_directory } from "@codemode/servers/filesystem";
globalThis.mine = %[2]q;
await write_file({ path: %[1]q + "/" + %[2]q, content: %[2]q });
const others = %[3]s;
let missing = others;
while (missing.length > 0) {
  const r = await list_directory({ path: %[1]q });
  const listing = typeof r === "string" ? r : r.content;
  missing = others.filter((o) => !listing.includes("[FILE] " + o));
  if (missing.length > 0) await new Promise((resolve) => setTimeout(resolve, 100));
}
globalThis.__codemode_result__ = globalThis.mine;`, dir, me, mustJSON(others))
}

func handshakeSteps(dir string, parties []string) []step {
	var steps []step
	for _, p := range parties {
		var others []string
		for _, o := range parties {
			if o != p {
				others = append(others, o)
			}
		}
		steps = append(steps, callStep("codemode_run", map[string]any{"code": handshakeCode(dir, p, others),
			"limits": map[string]any{"maxToolCalls": 1000, "timeoutMs": 300000}}))
	}
	return steps
}

func checkHandshake(t *testing.T, results []json.RawMessage, parties []string) {
	t.Helper()
	for i, p := range parties {
		if got := okRun(t, results[i]); got != mustJSON(p) {
			t.Errorf("party %s returned %s: sandboxes are shared", p, got)
		}
	}
}

// Three concurrent runs from one client, over stdio and over HTTP, each
// waiting for the others.
func TestConcurrentRunsOneClient(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cfg := writeConfig(t, upstreams{"filesystem": filesystemEntry(t, dir)}, nil)
			conn := stdioConn(t, cfg)
			if transport == "http" {
				conn = httpConn(startHTTP(t, cfg).url, nil)
			}
			parties := []string{"alpha", "beta", "gamma"}
			out := runTS(t, conn, parallelStep(handshakeSteps(dir, parties)...))
			var res []json.RawMessage
			if err := json.Unmarshal(out[0], &res); err != nil {
				t.Fatal(err)
			}
			checkHandshake(t, res, parties)
		})
	}
}

// Two clients of one HTTP gateway, each with one run waiting for the
// other's, and a third client whose run sees none of their globals.
func TestConcurrentRunsSeveralClients(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gw := startHTTP(t, writeConfig(t, upstreams{"filesystem": filesystemEntry(t, dir)}, nil))
	parties := []string{"left", "right"}
	steps := handshakeSteps(dir, parties)
	clients := make([]*tsClient, len(parties))
	for i := range parties {
		clients[i] = startTS(t, httpConn(gw.url, nil), steps[i])
	}
	results := make([]json.RawMessage, len(parties))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = c.output(t).Results[0]
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	checkHandshake(t, results, parties)
	got := runTS(t, httpConn(gw.url, nil), runStep(`globalThis.__codemode_result__ = typeof globalThis.mine;`))
	if r := okRun(t, got[0]); r != `"undefined"` {
		t.Errorf("a later client sees another client's global: %s", r)
	}
}

// ---------------------------------------------------------------------------
// Upstream restarts and status

// A stdio upstream that crashes is reported by listServers and restarted on
// next use.
func TestUpstreamCrashRestarts(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, upstreams{"flaky": scriptEntry(t, "upstream.mjs"), "memory": memoryEntry(t)}, nil)
	status := `import { listServers } from "@codemode/discovery";
globalThis.__codemode_result__ = Object.fromEntries((await listServers()).map((s) => [s.serverId, s.status]));`
	out := runTS(t, stdioConn(t, cfg),
		runStep(`import { whoami } from "@codemode/servers/flaky"; globalThis.__codemode_result__ = (await whoami()).pid;`),
		runStep(`import { crash } from "@codemode/servers/flaky"; await crash();`),
		runStep(status),
		// Once the restart backoff is over, the next use starts it again:
		// until then a use fails fast (an error diagnostic).
		step{"op": "until", "notText": `"severity":"error"`,
			"step": runStep(`import { whoami } from "@codemode/servers/flaky"; globalThis.__codemode_result__ = (await whoami()).pid;`)},
		runStep(status),
	)
	var pid1, pid2 int
	if err := json.Unmarshal([]byte(okRun(t, out[0])), &pid1); err != nil || pid1 == 0 {
		t.Fatalf("whoami: %s", out[0])
	}
	res, resp := asRun(t, out[1])
	if d := resp.errorDiag(); res.IsError || d == nil {
		t.Errorf("calling a tool whose server dies: want a diagnostic, not a tool error; got %s", out[1])
	} else {
		t.Logf("crash diagnostic: %+v", *d)
	}
	if alive(pid1) {
		t.Errorf("the crashed upstream (pid %d) is still alive", pid1)
	}
	var st map[string]string
	if err := json.Unmarshal([]byte(okRun(t, out[2])), &st); err != nil {
		t.Fatal(err)
	}
	t.Logf("listServers after the crash: %v", st)
	if st["flaky"] == "connected" || st["flaky"] == "" || st["memory"] == "" {
		t.Errorf("listServers after the crash = %v, want flaky not connected and memory listed", st)
	}
	if err := json.Unmarshal([]byte(okRun(t, out[3])), &pid2); err != nil || pid2 == 0 || pid2 == pid1 {
		t.Errorf("whoami after the crash: pid %d (before: %d), want a new process: %s", pid2, pid1, out[3])
	}
	st = nil
	if err := json.Unmarshal([]byte(okRun(t, out[4])), &st); err != nil {
		t.Fatal(err)
	}
	if st["flaky"] != "connected" {
		t.Errorf("listServers after the restart = %v", st)
	}
}

// An upstream killed from outside (the test finds server-everything among
// the gateway's children in /proc) is restarted on next use.
func TestUpstreamKilledRestarts(t *testing.T) {
	t.Parallel()
	gw := startHTTP(t, writeConfig(t, upstreams{"everything": everythingEntry(t)}, nil))
	sum := runStep(`import { get_sum } from "@codemode/servers/everything"; globalThis.__codemode_result__ = await get_sum({a: 1, b: 1});`)
	status := runStep(`import { listServers } from "@codemode/discovery"; globalThis.__codemode_result__ = (await listServers())[0];`)
	if got := okRun(t, runTS(t, httpConn(gw.url, nil), sum)[0]); !strings.Contains(got, "is 2") {
		t.Fatalf("get_sum: %s", got)
	}
	var killed []int
	for _, pid := range descendants(gw.cmd.Process.Pid) {
		if strings.Contains(cmdline(pid), "server-everything") {
			if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
				killed = append(killed, pid)
			}
		}
	}
	if len(killed) == 0 {
		t.Fatalf("no server-everything process below codemode (pid %d)", gw.cmd.Process.Pid)
	}
	if !testutil.Poll(t, func() bool { return !slices.ContainsFunc(killed, alive) }) {
		t.Fatalf("the killed server-everything processes %v are still alive", killed)
	}
	// The gateway learns of the death when it next uses the server (or
	// sees the pipe close); then it restarts it once the backoff is over:
	// get_sum is retried until it works, and a new process answers.
	out := runTS(t, httpConn(gw.url, nil), step{"op": "until", "text": "is 2", "step": sum}, status)
	if got := okRun(t, out[0]); !strings.Contains(got, "is 2") {
		t.Errorf("get_sum after the kill: %s", got)
	}
	var after struct {
		ServerID string `json:"serverId"`
		Status   string `json:"status"`
		Error    string `json:"error"`
	}
	if err := json.Unmarshal([]byte(okRun(t, out[1])), &after); err != nil {
		t.Fatal(err)
	}
	if after.Status != "connected" {
		t.Errorf("listServers after the restart: %+v", after)
	}
	var fresh []int
	for _, pid := range descendants(gw.cmd.Process.Pid) {
		if strings.Contains(cmdline(pid), "server-everything") && !slices.Contains(killed, pid) && alive(pid) {
			fresh = append(fresh, pid)
		}
	}
	if len(fresh) == 0 {
		t.Errorf("get_sum works after the kill, but no new server-everything process runs")
	}
}

// ---------------------------------------------------------------------------
// Tool-list changes

// When an upstream adds a tool, the client gets
// notifications/tools/list_changed, the description lists the new tool,
// and the next run can call it.
func TestToolListChanged(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			cfg := writeConfig(t, upstreams{"dyn": scriptEntry(t, "upstream.mjs")}, nil)
			conn := stdioConn(t, cfg)
			if transport == "http" {
				conn = httpConn(startHTTP(t, cfg).url, nil)
			}
			out := runTS(t, conn,
				listStep(),
				runStep(`import { add_tool } from "@codemode/servers/dyn"; globalThis.__codemode_result__ = await add_tool();`),
				step{"op": "waitListed", "text": "added_1"},
				runStep(`import { added_1 } from "@codemode/servers/dyn"; globalThis.__codemode_result__ = await added_1();`),
			)
			before := decode[toolList](t, out[0]).description("codemode_run")
			if !strings.Contains(before, "add_tool") || strings.Contains(before, "added_1") {
				t.Fatalf("description before the change:\n%s", tail(before, 800))
			}
			if got := okRun(t, out[1]); got != `"added_1"` {
				t.Fatalf("add_tool: %s", got)
			}
			var w struct {
				Notifications int
				Found         bool
			}
			if err := json.Unmarshal(out[2], &w); err != nil || !w.Found {
				t.Errorf("no notifications/tools/list_changed after which tools/list shows added_1: %s", tail(string(out[2]), 500))
			}
			if got := okRun(t, out[3]); !jsonEq(t, got, `{"added":1}`) {
				t.Errorf("added_1: %s", got)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// §4.4: declarations in the description, or with the first use

const declHeader = "TypeScript declarations of the servers this script used"

func extraBlocks(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	res, _ := asRun(t, raw)
	var out []string
	for _, c := range res.Content[1:] {
		out = append(out, c.Text)
	}
	return out
}

// With a small budget the description carries the index, and the first run
// of a session that uses a server gets its declarations once, over stdio
// (one session without an id) as over stateful HTTP.
func TestDeclarationsDeferredPerSession(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, surfaceUpstreams(t), map[string]any{"typesBudgetTokens": 100})
	gw := startHTTP(t, cfg)
	for name, conn := range map[string]func() map[string]any{
		"stdio": func() map[string]any { return stdioConn(t, cfg) },
		"http":  func() map[string]any { return httpConn(gw.url, nil) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testDeclarationsDeferred(t, conn)
		})
	}
}

func testDeclarationsDeferred(t *testing.T, newConn func() map[string]any) {
	useEverything := runStep(`import { echo } from "@codemode/servers/everything"; globalThis.__codemode_result__ = await echo({message: "x"});`)
	out := runTS(t, newConn(),
		listStep(),
		useEverything, // 1: first use of everything
		useEverything, // 2: again
		callStep("codemode_run", map[string]any{"code": `globalThis.__codemode_result__ = 1;`, "requestedCapabilities": []string{"memory"}}), // 3
		runStep(`import { read_graph } from "@codemode/servers/memory"; globalThis.__codemode_result__ = 2;`),                                // 4
		runStep(`globalThis.__codemode_result__ = 3;`), // 5: uses nothing
	)
	desc := decode[toolList](t, out[0]).description("codemode_run")
	if strings.Contains(desc, "declare module") || !strings.Contains(desc, "everything (") || !strings.Contains(desc, "memory (") || !strings.Contains(desc, "get_sum") {
		t.Errorf("with typesBudgetTokens 100 the description should carry the compact index:\n%s", tail(desc, 1500))
	}
	b := extraBlocks(t, out[1])
	if len(b) != 1 || !strings.HasPrefix(b[0], declHeader) || !strings.Contains(b[0], `declare module "@codemode/servers/everything"`) || strings.Contains(b[0], `"@codemode/servers/memory"`) {
		t.Errorf("first use of everything: extra content = %q", b)
	}
	if b := extraBlocks(t, out[2]); len(b) != 0 {
		t.Errorf("second use of everything in the session repeated the declarations: %d blocks", len(b))
	}
	if b := extraBlocks(t, out[3]); len(b) != 1 || !strings.Contains(b[0], `declare module "@codemode/servers/memory"`) || strings.Contains(b[0], `"@codemode/servers/everything"`) {
		t.Errorf("requestedCapabilities [memory]: extra content = %q", b)
	}
	if b := extraBlocks(t, out[4]); len(b) != 0 {
		t.Errorf("memory again: %d extra blocks", len(b))
	}
	if b := extraBlocks(t, out[5]); len(b) != 0 {
		t.Errorf("a run that uses no server: %d extra blocks", len(b))
	}
	// A new session starts over.
	again := runTS(t, newConn(), useEverything)
	if b := extraBlocks(t, again[0]); len(b) != 1 || !strings.Contains(b[0], `"@codemode/servers/everything"`) {
		t.Errorf("a second session did not get everything's declarations: %q", b)
	}
}

// With a large budget every declaration is in the description and runs
// carry none.
func TestDeclarationsInDescription(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, surfaceUpstreams(t), map[string]any{"typesBudgetTokens": 100000})
	// The first run waits for both servers (a first tools/list waits for
	// them only up to the gateway's warm-up bound, which a loaded machine
	// can exceed); the list after it describes both.
	out := runTS(t, stdioConn(t, cfg),
		runStep(`import { echo } from "@codemode/servers/everything"; import { read_graph } from "@codemode/servers/memory"; globalThis.__codemode_result__ = await read_graph({});`),
		listStep(),
		runStep(`import { echo } from "@codemode/servers/everything"; globalThis.__codemode_result__ = await echo({message: "x"});`),
	)
	out = out[1:]
	desc := decode[toolList](t, out[0]).description("codemode_run")
	for _, m := range []string{`declare module "@codemode/servers/everything"`, `declare module "@codemode/servers/memory"`, "get_sum", "read_graph", "type ToolResult = "} {
		if !strings.Contains(desc, m) {
			t.Errorf("the description lacks %s", m)
		}
	}
	if b := extraBlocks(t, out[1]); len(b) != 0 {
		t.Errorf("declarations already in the description were sent again: %d blocks", len(b))
	}
}
