package serve_test

// Observing the gateway over HTTP: /metrics after known runs (exact
// counts), /healthz and /readyz.

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/metrics"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/serve"
	"github.com/codemode-mcp/codemode/internal/testutil"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// httpInproc is a gateway served over HTTP in process (upstreams in
// memory), with a client connected to /mcp.
type httpInproc struct {
	srv *serve.Server
	url string // http://127.0.0.1:PORT
	cs  *mcp.ClientSession
}

func newHTTPInproc(t *testing.T, ro *run.Options, so *serve.Options, surfaces ...string) *httpInproc {
	t.Helper()
	cfg := testutil.Config(config.Server{Name: "calc", Transport: config.Stdio, Command: "in-memory"})
	cfg.Serve.Surfaces = surfaces
	mgr := upstream.New(cfg.Servers, &upstream.Options{Dial: upstream.DialInMemory(map[string]*mcp.Server{"calc": calcServer()}),
		Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { mgr.Close() })
	if so == nil {
		so = &serve.Options{}
	}
	so.Logger = slog.New(slog.DiscardHandler)
	if ro != nil && ro.Observer == nil {
		ro.Observer = metricsFor(mgr, so)
	}
	srv := serve.New(run.New(cfg, catalog.New(mgr), mgr, ro), mgr, so)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv.Start(ctx)
	hs := httptest.NewServer(srv.Handler(serve.HTTPOptions{}))
	t.Cleanup(hs.Close)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "observer-test", Version: "9"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return &httpInproc{srv: srv, url: hs.URL, cs: cs}
}

// metricsFor makes the metrics of a gateway over mgr and serves them.
func metricsFor(mgr *upstream.Manager, so *serve.Options) *metrics.Metrics {
	m := metrics.New(&metrics.Options{Upstreams: mgr.Statuses, NoProcess: true})
	so.Metrics = m.Handler()
	return m
}

func (g *httpInproc) call(t *testing.T, tool, code string) {
	t.Helper()
	ctx := testutil.Context(t)
	if _, err := g.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"code": code}}); err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b)
}

// After known runs on two surfaces, /metrics counts exactly those runs and
// their tool calls, by surface, outcome, server and tool.
func TestMetricsScrape(t *testing.T) {
	t.Parallel()
	g := newHTTPInproc(t, &run.Options{}, nil, "run", "search-execute")
	g.call(t, "codemode_run", `import { add } from "@codemode/servers/calc";
await Promise.all([add({ a: 1, b: 2 }), add({ a: 3, b: 4 })]);
globalThis.__codemode_result__ = await add({ a: 5, b: 6 });`)
	g.call(t, "codemode_run", `import { add } from "@codemode/servers/calc"; await add({ a: "one" });`)
	g.call(t, "codemode_run", `throw new Error("no")`)
	g.call(t, "execute", `async () => calc.add({ a: 1, b: 1 })`)
	g.call(t, "search", `async (catalog) => Object.keys(catalog.operations)`)

	status, body := get(t, g.url+"/metrics")
	if status != http.StatusOK {
		t.Fatalf("/metrics: %d %s", status, body)
	}
	for _, want := range []string{
		`codemode_runs_total{outcome="ok",surface="run"} 1`,
		`codemode_runs_total{outcome="UNCAUGHT_EXCEPTION",surface="run"} 2`,
		`codemode_runs_total{outcome="ok",surface="search-execute"} 2`,
		`codemode_run_duration_seconds_count{surface="run"} 3`,
		`codemode_run_duration_seconds_count{surface="search-execute"} 2`,
		`codemode_tool_calls_total{outcome="ok",server="calc",tool="add"} 4`,
		`codemode_tool_calls_total{outcome="invalid_input",server="calc",tool="add"} 1`,
		// A refused call went nowhere: no duration.
		`codemode_tool_call_duration_seconds_count{server="calc",tool="add"} 4`,
		`codemode_upstream_up{server="calc"} 1`,
		`codemode_upstream_state{server="calc",state="connected"} 1`,
		`codemode_upstream_state{server="calc",state="error"} 0`,
		`codemode_sandbox_pool_capacity `,
		`codemode_sandbox_pool_gets_total `,
	} {
		if !hasLine(body, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, grepLines(body, "codemode_"))
		}
	}
	if n := strings.Count(body, "\ncodemode_runs_total{"); n != 3 {
		t.Errorf("%d series of codemode_runs_total, want 3:\n%s", n, grepLines(body, "codemode_runs_total"))
	}
}

// hasLine reports whether body has a line that is want, or starts with it
// when want ends with a space (any value).
func hasLine(body, want string) bool {
	for _, l := range strings.Split(body, "\n") {
		if l == want || (strings.HasSuffix(want, " ") && strings.HasPrefix(l, want)) {
			return true
		}
	}
	return false
}

func grepLines(body, prefix string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// /healthz answers while the process is up; /readyz once the upstreams
// were attempted and the store answers, with the reason otherwise.
func TestHealthEndpoints(t *testing.T) {
	t.Parallel()
	var storeErr error = errors.New("data store /x/codemode.db: cannot open")
	storeUp := make(chan struct{})
	g := newHTTPInproc(t, nil, &serve.Options{Ready: func(ctx context.Context) error {
		select {
		case <-storeUp:
			return nil
		default:
			return storeErr
		}
	}}, "run")
	if status, body := get(t, g.url+"/healthz"); status != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", status, body)
	}
	// The client's tools/list waited for the first catalog: the upstreams
	// were attempted.
	if _, err := g.cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	status, body := get(t, g.url+"/readyz")
	if status != http.StatusServiceUnavailable || !strings.Contains(body, `"upstreams":"attempted"`) || !strings.Contains(body, "cannot open") {
		t.Errorf("/readyz with the store down: %d %s", status, body)
	}
	close(storeUp)
	status, body = get(t, g.url+"/readyz")
	if status != http.StatusOK || !strings.Contains(body, `"ready":true`) || !strings.Contains(body, `"store":"ok"`) {
		t.Errorf("/readyz: %d %s", status, body)
	}
	// No metrics configured: no /metrics.
	if status, _ := get(t, g.url+"/metrics"); status != http.StatusNotFound {
		t.Errorf("/metrics without metrics: %d", status)
	}
}
