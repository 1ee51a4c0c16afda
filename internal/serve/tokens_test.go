package serve_test

// What `tools/list` costs a model with codemode in front of real servers,
// against listing the servers' tools directly. Every *.tools.json of
// testdata/corpus is served, in process, by a go-sdk server that lists the
// recorded tools with their raw schemas (and answers every call with an
// error); server-everything is the real npm process.
//
//	go test -run '^$' -bench TokensToolsListTable -benchtime 1x ./internal/serve
//	go test -run '^$' -bench TokensToolsList ./internal/serve

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
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
	"github.com/codemode-mcp/codemode/internal/typegen"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// toolsListTarget is the budget for the default surface's whole
// tools/list with every corpus catalog and server-everything connected.
const toolsListTarget = 1000

// buildVersion is the version the measured gateways report in serverInfo,
// which the SDK puts in the _meta of every result, tools/list's included.
// It is the longest a build reports (buildinfo.Version): a binary built
// from a git checkout past a tag, with uncommitted changes, reports such a
// pseudo-version; a release reports a tag ("v1.12.4"), a test binary
// "dev". The budget holds for the longest.
const buildVersion = "v1.12.4-0.20261125104145-51d97a7d18f1+dirty"

// corpusNames lists testdata/corpus/*.tools.json by server name.
func corpusNames(tb testing.TB) []string {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "testdata", "corpus", "*.tools.json"))
	if err != nil || len(files) < 21 {
		tb.Fatalf("expected at least 21 corpus catalogs, found %d (%v)", len(files), err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".tools.json"))
	}
	sort.Strings(names)
	return names
}

// recordedServer serves a corpus catalog: the recorded tools, raw schemas,
// and calls that fail.
func recordedServer(tb testing.TB, name string) *mcp.Server {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "testdata", "corpus", name+".tools.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var list struct {
		Tools []*mcp.Tool `json:"tools"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "recorded"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	for _, tool := range list.Tools {
		func() {
			defer func() {
				if r := recover(); r != nil {
					tb.Fatalf("%s: tool %q cannot be served: %v", name, tool.Name, r)
				}
			}()
			s.AddTool(tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: name + " is a recorded catalog: its tools cannot be called"}}}, nil
			})
		}()
	}
	return s
}

// tokenSetup is a gateway, in process, in front of some servers.
type tokenSetup struct {
	mgr     *upstream.Manager
	cfg     *config.Config
	classic int // tokens of listing every server's tools directly
	tools   int
}

// newTokenSetup connects corpus catalogs (by name) and, if everything is
// set, the real server-everything.
func newTokenSetup(tb testing.TB, corpus []string, everything bool) *tokenSetup {
	tb.Helper()
	var servers []config.Server
	inmem := map[string]*mcp.Server{}
	for _, n := range corpus {
		servers = append(servers, config.Server{Name: n, Transport: config.Stdio, Command: "recorded"})
	}
	if everything {
		servers = append(servers, testutil.Everything(tb, "everything"))
	}
	cfg := testutil.Config(servers...)
	for i, n := range corpus {
		inmem[cfg.Servers[i].ID] = recordedServer(tb, n)
	}
	mgr := upstream.New(cfg.Servers, &upstream.Options{Dial: upstream.DialInMemory(inmem), Logger: slog.New(slog.DiscardHandler)})
	tb.Cleanup(func() { mgr.Close() })
	ctx, cancel := context.WithCancel(testutil.Context(tb))
	defer cancel()
	snaps, failed := mgr.SnapshotAll(ctx)
	if len(failed) > 0 {
		tb.Fatalf("upstreams failed: %v", failed)
	}
	// The classic cost: one tools/list result per server, as a client
	// connected to each would receive it.
	st := &tokenSetup{mgr: mgr, cfg: cfg}
	for _, s := range cfg.Servers {
		b, err := json.Marshal(&mcp.ListToolsResult{Tools: snaps[s.ID].Tools})
		if err != nil {
			tb.Fatal(err)
		}
		st.classic += typegen.CountTokens(string(b))
		st.tools += len(snaps[s.ID].Tools)
	}
	return st
}

// gateway serves st's servers with surfaces and returns a connected client
// whose results are measured as they arrive on the wire.
func (st *tokenSetup) gateway(tb testing.TB, surfaces ...string) *wireClient {
	tb.Helper()
	cfg := *st.cfg
	cfg.Serve.Surfaces = surfaces
	r := run.New(&cfg, catalog.New(st.mgr), st.mgr, nil)
	srv := serve.New(r, st.mgr, &serve.Options{Logger: slog.New(slog.DiscardHandler), Version: buildVersion, WarmupTimeout: warmup})
	return connectWire(tb, srv)
}

// connectWire connects a client to srv in memory whose results are
// measured as they arrive on the wire.
func connectWire(tb testing.TB, srv *serve.Server) *wireClient {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	srv.Start(ctx)
	ct, sst := mcp.NewInMemoryTransports()
	if _, err := srv.MCP().Connect(ctx, sst, nil); err != nil {
		tb.Fatal(err)
	}
	w := &wireClient{}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "tokens", Version: "1"}, nil).Connect(ctx, &wireTap{Transport: ct, c: w}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cs.Close() })
	w.ClientSession = cs
	return w
}

// wireClient is a client session that keeps the text of the last result it
// read, as the server sent it: what a model is given is that text, not a
// re-encoding of the decoded value (json.Marshal would, for one, escape <
// and > as six bytes each, which the wire does not).
type wireClient struct {
	*mcp.ClientSession
	mu   sync.Mutex
	last json.RawMessage
}

func (w *wireClient) lastResult() json.RawMessage {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// wireTap is a transport whose connection notes every result read.
type wireTap struct {
	mcp.Transport
	c *wireClient
}

func (t *wireTap) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &wireConn{Connection: conn, c: t.c}, nil
}

type wireConn struct {
	mcp.Connection
	c *wireClient
}

func (c *wireConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if r, ok := m.(*jsonrpc.Response); ok && r.Result != nil {
		c.c.mu.Lock()
		c.c.last = slices.Clone(r.Result)
		c.c.mu.Unlock()
	}
	return m, err
}

// listTokens is the o200k_base token count of a tools/list result as the
// gateway sent it.
func listTokens(tb testing.TB, cs *wireClient) (int, *mcp.ListToolsResult) {
	tb.Helper()
	ctx, cancel := context.WithCancel(testutil.Context(tb))
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		tb.Fatal(err)
	}
	raw := cs.lastResult()
	if !strings.Contains(string(raw), `"tools"`) {
		tb.Fatalf("the last result read is not tools/list's: %.200s", raw)
	}
	return typegen.CountTokens(string(raw)), res
}

// The target: with the 21 corpus catalogs and server-everything
// connected, the default surface's whole tools/list costs at most 1,000
// tokens.
func TestTokensToolsListTarget(t *testing.T) {
	t.Parallel()
	st := newTokenSetup(t, corpusNames(t), true)
	n, res := listTokens(t, st.gateway(t, "run"))
	t.Logf("default surface tools/list: %d tokens (%d to spare) for %d servers (%d tools) whose own tools/list results cost %d tokens", n, toolsListTarget-n, len(st.cfg.Servers), st.tools, st.classic)
	if n > toolsListTarget {
		desc := res.Tools[0].Description
		t.Errorf("the default surface's tools/list costs %d tokens, above the target of %d (description: %d tokens, of which the server index %d)",
			n, toolsListTarget, typegen.CountTokens(desc), typegen.CountTokens(desc[max(strings.Index(desc, "Servers and tools"), 0):]))
	}
	// The index has room for every server's id (22 ids cost about 150
	// tokens); spending it on some servers' tool names first leaves others,
	// the real server-everything among them, unnamed.
	t.Run("index names every server", func(t *testing.T) {
		desc := res.Tools[0].Description
		var missing []string
		for _, s := range st.cfg.Servers {
			if !strings.Contains(desc, "\n"+s.ID+" (") {
				missing = append(missing, s.ID)
			}
		}
		if len(missing) > 0 {
			t.Errorf("the run tool's description does not name %d of %d connected servers: %q\n%s", len(missing), len(st.cfg.Servers), missing,
				desc[max(strings.Index(desc, "Servers and tools"), 0):])
		}
	})
}

// Each corpus server alone behind the run surface: its declarations are in
// the description only if they fit typesBudgetTokens, else the index,
// within indexBudgetTokens, is (§4.4). So the description costs at most
// what it costs with no server, plus the larger budget and the sentence
// that introduces the declarations. (The budget counts the text; JSON
// escaping in tools/list adds to it.)
func TestTokensPerServerWithinBudget(t *testing.T) {
	t.Parallel()
	description := func(tb testing.TB, st *tokenSetup) int {
		_, res := listTokens(tb, st.gateway(tb, "run"))
		return typegen.CountTokens(res.Tools[0].Description)
	}
	empty := newTokenSetup(t, nil, false)
	base := description(t, empty)
	intro := typegen.CountTokens("TypeScript declarations of every server. " + serve.DeclTypes)
	limit := base + intro + max(empty.cfg.Serve.TypesBudgetTokens, empty.cfg.Serve.IndexBudgetTokens) + 16 // tokens at the joins
	for _, name := range corpusNames(t) {
		if n := description(t, newTokenSetup(t, []string{name}, false)); n > limit {
			t.Errorf("%s alone: the run tool's description costs %d tokens, more than %d (%d with no server, budget %d)",
				name, n, limit, base, empty.cfg.Serve.TypesBudgetTokens)
		}
	}
}

// BenchmarkTokensToolsListTable prints the table of docs/BENCHMARKS.md: each
// server alone behind the default surface, then all of them, then the other
// surfaces with all of them. It measures tokens, not time:
//
//	go test -run '^$' -bench TokensToolsListTable -benchtime 1x ./internal/serve
func BenchmarkTokensToolsListTable(b *testing.B) {
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n| servers | tools | direct tools/list tokens | codemode tools/list tokens (run surface) | ratio |\n|---|---:|---:|---:|---:|\n")
	row := func(name string, st *tokenSetup, n int) {
		fmt.Fprintf(&sb, "| %s | %d | %d | %d | %.1f%% |\n", name, st.tools, st.classic, n, 100*float64(n)/float64(st.classic))
	}
	for _, name := range corpusNames(b) {
		st := newTokenSetup(b, []string{name}, false)
		n, _ := listTokens(b, st.gateway(b, "run"))
		row(name, st, n)
	}
	st := newTokenSetup(b, nil, true)
	n, _ := listTokens(b, st.gateway(b, "run"))
	row("everything (the real npm server)", st, n)

	all := newTokenSetup(b, corpusNames(b), true)
	n, _ = listTokens(b, all.gateway(b, "run"))
	row("**all 21 recorded catalogs + everything**", all, n)
	fmt.Fprintf(&sb, "\nOther surfaces, all servers connected:\n\n| surface | tools/list tokens |\n|---|---:|\n")
	for _, s := range []string{"search-execute", "files", "emceepee"} {
		n, _ := listTokens(b, all.gateway(b, s))
		fmt.Fprintf(&sb, "| %s | %d |\n", s, n)
	}
	b.Log(sb.String())
	for b.Loop() {
	}
}

// BenchmarkTokensToolsList measures tools/list of the default surface with
// every corpus catalog and server-everything connected, and reports its
// tokens and those of listing the same tools directly.
func BenchmarkTokensToolsList(b *testing.B) {
	st := newTokenSetup(b, corpusNames(b), true)
	cs := st.gateway(b, "run")
	n, _ := listTokens(b, cs)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, err := cs.ListTools(ctx, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n), "tokens")
	b.ReportMetric(float64(st.classic), "direct-tokens")
	b.ReportMetric(100*float64(n)/float64(st.classic), "%-of-direct")
}
