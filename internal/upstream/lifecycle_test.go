package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Lazy: using one server starts only that one.
func TestLazy(t *testing.T) {
	t.Parallel()
	var dialed sync.Map
	opts := &Options{Dial: func(_ context.Context, s config.Server) (mcp.Transport, error) {
		dialed.Store(s.ID, true)
		return nil, nil // dial normally
	}}
	m, _ := newManager(t, []config.Server{
		helperServer(t, "a", "server"),
		helperServer(t, "b", "server"),
		{ID: "c", Name: "c", Command: "codemode-no-such-command"},
	}, opts)
	for _, st := range m.Statuses() {
		if st.State != StateNotConnected {
			t.Fatalf("before any use: %s is %s", st.ServerID, st.State)
		}
	}
	if got := call(t, m, "a", "echo", map[string]any{"text": "hi"}); got != "hi" {
		t.Fatalf("echo = %q", got)
	}
	want := map[string]State{"a": StateConnected, "b": StateNotConnected, "c": StateNotConnected}
	for id, state := range want {
		if st := m.Status(id); st.State != state {
			t.Errorf("%s is %s, want %s", id, st.State, state)
		}
	}
	for _, id := range []string{"b", "c"} {
		if _, ok := dialed.Load(id); ok {
			t.Errorf("%s was dialed", id)
		}
	}
}

// Concurrent callers share one connection attempt and one tools/list.
func TestSingleflight(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	addHelperTools(srv)
	var lists atomic.Int32
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				lists.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	// The attempt is held until every caller is on its way, so that they
	// overlap it however the goroutines are scheduled.
	const callers = 20
	var arrived sync.WaitGroup
	arrived.Add(callers)
	var dials atomic.Int32
	inMem := DialInMemory(map[string]*mcp.Server{"s": srv})
	m, _ := newManager(t, []config.Server{{ID: "s", Name: "s"}}, &Options{Dial: func(ctx context.Context, s config.Server) (mcp.Transport, error) {
		dials.Add(1)
		arrived.Wait()
		return inMem(ctx, s)
	}})
	var wg sync.WaitGroup
	snaps := make([]*Snapshot, callers)
	for i := range snaps {
		wg.Go(func() {
			arrived.Done()
			s, err := m.Snapshot(context.Background(), "s")
			if err != nil {
				t.Error(err)
			}
			snaps[i] = s
		})
	}
	wg.Wait()
	if dials.Load() != 1 || lists.Load() != 1 {
		t.Errorf("%d dials and %d tools/list for 20 concurrent callers, want 1 and 1", dials.Load(), lists.Load())
	}
	for _, s := range snaps {
		if s != snaps[0] {
			t.Fatal("callers got different snapshots")
		}
	}
	// A caller that gives up does not break the shared attempt.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.CallTool(ctx, "s", "echo", map[string]any{"text": "x"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled caller: %v", err)
	}
	if got := call(t, m, "s", "echo", map[string]any{"text": "still fine"}); got != "still fine" {
		t.Errorf("echo = %q", got)
	}
}

// SnapshotAll connects servers in parallel and reports each failure apart.
// Here a, b and c each finish connecting only once all three have started
// to: one at a time, the first would wait for the others until the connect
// timeout, and fail.
func TestSnapshotAllParallel(t *testing.T) {
	t.Parallel()
	var started sync.WaitGroup
	started.Add(3)
	mem := map[string]*mcp.Server{}
	for _, id := range []string{"a", "b", "c"} {
		srv := mcp.NewServer(&mcp.Implementation{Name: id, Version: "1"}, nil)
		addHelperTools(srv)
		mem[id] = srv
	}
	inMem := DialInMemory(mem)
	servers := []config.Server{
		{ID: "a", Name: "a"}, {ID: "b", Name: "b"}, {ID: "c", Name: "c"},
		helperServer(t, "broken", "fail"),
		{ID: "unset", Name: "unset", Command: "x", Unresolved: []string{"TOKEN"}},
	}
	m, _ := newManager(t, servers, &Options{ConnectTimeout: time.Hour, Dial: func(ctx context.Context, s config.Server) (mcp.Transport, error) {
		if mem[s.ID] == nil {
			return nil, nil
		}
		started.Done()
		started.Wait()
		return inMem(ctx, s)
	}})
	snaps, errs := m.SnapshotAll(context.Background())
	if len(snaps) != 3 || len(errs) != 2 {
		t.Fatalf("got %d snapshots and errors %v", len(snaps), errs)
	}
	for _, id := range []string{"a", "b", "c"} {
		if s := snaps[id]; s == nil || s.ServerID != id || s.Tool("echo") == nil {
			t.Errorf("snapshot %s = %+v", id, s)
		}
	}
	asError(t, errs["broken"], "broken", StartFailed)
	asError(t, errs["unset"], "unset", Config)
}

// A command that does not exist and one that exits at once: each error
// names its server, says why, keeps the stderr tail, and the other servers
// keep working.
func TestStartFailures(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, []config.Server{
		{ID: "missing", Name: "missing", Transport: config.Stdio, Command: "codemode-no-such-command"},
		helperServer(t, "crashy", "fail"),
		{ID: "badcwd", Name: "badcwd", Transport: config.Stdio, Command: "true", Cwd: filepath.Join(t.TempDir(), "gone")},
		{ID: "empty", Name: "empty"},
		helperServer(t, "ok", "server"),
	}, &Options{BackoffInitial: time.Hour, BackoffMax: 2 * time.Hour}) // still in backoff when checked, however slow the machine
	ctx := context.Background()

	_, err := m.Snapshot(ctx, "missing")
	e := asError(t, err, "missing", StartFailed)
	if !errors.Is(err, exec.ErrNotFound) || !strings.Contains(e.Hint, "install") {
		t.Errorf("missing command: %v (hint %q)", err, e.Hint)
	}

	_, err = m.CallTool(ctx, "crashy", "echo", nil)
	e = asError(t, err, "crashy", StartFailed)
	for _, want := range []string{"exit status 1", "fatal: cannot open database"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	if !strings.Contains(e.StderrTail, "loading settings\nfatal: cannot open database") || e.Hint == "" {
		t.Errorf("tail %q, hint %q", e.StderrTail, e.Hint)
	}

	_, err = m.Snapshot(ctx, "badcwd")
	if e := asError(t, err, "badcwd", StartFailed); !strings.Contains(e.Hint, "cwd") {
		t.Errorf("bad cwd hint %q", e.Hint)
	}
	_, err = m.Snapshot(ctx, "empty")
	asError(t, err, "empty", StartFailed)

	if got := call(t, m, "ok", "echo", map[string]any{"text": "alive"}); got != "alive" {
		t.Errorf("the healthy server: %q", got)
	}

	// Within the backoff, uses fail fast (ErrBackoff: without starting the
	// server again) with the same story.
	st := m.Status("crashy")
	if st.State != StateBackoff || st.Err == nil || time.Until(st.RetryAt) <= 0 {
		t.Fatalf("Status(crashy) = %+v", st)
	}
	_, err = m.Snapshot(ctx, "crashy")
	e = asError(t, err, "crashy", StartFailed)
	if !errors.Is(err, ErrBackoff) || e.RetryIn <= 0 || !strings.Contains(err.Error(), "restarting in") ||
		!strings.Contains(e.StderrTail, "fatal: cannot open database") {
		t.Errorf("during backoff: %v (RetryIn %s)", err, e.RetryIn)
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	var dials atomic.Int32
	m, _ := newManager(t, []config.Server{
		{ID: "gh", Name: "github", Transport: config.Streamable, URL: "https://example.invalid/mcp", Unresolved: []string{"GITHUB_TOKEN"}},
	}, &Options{Dial: func(context.Context, config.Server) (mcp.Transport, error) {
		dials.Add(1)
		return nil, nil
	}})
	if st := m.Status("gh"); st.State != StateError || st.Err == nil || st.Err.Kind != Config {
		t.Errorf("Status = %+v", st)
	}
	_, err := m.Snapshot(context.Background(), "gh")
	e := asError(t, err, "gh", Config)
	if !errors.Is(err, ErrUnresolvedEnv) || !strings.Contains(err.Error(), "GITHUB_TOKEN") ||
		!strings.Contains(e.Hint, "GITHUB_TOKEN") || !strings.Contains(e.Hint, "mcpServers.github") {
		t.Errorf("unresolved: %v (hint %q)", err, e.Hint)
	}
	if dials.Load() != 0 {
		t.Error("a server with unresolved variables was dialed")
	}

	_, err = m.CallTool(context.Background(), "nope", "x", nil)
	e = asError(t, err, "nope", Config)
	if !errors.Is(err, ErrUnknownServer) || !strings.Contains(e.Hint, "gh") {
		t.Errorf("unknown server: %v (hint %q)", err, e.Hint)
	}
	if st := m.Status("nope"); st.State != StateError || !errors.Is(st.Err, ErrUnknownServer) {
		t.Errorf("Status(nope) = %+v", st)
	}
	for _, f := range []func() error{
		func() error { _, err := m.Snapshot(context.Background(), "nope"); return err },
		func() error { _, err := m.ListResources(context.Background(), "nope"); return err },
		func() error { _, err := m.ReadResource(context.Background(), "nope", "x:/"); return err },
		func() error { _, err := m.ListResourceTemplates(context.Background(), "nope"); return err },
		func() error { _, err := m.ListPrompts(context.Background(), "nope"); return err },
		func() error { _, err := m.GetPrompt(context.Background(), "nope", "p", nil); return err },
	} {
		if err := f(); !errors.Is(err, ErrUnknownServer) {
			t.Errorf("unknown server: %v", err)
		}
	}
}

// Bad input is an error, never a panic.
func TestBadInput(t *testing.T) {
	t.Parallel()
	empty := New(nil, nil)
	snaps, errs := empty.SnapshotAll(context.Background())
	if len(snaps)+len(errs) != 0 || len(empty.Servers()) != 0 {
		t.Error("an empty manager has servers")
	}
	if err := empty.Close(); err != nil {
		t.Error(err)
	}

	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	addHelperTools(srv)
	m, _ := newManager(t, []config.Server{{ID: "s", Name: "s"}, {ID: "s", Name: "dup"}}, &Options{Dial: DialInMemory(map[string]*mcp.Server{"s": srv})})
	if n := len(m.Servers()); n != 1 {
		t.Errorf("duplicate id kept: %d servers", n)
	}
	for _, args := range []any{json.RawMessage(`[1,2]`), json.RawMessage(`{bad`), []byte(`"s"`)} {
		_, err := m.CallTool(context.Background(), "s", "echo", args)
		if e := asError(t, err, "s", Rejected); !errors.Is(err, ErrInvalidArguments) {
			t.Errorf("args %s: %v", args, e)
		}
	}
	for _, args := range []any{nil, json.RawMessage(nil), json.RawMessage(`null`), json.RawMessage(`{"text":"raw"}`)} {
		if _, err := m.CallTool(context.Background(), "s", "echo", args); err != nil {
			t.Errorf("args %s: %v", args, err)
		}
	}
	// An unknown tool is the upstream's JSON-RPC error.
	if _, err := m.CallTool(context.Background(), "s", "nope", nil); err != nil {
		asError(t, err, "s", Rejected)
	}
	// No resources or prompts: empty lists, and errors for read/get.
	if rs, err := m.ListResources(context.Background(), "s"); err != nil || len(rs) != 0 {
		t.Errorf("ListResources = %v, %v", rs, err)
	}
	if ps, err := m.ListPrompts(context.Background(), "s"); err != nil || len(ps) != 0 {
		t.Errorf("ListPrompts = %v, %v", ps, err)
	}
	_, err := m.ReadResource(context.Background(), "s", "file:///x")
	if asError(t, err, "s", Rejected); !errors.Is(err, ErrNotSupported) {
		t.Errorf("ReadResource: %v", err)
	}
	_, err = m.GetPrompt(context.Background(), "s", "p", nil)
	if asError(t, err, "s", Rejected); !errors.Is(err, ErrNotSupported) {
		t.Errorf("GetPrompt: %v", err)
	}
}

// The child gets the gateway's environment plus its own, in its cwd.
func TestEnvAndCwd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := helperServer(t, "h", "server", "UPSTREAM_X", "from-config", "HOME", "/custom/home")
	s.Cwd = dir
	m, _ := newManager(t, []config.Server{s}, nil)
	wantDir, _ := filepath.EvalSymlinks(dir)
	check := func(name, want string) {
		t.Helper()
		got := call(t, m, "h", "env", map[string]any{"name": name})
		val, wd, _ := strings.Cut(got, "|")
		if gotDir, _ := filepath.EvalSymlinks(wd); val != want || gotDir != wantDir {
			t.Errorf("child sees %s=%q in %q, want %q in %q", name, val, wd, want, wantDir)
		}
	}
	check("UPSTREAM_X", "from-config")
	check("HOME", "/custom/home")
	check("PATH", os.Getenv("PATH"))
}

// The gateway's own bearer token stays in the gateway, unless a server's
// config passes it on explicitly.
func TestAuthTokenNotInherited(t *testing.T) {
	t.Setenv(config.AuthTokenEnv, "gateway-secret-999")
	m, _ := newManager(t, []config.Server{helperServer(t, "h", "server"), helperServer(t, "k", "server", config.AuthTokenEnv, "meant-for-k")}, nil)
	for id, want := range map[string]string{"h": "", "k": "meant-for-k"} {
		got, _, _ := strings.Cut(call(t, m, id, "env", map[string]any{"name": config.AuthTokenEnv}), "|")
		if got != want {
			t.Errorf("%s sees %s=%q, want %q", id, config.AuthTokenEnv, got, want)
		}
	}
}

// A child that dies is reported with its exit and stderr, restarted on next
// use after the backoff, and the backoff doubles while it keeps dying. The
// backoff runs on a clock the test moves.
func TestDeathAndRestart(t *testing.T) {
	t.Parallel()
	const initial = 300 * time.Millisecond
	clock := newFakeClock()
	m, _ := newManager(t, []config.Server{helperServer(t, "h", "server")}, &Options{BackoffInitial: initial, BackoffMax: 10 * time.Second, Now: clock.Now})
	ctx := context.Background()
	snap1 := snapshot(t, m, "h")
	pid := m.Status("h").PID
	if pid == 0 {
		t.Fatal("no pid")
	}

	// Killed from outside while idle.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the death to be noticed", func() bool { return m.Status("h").State == StateBackoff })
	st := m.Status("h")
	if st.Err == nil || st.Err.Kind != Died || !strings.Contains(st.Err.Error(), "killed") ||
		!strings.Contains(st.Err.StderrTail, "helper server starting") {
		t.Fatalf("after kill: %+v", st)
	}
	_, err := m.CallTool(ctx, "h", "echo", map[string]any{"text": "x"})
	if e := asError(t, err, "h", Died); !errors.Is(err, ErrBackoff) || e.RetryIn != initial {
		t.Fatalf("during backoff: %v", err)
	}
	clock.Set(st.RetryAt)
	if got := call(t, m, "h", "echo", map[string]any{"text": "back"}); got != "back" {
		t.Fatalf("after restart: %q", got)
	}
	pid2 := m.Status("h").PID
	if pid2 == 0 || pid2 == pid {
		t.Fatalf("restart pid %d (was %d)", pid2, pid)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the killed child was not reaped: kill(pid, 0) = %v", err)
	}
	// Same tools after the restart: same snapshot.
	if snap2 := snapshot(t, m, "h"); snap2 != snap1 {
		t.Errorf("restart with the same tools: new snapshot (generation %d -> %d)", snap1.Generation, snap2.Generation)
	}

	// Dies during a call: the call says so, with the exit status and stderr.
	_, err = m.CallTool(ctx, "h", "crash", nil)
	e := asError(t, err, "h", Died)
	if !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(e.StderrTail, "about to crash on purpose") || e.Op != "tools/call crash" {
		t.Fatalf("crash during call: %v (tail %q, op %q)", err, e.StderrTail, e.Op)
	}
	// Second death in a row: the delay doubled.
	st = m.Status("h")
	if d := st.RetryAt.Sub(clock.Now()); st.State != StateBackoff || d != 2*initial {
		t.Errorf("second backoff: %s (%+v), want %s", d, st, 2*initial)
	}
}

// A server that never answers initialize times out, and the child is ended.
func TestConnectTimeout(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, []config.Server{helperServer(t, "mute", "hang")}, &Options{ConnectTimeout: 300 * time.Millisecond, TerminateTimeout: 200 * time.Millisecond})
	_, err := m.Snapshot(context.Background(), "mute")
	e := asError(t, err, "mute", Timeout)
	if !strings.Contains(err.Error(), "initialize") || e.Hint == "" {
		t.Errorf("connect timeout: %v", err)
	}
}

// Close ends children, cancels calls in flight and refuses later use.
func TestClose(t *testing.T) {
	t.Parallel()
	blocked := make(chan struct{})
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "block"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		close(blocked)
		<-ctx.Done()
		return nil, nil, ctx.Err()
	})
	m := New([]config.Server{{ID: "mem", Name: "mem"}, helperServer(t, "h", "server")}, &Options{
		Dial:   DialInMemory(map[string]*mcp.Server{"mem": srv}),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	snapshot(t, m, "h")
	pid := m.Status("h").PID
	callErr := make(chan error, 1)
	go func() {
		_, err := m.CallTool(context.Background(), "mem", "block", nil)
		callErr <- err
	}()
	<-blocked
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-callErr; !errors.Is(err, ErrClosed) {
		t.Errorf("call in flight: %v", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("child still there after Close: %v", err)
	}
	_, err := m.CallTool(context.Background(), "h", "echo", nil)
	asError(t, err, "h", Unavailable)
	if !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// Close during a connection attempt ends the child and fails the waiters.
func TestCloseDuringConnect(t *testing.T) {
	t.Parallel()
	m := New([]config.Server{helperServer(t, "mute", "hang")}, &Options{
		Logger:           slog.New(slog.NewTextHandler(io.Discard, nil)),
		ConnectTimeout:   time.Minute,
		TerminateTimeout: 200 * time.Millisecond,
	})
	errc := make(chan error, 1)
	go func() {
		_, err := m.Snapshot(context.Background(), "mute")
		errc <- err
	}()
	waitFor(t, "connecting", func() bool { return m.Status("mute").State == StateConnecting })
	// The connect timeout is a minute: Close must not wait for it.
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Errorf("waiter: %v", err)
	}
	if st := m.Status("mute"); st.State == StateConnecting || st.State == StateConnected {
		t.Errorf("after Close: %+v", st)
	}
}

// A server that prints lines on stdout and quits without speaking JSON-RPC
// fails to start with an error that quotes what it printed, and a hint
// about stdout, without waiting for the connect timeout (an hour here:
// waiting for it would hold the test until go test's -timeout; a timeout
// would be reported as one, not as StartFailed).
func TestStdoutGarbage(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, []config.Server{helperServer(t, "chatty", "stdout-logger")}, &Options{ConnectTimeout: time.Hour, TerminateTimeout: 200 * time.Millisecond})
	_, err := m.Snapshot(context.Background(), "chatty")
	e := asError(t, err, "chatty", StartFailed)
	if !strings.Contains(e.Hint, "stdout") || !strings.Contains(err.Error(), `it wrote 2 line(s) to stdout that are not JSON-RPC, the first: "Server listening on stdio..."`) {
		t.Errorf("%v (hint %q)", err, e.Hint)
	}
}

// Lines on stdout that are not JSON-RPC messages (a banner, a JSON log
// line, a line quoting a secret), before the first message or between
// messages, are skipped with one warning each that quotes the line,
// redacted, and the connection goes on, as the TypeScript SDK's clients
// do.
func TestStdoutBannerSkipped(t *testing.T) {
	t.Parallel()
	s := helperServer(t, "banner", "banner", "HELPER_SECRET", "s3cr3t-value")
	s.Secrets = []string{"s3cr3t-value"}
	m, logs := newManager(t, []config.Server{s}, nil)
	snap, err := m.Snapshot(context.Background(), "banner")
	if err != nil {
		t.Fatal(err)
	}
	if snap.Tool("echo") == nil {
		t.Fatalf("tools: %v", snap.Tools)
	}
	for range 2 {
		res, err := m.CallTool(context.Background(), "banner", "chatter", map[string]any{})
		if err != nil || resultText(t, res) != "chatted" {
			t.Fatalf("chatter: %v", err)
		}
	}
	res, err := m.CallTool(context.Background(), "banner", "echo", map[string]any{"text": "still here"})
	if err != nil || resultText(t, res) != "still here" {
		t.Fatalf("echo: %v", err)
	}
	out := logs.String()
	for _, want := range []string{
		`line="Weather MCP Server running on stdio"`,
		`line="{\"level\":\"info\",\"msg\":\"ready\"}"`,
		`line="[info] token=[REDACTED]"`,
		`line="handling chatter..."`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no warning with %s", want)
		}
	}
	if n := strings.Count(out, "not JSON-RPC; skipped it"); n != 5 {
		t.Errorf("%d warnings, want 5 (three lines at start, two calls)", n)
	}
	if strings.Count(out, "further such lines are skipped without a warning") != 1 {
		t.Error("the fifth warning does not say that later lines are not reported")
	}
	if strings.Contains(out, "s3cr3t-value") {
		t.Error("the secret reached the log")
	}
	if st := m.Status("banner"); st.State != StateConnected {
		t.Errorf("status %+v", st)
	}
	if t.Failed() {
		t.Logf("logs:\n%s", out)
	}
}
