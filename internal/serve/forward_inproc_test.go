package serve_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/serve"
	"github.com/codemode-mcp/codemode/internal/testutil"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// askerServer asks its client for input in the middle of a call, the way
// the Go SDK lets a tool do it on both protocols (input requests in the
// result; the SDK turns them into requests of its own for a 2025-11-25
// client): ask (elicitation), sample (sampling) and roots.
func askerServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	obj := json.RawMessage(`{"type":"object"}`)
	s.AddTool(&mcp.Tool{Name: "ask", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r, ok := req.Params.InputResponses["name"].(*mcp.ElicitResult); ok {
			return text(r.Action + ":" + r.Content["name"].(string)), nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"name": &mcp.ElicitParams{Message: "your name?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "sample", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r, ok := req.Params.InputResponses["s"]; ok {
			b, _ := json.Marshal(r)
			return text(string(b)), nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"s": &mcp.CreateMessageParams{MaxTokens: 10,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "say hi"}}}}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "roots", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r, ok := req.Params.InputResponses["r"].(*mcp.ListRootsResult); ok {
			b, _ := json.Marshal(r.Roots)
			return text(string(b)), nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"r": &mcp.ListRootsParams{}}}, nil
	})
	return s
}

// forwardGateway serves askerServer, its sessions on protocol (the
// upstream's; "" for the latest).
func forwardGateway(t testing.TB, protocol string) *serve.Server {
	t.Helper()
	cfg := testutil.Config(config.Server{Name: "asker", Transport: config.Stdio, Command: "in-memory"})
	mgr := upstream.New(cfg.Servers, &upstream.Options{Dial: upstream.DialInMemory(map[string]*mcp.Server{"asker": askerServer()}),
		Logger: slog.New(slog.DiscardHandler), ProtocolVersion: protocol})
	t.Cleanup(func() { mgr.Close() })
	srv := serve.New(run.New(cfg, catalog.New(mgr), mgr, nil), mgr, &serve.Options{Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv.Start(ctx)
	return srv
}

// connectLegacy connects a 2025-11-25 client with opts and roots.
func connectLegacy(t *testing.T, srv *serve.Server, opts *mcp.ClientOptions, roots ...*mcp.Root) *mcp.ClientSession {
	t.Helper()
	return connectProtocol(t, srv, "2025-11-25", opts, roots...)
}

// connectProtocol connects a client speaking protocol with opts and roots.
func connectProtocol(t testing.TB, srv *serve.Server, protocol string, opts *mcp.ClientOptions, roots ...*mcp.Root) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ct, st := mcp.NewInMemoryTransports()
	if _, err := srv.MCP().Connect(ctx, srv.Transport(st), nil); err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "forward-test", Version: "1"}, opts)
	c.AddRoots(roots...)
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// An upstream's elicitation, sampling and roots requests made during a
// run's call reach the run's client, naming the server, and the answers
// go back, on both protocols an upstream may speak; a client that did not
// declare a capability makes the call fail, saying which.
func TestForwardingToTheRunsClient(t *testing.T) {
	t.Parallel()
	for _, protocol := range []string{"2025-11-25", ""} {
		name := protocol
		if name == "" {
			name = "2026-07-28"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := forwardGateway(t, protocol)
			var mu sync.Mutex
			var asked []string
			client := &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					asked = append(asked, r.Params.Message)
					mu.Unlock()
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
				},
				CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					if r.Params.Meta["codemode/serverId"] != "asker" {
						t.Errorf("sampling _meta: %v", r.Params.Meta)
					}
					return &mcp.CreateMessageResult{Model: "stub", Role: "assistant", Content: &mcp.TextContent{Text: "hi"}}, nil
				},
			}
			cs := connectLegacy(t, srv, client, &mcp.Root{URI: "file:///work", Name: "work"})
			code := `import { ask, sample, roots } from "@codemode/servers/asker";
const out = { name: await ask({}), sample: await sample({}) };
try { out.roots = await roots({}); } catch (e) { out.roots = e.message; }
globalThis.__codemode_result__ = out;`
			_, resp := runCode(t, cs, code, nil)
			var got struct{ Name, Sample, Roots string }
			if err := json.Unmarshal(resp.Result, &got); err != nil || resp.errorDiag() != nil {
				t.Fatalf("%s %+v", resp.Result, resp.diags())
			}
			if got.Name != "accept:Ada" || !strings.Contains(got.Sample, `"hi"`) {
				t.Errorf("answers: %+v", got)
			}
			if !strings.Contains(got.Roots, "file:///work") {
				t.Errorf("roots: %q", got.Roots)
			}
			mu.Lock()
			if len(asked) != 1 || asked[0] != "[asker] your name?" {
				t.Errorf("the client was asked %q", asked)
			}
			mu.Unlock()

			// A client without the capabilities.
			bare := connectLegacy(t, srv, nil)
			_, resp = runCode(t, bare, `import { ask } from "@codemode/servers/asker";
try { await ask({}); } catch (e) { globalThis.__codemode_result__ = e.message; }`, nil)
			var msg string
			json.Unmarshal(resp.Result, &msg)
			if !strings.Contains(msg, "did not declare the elicitation capability") {
				t.Errorf("without the capability: %q", msg)
			}
		})
	}
}

// A client on the 2026-07-28 protocol cannot be sent a request in the
// middle of its call: the run is held, the call answered with the
// upstream's question (input required), and the client's retry (the
// go-sdk client's own multi-round-trip loop) brings the answer to the
// upstream, on both protocols an upstream may speak.
func TestForwardingToAnInputRequiredClient(t *testing.T) {
	t.Parallel()
	for _, protocol := range []string{"2025-11-25", ""} {
		name := protocol
		if name == "" {
			name = "2026-07-28"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := forwardGateway(t, protocol)
			var mu sync.Mutex
			var asked []string
			cs := connectProtocol(t, srv, "2026-07-28", &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					asked = append(asked, r.Params.Message)
					mu.Unlock()
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
				},
				CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					return &mcp.CreateMessageResult{Model: "stub", Role: "assistant", Content: &mcp.TextContent{Text: "hi"}}, nil
				},
			}, &mcp.Root{URI: "file:///work", Name: "work"})
			code := `import { ask, sample, roots } from "@codemode/servers/asker";
const out = { name: await ask({}), sample: await sample({}) };
try { out.roots = await roots({}); } catch (e) { out.roots = e.message; }
globalThis.__codemode_result__ = out;`
			_, resp := runCode(t, cs, code, nil)
			var got struct{ Name, Sample, Roots string }
			if err := json.Unmarshal(resp.Result, &got); err != nil || resp.errorDiag() != nil {
				t.Fatalf("%s %+v", resp.Result, resp.diags())
			}
			if got.Name != "accept:Ada" || !strings.Contains(got.Sample, `"hi"`) {
				t.Errorf("answers: %+v", got)
			}
			if !strings.Contains(got.Roots, "file:///work") {
				t.Errorf("roots: %q", got.Roots)
			}
			mu.Lock()
			if len(asked) != 1 || asked[0] != "[asker] your name?" {
				t.Errorf("the client was asked %q", asked)
			}
			mu.Unlock()
		})
	}

	// By hand: the first call is answered with the question; the retry
	// with the answer finishes the run.
	srv := forwardGateway(t, "2025-11-25")
	cs := connectProtocol(t, srv, "2026-07-28", &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return nil, nil }})
	ctx := testutil.Context(t)
	p := &mcp.CallToolParams{Name: "codemode_run", Arguments: map[string]any{"code": `import { ask } from "@codemode/servers/asker";
globalThis.__codemode_result__ = await ask({});`}}
	res, err := cs.CallTool(ctx, p)
	if err != nil || !res.NeedsInput() || len(res.InputRequests) != 1 || res.RequestState == "" {
		t.Fatalf("first call: %v %+v", err, res)
	}
	var key string
	for k, ir := range res.InputRequests {
		key = k
		if e, ok := ir.(*mcp.ElicitParams); !ok || e.Message != "[asker] your name?" {
			t.Fatalf("input request %T %+v", ir, ir)
		}
	}
	answer := mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Grace"}}}
	// The state is bound to the call's arguments: with others, it names
	// no held run, and the call starts a run of its own.
	other := &mcp.CallToolParams{Name: p.Name, Arguments: map[string]any{"code": `globalThis.__codemode_result__ = 1;`}, InputResponses: answer, RequestState: res.RequestState}
	if r2, err := cs.CallTool(ctx, other); err != nil || r2.NeedsInput() {
		t.Errorf("other arguments: %v %+v", err, r2)
	} else if b, _ := json.Marshal(r2); !strings.Contains(string(b), `"result":1`) {
		t.Errorf("other arguments: %s", b)
	}
	p.InputResponses, p.RequestState = answer, res.RequestState
	res, err = cs.CallTool(ctx, p)
	if err != nil || res.NeedsInput() {
		t.Fatalf("retry: %v %+v", err, res)
	}
	b, _ := json.Marshal(res)
	if _, resp := asRun(t, b); string(resp.Result) != `"accept:Grace"` {
		t.Errorf("retry: %s %+v", resp.Result, resp.diags())
	}
}

// An upstream's request made while no run calls it is refused, saying why.
func TestForwardingOutsideARun(t *testing.T) {
	t.Parallel()
	var session *mcp.ServerSession
	got := make(chan *mcp.ServerSession, 1)
	s := mcp.NewServer(&mcp.Implementation{Name: "early", Version: "1"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler),
		InitializedHandler: func(_ context.Context, r *mcp.InitializedRequest) { got <- r.Session }})
	s.AddTool(&mcp.Tool{Name: "noop", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
	mgr := upstream.New([]config.Server{{ID: "early", Name: "early", Transport: config.Stdio, Command: "in-memory"}},
		&upstream.Options{Dial: upstream.DialInMemory(map[string]*mcp.Server{"early": s}), Logger: slog.New(slog.DiscardHandler), ProtocolVersion: "2025-11-25"})
	t.Cleanup(func() { mgr.Close() })
	ctx := testutil.Context(t)
	if _, err := mgr.Snapshot(ctx, "early"); err != nil {
		t.Fatal(err)
	}
	session = await(t, got, "initialized")
	_, err := session.Elicit(ctx, &mcp.ElicitParams{Message: "hello?", RequestedSchema: map[string]any{"type": "object"}})
	if err == nil || !strings.Contains(err.Error(), "no run is calling this server now") {
		t.Errorf("elicitation outside a run: %v", err)
	}
}

// BenchmarkCallRunTool is a codemode_run call of a script that makes no
// tool call, from an in-process go-sdk client on each protocol: on
// 2026-07-28 the call's run goes through hold.go (it may be held).
func BenchmarkCallRunTool(b *testing.B) {
	for _, protocol := range []string{"2025-11-25", "2026-07-28"} {
		b.Run(protocol, func(b *testing.B) {
			srv := forwardGateway(b, protocol)
			cs := connectProtocol(b, srv, protocol, nil)
			ctx := context.Background()
			p := &mcp.CallToolParams{Name: "codemode_run", Arguments: map[string]any{"code": `globalThis.__codemode_result__ = 1;`}}
			b.ReportAllocs()
			for b.Loop() {
				if res, err := cs.CallTool(ctx, p); err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
		})
	}
}
