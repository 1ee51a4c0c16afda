package serve_test

// `codemode serve --http`: where it listens, the token, the Origin check,
// stateless mode, and graceful shutdown (over HTTP and stdio).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/testutil"
)

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// post sends an initialize request with headers and returns the status,
// the headers and the body.
func post(t *testing.T, u string, headers map[string]string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest("POST", u, strings.NewReader(initializeBody))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	ctx, cancel := context.WithCancel(testutil.Context(t))
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("POST %s: %v", u, err)
	}
	defer resp.Body.Close()
	// An SSE response stays open; the first event is enough.
	b := make([]byte, 64<<10)
	n, _ := io.ReadAtLeast(resp.Body, b, 1)
	return resp.StatusCode, resp.Header, string(b[:n])
}

func hostOf(t *testing.T, u string) string {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return pu.Hostname()
}

func minimalConfig(t *testing.T) string { return writeConfig(t, upstreams{}, nil) }

// serveExit runs `codemode serve args...` expecting it to refuse to start,
// and returns its exit status and stderr.
func serveExit(t *testing.T, env []string, dir string, args ...string) (int, string) {
	t.Helper()
	p := startProc(t, env, dir, codemodeBin(t), append([]string{"serve"}, args...)...)
	code, err := p.wait()
	if err != nil {
		t.Fatalf("codemode serve %q: %v", args, err)
	}
	return code, p.stderr.String()
}

// The documented listen address is loopback; an address without a host
// (all interfaces) is either refused without a token or bound to loopback.
func TestHTTPListensOnLoopback(t *testing.T) {
	t.Parallel()
	gw := startHTTP(t, minimalConfig(t))
	if h := hostOf(t, gw.url); !net.ParseIP(h).IsLoopback() {
		t.Fatalf("listening on %s, want a loopback address", gw.url)
	}
	if code, _, _ := post(t, gw.url, nil); code != http.StatusOK {
		t.Fatalf("initialize: status %d", code)
	}

	p := startProc(t, baseEnv(), t.TempDir(), codemodeBin(t), "serve", "--config", minimalConfig(t), "--http", ":0")
	m, err := p.waitLine(urlLine)
	if err != nil {
		if code, werr := p.wait(); werr == nil && code == 2 && strings.Contains(p.stderr.String(), "auth-token") {
			return // refused, with the fix in the message
		}
		t.Fatalf("--http :0 without a token neither refused (exit 2) nor started on loopback: %v", err)
	}
	if h := hostOf(t, m[1]); !net.ParseIP(h).IsLoopback() {
		t.Fatalf("--http :0 without a token listens on %s, beyond this machine", m[1])
	}
}

// Listening beyond loopback needs a token; with one (flag or environment)
// the gateway starts and requires it.
func TestHTTPNonLoopbackNeedsToken(t *testing.T) {
	t.Parallel()
	cfg := minimalConfig(t)
	code, stderr := serveExit(t, baseEnv(), t.TempDir(), "--config", cfg, "--http", "0.0.0.0:0")
	if code != 2 || !strings.Contains(stderr, "auth-token") || !strings.Contains(stderr, "0.0.0.0") {
		t.Fatalf("--http 0.0.0.0:0 without a token: exit %d, stderr:\n%s", code, stderr)
	}

	p := startProc(t, baseEnv("CODEMODE_AUTH_TOKEN=env-secret"), t.TempDir(), codemodeBin(t), "serve", "--config", cfg, "--http", "0.0.0.0:0")
	m, err := p.waitLine(urlLine)
	if err != nil {
		t.Fatalf("with CODEMODE_AUTH_TOKEN: %v", err)
	}
	pu, _ := url.Parse(m[1])
	local := "http://127.0.0.1:" + pu.Port() + "/mcp"
	if code, _, _ := post(t, local, nil); code != http.StatusUnauthorized {
		t.Fatalf("without the token: status %d, want 401", code)
	}
	if code, _, _ := post(t, local, map[string]string{"Authorization": "Bearer env-secret"}); code != http.StatusOK {
		t.Fatalf("with the token from CODEMODE_AUTH_TOKEN: status %d, want 200", code)
	}
}

func TestHTTPAuthToken(t *testing.T) {
	t.Parallel()
	gw := startHTTP(t, writeConfig(t, upstreams{"everything": everythingEntry(t)}, nil), "--auth-token", "s3cret")
	for _, h := range []map[string]string{nil, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret"}, {"Authorization": "Basic s3cret"}} {
		code, hdr, body := post(t, gw.url, h)
		if code != http.StatusUnauthorized || !strings.Contains(hdr.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("headers %v: status %d (WWW-Authenticate %q), want 401: %s", h, code, hdr.Get("WWW-Authenticate"), body)
		}
	}
	// The scheme is case-insensitive.
	if code, _, body := post(t, gw.url, map[string]string{"Authorization": "bearer s3cret"}); code != http.StatusOK {
		t.Errorf("lowercase scheme: status %d, want 200: %s", code, body)
	}
	// Behind a reverse proxy that keeps its own Host: with a token the
	// Host check is off (a rebinding page cannot send the token).
	if code, _, body := post(t, gw.url, map[string]string{"Authorization": "Bearer s3cret", "Host": "codemode.example.com"}); code != http.StatusOK {
		t.Errorf("a proxied Host with the token: status %d, want 200: %s", code, body)
	}
	if code, _, _ := post(t, gw.url, map[string]string{"Host": "codemode.example.com"}); code != http.StatusUnauthorized {
		t.Errorf("a proxied Host without the token: status %d, want 401", code)
	}
	// Real clients, with and without the token.
	out := runTS(t, httpConn(gw.url, map[string]string{"Authorization": "Bearer s3cret"}), listStep(), runStep(`globalThis.__codemode_result__ = "authorized";`))
	if got := okRun(t, out[1]); got != `"authorized"` {
		t.Errorf("TypeScript client with the token: %s", got)
	}
	var l toolList
	inspectJSON(t, &l, nil, httpArgs(gw.url, "--header", "Authorization: Bearer s3cret", "--method", "tools/list")...)
	if len(l.Tools) != 1 {
		t.Errorf("Inspector with the token: %+v", l)
	}
	stdout, code, stderr := inspect(t, nil, httpArgs(gw.url, "--method", "tools/list")...)
	if code == 0 || strings.Contains(string(stdout), "codemode_run") {
		t.Errorf("Inspector without the token succeeded (exit %d): %s", code, stdout)
	} else if !strings.Contains(stdout2(stdout, stderr), "401") && !strings.Contains(strings.ToLower(stdout2(stdout, stderr)), "unauthorized") {
		t.Logf("Inspector without the token failed without naming 401: %s", tail(stdout2(stdout, stderr), 500))
	}
	c := startTS(t, httpConn(gw.url, nil), listStep())
	if code, _ := c.wait(); code == 0 && !strings.Contains(c.stdout.String(), `"fatal"`) {
		t.Errorf("TypeScript client without the token connected: %s", c.stdout.String())
	}
}

func stdout2(stdout []byte, stderr string) string { return string(stdout) + "\n" + stderr }

func TestHTTPOrigin(t *testing.T) {
	t.Parallel()
	gw := startHTTP(t, minimalConfig(t), "--allowed-origin", "https://app.example")
	cases := []struct {
		origin string
		want   int
	}{
		{"http://evil.example", http.StatusForbidden},
		{"http://localhost.evil.example", http.StatusForbidden},
		{"http://127.0.0.1.nip.io:3000", http.StatusForbidden},
		{"null", http.StatusForbidden},
		{"http://localhost:6274", http.StatusOK},
		{"http://127.0.0.1:6274", http.StatusOK},
		{"https://app.example", http.StatusOK},
		{"", http.StatusOK}, // no Origin: not a browser
	}
	for _, c := range cases {
		h := map[string]string{}
		if c.origin != "" {
			h["Origin"] = c.origin
		}
		if code, _, body := post(t, gw.url, h); code != c.want {
			t.Errorf("Origin %q: status %d, want %d: %s", c.origin, code, c.want, tail(body, 300))
		}
	}
	// A foreign Host with a loopback Origin is not a rebinding attack the
	// Origin check sees; the conformance test covers Host+Origin together.
}

// --stateless serves several calls of one TypeScript SDK client, and two
// concurrent ones, without a session id.
func TestHTTPStateless(t *testing.T) {
	t.Parallel()
	gw := startHTTP(t, writeConfig(t, surfaceUpstreams(t), map[string]any{"typesBudgetTokens": 50}), "--stateless")
	_, hdr, body := post(t, gw.url, nil)
	if sid := hdr.Get("Mcp-Session-Id"); sid != "" {
		t.Errorf("a stateless server issued session id %q", sid)
	}
	if !strings.Contains(body, `"serverInfo"`) {
		t.Errorf("initialize: %s", body)
	}
	sum := `import { get_sum } from "@codemode/servers/everything"; globalThis.__codemode_result__ = await get_sum({a: 2, b: 2});`
	out := runTS(t, httpConn(gw.url, nil),
		listStep(),
		runStep(sum),
		runStep(`globalThis.x = 1; globalThis.__codemode_result__ = 1;`),
		runStep(`globalThis.__codemode_result__ = typeof globalThis.x;`),
		parallelStep(runStep(sum), runStep(`import { read_graph } from "@codemode/servers/memory"; globalThis.__codemode_result__ = Object.keys(await read_graph({}));`)),
		callStep("codemode_run", map[string]any{"code": sum, "requestedCapabilities": []string{"everything"}}),
	)
	if l := decode[toolList](t, out[0]); len(l.Tools) != 1 {
		t.Fatalf("tools/list: %s", out[0])
	}
	if got := okRun(t, out[1]); !strings.Contains(got, "The sum of 2 and 2 is 4") {
		t.Errorf("run 1: %s", got)
	}
	// §4.4 without a session: every request is a session of its own, so
	// the declarations of an imported server come with every response.
	if res, _ := asRun(t, out[1]); len(res.Content) < 2 || !strings.Contains(res.Content[1].Text, `"@codemode/servers/everything"`) {
		t.Errorf("stateless run importing everything did not carry its declarations: %s", tail(string(out[1]), 600))
	}
	if got := okRun(t, out[3]); got != `"undefined"` {
		t.Errorf("a global leaked between stateless calls: %s", got)
	}
	var par []json.RawMessage
	if err := json.Unmarshal(out[4], &par); err != nil || len(par) != 2 {
		t.Fatalf("parallel: %s", out[4])
	}
	if !strings.Contains(okRun(t, par[0]), "is 4") || !jsonEq(t, okRun(t, par[1]), `["entities","relations"]`) {
		t.Errorf("parallel stateless calls: %s", out[4])
	}
	// §4.4 without a session: the declarations of a requested server come
	// with the response, every time.
	res, _ := asRun(t, out[5])
	if len(res.Content) < 2 || !strings.Contains(res.Content[1].Text, `"@codemode/servers/everything"`) {
		t.Errorf("stateless run with requestedCapabilities [everything] did not carry its declarations: %s", tail(string(out[5]), 600))
	}
}

// ---------------------------------------------------------------------------
// Graceful shutdown

// slowRunCode writes a marker file through the filesystem server (so the
// test knows the run is in flight), then waits 4 s and returns
// {status: "finished"} with 600 kB of padding: a response that takes a few
// milliseconds to encode and send, as real results do.
func slowRunCode(dir string) string {
	return fmt.Sprintf(`import { write_file } from "@codemode/servers/filesystem";
await write_file({ path: %q, content: "in flight" });
await new Promise((r) => setTimeout(r, 4000));
globalThis.__codemode_result__ = { status: "finished", pad: "x".repeat(600000) };`, filepath.Join(dir, "started"))
}

// checkFinished checks the response of the run that was in flight.
func checkFinished(t *testing.T, raw json.RawMessage) {
	t.Helper()
	var v struct{ Status, Pad string }
	if err := json.Unmarshal([]byte(okRun(t, raw)), &v); err != nil || v.Status != "finished" || len(v.Pad) != 600000 {
		t.Errorf("the run in flight did not finish whole: %v %q", err, v.Status)
	}
}

// waitFile waits for a file a run writes (through the filesystem server)
// once it has started.
func waitFile(t *testing.T, path string) {
	t.Helper()
	if !testutil.Poll(t, func() bool { _, err := os.Stat(path); return err == nil }) {
		t.Fatalf("%s did not appear: the run never started", path)
	}
}

// SIGTERM while a run is in flight over HTTP: the run finishes, a new call
// is refused, and the process exits 0.
func TestSIGTERMDrainsHTTP(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gw := startHTTP(t, writeConfig(t, upstreams{"filesystem": filesystemEntry(t, dir)}, nil), "--grace", "30s")
	c := startTS(t, httpConn(gw.url, nil),
		listStep(),
		parallelStep(
			runStep(slowRunCode(dir)),
			step{"op": "sequence", "steps": []step{
				{"op": "waitStdin"},
				runStep(`globalThis.__codemode_result__ = "late";`),
			}},
		),
	)
	waitFile(t, filepath.Join(dir, "started"))
	gw.signal(syscall.SIGTERM)
	// Let the signal land before the client sends its new call.
	if _, err := gw.waitLine(regexp.MustCompile(`shutting down`)); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(c.stdin, "go")
	out := c.output(t)
	var par []json.RawMessage
	if err := json.Unmarshal(out.Results[1], &par); err != nil {
		t.Fatal(err)
	}
	checkFinished(t, par[0])
	var seq []json.RawMessage
	if err := json.Unmarshal(par[1], &seq); err != nil {
		t.Fatal(err)
	}
	checkRefused(t, seq[1])
	code, err := gw.wait()
	if err != nil || code != 0 {
		t.Fatalf("exit status %d (%v), want 0; stderr:\n%s", code, err, tail(gw.stderr.String(), 3000))
	}
	if strings.Contains(gw.stderr.String(), "level=ERROR") {
		t.Errorf("SIGTERM was logged as an error:\n%s", tail(gw.stderr.String(), 3000))
	}
}

// checkRefused checks that a call made after SIGTERM was refused.
func checkRefused(t *testing.T, raw json.RawMessage) {
	t.Helper()
	res := decode[toolResult](t, raw)
	switch {
	case res.Error != "":
		if !strings.Contains(res.Error, "shutting down") {
			t.Errorf("the call after SIGTERM failed without saying why: %s", res.Error)
		}
	case res.IsError:
		if !strings.Contains(res.text(), "shutting down") {
			t.Errorf("the call after SIGTERM failed without saying why: %s", res.text())
		}
	default:
		t.Errorf("a call made after SIGTERM was served: %s", raw)
	}
}

// The same over stdio, with the Go SDK's client (the test owns the process
// and can signal it).
func TestSIGTERMDrainsStdio(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeConfig(t, upstreams{"filesystem": filesystemEntry(t, dir)}, nil)
	g := startStdio(t, "--config", cfg, "--grace", "30s")
	stderr := g.stderr
	ctx, cancel := context.WithCancel(testutil.Context(t))
	defer cancel()
	cs := g.connect(t, ctx)
	type result struct {
		res *mcp.CallToolResult
		err error
	}
	slow := make(chan result, 1)
	go func() {
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "codemode_run", Arguments: map[string]any{"code": slowRunCode(dir)}})
		slow <- result{r, err}
	}()
	waitFile(t, filepath.Join(dir, "started"))
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Let the signal land before the new call.
	if !testutil.Poll(t, func() bool { return strings.Contains(stderr.String(), "shutting down") }) {
		t.Fatalf("no \"shutting down\" after SIGTERM; stderr:\n%s", tail(stderr.String(), 2000))
	}
	late, lateErr := cs.CallTool(ctx, &mcp.CallToolParams{Name: "codemode_run", Arguments: map[string]any{"code": `globalThis.__codemode_result__ = "late";`}})
	if lateErr == nil && !late.IsError {
		t.Errorf("a call made after SIGTERM was served: %+v", late)
	} else if lateErr != nil && !strings.Contains(lateErr.Error(), "shutting down") {
		t.Errorf("the call after SIGTERM failed without saying why: %v", lateErr)
	}
	r := <-slow
	if r.err != nil {
		t.Errorf("the response of the run in flight was lost: %v\n%s", r.err, tail(stderr.String(), 1500))
	} else {
		b, _ := json.Marshal(r.res)
		checkFinished(t, b)
	}
	// The process exits on its own, with status 0.
	testutil.Wait(t, g.exited, "codemode's exit after draining")
	if g.waitErr != nil {
		t.Fatalf("exit: %v, want status 0; stderr:\n%s", g.waitErr, tail(stderr.String(), 3000))
	}
	// A requested shutdown is not an error.
	if strings.Contains(stderr.String(), "level=ERROR") {
		t.Errorf("SIGTERM was logged as an error:\n%s", tail(stderr.String(), 3000))
	}
}

// Over stdio the grace period bounds the shutdown too: a run still going
// when it ends is cancelled, answered with CANCELLED, and the process exits
// (the SDK waits for its handlers before a stdio session can close).
func TestSIGTERMGraceEndsStdioRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeConfig(t, upstreams{"filesystem": filesystemEntry(t, dir)}, nil)
	g := startStdio(t, "--config", cfg, "--grace", "1s")
	stderr := g.stderr
	ctx, cancel := context.WithCancel(testutil.Context(t))
	defer cancel()
	cs := g.connect(t, ctx)
	type result struct {
		res *mcp.CallToolResult
		err error
	}
	long := make(chan result, 1)
	go func() {
		code := fmt.Sprintf(`import { write_file } from "@codemode/servers/filesystem";
await write_file({ path: %q, content: "in flight" });
await new Promise((r) => setTimeout(r, 120000));`, filepath.Join(dir, "started"))
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "codemode_run", Arguments: map[string]any{"code": code, "limits": map[string]any{"timeoutMs": 200000}}})
		long <- result{r, err}
	}()
	waitFile(t, filepath.Join(dir, "started"))
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The run would take two minutes: the grace period, not the run,
	// ends the process, and the run is answered CANCELLED.
	testutil.Wait(t, g.exited, "codemode's exit after the grace period")
	r := <-long
	if r.err != nil {
		t.Fatalf("the cancelled run got no response: %v\n%s", r.err, tail(stderr.String(), 1500))
	}
	b, _ := json.Marshal(r.res)
	if !strings.Contains(string(b), "CANCELLED") {
		t.Errorf("the run cut short by the grace period: %s", tail(string(b), 600))
	}
}
