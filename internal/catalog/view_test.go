package catalog_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/testutil"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// The catalogs of these tests are over real go-sdk servers, in process.

func toolServer(name string, tools ...string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "2.1.0"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	for _, t := range tools {
		addTool(s, t)
	}
	return s
}

func addTool(s *mcp.Server, name string) {
	s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil
		})
}

func newCatalog(t *testing.T, servers []config.Server, mem map[string]*mcp.Server, opts *upstream.Options) *catalog.Catalog {
	t.Helper()
	o := upstream.Options{Logger: slog.New(slog.DiscardHandler)}
	if opts != nil {
		o = *opts
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Dial == nil {
		o.Dial = upstream.DialInMemory(mem)
	}
	m := upstream.New(servers, &o)
	t.Cleanup(func() { m.Close() })
	return catalog.New(m)
}

// A view keeps the snapshot it first took of a server for the rest of the
// run (§8.2); a new view takes the new one; views that take the same
// snapshot share one Server (export names, index and validators are built
// once).
func TestViewKeepsItsSnapshot(t *testing.T) {
	srv := toolServer("a", "get-sum")
	changed := make(chan string, 4)
	c := newCatalog(t, []config.Server{{ID: "a", Name: "a"}}, map[string]*mcp.Server{"a": srv},
		&upstream.Options{OnToolsChanged: func(id string) { changed <- id }})
	ctx := context.Background()

	v1 := c.View()
	s1, err := v1.Server(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if s1.Lookup("get_sum") == nil || s1.Lookup("get-sum") != s1.Lookup("get_sum") || s1.Lookup("nope") != nil {
		t.Errorf("lookup by canonical and export name: %+v", s1.Tools)
	}
	if same, _ := c.View().Server(ctx, "a"); same != s1 {
		t.Error("two views of one snapshot built two Servers")
	}

	addTool(srv, "echo")
	testutil.Wait(t, changed, "the tool list change")
	if again, _ := v1.Server(ctx, "a"); again != s1 || len(again.Tools) != 1 {
		t.Errorf("the view saw the change mid-run: %d tools", len(again.Tools))
	}
	s2, err := c.View().Server(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if s2 == s1 || len(s2.Tools) != 2 || s2.Tools[0].Name != "echo" {
		t.Errorf("a new view did not see the new tool: %+v", s2.Tools)
	}
	if seen := v1.Seen(); len(seen) != 1 || seen[0] != s1 {
		t.Errorf("Seen = %v", seen)
	}
}

// Ids, configs and failures: an unknown id is ErrUnknownServer; a server
// that cannot be reached keeps its error for the rest of the view, and All
// reports it apart from the servers it could reach, in declaration order.
func TestViewFailuresAndOrder(t *testing.T) {
	servers := []config.Server{
		{ID: "b", Name: "b"},
		{ID: "gh", Name: "github", Command: "github-mcp-server", Unresolved: []string{"GITHUB_TOKEN"}},
		{ID: "a", Name: "a"},
	}
	c := newCatalog(t, servers, map[string]*mcp.Server{"a": toolServer("a", "x"), "b": toolServer("b", "y")}, nil)
	if got := c.Configured(); len(got) != 3 || got[1].Name != "github" {
		t.Errorf("Configured = %+v", got)
	}
	v := c.View()
	if got := v.IDs(); !slices.Equal(got, []string{"b", "gh", "a"}) {
		t.Errorf("IDs = %v", got)
	}
	if cfg, ok := v.Config("gh"); !ok || cfg.Name != "github" {
		t.Errorf("Config(gh) = %+v, %v", cfg, ok)
	}
	if _, ok := v.Config("nope"); ok {
		t.Error("Config of an unknown id")
	}
	if _, err := v.Server(context.Background(), "nope"); !errors.Is(err, catalog.ErrUnknownServer) {
		t.Errorf("unknown server: %v", err)
	}

	all, failed := v.All(context.Background())
	if len(all) != 2 || all[0].ID != "b" || all[1].ID != "a" {
		t.Errorf("All = %v", all)
	}
	var ue *upstream.Error
	if err := failed["gh"]; !errors.As(err, &ue) || ue.Kind != upstream.Config || len(failed) != 1 {
		t.Errorf("failed = %v", failed)
	}
	if _, err := v.Server(context.Background(), "gh"); err != failed["gh"] {
		t.Errorf("the error is not kept for the view: %v", err)
	}
	if f := v.Failures(); len(f) != 1 || f["gh"] == nil {
		t.Errorf("Failures = %v", f)
	}
	if st, ok := v.Status("a"); !ok || st.State != upstream.StateConnected {
		t.Errorf("Status(a) = %+v, %v", st, ok)
	}
	s := all[1]
	if s.Version() != "2.1.0" || !slices.Contains(s.Capabilities(), "tools") {
		t.Errorf("version %q, capabilities %v", s.Version(), s.Capabilities())
	}
}

// A server still starting: a caller that stops waiting with WithPatience
// does not give up on it (the next call waits again), one whose ctx ends
// otherwise does, until the server is reached. Concurrent first uses share
// one attempt.
func TestViewPatienceAndGivenUp(t *testing.T) {
	release := make(chan struct{})
	var dials atomic.Int32
	inMem := upstream.DialInMemory(map[string]*mcp.Server{"slow": toolServer("slow", "t")})
	c := newCatalog(t, []config.Server{{ID: "slow", Name: "slow"}}, nil, &upstream.Options{
		Dial: func(ctx context.Context, s config.Server) (mcp.Transport, error) {
			dials.Add(1)
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return inMem(ctx, s)
		},
	})
	v := c.View()

	pctx, cancel := catalog.WithPatience(context.Background(), 1) // a nanosecond: it ends before the server is up
	_, err := v.Server(pctx, "slow")
	cancel()
	if err == nil || len(v.GivenUp()) != 0 || len(v.Failures()) != 0 {
		t.Errorf("patience: err %v, given up %v, failures %v", err, v.GivenUp(), v.Failures())
	}

	ctx, cancelRun := context.WithCancel(context.Background())
	cancelRun()
	if _, err := v.Server(ctx, "slow"); err == nil || !slices.Equal(v.GivenUp(), []string{"slow"}) {
		t.Errorf("cancelled: err %v, given up %v", err, v.GivenUp())
	}

	var wg sync.WaitGroup
	got := make([]*catalog.Server, 4)
	for i := range got {
		wg.Go(func() { got[i], _ = v.Server(context.Background(), "slow") })
	}
	close(release)
	wg.Wait()
	for _, s := range got {
		if s == nil || s != got[0] {
			t.Fatalf("concurrent first uses got %v", got)
		}
	}
	if len(v.GivenUp()) != 0 {
		t.Errorf("still given up after it was reached: %v", v.GivenUp())
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("%d connection attempts, want 1", n)
	}
}

// A tool's compiled validator (or any per-tool value) is built once and
// shared by every caller.
func TestToolOnce(t *testing.T) {
	srv := catalog.FromSnapshot(&upstream.Snapshot{ServerID: "s", Tools: []*mcp.Tool{{Name: "a"}}})
	var built atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			srv.Tools[0].Once(func(tl *catalog.Tool) any { built.Add(1); return tl.Name })
		})
	}
	wg.Wait()
	if v := srv.Tools[0].Once(func(*catalog.Tool) any { return "other" }); v != "a" || built.Load() != 1 {
		t.Errorf("Once: value %v, built %d times", v, built.Load())
	}
	if srv.Version() != "" || srv.Capabilities() != nil {
		t.Errorf("a snapshot without info: version %q, capabilities %v", srv.Version(), srv.Capabilities())
	}
}
