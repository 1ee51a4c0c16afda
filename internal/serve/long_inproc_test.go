package serve_test

// In-process tests of long runs (issue #15): progress, tasks, large results
// and classic tools, with go-sdk clients and in-memory upstreams.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/serve"
	"github.com/codemode-mcp/codemode/internal/testutil"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// slowServer is an upstream for long runs:
//
//   - steps({n}) sends n notifications/progress (i/n, "step i") and
//     returns "stepped" once the client has handled them (a ping after
//     them: the SDK hands notifications to their handler on a goroutine
//     of their own, in order, and would otherwise let the result overtake
//     them);
//   - wait({}) says it started (waiting), then blocks until the test
//     releases it (one value on release) or the call is cancelled, which
//     it says (cancelled);
//   - big({bytes}) returns a text of that many bytes.
type slowServer struct {
	*mcp.Server
	release   chan struct{}
	waiting   chan struct{}
	cancelled chan struct{}
	mu        sync.Mutex
	cancels_  int
}

func newSlowServer() *slowServer {
	s := &slowServer{release: make(chan struct{}, 16), waiting: make(chan struct{}, 16), cancelled: make(chan struct{}, 16)}
	s.Server = mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "1"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	obj := func(props string) json.RawMessage {
		return json.RawMessage(`{"type":"object","properties":{` + props + `}}`)
	}
	s.AddTool(&mcp.Tool{Name: "steps", InputSchema: obj(`"n":{"type":"integer"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct{ N int }
		json.Unmarshal(req.Params.Arguments, &in)
		for i := 1; i <= in.N; i++ {
			if tok := req.Params.GetProgressToken(); tok != nil {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: float64(in.N), Message: fmt.Sprintf("step %d", i)})
			}
		}
		req.Session.Ping(ctx, nil)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "stepped"}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "wait", InputSchema: obj(``)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.waiting <- struct{}{}
		select {
		case <-s.release:
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "released"}}}, nil
		case <-ctx.Done():
			s.mu.Lock()
			s.cancels_++
			s.mu.Unlock()
			s.cancelled <- struct{}{}
			return nil, ctx.Err()
		}
	})
	s.AddTool(&mcp.Tool{Name: "big", InputSchema: obj(`"bytes":{"type":"integer"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct{ Bytes int }
		json.Unmarshal(req.Params.Arguments, &in)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", in.Bytes)}}}, nil
	})
	return s
}

// await receives from ch, failing the test if nothing comes before the
// test binary's deadline (a bound on a hang, not a wait).
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-testutil.Expiry(t):
		t.Fatalf("no %s", what)
		var zero T
		return zero
	}
}

func (s *slowServer) cancels() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cancels_
}

// longGateway is a gateway over in-memory upstreams.
type longGateway struct {
	srv *serve.Server
	cfg *config.Config
	mgr *upstream.Manager
}

// newLongGateway serves the in-memory servers (by name) with the run
// surface, after edit has changed the configuration.
func newLongGateway(t *testing.T, servers map[string]*mcp.Server, edit func(*config.Config), opts *serve.Options) *longGateway {
	t.Helper()
	return newLongGatewayRun(t, servers, edit, opts, nil)
}

// newLongGatewayRun is newLongGateway with the Runner's options.
func newLongGatewayRun(t *testing.T, servers map[string]*mcp.Server, edit func(*config.Config), opts *serve.Options, ropts *run.Options) *longGateway {
	t.Helper()
	var cs []config.Server
	names := make([]string, 0, len(servers))
	for name := range servers {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		cs = append(cs, config.Server{Name: name, Transport: config.Stdio, Command: "in-memory"})
	}
	cfg := testutil.Config(cs...)
	if edit != nil {
		edit(cfg)
	}
	var srv *serve.Server
	var ready sync.WaitGroup
	ready.Add(1)
	mgr := upstream.New(cfg.Servers, &upstream.Options{Dial: upstream.DialInMemory(servers), Logger: slog.New(slog.DiscardHandler),
		OnToolsChanged: func(id string) {
			ready.Wait()
			srv.ToolsChanged(id)
		}})
	t.Cleanup(func() { mgr.Close() })
	if opts == nil {
		opts = &serve.Options{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	srv = serve.New(run.New(cfg, catalog.New(mgr), mgr, ropts), mgr, opts)
	ready.Done()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv.Start(ctx)
	return &longGateway{srv: srv, cfg: cfg, mgr: mgr}
}

// connect connects a go-sdk client with opts over in-memory transports.
func (g *longGateway) connect(t *testing.T, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ct, st := mcp.NewInMemoryTransports()
	if _, err := g.srv.MCP().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "long-test", Version: "1"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// runCode calls codemode_run with code (and a progress token, if not nil).
func runCode(t *testing.T, cs *mcp.ClientSession, code string, token any) (*mcp.CallToolResult, runResponse) {
	t.Helper()
	ctx := testutil.Context(t)
	p := &mcp.CallToolParams{Name: "codemode_run", Arguments: map[string]any{"code": code}}
	if token != nil {
		p.SetProgressToken(token)
	}
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		t.Fatalf("codemode_run: %v", err)
	}
	var resp runResponse
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &resp); err != nil {
		t.Fatalf("response %s: %v", b, err)
	}
	return res, resp
}

// With a progressToken, the client hears of each inner call's start and
// end, of the upstream's own progress (prefixed with the server id and
// rescaled into the outer sequence) and of each console line, in order,
// with values that only grow; without one, it hears nothing.
func TestProgressOfARun(t *testing.T) {
	t.Parallel()
	g := newLongGateway(t, map[string]*mcp.Server{"slow": newSlowServer().Server}, nil, nil)
	// The client's SDK hands notifications to the handler on a goroutine
	// of its own, in order: the result of a call may overtake them, so the
	// test waits for the last one it expects.
	var mu sync.Mutex
	var got []*mcp.ProgressNotificationParams
	seen := make(chan string, 100)
	cs := g.connect(t, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		got = append(got, r.Params)
		mu.Unlock()
		seen <- r.Params.Message
	}})
	waitFor := func(msg string) {
		t.Helper()
		timeout := testutil.Expiry(t)
		for {
			select {
			case m := <-seen:
				if m == msg {
					return
				}
			case <-timeout:
				t.Fatalf("no notification %q", msg)
			}
		}
	}
	code := `import { steps } from "@codemode/servers/slow";
console.log("before");
await steps({ n: 2 });
console.warn("after");
globalThis.__codemode_result__ = 1;`
	_, resp := runCode(t, cs, code, "tok-1")
	if resp.errorDiag() != nil {
		t.Fatalf("%+v", resp.diags())
	}
	waitFor("console.warn: after")
	mu.Lock()
	var msgs []string
	last := 0.0
	for _, p := range got {
		msgs = append(msgs, p.Message)
		if p.ProgressToken != "tok-1" {
			t.Errorf("token %v", p.ProgressToken)
		}
		if p.Progress <= last {
			t.Errorf("progress does not grow: %v after %v (%q)", p.Progress, last, p.Message)
		}
		last = p.Progress
	}
	mu.Unlock()
	want := []string{"console.log: before", "slow/steps started", "slow: step 1 (1/2)", "slow: step 2 (2/2)", "slow/steps done", "console.warn: after"}
	if !slices.Equal(msgs, want) {
		t.Errorf("notifications:\n got %q\nwant %q", msgs, want)
	}

	// Without a token: nothing. A call with a token after it shows, by
	// its first notification, that anything sent before has been handled.
	mu.Lock()
	got = nil
	mu.Unlock()
	runCode(t, cs, code, nil)
	runCode(t, cs, `console.log("sentinel")`, "tok-2")
	waitFor("console.log: sentinel")
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 {
		t.Errorf("notifications without a token: %+v", got[:len(got)-1])
	}
}

// rawClient speaks JSON-RPC to a gateway by hand, for what no Go client
// does: 2025-11-25 tasks.
type rawClient struct {
	t    *testing.T
	conn mcp.Connection
	next int64
	mu   sync.Mutex
	// responses by id; notifications and requests from the server are
	// dropped.
	waiting map[string]chan *jsonrpc.Response
}

// rawConnect connects a raw client through the gateway's Transport, and
// initializes it with protocol (a 2025-11-25 client, say).
func (g *longGateway) rawConnect(t *testing.T, protocol string) (*rawClient, json.RawMessage) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ct, st := mcp.NewInMemoryTransports()
	if _, err := g.srv.MCP().Connect(ctx, g.srv.Transport(st), nil); err != nil {
		t.Fatal(err)
	}
	conn, err := ct.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	c := &rawClient{t: t, conn: conn, waiting: map[string]chan *jsonrpc.Response{}}
	go func() {
		for {
			msg, err := conn.Read(ctx)
			if err != nil {
				return
			}
			if r, ok := msg.(*jsonrpc.Response); ok {
				id := fmt.Sprint(r.ID.Raw())
				c.mu.Lock()
				ch := c.waiting[id]
				c.mu.Unlock()
				if ch != nil {
					ch <- r
				}
			}
		}
	}()
	init := c.call("initialize", map[string]any{"protocolVersion": protocol, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "raw", "version": "1"}})
	if err := conn.Write(ctx, &jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	return c, init
}

// send sends a request and returns the channel of its response.
func (c *rawClient) send(method string, params any) <-chan *jsonrpc.Response {
	c.t.Helper()
	c.mu.Lock()
	c.next++
	id := c.next
	ch := make(chan *jsonrpc.Response, 1)
	c.waiting[fmt.Sprint(id)] = ch
	c.mu.Unlock()
	b, err := json.Marshal(params)
	if err != nil {
		c.t.Fatal(err)
	}
	rid, _ := jsonrpc.MakeID(float64(id))
	if err := c.conn.Write(context.Background(), &jsonrpc.Request{ID: rid, Method: method, Params: b}); err != nil {
		c.t.Fatal(err)
	}
	return ch
}

// callErr sends a request and waits for its answer: the result, or the
// error.
func (c *rawClient) callErr(method string, params any) (json.RawMessage, *jsonrpc.Error) {
	c.t.Helper()
	select {
	case r := <-c.send(method, params):
		if r.Error != nil {
			var we *jsonrpc.Error
			if !errors.As(r.Error, &we) {
				we = &jsonrpc.Error{Message: r.Error.Error()}
			}
			return nil, we
		}
		return r.Result, nil
	case <-testutil.Expiry(c.t):
		c.t.Fatalf("%s: no answer", method)
		return nil, nil
	}
}

func (c *rawClient) call(method string, params any) json.RawMessage {
	c.t.Helper()
	res, err := c.callErr(method, params)
	if err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
	return res
}
