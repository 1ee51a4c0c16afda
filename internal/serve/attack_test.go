package serve_test

// Attacks found by a hostile review of the gateway as an outsider sees it
// (a script, an upstream, a client), each fixed where it was found; the
// tests that need the real binary are in hostile_test.go.

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/serve"
	"github.com/codemode-mcp/codemode/internal/testutil"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// stuckLister is a server whose tools/list is not answered until release
// is closed (a server that never finishes listing, or whose answer the
// gateway cannot decode: too deeply nested JSON is dropped, and the
// request waits).
func stuckLister(release <-chan struct{}) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "stuck", Version: "1"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	s.AddTool(&mcp.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				<-release
			}
			return next(ctx, method, req)
		}
	})
	return s
}

// A run that imports a server whose tools/list never answers is answered
// at its deadline: its response does not wait for that server's
// declarations (it used to wait, with no deadline, as long as the
// server's tools/list could take: 50 s for a 3 s run).
func TestResponseDoesNotWaitForAStuckServer(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	cfg := testutil.Config(config.Server{Name: "stuck", Transport: config.Stdio, Command: "in-memory", CallTimeout: time.Hour})
	cfg.Serve.TypesBudgetTokens = 1 // declarations go with responses
	mgr := upstream.New(cfg.Servers, &upstream.Options{Dial: upstream.DialInMemory(map[string]*mcp.Server{"stuck": stuckLister(release)}),
		Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { mgr.Close() })
	srv := serve.New(run.New(cfg, catalog.New(mgr), mgr, nil), mgr, &serve.Options{Logger: slog.New(slog.DiscardHandler)})
	cs := connectInMemory(t, srv, "stuck")
	ctx := testutil.Context(t)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "codemode_run", Arguments: map[string]any{
		"code":   `import { t } from "@codemode/servers/stuck"; globalThis.__codemode_result__ = await t({});`,
		"limits": map[string]any{"timeoutMs": 1000}}})
	if err != nil {
		t.Fatalf("the response waited for the server (or failed): %v", err)
	}
	b, _ := json.Marshal(res)
	if !strings.Contains(string(b), "IMPORT_FAILURE") {
		t.Errorf("got %s", b)
	}
}

// listToolFiles and readToolFile wait for a server that never finishes
// listing its tools as long as tools/list does (WarmupTimeout), not as
// long as its calls may take: the files are then those of the others.
func TestToolFilesDoNotWaitForAStuckServer(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	cfg := testutil.Config(config.Server{Name: "calc", Transport: config.Stdio, Command: "in-memory"},
		config.Server{Name: "stuck", Transport: config.Stdio, Command: "in-memory", CallTimeout: time.Hour})
	cfg.Serve.Surfaces = []string{"files"}
	mgr := upstream.New(cfg.Servers, &upstream.Options{Dial: upstream.DialInMemory(map[string]*mcp.Server{"calc": calcServer(), "stuck": stuckLister(release)}),
		Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { mgr.Close() })
	srv := serve.New(run.New(cfg, catalog.New(mgr), mgr, nil), mgr, &serve.Options{Logger: slog.New(slog.DiscardHandler), WarmupTimeout: 100 * time.Millisecond})
	g := &inproc{srv: srv, cs: connectInMemory(t, srv, "stuck")}
	if out := string(g.call(t, "listToolFiles", map[string]any{})); !strings.Contains(out, "calc.d.ts") || strings.Contains(out, "stuck.d.ts") {
		t.Errorf("listToolFiles: %s", out)
	}
	if out := string(g.call(t, "readToolFile", map[string]any{"fileName": "servers/calc.d.ts"})); !strings.Contains(out, "add") {
		t.Errorf("readToolFile: %s", out)
	}
}

// A server whose tool description is a megabyte of one letter, and whose
// parameter's is a megabyte of spaces: its declarations are rendered and
// sized, and its tools listed and called. The tokenizer that sizes the
// declarations took the square of such a run's length (a 256 KB one held
// every call that needed the declarations for over a minute, a 1 MB one
// for twenty).
func TestLongRunsInDescriptions(t *testing.T) {
	t.Parallel()
	up := mcp.NewServer(&mcp.Implementation{Name: "wordy", Version: "1"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	schema := json.RawMessage(`{"type":"object","properties":{"p":{"type":"string","description":"` + strings.Repeat(" ", 1<<20) + `x"}}}`)
	up.AddTool(&mcp.Tool{Name: "t", Description: strings.Repeat("a", 1<<20), InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	})
	cfg := testutil.Config(config.Server{Name: "wordy", Transport: config.Stdio, Command: "in-memory"})
	mgr := upstream.New(cfg.Servers, &upstream.Options{Dial: upstream.DialInMemory(map[string]*mcp.Server{"wordy": up}),
		Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { mgr.Close() })
	srv := serve.New(run.New(cfg, catalog.New(mgr), mgr, nil), mgr, &serve.Options{Logger: slog.New(slog.DiscardHandler)})
	cs := connectInMemory(t, srv, "wordy")
	ctx := testutil.Context(t)
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "codemode_run", Arguments: map[string]any{
		"code": `import { t } from "@codemode/servers/wordy"; globalThis.__codemode_result__ = await t({});`}})
	if err != nil {
		t.Fatalf("the run was not answered: %v", err)
	}
	b, _ := json.Marshal(res)
	if !strings.Contains(string(b), `\"result\":\"done\"`) {
		t.Errorf("got %.500s", b)
	}
}
