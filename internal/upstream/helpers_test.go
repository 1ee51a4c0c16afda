package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/testutil"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The test binary doubles as a tiny stdio MCP server (and as misbehaving
// commands): a child started with $UPSTREAM_TEST_HELPER set runs runHelper
// instead of the tests. It starts in milliseconds and does exactly what a
// test needs, where the npm reference servers cover real-world behaviour.
const helperEnv = "UPSTREAM_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	os.Exit(m.Run())
}

func runHelper(mode string) int {
	switch mode {
	case "fail":
		fmt.Fprintln(os.Stderr, "loading settings")
		fmt.Fprintln(os.Stderr, "fatal: cannot open database /nonexistent/db.sqlite")
		return 1
	case "stdout-logger": // logs to stdout, as misconfigured servers do, and quits
		fmt.Println("Server listening on stdio...")
		fmt.Println("error: no API key")
		return 1
	case "hang": // reads stdin, never answers
		var buf [4096]byte
		for {
			if _, err := os.Stdin.Read(buf[:]); err != nil {
				return 0
			}
		}
	case "banner": // prints banners and logs on stdout, then serves
		fmt.Println("Weather MCP Server running on stdio")
		fmt.Println(`{"level":"info","msg":"ready"}`)
		fmt.Println("")
		fmt.Println("[info] token=" + os.Getenv("HELPER_SECRET"))
		fallthrough
	case "server":
		fmt.Fprintln(os.Stderr, "helper server starting")
		srv := mcp.NewServer(&mcp.Implementation{Name: "helper", Version: "1.0.0"}, nil)
		addHelperTools(srv)
		if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 2
		}
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
	return 2
}

type envArgs struct {
	Name string `json:"name"`
}

// helperBlocking and helperCancelled count the helper server's block calls.
var helperBlocking, helperCancelled atomic.Int64

type spamArgs struct {
	Lines int `json:"lines"`
}

func addHelperTools(srv *mcp.Server) {
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "echoes text"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return text(in.Text), nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "env", Description: "reports an environment variable and the cwd"}, func(_ context.Context, _ *mcp.CallToolRequest, in envArgs) (*mcp.CallToolResult, any, error) {
		wd, _ := os.Getwd()
		return text(os.Getenv(in.Name) + "|" + wd), nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "spam", Description: "writes lines to stderr"}, func(_ context.Context, _ *mcp.CallToolRequest, in spamArgs) (*mcp.CallToolResult, any, error) {
		for i := range in.Lines {
			fmt.Fprintf(os.Stderr, "spam line %d\n", i)
		}
		return text("done"), nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "crash-with", Description: "writes text to stderr and exits with status 3"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		fmt.Fprintln(os.Stderr, in.Text)
		os.Exit(3)
		return nil, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "chatter", Description: "prints a line on stdout, then answers"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		fmt.Println("handling chatter...")
		return text("chatted"), nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "block", Description: "waits until the call is cancelled"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		helperBlocking.Add(1)
		<-ctx.Done()
		helperCancelled.Add(1)
		return text("cancelled"), nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "state", Description: "counts the block calls started and cancelled"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return text(fmt.Sprintf("blocking %d cancelled %d", helperBlocking.Load(), helperCancelled.Load())), nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "meta", Description: "answers the call's _meta as JSON"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		b, err := json.Marshal(req.Params.Meta)
		return text(string(b)), nil, err
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "crash", Description: "exits with status 3"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		fmt.Fprintln(os.Stderr, "panic: about to crash on purpose")
		os.Exit(3)
		return nil, nil, nil
	})
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// helperServer is a config entry that runs the test binary as a server.
func helperServer(t *testing.T, id, mode string, env ...string) config.Server {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s := config.Server{ID: id, Name: id, Transport: config.Stdio, Command: exe, Env: map[string]string{helperEnv: mode}}
	for i := 0; i+1 < len(env); i += 2 {
		s.Env[env[i]] = env[i+1]
	}
	return s
}

// npmDir is where `npm ci --prefix testdata/npm` installs the reference
// servers.
var npmDir = filepath.Join("..", "..", "testdata", "npm", "node_modules", ".bin")

// npmServer is a config entry that runs a reference server with the pinned
// Node.
func npmServer(t *testing.T, id, bin string, args ...string) config.Server {
	t.Helper()
	node, script := npmPath(t, "node"), npmPath(t, bin)
	return config.Server{ID: id, Name: id, Transport: config.Stdio, Command: node, Args: append([]string{script}, args...)}
}

func npmPath(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(npmDir, name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is missing: run `make test`, or `npm ci --prefix testdata/npm` once", p)
	}
	return p
}

// startNpmHTTP runs a reference server in one of its HTTP modes on a free
// port and returns the base URL once it accepts connections.
func startNpmHTTP(t *testing.T, bin, mode string) string {
	t.Helper()
	base, _ := startNpmHTTPProc(t, bin, mode)
	return base
}

// startNpmHTTPProc is startNpmHTTP that also returns the server's process.
func startNpmHTTPProc(t *testing.T, bin, mode string) (string, *exec.Cmd) {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command(npmPath(t, "node"), npmPath(t, bin), mode)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	// Until it accepts a connection: no other event says it listens.
	var err error
	if !testutil.Poll(t, func() bool {
		var c net.Conn
		if c, err = net.Dial("tcp", addr); err == nil {
			c.Close()
		}
		return err == nil
	}) {
		t.Fatalf("%s %s did not listen on %s: %v; stderr:\n%s", bin, mode, addr, err, stderr.String())
	}
	return "http://" + addr, cmd
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of loggers
// and child processes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// newManager makes a Manager that logs into a buffer (shown when the test
// fails) and is closed at the end of the test.
func newManager(t *testing.T, servers []config.Server, opts *Options) (*Manager, *syncBuffer) {
	t.Helper()
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.TerminateTimeout == 0 {
		// Several reference servers ignore EOF on stdin while a timer is
		// pending; do not spend the default 2s on each at cleanup.
		o.TerminateTimeout = 300 * time.Millisecond
	}
	logs := &syncBuffer{}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	m := New(servers, &o)
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if t.Failed() {
			t.Logf("manager logs:\n%s", logs.String())
		}
	})
	return m, logs
}

// resultText concatenates the text content of a tool result.
func resultText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if res == nil {
		t.Fatal("nil result")
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func call(t *testing.T, m *Manager, id, tool string, args any) string {
	t.Helper()
	ctx := testutil.Context(t)
	res, err := m.CallTool(ctx, id, tool, args)
	if err != nil {
		t.Fatalf("CallTool(%s, %s): %v", id, tool, err)
	}
	if res.IsError {
		t.Fatalf("CallTool(%s, %s) returned a tool error: %s", id, tool, resultText(t, res))
	}
	return resultText(t, res)
}

func snapshot(t *testing.T, m *Manager, id string) *Snapshot {
	t.Helper()
	ctx := testutil.Context(t)
	s, err := m.Snapshot(ctx, id)
	if err != nil {
		t.Fatalf("Snapshot(%s): %v", id, err)
	}
	return s
}

func toolNames(s *Snapshot) []string {
	var names []string
	for _, tool := range s.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// asError asserts that err is an *Error of the given kind about id.
func asError(t *testing.T, err error, id string, kind Kind) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *upstream.Error", err, err)
	}
	if e.ServerID != id || e.Kind != kind {
		t.Fatalf("got server %q kind %q, want %q %q: %v", e.ServerID, e.Kind, id, kind, err)
	}
	if !errors.Is(err, kind) {
		t.Fatalf("errors.Is(err, %s) = false", kind)
	}
	if !strings.Contains(err.Error(), strconv.Quote(id)) {
		t.Fatalf("message does not name the server %q: %v", id, err)
	}
	return e
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// waitFor waits until cond holds: for states of the Manager that no event
// announces to a test (see testutil.Poll).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !testutil.Poll(t, cond) {
		t.Fatalf("%s did not happen before the test's deadline", what)
	}
}

// fakeClock is an Options.Now that moves only when told to.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}
