package serve_test

import (
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/serve"
	"github.com/codemode-mcp/codemode/internal/testutil"
	"github.com/codemode-mcp/codemode/internal/typegen"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// TestTokensMixedConfig logs the tools/list figures of docs/BENCHMARKS.md
// for a mixed configuration (memory served directly, everything,
// filesystem and sequential-thinking in code mode), beside all four in
// code mode and all four listed directly:
//
//	go test -run TestTokensMixedConfig -v ./internal/serve
func TestTokensMixedConfig(t *testing.T) {
	t.Parallel()
	servers := []config.Server{testutil.Memory(t, "memory"), testutil.Everything(t, "everything"),
		testutil.Filesystem(t, "filesystem", t.TempDir()), testutil.SequentialThinking(t, "thinking")}
	measure := func(direct bool) (tokens, tools int, res *mcp.ListToolsResult) {
		cs := append([]config.Server(nil), servers...)
		if direct {
			cs[0].CodeMode = config.CodeModeOff
		}
		cfg := testutil.Config(cs...)
		mgr := upstream.New(cfg.Servers, &upstream.Options{Logger: slog.New(slog.DiscardHandler)})
		t.Cleanup(func() { mgr.Close() })
		srv := serve.New(run.New(cfg, catalog.New(mgr), mgr, nil), mgr, &serve.Options{Logger: slog.New(slog.DiscardHandler)})
		n, res := listTokens(t, connectWire(t, srv))
		return n, len(res.Tools), res
	}
	mixed, mixedTools, _ := measure(true)
	code, _, _ := measure(false)

	// All four listed directly: each server's own tools/list.
	cfg := testutil.Config(servers...)
	mgr := upstream.New(cfg.Servers, &upstream.Options{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { mgr.Close() })
	ctx := testutil.Context(t)
	snaps, failed := mgr.SnapshotAll(ctx)
	if len(failed) > 0 {
		t.Fatal(failed)
	}
	direct, memory := 0, 0
	for _, s := range cfg.Servers {
		b, _ := json.Marshal(&mcp.ListToolsResult{Tools: snaps[s.ID].Tools})
		n := typegen.CountTokens(string(b))
		direct += n
		if s.ID == "memory" {
			memory = n
		}
	}
	if mixedTools != 1+len(snaps["memory"].Tools) {
		t.Errorf("the mixed tools/list has %d tools, want codemode_run and memory's %d", mixedTools, len(snaps["memory"].Tools))
	}
	t.Logf("\n| configuration | tools/list tokens |\n|---|---:|\n| all four in code mode | %d |\n| memory direct (%d tools), three in code mode | %d |\n| all four listed directly | %d |\n| (memory's own tools/list) | %d |",
		code, mixedTools-1, mixed, direct, memory)
}
