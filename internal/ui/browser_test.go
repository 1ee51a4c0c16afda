package ui_test

// The inspector in a real browser: headless Chromium (Debian's package)
// driven over the DevTools protocol by chromedp, against a gateway served
// in process over HTTP, with a token.

import (
	"context"
	"encoding/json"
	"flag"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/history"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/scripts"
	"github.com/codemode-mcp/codemode/internal/serve"
	"github.com/codemode-mcp/codemode/internal/store"
	"github.com/codemode-mcp/codemode/internal/testutil"
	"github.com/codemode-mcp/codemode/internal/ui"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

var screenshots = flag.Bool("screenshots", false, "write the browser test's screenshots to docs/screenshots (for the README)")

// chromium finds the browser: Debian's chromium, or another Chrome. The
// test skips without one, unless CODEMODE_REQUIRE_CHROMIUM is set (CI
// installs it, and then a missing browser is a failure).
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CODEMODE_REQUIRE_CHROMIUM") != "" {
		t.Fatal("Chromium is required (CODEMODE_REQUIRE_CHROMIUM is set) but not installed: apt-get install chromium")
	}
	t.Skip("Chromium is not installed: the browser test is skipped (apt-get install chromium)")
	return ""
}

// meetServer has meet({group, n}), which answers once n calls of the same
// group have arrived (so that calls made in parallel surely overlap, with
// no clock involved), and add({a, b}).
func meetServer() *mcp.Server {
	var mu sync.Mutex
	groups := map[string]chan struct{}{}
	arrived := map[string]int{}
	s := mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "1"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	s.AddTool(&mcp.Tool{Name: "meet", InputSchema: json.RawMessage(`{"type":"object","properties":{"group":{"type":"string"},"n":{"type":"number"}},"required":["group","n"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct {
				Group string
				N     int
			}
			json.Unmarshal(req.Params.Arguments, &in)
			mu.Lock()
			ch := groups[in.Group]
			if ch == nil {
				ch = make(chan struct{})
				groups[in.Group] = ch
			}
			arrived[in.Group]++
			if arrived[in.Group] == in.N {
				close(ch)
			}
			mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "met"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "add", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ A, B float64 }
			json.Unmarshal(req.Params.Arguments, &in)
			return &mcp.CallToolResult{StructuredContent: map[string]any{"sum": in.A + in.B}}, nil
		})
	return s
}

// gateway serves the run surface and /ui over HTTP, behind token, its runs
// recorded; run makes a run (in process, as the run tool would).
type gateway struct {
	url string
	rec *history.Recorder
	run func(code string) string // returns the run id
}

func newGateway(t *testing.T, token string) *gateway {
	t.Helper()
	st := store.New(&store.Options{Dir: t.TempDir()})
	t.Cleanup(func() { st.Close() })
	rec := history.New(st.History(), nil)
	t.Cleanup(func() { rec.Close(context.Background()) })
	cfg := testutil.Config(config.Server{Name: "calc", Transport: config.Stdio, Command: "in-memory"})
	mgr := upstream.New(cfg.Servers, &upstream.Options{Dial: upstream.DialInMemory(map[string]*mcp.Server{"calc": meetServer()}), Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { mgr.Close() })
	runner := run.New(cfg, catalog.New(mgr), mgr, &run.Options{Observer: rec})
	pages := ui.New(&ui.Options{History: st.History(), Scripts: scripts.New(st), Surfaces: cfg.Serve.Surfaces,
		Configured: []ui.Server{{ID: "calc", Name: "calc"}}, Auth: ui.TokenChecker(token), Wake: rec.Subscribe})
	srv := serve.New(runner, mgr, &serve.Options{Logger: slog.New(slog.DiscardHandler), UI: pages})
	hs := httptest.NewServer(srv.Handler(serve.HTTPOptions{AuthToken: token}))
	t.Cleanup(hs.Close)
	g := &gateway{url: hs.URL, rec: rec}
	g.run = func(code string) string {
		ctx := run.WithOrigin(context.Background(), run.Origin{Surface: "run", Tool: "codemode_run", Client: "browser-test/1"})
		return runner.Run(ctx, run.Request{Code: code}).RunID()
	}
	return g
}

// waitWritten waits until the recorder has written n runs.
func (g *gateway) waitWritten(n uint64) {
	ch, stop := g.rec.Subscribe()
	defer stop()
	for g.rec.Written() < n {
		<-ch
	}
}

func browser(t *testing.T) context.Context {
	path := chromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	// A bound on the whole session, shortly before the test binary's
	// deadline, so that a broken page fails the step that waited instead of
	// hanging the test; no step's duration is asserted.
	ctx, cancel3 := context.WithCancel(ctx)
	t.Cleanup(cancel3)
	context.AfterFunc(testutil.Context(t), cancel3)
	return ctx
}

func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	dir := t.TempDir()
	if *screenshots {
		dir = filepath.Join("..", "..", "docs", "screenshots")
		os.MkdirAll(dir, 0o755)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

type rect struct {
	Left, Right float64
	Class       string
}

func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// The page in Chromium: it asks for the token once; the run list shows a
// run of two parallel calls and one after them; its page's waterfall draws
// the parallel calls overlapping and the sequential one after both; a new
// run appears in the list without reloading; a failed call is red.
func TestBrowser(t *testing.T) {
	ctx := browser(t)
	g := newGateway(t, "tok-0123456789")
	id := g.run(`import { meet, add } from "@codemode/servers/calc";
await Promise.all([meet({ group: "g", n: 2 }), meet({ group: "g", n: 2 })]);
console.log("both met");
globalThis.__codemode_result__ = (await add({ a: 1, b: 2 })).sum;`)
	failed := g.run(`import { add } from "@codemode/servers/calc";
const r = await add({ a: 1, b: 2 });
await add({ a: "one" });`)
	g.waitWritten(2)

	// The token, asked once; then the run list.
	do(t, ctx,
		chromedp.Navigate(g.url+"/ui/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), "tok-0123456789"),
		chromedp.Click(chromedp.CSS(`form.login button`)),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-run="`+id+`"]`)),
	)
	if rows := eval[int](t, ctx, `document.querySelectorAll("#runs tbody tr[data-run]").length`); rows != 2 {
		t.Errorf("%d runs listed, want 2", rows)
	}
	if kept := eval[string](t, ctx, `sessionStorage.getItem("codemode-ui-token")`); kept != "tok-0123456789" {
		t.Errorf("session storage holds %q", kept)
	}
	// Live: a run made now appears without a reload (the page is the same
	// document: a marker set on it survives).
	eval[bool](t, ctx, `window.__sameDocument = true`)
	do(t, ctx, chromedp.WaitVisible(chromedp.ID("live-status")))
	shot(t, ctx, "inspector-runs.png")
	live := g.run(`globalThis.__codemode_result__ = "live"`)
	do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`tr[data-run="`+live+`"]`)))
	if !eval[bool](t, ctx, `window.__sameDocument === true`) {
		t.Error("the page reloaded to show the new run")
	}

	// The run's page, by following its link (the token goes with it).
	do(t, ctx,
		chromedp.Click(chromedp.CSS(`tr[data-run="`+id+`"] a`)),
		chromedp.WaitVisible(chromedp.ID("waterfall")),
	)
	bars := eval[[]rect](t, ctx, `[...document.querySelectorAll("#waterfall .bar")].map(b => { const r = b.getBoundingClientRect(); return {Left: r.left, Right: r.right, Class: b.className}; })`)
	text := eval[string](t, ctx, `document.querySelector("main").innerText`)
	shot(t, ctx, "inspector-run.png")
	if len(bars) != 3 {
		t.Fatalf("%d bars, want 3: %v", len(bars), bars)
	}
	a, b, c := bars[0], bars[1], bars[2]
	if !(max(a.Left, b.Left) < min(a.Right, b.Right)) {
		t.Errorf("the parallel calls do not overlap: %v %v", a, b)
	}
	if c.Left < max(a.Right, b.Right)-1 {
		t.Errorf("the sequential call starts before the parallel ones end: %v after %v %v", c, a, b)
	}
	for _, r := range bars {
		if r.Class != "bar ok" {
			t.Errorf("bar class %q", r.Class)
		}
	}
	for _, want := range []string{"both met", "calc/meet", "calc/add"} {
		if !strings.Contains(text, want) {
			t.Errorf("the run's page lacks %q", want)
		}
	}

	// The failed run: its failed call is red, its diagnostic at line 3.
	do(t, ctx, chromedp.Navigate(g.url+"/ui/runs/"+failed), chromedp.WaitVisible(chromedp.ID("waterfall")))
	if bg := eval[string](t, ctx, `getComputedStyle(document.querySelectorAll("#waterfall .bar")[1]).backgroundImage`); !strings.Contains(bg, "rgb(193, 18, 31)") {
		t.Errorf("the failed call's bar is not red: %s", bg)
	}
	if line := eval[string](t, ctx, `document.querySelector("li.has-diag") ? document.querySelector("li.has-diag").id : ""`); line != "L3" {
		t.Errorf("the diagnostic is at %q, want L3", line)
	}
	shot(t, ctx, "inspector-failed-run.png")
	do(t, ctx, chromedp.Navigate(g.url+"/ui/servers"), chromedp.WaitVisible(chromedp.CSS(`table.servers`)))
	shot(t, ctx, "inspector-servers.png")
}
