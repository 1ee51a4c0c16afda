package serve_test

// Helpers of the end-to-end tests of `codemode serve`: the codemode binary,
// built once per test binary, driven as a subprocess over stdio and
// Streamable HTTP by real clients (the TypeScript SDK through
// testdata/client.mjs, and the MCP Inspector CLI) against the npm reference
// servers of testdata/npm.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/reexec"
	"github.com/codemode-mcp/codemode/internal/serve"
	"github.com/codemode-mcp/codemode/internal/testutil"
)

var (
	repoRoot = testutil.Root()
	npmDir   = filepath.Join(repoRoot, "testdata", "npm", "node_modules")

	buildOnce sync.Once
	buildDir  string
	cmBinPath string
	buildErr  error
)

func TestMain(m *testing.M) {
	if reexec.Init() { // esbuild workers
		return
	}
	// The built-in servers keep their data under $XDG_STATE_HOME: the
	// gateways these tests start (in process and as processes, which
	// inherit it) use a temporary one, never the developer's.
	state, err := os.MkdirTemp("", "codemode-serve-state-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_STATE_HOME", state)
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	testutil.StopPostgres()
	os.RemoveAll(state)
	os.Exit(code)
}

// coverDir is where the codemode processes of the end-to-end tests write
// their coverage counters (make cover sets it): the binary is then built
// with -cover, and GOCOVERDIR reaches every codemode the tests start. A
// process killed with SIGKILL writes nothing; codemode's normal exits (and
// SIGTERM) do.
var coverDir = os.Getenv("CODEMODE_TEST_COVERDIR")

// warmup is how long a test gateway's first tools/list waits for the
// upstreams (serve.Options.WarmupTimeout, codemode serve --warmup): the
// tests check descriptions that list every server, and on a loaded machine
// starting node servers takes longer than the 10 s default.
const warmup = time.Hour

// codemodeBin builds cmd/codemode once per test binary and returns its path.
func codemodeBin(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "codemode-serve-e2e-")
		if buildErr != nil {
			return
		}
		cmBinPath = filepath.Join(buildDir, "codemode")
		goBin, err := exec.LookPath("go")
		if err != nil {
			goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		args := []string{"build", "-o", cmBinPath}
		if coverDir != "" {
			args = append(args, "-cover", "-coverpkg=github.com/codemode-mcp/codemode/...")
		}
		cmd := exec.Command(goBin, append(args, "./cmd/codemode")...)
		cmd.Dir = repoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/codemode: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return cmBinPath
}

func nodeBin(t testing.TB) string { return testutil.Node(t) }

func sdkDir() string {
	return filepath.Join(npmDir, "@modelcontextprotocol", "sdk", "dist", "esm")
}

func testdataFile(name string) string {
	wd, _ := os.Getwd()
	return filepath.Join(wd, "testdata", name)
}

// baseEnv is this process's environment without the variables that would
// change how codemode starts (a config or a token of the developer's).
func baseEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "CODEMODE_") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "CODEMODE_TEST_SDK="+sdkDir())
	if coverDir != "" {
		env = append(env, "GOCOVERDIR="+coverDir)
	}
	return append(env, extra...)
}

// ---------------------------------------------------------------------------
// Configuration

// upstreams are the "mcpServers" entries of a test configuration.
type upstreams map[string]map[string]any

func everythingEntry(t testing.TB) map[string]any {
	return map[string]any{"command": testutil.NPMBin(t, "mcp-server-everything"), "args": []string{"stdio"}}
}

func memoryEntry(t testing.TB) map[string]any {
	return map[string]any{"command": testutil.NPMBin(t, "mcp-server-memory"),
		"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}}
}

func filesystemEntry(t testing.TB, dir string) map[string]any {
	return map[string]any{"command": testutil.NPMBin(t, "mcp-server-filesystem"), "args": []string{dir}}
}

func thinkingEntry(t testing.TB) map[string]any {
	return map[string]any{"command": testutil.NPMBin(t, "mcp-server-sequential-thinking"),
		"env": map[string]string{"DISABLE_THOUGHT_LOGGING": "true"}}
}

// scriptEntry runs one of testdata's node MCP servers.
func scriptEntry(t testing.TB, script string) map[string]any {
	return map[string]any{"command": nodeBin(t), "args": []string{testdataFile(script)},
		"env": map[string]string{"CODEMODE_TEST_SDK": sdkDir()}}
}

// writeConfig writes a codemode.json with servers and the `codemode`
// settings (nil for none) and returns its path. The built-in servers are
// off unless settings name them ("builtins"): these tests are about the
// upstreams they configure.
func writeConfig(t testing.TB, servers upstreams, settings map[string]any) string {
	t.Helper()
	doc := map[string]any{"mcpServers": servers}
	if servers == nil {
		doc["mcpServers"] = map[string]any{}
	}
	// No built-in servers unless a test asks; runs get the longest timeout
	// a request may ask for unless the test says otherwise: the first run
	// starts the upstreams, which takes long on a loaded machine, and a
	// test's outcome must never be a timeout it did not ask for.
	gw := map[string]any{"builtins": []string{}, "defaultLimits": map[string]any{"timeoutMs": 300000}}
	for k, v := range settings {
		gw[k] = v
	}
	doc["codemode"] = gw
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "codemode.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// ---------------------------------------------------------------------------
// Subprocesses

// syncBuffer collects a subprocess's output for failure messages.
// stdioGateway is `codemode serve` over stdio in a process the test owns,
// so that it can write raw lines to it and signal it.
type stdioGateway struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stdout  io.ReadCloser
	stderr  *syncBuffer
	exited  chan struct{} // closed once the process has exited
	waitErr error         // how it exited; valid after exited
}

// startStdio starts `codemode serve args...`; the process is killed at the
// end of the test if it is still running.
func startStdio(t *testing.T, args ...string) *stdioGateway {
	t.Helper()
	return startGateway(t, exec.Command(codemodeBin(t), append([]string{"serve", "--warmup", warmup.String()}, args...)...))
}

// startGateway starts cmd (a `codemode serve` over stdio) with the tests'
// environment in a temporary directory; the process is killed at the end
// of the test if it is still running.
func startGateway(t *testing.T, cmd *exec.Cmd) *stdioGateway {
	t.Helper()
	g := &stdioGateway{cmd: cmd, stderr: &syncBuffer{}, exited: make(chan struct{})}
	g.cmd.Env = baseEnv()
	g.cmd.Dir = t.TempDir()
	g.cmd.Stderr = g.stderr
	var err error
	if g.stdin, err = g.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if g.stdout, err = g.cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	g.cmd.WaitDelay = 2 * time.Second
	go func() { g.waitErr = g.cmd.Wait(); close(g.exited) }()
	t.Cleanup(func() {
		select {
		case <-g.exited:
		default:
			g.cmd.Process.Kill()
			<-g.exited
		}
	})
	return g
}

// connect connects the Go SDK's client to the gateway.
func (g *stdioGateway) connect(t *testing.T, ctx context.Context) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-go", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: g.stdout, Writer: g.stdin}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, g.stderr.String())
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// tail returns the last n bytes of s, for messages.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// proc is a subprocess the test started. Its stderr is scanned line by
// line: lines go to the buffer and to any line watchers.
type proc struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout syncBuffer
	stderr syncBuffer
	done   chan struct{}
	err    error

	mu       sync.Mutex
	watchers []func(string) bool // a watcher returning true is removed
}

// startProc starts name args with env and registers its end in t.Cleanup:
// SIGTERM, then SIGKILL of it and of everything it started.
func startProc(t testing.TB, env []string, dir, name string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, done: make(chan struct{})}
	p.cmd = exec.Command(name, args...)
	p.cmd.Env = env
	p.cmd.Dir = dir
	p.cmd.Stdout = &p.stdout
	p.cmd.Stderr = &lineWriter{p: p}
	// A grandchild that inherited stderr must not keep Wait waiting.
	p.cmd.WaitDelay = 2 * time.Second
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.stop)
	return p
}

// lineWriter feeds a process's stderr to its buffer and, line by line, to
// its watchers.
type lineWriter struct {
	p       *proc
	partial []byte
}

func (w *lineWriter) Write(b []byte) (int, error) {
	w.p.stderr.Write(b)
	w.partial = append(w.partial, b...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := string(w.partial[:i])
		w.partial = w.partial[i+1:]
		w.p.mu.Lock()
		kept := w.p.watchers[:0]
		for _, f := range w.p.watchers {
			if !f(line) {
				kept = append(kept, f)
			}
		}
		w.p.watchers = kept
		w.p.mu.Unlock()
	}
	return len(b), nil
}

// watch calls f with every further stderr line until it returns true.
func (p *proc) watch(f func(string) bool) {
	p.mu.Lock()
	p.watchers = append(p.watchers, f)
	p.mu.Unlock()
}

// waitLine waits for a stderr line matching re and returns its submatches.
// It gives up when the process exits first, or when the test binary's
// deadline nears (a loaded machine is slow, not wrong).
func (p *proc) waitLine(re *regexp.Regexp) ([]string, error) {
	got := make(chan []string, 1)
	p.watch(func(l string) bool {
		if m := re.FindStringSubmatch(l); m != nil {
			got <- m
			return true
		}
		return false
	})
	// The line may have come before the watcher.
	for _, l := range strings.Split(p.stderr.String(), "\n") {
		if m := re.FindStringSubmatch(l); m != nil {
			return m, nil
		}
	}
	select {
	case m := <-got:
		return m, nil
	case <-p.done:
		select {
		case m := <-got:
			return m, nil
		default:
		}
		return nil, fmt.Errorf("process exited (%v) before printing a line matching %s; stderr:\n%s", p.err, re, tail(p.stderr.String(), 4000))
	case <-testutil.Expiry(p.t):
		return nil, fmt.Errorf("no line matching %s before the test's deadline; stderr:\n%s", re, tail(p.stderr.String(), 4000))
	}
}

// wait waits for the process to exit and returns its exit status.
func (p *proc) wait() (int, error) {
	select {
	case <-p.done:
	case <-testutil.Expiry(p.t):
		return -1, fmt.Errorf("still running at the test's deadline; stderr:\n%s", tail(p.stderr.String(), 4000))
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode(), nil
	}
	if p.err != nil {
		return -1, p.err
	}
	return 0, nil
}

func (p *proc) signal(sig syscall.Signal) {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(sig)
	}
}

// stop ends the process if it still runs: SIGTERM (codemode then closes its
// upstreams), and after a while SIGKILL of it and its descendants.
func (p *proc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	kids := descendants(p.cmd.Process.Pid)
	p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		for _, pid := range kids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		p.signal(syscall.SIGKILL)
		<-p.done
	}
	// Upstreams that outlived their gateway are ours too.
	for _, pid := range kids {
		if alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// descendants lists the processes below pid, from /proc.
func descendants(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	parent := map[int]int{}
	for _, e := range entries {
		id, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp, ok := ppid(id); ok {
			parent[id] = pp
		}
	}
	var out []int
	frontier := []int{pid}
	for len(frontier) > 0 {
		cur := frontier[0]
		frontier = frontier[1:]
		for id, pp := range parent {
			if pp == cur {
				out = append(out, id)
				frontier = append(frontier, id)
			}
		}
	}
	return out
}

// ppid reads the parent of pid from /proc/<pid>/stat.
func ppid(pid int) (int, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// pid (comm) state ppid ...; comm may contain spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	pp, err := strconv.Atoi(f[1])
	return pp, err == nil
}

// cmdline returns the command line of pid.
func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.ReplaceAll(string(b), "\x00", " ")
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] != 'Z'
}

// ---------------------------------------------------------------------------
// codemode serve --http

type httpGateway struct {
	*proc
	url string // http://127.0.0.1:PORT/mcp
}

var urlLine = regexp.MustCompile(`serving MCP over Streamable HTTP.* url=(\S+)`)

// startHTTP starts `codemode serve --config cfg --http 127.0.0.1:0 extra...`
// and waits until it listens.
func startHTTP(t testing.TB, cfg string, extra ...string) *httpGateway {
	t.Helper()
	args := append([]string{"serve", "--config", cfg, "--http", "127.0.0.1:0", "--warmup", warmup.String()}, extra...)
	p := startProc(t, baseEnv(), t.TempDir(), codemodeBin(t), args...)
	m, err := p.waitLine(urlLine)
	if err != nil {
		t.Fatalf("codemode serve --http did not start: %v", err)
	}
	return &httpGateway{proc: p, url: m[1]}
}

// ---------------------------------------------------------------------------
// The TypeScript SDK client (testdata/client.mjs)

type step map[string]any

func listStep() step { return step{"op": "list"} }

func callStep(name string, args map[string]any) step {
	return step{"op": "call", "name": name, "arguments": args}
}

func runStep(code string) step { return callStep("codemode_run", map[string]any{"code": code}) }

func parallelStep(steps ...step) step { return step{"op": "parallel", "steps": steps} }

// stdioConn makes client.mjs start `codemode serve --config cfg` itself.
func stdioConn(t testing.TB, cfg string, extra ...string) map[string]any {
	return map[string]any{"transport": "stdio", "command": codemodeBin(t),
		"args": append([]string{"serve", "--config", cfg, "--warmup", warmup.String()}, extra...), "cwd": t.TempDir()}
}

func httpConn(url string, headers map[string]string) map[string]any {
	c := map[string]any{"transport": "http", "url": url}
	if headers != nil {
		c["headers"] = headers
	}
	return c
}

type tsOutput struct {
	Results     []json.RawMessage `json:"results"`
	ListChanged int               `json:"listChanged"`
	Fatal       string            `json:"fatal"`
}

// tsClient runs client.mjs with a plan.
type tsClient struct {
	*proc
}

func startTS(t testing.TB, conn map[string]any, steps ...step) *tsClient {
	t.Helper()
	plan, err := json.Marshal(map[string]any{"connect": conn, "steps": steps})
	if err != nil {
		t.Fatal(err)
	}
	p := startProc(t, baseEnv(), t.TempDir(), nodeBin(t), testdataFile("client.mjs"), string(plan))
	return &tsClient{p}
}

func (c *tsClient) output(t testing.TB) tsOutput {
	t.Helper()
	code, err := c.wait()
	if err != nil {
		t.Fatalf("TypeScript client: %v", err)
	}
	var out tsOutput
	if jerr := json.Unmarshal(bytes.TrimSpace([]byte(c.stdout.String())), &out); jerr != nil || code != 0 || out.Fatal != "" {
		t.Fatalf("TypeScript client failed (exit %d, %v): %s\nstdout: %s\nstderr:\n%s", code, jerr, out.Fatal,
			tail(c.stdout.String(), 2000), tail(c.stderr.String(), 4000))
	}
	return out
}

// runTS runs steps with the TypeScript SDK client and returns their outputs.
func runTS(t testing.TB, conn map[string]any, steps ...step) []json.RawMessage {
	t.Helper()
	c := startTS(t, conn, steps...)
	out := c.output(t)
	if os.Getenv("E2E_TRACE") != "" {
		t.Logf("client stderr:\n%s", c.stderr.String())
	}
	return out.Results
}

// ---------------------------------------------------------------------------
// The MCP Inspector CLI

// inspect runs the Inspector CLI with args against target: a stdio command
// line (after "--"), or nil with --transport http args. It returns stdout,
// the exit status and stderr.
func inspect(t testing.TB, target []string, args ...string) ([]byte, int, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(testutil.Context(t))
	defer cancel()
	home := t.TempDir()
	all := append([]string{filepath.Join(npmDir, "@modelcontextprotocol", "inspector", "clients", "cli", "build", "index.js")}, args...)
	if len(target) > 0 {
		if coverDir != "" {
			all = append(all, "-e", "GOCOVERDIR="+coverDir)
		}
		all = append(append(all, "--"), target...)
	}
	cmd := exec.CommandContext(ctx, nodeBin(t), all...)
	cmd.Env = baseEnv("HOME="+home, "MCP_CATALOG_PATH="+filepath.Join(home, "catalog.json"))
	cmd.Dir = home
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("inspector %q timed out; stderr:\n%s", args, tail(stderr.String(), 4000))
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("inspector: %v", err)
	}
	return stdout.Bytes(), code, stderr.String()
}

// inspectJSON runs the Inspector and decodes its JSON output into v.
func inspectJSON(t testing.TB, v any, target []string, args ...string) {
	t.Helper()
	out, code, stderr := inspect(t, target, args...)
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("inspector %q (exit %d): output is not JSON: %v\nstdout: %s\nstderr:\n%s", args, code, err, tail(string(out), 2000), tail(stderr, 4000))
	}
}

// stdioTarget is the Inspector target that starts codemode over stdio.
func stdioTarget(t testing.TB, cfg string) []string {
	return []string{codemodeBin(t), "serve", "--config", cfg}
}

// httpArgs are the Inspector flags that reach an HTTP gateway.
func httpArgs(url string, extra ...string) []string {
	return append([]string{"--transport", "http", "--server-url", url}, extra...)
}

// ---------------------------------------------------------------------------
// Results

type toolList struct {
	Tools []struct {
		Name        string          `json:"name"`
		Title       string          `json:"title"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
		Annotations json.RawMessage `json:"annotations"`
	} `json:"tools"`
	Error string `json:"error"`
}

func (l toolList) names() []string {
	out := make([]string, len(l.Tools))
	for i, t := range l.Tools {
		out[i] = t.Name
	}
	return out
}

func (l toolList) description(name string) string {
	for _, t := range l.Tools {
		if t.Name == name {
			return t.Description
		}
	}
	return ""
}

type content struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// toolResult is a tools/call result, or client.mjs's {error} for a
// protocol error.
type toolResult struct {
	Content []content `json:"content"`
	// StructuredContent is the result's structuredContent or, when it has
	// none, the JSON of its first text block: codemode sends a large
	// response once, as JSON text (see sentTwice).
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
	Error             string          `json:"error"`

	// sentTwice: the result had a structuredContent of its own although
	// its text is larger than serve's structuredLimit.
	sentTwice bool
}

func (r *toolResult) UnmarshalJSON(b []byte) error {
	type plain toolResult
	if err := json.Unmarshal(b, (*plain)(r)); err != nil {
		return err
	}
	if len(r.StructuredContent) > 0 {
		r.sentTwice = len(r.Content) > 0 && len(r.Content[0].Text) > serve.StructuredLimit
		return nil
	}
	if len(r.Content) > 0 && r.Content[0].Type == "text" && json.Valid([]byte(r.Content[0].Text)) {
		r.StructuredContent = json.RawMessage(r.Content[0].Text)
	}
	return nil
}

func (r toolResult) text() string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

type diagnostic struct {
	Severity   string `json:"severity"`
	Code       string `json:"code"`
	Message    string `json:"message"`
	Hint       string `json:"hint"`
	Path       string `json:"path"`
	ErrorClass string `json:"errorClass"`
	Limit      string `json:"limit"`
}

// runResponse is the §3.3 response.
type runResponse struct {
	Logs *[]struct {
		Level   string `json:"level"`
		Message string `json:"message"`
		TimeMs  int64  `json:"timeMs"`
	} `json:"logs"`
	Result      json.RawMessage `json:"result"`
	Diagnostics *[]diagnostic   `json:"diagnostics"`
	ToolTrace   []struct {
		ServerID   string `json:"serverId"`
		ToolName   string `json:"toolName"`
		DurationMs int64  `json:"durationMs"`
		OK         bool   `json:"ok"`
		Error      string `json:"error"`
	} `json:"toolTrace"`
}

func (r runResponse) diags() []diagnostic {
	if r.Diagnostics == nil {
		return nil
	}
	return *r.Diagnostics
}

func (r runResponse) errorDiag() *diagnostic {
	for _, d := range r.diags() {
		if d.Severity == "error" {
			return &d
		}
	}
	return nil
}

func (r runResponse) logMessages() []string {
	if r.Logs == nil {
		return nil
	}
	var out []string
	for _, l := range *r.Logs {
		out = append(out, l.Message)
	}
	return out
}

func decode[T any](t testing.TB, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decoding %T: %v\n%s", v, err, tail(string(raw), 2000))
	}
	return v
}

// asRun decodes a tools/call result whose first text block is a §3.3
// response as JSON, checking the shape the run surfaces promise: not a
// tool error, logs and diagnostics arrays, and a large response sent once
// (no structuredContent repeating it).
func asRun(t testing.TB, raw json.RawMessage) (toolResult, runResponse) {
	t.Helper()
	res := decode[toolResult](t, raw)
	if res.Error != "" {
		t.Fatalf("tools/call failed at the protocol level: %s", res.Error)
	}
	if res.sentTwice {
		t.Fatalf("the response is sent twice, as text and as structuredContent: %s", tail(string(raw), 2000))
	}
	if len(res.StructuredContent) == 0 || !strings.HasPrefix(res.Content[0].Text, "{") {
		t.Fatalf("content[0] is not the response as JSON: %s", tail(string(raw), 2000))
	}
	resp := decode[runResponse](t, res.StructuredContent)
	if resp.Logs == nil || resp.Diagnostics == nil || resp.Result == nil {
		t.Fatalf("the response lacks logs, result or diagnostics (§3.3 requires all three): %s", res.StructuredContent)
	}
	return res, resp
}

// okRun is asRun for a script expected to succeed: no error diagnostic,
// not a tool error. It returns the result JSON.
func okRun(t testing.TB, raw json.RawMessage) string {
	t.Helper()
	res, resp := asRun(t, raw)
	if res.IsError {
		t.Fatalf("isError is true: %s", tail(string(raw), 2000))
	}
	if d := resp.errorDiag(); d != nil {
		t.Fatalf("the script failed: %+v\n%s", *d, tail(string(raw), 2000))
	}
	return string(resp.Result)
}

// jsonEq compares JSON texts semantically.
func jsonEq(t testing.TB, got, want string) bool {
	t.Helper()
	var a, b any
	if err := json.Unmarshal([]byte(got), &a); err != nil {
		t.Fatalf("not JSON: %v: %s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &b); err != nil {
		t.Fatalf("not JSON: %v: %s", err, want)
	}
	ab, _ := json.Marshal(a)
	bb, _ := json.Marshal(b)
	return string(ab) == string(bb)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// toolNameRE is the tool-name pattern every client accepts.
var toolNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
