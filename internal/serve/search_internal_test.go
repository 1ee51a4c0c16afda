package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/testutil"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// evilQuery is the catastrophic pattern: with a backtracking engine
// each description ending in something other than "." costs exponential
// time (100 ms per text, capped, was 20 s over 100 tools).
const evilQuery = `^(\w+\s?)*\.$`

// bigCatalog serves n tools whose descriptions are 30 words ending in "!".
func bigCatalog(t testing.TB, n int) *Server {
	t.Helper()
	up := mcp.NewServer(&mcp.Implementation{Name: "big", Version: "1"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	desc := strings.Repeat("word ", 29) + "word!"
	for i := range n {
		up.AddTool(&mcp.Tool{Name: fmt.Sprintf("tool_%05d", i), Description: desc, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	cfg := testutil.Config(config.Server{Name: "big", Transport: config.Stdio, Command: "in-memory"})
	cfg.Serve.Surfaces = []string{"emceepee"}
	mgr := upstream.New(cfg.Servers, &upstream.Options{Dial: upstream.DialInMemory(map[string]*mcp.Server{"big": up}), Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { mgr.Close() })
	s := New(run.New(cfg, catalog.New(mgr), mgr, nil), mgr, nil)
	// What these tests count is work: time must not end a search first,
	// however loaded the machine (-race makes matching many times slower).
	s.searchTime = time.Hour
	// Connect and list once, so that what the tests count is the search.
	ctx := testutil.Context(t)
	if snap, err := mgr.Snapshot(ctx, "big"); err != nil || len(snap.Tools) != n {
		t.Fatalf("snapshot: %v", err)
	}
	return s
}

// spends records a search's steps through Server.searchHook.
type spends struct {
	mu    sync.Mutex
	calls int
	used  int64
}

func (sp *spends) hook(f func(ctx context.Context, calls int)) func(context.Context, int64) {
	return func(ctx context.Context, used int64) {
		sp.mu.Lock()
		sp.calls++
		sp.used = used
		calls := sp.calls
		sp.mu.Unlock()
		if f != nil {
			f(ctx, calls)
		}
	}
}

// search runs codemode_search on s.
func search(ctx context.Context, s *Server, in emceepeeSearchArgs) *mcp.CallToolResult {
	res, _ := emceepeeSurface{s}.search(ctx, nil, in)
	return res
}

type searchOut struct {
	Tools      []searchHit `json:"tools"`
	Incomplete string      `json:"incomplete"`
}

func decodeSearch(t *testing.T, res *mcp.CallToolResult) searchOut {
	t.Helper()
	if res.IsError {
		t.Fatalf("error: %s", res.Content[0].(*mcp.TextContent).Text)
	}
	var out searchOut
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// The catastrophic query over 10,000 tools: every name and description is
// matched once, in linear time, and the whole search stays within its
// work bound; it finds nothing, as it should.
func TestCatastrophicSearchIsLinear(t *testing.T) {
	t.Parallel()
	const n = 10_000
	s := bigCatalog(t, n)
	var sp spends
	s.searchHook = sp.hook(nil)
	res := search(context.Background(), s, emceepeeSearchArgs{Query: evilQuery, Type: "tools"})
	out := decodeSearch(t, res)
	if len(out.Tools) != 0 || out.Incomplete != "" {
		t.Fatalf("got %d tools, incomplete %q", len(out.Tools), out.Incomplete)
	}
	re, _ := compileSearch(evilQuery)
	desc := strings.Repeat("word ", 29) + "word!"
	perTool := int64(len("tool_00000")+1)*re.cost + int64(len(desc)+1)*re.cost
	// Each text is matched once: the work is what the linear bound says,
	// far below the budget.
	if sp.calls != 2*n || sp.used+int64(len(desc)+1)*re.cost != n*perTool || n*perTool > searchMaxWork {
		t.Fatalf("%d matches, %d work; want %d matches, %d work (budget %d)", sp.calls, sp.used+int64(len(desc)+1)*re.cost, 2*n, n*perTool, searchMaxWork)
	}
}

// A pattern too costly to match against everything stops at the work
// budget, never past it, and says the results are partial.
func TestSearchStopsAtItsWorkBudget(t *testing.T) {
	t.Parallel()
	const n = 10_000
	s := bigCatalog(t, n)
	var sp spends
	s.searchHook = sp.hook(nil)
	res := search(context.Background(), s, emceepeeSearchArgs{Query: `(?:\w{100}x){10}`})
	out := decodeSearch(t, res)
	if !strings.Contains(out.Incomplete, "partial") || sp.used > searchMaxWork || sp.calls >= 2*n {
		t.Fatalf("incomplete %q after %d matches, %d work (budget %d)", out.Incomplete, sp.calls, sp.used, searchMaxWork)
	}
}

// A search cancelled midway stops at once: no text is matched after the
// cancellation.
func TestSearchStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	s := bigCatalog(t, 10_000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var sp spends
	s.searchHook = sp.hook(func(_ context.Context, calls int) {
		if calls == 1000 {
			cancel()
		}
	})
	res := search(ctx, s, emceepeeSearchArgs{Query: evilQuery})
	if !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "cancelled") || sp.calls != 1000 {
		t.Fatalf("after cancelling at match 1000: %d matches, result %+v", sp.calls, res.Content)
	}
}

// Over MCP: the client cancels its call midway; the SDK cancels the
// handler's context (notifications/cancelled), and the search stops there.
func TestSearchStopsWhenTheClientCancels(t *testing.T) {
	t.Parallel()
	s := bigCatalog(t, 10_000)
	clientCtx, cancelClient := context.WithCancel(context.Background())
	defer cancelClient()
	var sp spends
	seen := make(chan bool, 1)
	s.searchHook = sp.hook(func(ctx context.Context, calls int) {
		if calls != 500 {
			return
		}
		cancelClient()
		// Wait for the cancellation to reach the handler: an event, not a
		// delay; the timer only turns a lost notification into a failure.
		select {
		case <-ctx.Done():
			seen <- true
		case <-testutil.Expiry(t):
			seen <- false
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.Start(ctx)
	ct, st := mcp.NewInMemoryTransports()
	if _, err := s.MCP().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(clientCtx, &mcp.CallToolParams{Name: "codemode_search", Arguments: map[string]any{"query": evilQuery}}); err == nil {
		t.Fatal("the cancelled call succeeded")
	}
	if !<-seen {
		t.Fatal("the handler's context was not cancelled")
	}
	s.inflight.Wait() // the handler has returned
	if sp.calls != 500 {
		t.Fatalf("the search went on after the client cancelled: %d matches", sp.calls)
	}
}

// Patterns are RE2: what ECMAScript has and a linear-time engine cannot
// (lookaround, backreferences) is refused with a message saying so;
// \uXXXX escapes work; matching ignores case.
func TestSearchPatternSyntax(t *testing.T) {
	for _, p := range []string{`a(?=b)`, `(?<!x)y`, `(a)\1`} {
		if _, err := compileSearch(p); err == nil || !strings.Contains(err.Error(), "RE2") {
			t.Errorf("%s: %v", p, err)
		}
	}
	for p, text := range map[string]string{`\u0041bc`: "xABC", `caf\u{e9}`: "CAFÉ", `^get_`: "GET_sum", `\\u0041`: `\u0041`} {
		re, err := compileSearch(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if ok, _ := re.match(catalog.NewBudget(context.Background(), searchMaxWork, nil), text); !ok {
			t.Errorf("%s does not match %q", p, text)
		}
	}
	if _, err := compileSearch(strings.Repeat("a", maxPatternBytes+1)); err == nil {
		t.Error("an over-long pattern was accepted")
	}
}

// The search surface runs the model's own code, whose regular expressions
// are QuickJS's backtracking engine: the sandbox's interrupt stops them.
// A client that leaves (here: its context ends after a second) ends the
// run; whichever comes first, the run's own time limit or the client
// leaving, the answer is a limit or a cancellation, not a hang.
func TestSearchSurfaceRegexStops(t *testing.T) {
	t.Parallel()
	m := upstream.New(nil, nil)
	t.Cleanup(func() { m.Close() })
	cfg := config.Default()
	cfg.Serve.Surfaces = []string{"search-execute"}
	s := New(run.New(cfg, catalog.New(m), m, nil), m, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	res, _ := searchExecuteSurface{s}.search(ctx, nil, codeArgs{Code: `async (catalog) => /^(\w+\s?)*\.$/.test("word ".repeat(40) + "!")`})
	text := res.Content[0].(*mcp.TextContent).Text
	if !strings.Contains(text, "CANCELLED") && !strings.Contains(text, "SANDBOX_LIMIT") {
		t.Fatalf("result: %s", text)
	}
}

// codemode_search over 10,000 tools: the catastrophic pattern and
// an ordinary one.
func BenchmarkSearch10kTools(b *testing.B) {
	s := bigCatalog(b, 10_000)
	for name, q := range map[string]string{"catastrophic": evilQuery, "ordinary": "tool_0042|inventory"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if res := search(context.Background(), s, emceepeeSearchArgs{Query: q, Type: "tools"}); res.IsError {
					b.Fatal(res.Content)
				}
			}
		})
	}
}
