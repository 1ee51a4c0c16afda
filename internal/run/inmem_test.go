package run

// Tests with in-process go-sdk servers, for behaviour the reference servers
// cannot show on demand: true concurrency, cancellation, tool-list changes,
// name collisions, credentials, replacement callers.

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/admit"
	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/sandbox"
	"github.com/codemode-mcp/codemode/internal/testutil"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

var objectSchema = json.RawMessage(`{"type":"object"}`)

// §10.1: Promise.all really runs calls concurrently. Each of the two tools
// waits until the other has started; run one after the other they would
// deadlock until the timeout.
func TestPromiseAllIsConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	wg.Add(2)
	s := mcp.NewServer(&mcp.Implementation{Name: "barrier"}, nil)
	for _, name := range []string{"left", "right"} {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: objectSchema}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			wg.Done()
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
				return textResult(name), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
	}
	r := newTestRunner(t, map[string]*mcp.Server{"barrier": s})
	// Sequential calls would wait at the barrier until the timeout.
	res := r.Run(context.Background(), Request{Limits: config.Limits{TimeoutMs: roomyMs}, Code: `import { left, right } from "@codemode/servers/barrier";
globalThis.__codemode_result__ = await Promise.all([left(), right()]);`})
	if string(res.Result) != `["left","right"]` {
		t.Fatalf("calls were not concurrent:\n%s", dump(res))
	}
}

// §7.4: when a run ends early, its in-flight call is cancelled and the
// upstream sees the cancellation (the SDK sends notifications/cancelled).
func TestTimeoutCancelsInFlightCall(t *testing.T) {
	started, cancelled := make(chan struct{}, 16), make(chan struct{}, 16)
	s := mcp.NewServer(&mcp.Implementation{Name: "slow"}, nil)
	s.AddTool(&mcp.Tool{Name: "wait", InputSchema: objectSchema}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		cancelled <- struct{}{}
		return nil, ctx.Err()
	})
	r := newTestRunner(t, map[string]*mcp.Server{"slow": s})
	// A short timeout, doubled until the call was in flight when it ended
	// the run (on a loaded machine, starting the run can take longer).
	var res *Response
	for ms := int64(300); ; ms *= 2 {
		res = r.Run(context.Background(), Request{Limits: config.Limits{TimeoutMs: ms}, Code: `import { wait } from "@codemode/servers/slow";
console.log("calling");
await wait();`})
		if len(started) > 0 || ms > 120_000 {
			break
		}
	}
	if d := firstError(t, res); d.Code != diag.SandboxLimit {
		t.Fatalf("diagnostic = %+v", d)
	}
	if len(res.Logs) != 1 {
		t.Fatalf("logs before the timeout were lost: %+v", res.Logs)
	}
	testutil.Wait(t, cancelled, "the upstream's seeing the call cancelled")
	<-started
}

// §8: a tools/list_changed makes the next run see the new tool, while a run
// in flight keeps the tool set it started with.
func TestToolListChanged(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "dyn"}, nil)
	s.AddTool(&mcp.Tool{Name: "one", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult("1"), nil
	})
	s.AddTool(&mcp.Tool{Name: "grow", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.AddTool(&mcp.Tool{Name: "two", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult("2"), nil
		})
		return textResult("grown"), nil
	})
	// settled returns once the gateway has heard of the change (the next
	// snapshot of dyn is then refetched), so that the run in flight
	// continues only after it.
	heard := make(chan struct{})
	var once sync.Once
	s.AddTool(&mcp.Tool{Name: "settled", InputSchema: objectSchema}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-heard:
			return textResult("heard"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	r := newTestRunnerWith(t, map[string]*mcp.Server{"dyn": s}, &upstream.Options{OnToolsChanged: func(string) { once.Do(func() { close(heard) }) }})
	res := mustRun(t, r, `import { grow, settled, __meta__ } from "@codemode/servers/dyn";
import { listTools } from "@codemode/discovery";
await grow();
await settled();
globalThis.__codemode_result__ = { meta: __meta__.tools.length, listed: (await listTools("dyn")).length };`)
	if res.Failed() || string(res.Result) != `{"meta":3,"listed":3}` {
		t.Fatalf("the in-flight run saw a different tool set:\n%s", dump(res))
	}
	res = mustRun(t, r, `import { __meta__ } from "@codemode/servers/dyn"; globalThis.__codemode_result__ = __meta__.tools.map(t => t.toolName);`)
	if string(res.Result) != `["grow","one","settled","two"]` {
		t.Fatalf("the next run did not see the new tool: %s", dump(res))
	}
	res = mustRun(t, r, `import { two } from "@codemode/servers/dyn"; globalThis.__codemode_result__ = await two();`)
	if string(res.Result) != `"2"` {
		t.Fatalf("calling the new tool: %s", dump(res))
	}
}

// §6.1 at the module level: sanitising, leading digits, reserved words and
// collisions in alphabetical order, all reflected in __meta__ and callable.
func TestExportNameMapping(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "names"}, nil)
	for _, name := range []string{"a_b", "a-b", "a.b", "123go", "export", "enum", "__meta__"} {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult(name), nil
		})
	}
	r := newTestRunner(t, map[string]*mcp.Server{"names": s})
	res := r.Run(context.Background(), Request{Code: `import * as n from "@codemode/servers/names";
const out = {};
for (const t of n.__meta__.tools) out[t.exportName] = await n[t.exportName]();
globalThis.__codemode_result__ = out;`})
	// A tool named "__meta__" collides with the module's own export, which
	// keeps describing the server.
	want := map[string]string{"a_b": "a-b", "a_b__2": "a.b", "a_b__3": "a_b", "_123go": "123go", "export_": "export", "enum": "enum", "__meta____2": "__meta__"}
	got := result[map[string]string](t, res)
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("export %s called %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
}

// §7.1: an upstream rejecting credentials throws AuthenticationError.
func TestAuthenticationError(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "guarded"}, nil)
	srv.AddTool(&mcp.Tool{Name: "secret", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult("ok"), nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer right" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer ts.Close()
	cfg := testutil.Config(
		config.Server{Name: "good", Transport: config.Streamable, URL: ts.URL, Headers: map[string]string{"Authorization": "Bearer right"}},
		config.Server{Name: "bad", Transport: config.Streamable, URL: ts.URL, Headers: map[string]string{"Authorization": "Bearer wrong"}},
	)
	cfg.DefaultLimits.TimeoutMs = roomyMs
	m := upstream.New(cfg.Servers, nil)
	defer m.Close()
	r := New(cfg, catalog.New(m), m, nil)
	res := r.Run(context.Background(), Request{Code: `import { secret } from "@codemode/servers/good";
import { getTool } from "@codemode/discovery";
import { AuthenticationError } from "@codemode/errors";
let bad;
try { await getTool("bad", "secret") } catch (e) { bad = { ok: e instanceof AuthenticationError, name: e.name, hint: e.hint } }
globalThis.__codemode_result__ = { good: await secret(), bad };`})
	var got struct {
		Good string
		Bad  struct {
			OK         bool
			Name, Hint string
		}
	}
	json.Unmarshal(res.Result, &got)
	if got.Good != "ok" || !got.Bad.OK || got.Bad.Hint == "" {
		t.Fatalf("response:\n%s", dump(res))
	}
	if strings.Contains(dump(res), "Bearer") {
		t.Fatalf("credentials reached the response:\n%s", dump(res))
	}
}

// A server that fails to start is a diagnostic naming it with its stderr;
// the rest of the run goes on.
func TestBrokenServerDoesNotStopTheRun(t *testing.T) {
	cfg := testutil.Config(
		testutil.Everything(t, "everything"),
		config.Server{Name: "broken", Transport: config.Stdio, Command: "/bin/sh", Args: []string{"-c", "echo 'fatal: FOO_TOKEN is not set' >&2; exit 3"}},
	)
	cfg.DefaultLimits.TimeoutMs = roomyMs // starting node takes long on a loaded machine
	// The broken server stays in backoff however long the run takes to
	// list it (by default it would be retried after 250 ms).
	m := upstream.New(cfg.Servers, &upstream.Options{BackoffInitial: time.Hour, BackoffMax: time.Hour})
	defer m.Close()
	r := New(cfg, catalog.New(m), m, nil)
	res := r.Run(context.Background(), Request{Code: `import { listServers } from "@codemode/discovery";
import { echo } from "@codemode/servers/everything";
const servers = await listServers();
globalThis.__codemode_result__ = { servers: servers.map(s => s.serverId + ":" + s.status), echo: await echo({ message: "still here" }) };`})
	if res.Failed() || !strings.Contains(string(res.Result), "broken:backoff") || !strings.Contains(string(res.Result), "still here") {
		t.Fatalf("response:\n%s", dump(res))
	}
	var found bool
	for _, d := range res.Diagnostics {
		if d.Code == diag.UpstreamUnavailable && strings.Contains(d.Message, "broken") && strings.Contains(d.Message, "FOO_TOKEN is not set") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no diagnostic naming the broken server with its stderr:\n%s", dump(res))
	}
}

// The tool-call handler is replaceable and the sandbox can run
// deterministically: the two things replay mode builds on.
func TestReplaceableCallerAndDeterminism(t *testing.T) {
	s := calcServer()
	var calls atomic.Int32
	fake := callerFunc(func(ctx context.Context, id, tool string, args any) (*mcp.CallToolResult, error) {
		calls.Add(1)
		return textResult("recorded " + tool), nil
	})
	base := newTestRunner(t, map[string]*mcp.Server{"calc": s})
	r := New(base.cfg, base.cat, fake, &Options{Deterministic: &sandbox.Deterministic{Seed: 7, Now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}})
	code := `import { echo } from "@codemode/servers/calc";
globalThis.__codemode_result__ = [await echo({ message: "x" }), Math.random(), Date.now(), new Date().toISOString()];`
	a := r.Run(context.Background(), Request{Code: code})
	b := r.Run(context.Background(), Request{Code: code})
	if a.Failed() || string(a.Result) != string(b.Result) || !strings.Contains(string(a.Result), `"recorded echo"`) || !strings.Contains(string(a.Result), "2030-01-02T03:04:05.000Z") {
		t.Fatalf("runs differ or are wrong:\n%s\n%s", a.Result, b.Result)
	}
	if calls.Load() != 2 {
		t.Fatalf("replacement caller saw %d calls", calls.Load())
	}
}

type callerFunc func(ctx context.Context, id, tool string, args any) (*mcp.CallToolResult, error)

func (f callerFunc) CallTool(ctx context.Context, id, tool string, args any) (*mcp.CallToolResult, error) {
	return f(ctx, id, tool, args)
}

// §5.3.1: a tool with no input schema at all is callable with no argument.
func TestToolWithoutInputSchema(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "bare"}, nil)
	s.AddTool(&mcp.Tool{Name: "ping", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult("pong " + string(req.Params.Arguments)), nil
	})
	r := newTestRunner(t, map[string]*mcp.Server{"bare": s})
	res := r.Run(context.Background(), Request{Code: `import { ping } from "@codemode/servers/bare"; globalThis.__codemode_result__ = [await ping(), await ping({})];`})
	if string(res.Result) != `["pong {}","pong {}"]` {
		t.Fatalf("response:\n%s", dump(res))
	}
}

// Credentials configured for an upstream never reach the model, even when
// the upstream echoes them.
func TestSecretsAreRedacted(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "leaky"}, nil)
	s.AddTool(&mcp.Tool{Name: "env", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult(`API_TOKEN=sk-live-0123456789 and "quoted\"sk-live-0123456789"`), nil
	})
	s.AddTool(&mcp.Tool{Name: "fail", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "bad token sk-live-0123456789"}}}, nil
	})
	r := newTestRunner(t, map[string]*mcp.Server{"leaky": s})
	r.cfg.Servers[0].Secrets = []string{"sk-live-0123456789"}
	r = New(r.cfg, r.cat, r.caller, nil)
	res := r.Run(context.Background(), Request{Code: `import { env, fail } from "@codemode/servers/leaky";
const e = await env();
console.log(e);
try { await fail() } catch (err) { console.log(err.message) }
globalThis.__codemode_result__ = { e };
await fail();`})
	out := dump(res)
	if strings.Contains(out, "sk-live-0123456789") || !strings.Contains(out, Redacted) {
		t.Fatalf("secret reached the response:\n%s", out)
	}
}

// A SANDBOX_LIMIT hint names the parameter that raises the limit on the
// surface that ran the script, and none where the caller cannot raise it.
func TestLimitHintNamesTheSurfacesParameter(t *testing.T) {
	r := newTestRunner(t, map[string]*mcp.Server{})
	req := Request{Code: `for (;;) {}`, Limits: config.Limits{TimeoutMs: 100}}
	for _, tc := range []struct {
		params map[string]string
		want   string // "" for no suggestion
	}{
		{nil, "raise limits.timeoutMs (up to 300000)"},
		{map[string]string{"timeoutMs": "timeout"}, "raise timeout (up to 300000)"},
		{map[string]string{}, ""},
	} {
		res := r.RunWith(context.Background(), req, Extra{LimitParams: tc.params})
		if len(res.Diagnostics) != 1 {
			t.Fatalf("%s", dump(res))
		}
		hint := res.Diagnostics[0].Hint
		if tc.want != "" && !strings.Contains(hint, tc.want) || tc.want == "" && strings.Contains(hint, "raise") {
			t.Errorf("LimitParams %v: hint %q, want it to suggest %q", tc.params, hint, tc.want)
		}
	}
}

// A server that never answers initialize holds up neither listServers (it
// is reported as connecting) nor the diagnosis of a run that waited for it.
func TestStuckServer(t *testing.T) {
	cs := []config.Server{{ID: "stuck", Name: "stuck", Transport: config.Stdio, Command: "sleep", Args: []string{"1000"}}}
	// Still starting whenever it is asked, however long the test takes.
	m := upstream.New(cs, &upstream.Options{ConnectTimeout: time.Hour})
	t.Cleanup(func() { m.Close() })
	cfg := config.Default()
	cfg.Servers = cs
	r := New(cfg, catalog.New(m), m, nil)

	res := r.Run(context.Background(), Request{Code: `import { listServers } from "@codemode/discovery";
globalThis.__codemode_result__ = await listServers();`, Limits: config.Limits{TimeoutMs: roomyMs}})
	got := result[[]ServerInfo](t, res)
	if len(got) != 1 || got[0].Status != "connecting" || !strings.Contains(got[0].Error, "initialize") {
		t.Errorf("listServers: %s", dump(res))
	}

	// Listing stops waiting for it without blaming it for a timeout the
	// script then causes itself (in its loop: the timeout is doubled until
	// the script got there, however slow the machine).
	for ms := int64(1000); ; ms *= 2 {
		res = r.Run(context.Background(), Request{Code: `import { listServers } from "@codemode/discovery";
await listServers(); console.log("looping"); for (;;) {}`, Limits: config.Limits{TimeoutMs: ms}})
		if len(res.Logs) > 0 || ms > 120_000 {
			break
		}
	}
	if len(res.Diagnostics) != 1 || strings.Contains(res.Diagnostics[0].Message, "waiting for") {
		t.Errorf("a script's own timeout blamed on a server it only listed: %s", dump(res))
	}

	// An import stops waiting with time left in the run, and says why.
	// (The timeout is doubled until the run got to the import with time
	// left: on a loaded machine, starting the run can take 500 ms.)
	for ms := int64(500); ; ms *= 2 {
		res = r.Run(context.Background(), Request{Code: `import { x } from "@codemode/servers/stuck";`, Limits: config.Limits{TimeoutMs: ms}})
		if len(res.Diagnostics) == 1 && res.Diagnostics[0].Code == diag.ImportFailure || ms > 120_000 {
			break
		}
	}
	if len(res.Diagnostics) != 1 || res.Diagnostics[0].Code != diag.ImportFailure || !strings.Contains(res.Diagnostics[0].Message, `server "stuck" did not finish starting`) {
		t.Errorf("a run that waited for a stuck server: %s", dump(res))
	}
}

// The upstream's connect timeout is as long as a run's default timeout, so
// waiting for it would take the whole run: a script could never catch the
// import of a server that never finishes its handshake. Waits for a server
// end with a quarter of the run's time left, with an error the script can
// catch and that says what happened; the server goes on starting.
func TestImportOfStuckServerIsCatchable(t *testing.T) {
	t.Parallel()
	cs := []config.Server{{ID: "stuck", Name: "stuck", Transport: config.Stdio, Command: "sleep", Args: []string{"1000"}}}
	// Still starting whenever it is asked, however long the test takes.
	m := upstream.New(cs, &upstream.Options{ConnectTimeout: time.Hour})
	t.Cleanup(func() { m.Close() })
	cfg := config.Default()
	cfg.Servers = cs
	r := New(cfg, catalog.New(m), m, nil)
	for name, code := range map[string]string{
		"import": `let caught;
try { await import("@codemode/servers/stuck"); } catch (e) { caught = String(e.message); }
globalThis.__codemode_result__ = caught;`,
		"discovery": `import { describeServer } from "@codemode/discovery";
let caught;
try { await describeServer("stuck"); } catch (e) { caught = e.name + ": " + e.message + " | " + e.hint; }
globalThis.__codemode_result__ = caught;`,
	} {
		// The timeout is doubled until the script got to the import with
		// time left to catch it (a loaded machine can take seconds to start
		// the run).
		var res *Response
		var got string
		for ms := int64(4000); ; ms *= 2 {
			res = r.Run(context.Background(), Request{Code: code, Limits: config.Limits{TimeoutMs: ms}})
			got = ""
			json.Unmarshal(res.Result, &got)
			if !res.Failed() || ms > 120_000 {
				break
			}
		}
		if res.Failed() || !strings.Contains(got, `server "stuck" did not finish starting`) || !strings.Contains(got, "initialize") {
			t.Errorf("%s: the script could not catch the wait for a stuck server: %s", name, dump(res))
		}
	}
}

// A tool argument must be JSON data: a function is refused, not sent as {}.
// A tool named `then` makes its module thenable; a dynamic import of it
// fails at once with a hint instead of calling the tool and never settling.
func TestNonDataArgumentsAndThenTool(t *testing.T) {
	var calls atomic.Int64
	s := mcp.NewServer(&mcp.Implementation{Name: "p"}, nil)
	for _, name := range []string{"then", "add"} {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			calls.Add(1)
			return textResult(name), nil
		})
	}
	r := newTestRunner(t, map[string]*mcp.Server{"p": s})
	res := r.Run(context.Background(), Request{Code: `import { add, then as th } from "@codemode/servers/p";
const out = [];
try { await add(() => 1) } catch (e) { out.push(e.name + ": " + e.message) }
try { await import("@codemode/servers/p") } catch (e) { out.push(e.message) }
out.push(await th({}));
globalThis.__codemode_result__ = out;`})
	got := result[[]string](t, res)
	if len(got) != 3 || !strings.Contains(got[0], "TypeError: add() takes JSON data") || !strings.Contains(got[1], "import it statically") || got[2] != "then" {
		t.Errorf("got %q\n%s", got, dump(res))
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d upstream calls, want 1 (only the explicit then({}))", n)
	}
}

// A request can lower a limit but not raise it past the host's maximum; a
// request above it runs at the maximum, with a warning that says so.
func TestLimitAboveMaximumIsClampedWithAWarning(t *testing.T) {
	r := newTestRunner(t, map[string]*mcp.Server{})
	res := r.Run(context.Background(), Request{Code: `globalThis.__codemode_result__ = 1;`, Limits: config.Limits{TimeoutMs: 99_999_999, MaxToolCalls: 5}})
	if len(res.Diagnostics) != 1 || res.Diagnostics[0].Severity != diag.SeverityWarning || !strings.Contains(res.Diagnostics[0].Message, "timeoutMs 99999999 is above this host's maximum; the run uses 300000") || string(res.Result) != "1" {
		t.Errorf("%s", dump(res))
	}
}

// QuickJS's "not a function" does not name the callee; the hint points at
// the likeliest cause in a Code Mode script, a tool under a wrong name.
func TestNotAFunctionHint(t *testing.T) {
	r := newTestRunner(t, map[string]*mcp.Server{})
	res := r.Run(context.Background(), Request{Code: `import * as d from "@codemode/discovery"; await d.listServer();`})
	if len(res.Diagnostics) != 1 || !strings.Contains(res.Diagnostics[0].Hint, "__meta__.tools") {
		t.Errorf("%s", dump(res))
	}
}

// An uncaught tool error points at the agent's call in its own TypeScript
// source (§3.3.4 path), although the error is created on the event loop.
func TestUncaughtToolErrorHasCallSite(t *testing.T) {
	r := newTestRunner(t, map[string]*mcp.Server{"calc": calcServer()})
	res := r.Run(context.Background(), Request{Code: `import { add, fail } from "@codemode/servers/calc";
type Sum = { sum: number };
const s: Sum = await add({ a: 1, b: 2 });
console.log(s.sum);
const x: unknown = await fail({});
`})
	d := firstError(t, res)
	if d.Code != diag.UncaughtException || d.ErrorClass != diag.ToolCallError || d.Path != "script.ts:5:26" {
		t.Fatalf("diagnostic = %+v", d)
	}
}

// A server the configuration disables is not "unknown": the script is told
// it is disabled, and by which key.
func TestDisabledServerIsNamed(t *testing.T) {
	r := newTestRunner(t, map[string]*mcp.Server{"calc": calcServer()})
	r.cfg.Disabled = []string{"Off_Server"}
	for _, code := range []string{
		`import { x } from "@codemode/servers/off-server"; x();`,
		`import { describeServer } from "@codemode/discovery"; await describeServer("off-server");`,
	} {
		res := mustRun(t, r, code)
		if len(res.Diagnostics) == 0 {
			t.Fatalf("%s: no diagnostic", code)
		}
		d := res.Diagnostics[0]
		if !strings.Contains(d.Message, `"off-server" is disabled`) || !strings.Contains(d.Hint, "mcpServers.Off_Server") || !strings.Contains(d.Hint, "calc") {
			t.Errorf("%s: %+v", code, d)
		}
	}
}

// Importing a name a server does not export is a ToolNotFoundError that
// suggests the nearest export.
func TestMissingExportSuggestsNearest(t *testing.T) {
	r := newTestRunner(t, map[string]*mcp.Server{"calc": calcServer()})
	res := mustRun(t, r, `import { Add } from "@codemode/servers/calc"; globalThis.__codemode_result__ = await Add({ a: 1, b: 2 });`)
	if len(res.Diagnostics) != 1 {
		t.Fatalf("%s", dump(res))
	}
	d := res.Diagnostics[0]
	if d.Code != diag.ImportFailure || d.ErrorClass != diag.ToolNotFoundError || !strings.Contains(d.Message, `"Add"`) || !strings.HasPrefix(d.Hint, `did you mean "add"?`) {
		t.Errorf("%+v", d)
	}
}

// An input JSON cannot carry (a BigInt, a cycle, a throwing getter) is a
// SchemaValidationError (§7.2) that says where, not a bare TypeError.
func TestNonJSONInputIsSchemaValidationError(t *testing.T) {
	r := newTestRunner(t, map[string]*mcp.Server{"calc": calcServer()})
	res := mustRun(t, r, `import { add } from "@codemode/servers/calc";
import { SchemaValidationError } from "@codemode/errors";
const cyc = { a: 1, b: { c: 2 } }; cyc.b.back = cyc;
const out = [];
for (const input of [{ a: 1n, b: 2 }, cyc, { a: 1, get b() { throw new Error("nope"); } }]) {
  try { await add(input); out.push("called"); }
  catch (e) { out.push([e instanceof SchemaValidationError, e.toolName, e.exportName, e.serverId, e.path, e.received, typeof e.hint].join("|")); }
}
globalThis.__codemode_result__ = out;`)
	want := `["true|add|add|calc|/a|a BigInt|string","true|add|add|calc|/b/back|a circular reference|string","true|add|add|calc|/b|a getter that throws (nope)|string"]`
	if string(res.Result) != want {
		t.Errorf("result %s\nwant   %s\n%s", res.Result, want, dump(res))
	}
}

// Indices planted on Array.prototype do not change what the error says.
func TestNonJSONInputUnderPollution(t *testing.T) {
	r := newTestRunner(t, map[string]*mcp.Server{"calc": calcServer()})
	res := mustRun(t, r, `import { add } from "@codemode/servers/calc";
for (const i of ["0", "1", "2"]) Object.defineProperty(Array.prototype, i, { set() { throw new Error("intercepted"); }, get() { return "planted"; }, configurable: true });
let r = "called";
try { await add({ a: { b: 1n } }); } catch (e) { r = e.name + " " + e.toolName + " " + e.path + " " + e.received; }
globalThis.__codemode_result__ = r;`)
	if string(res.Result) != `"SchemaValidationError add /a/b a BigInt"` {
		t.Errorf("result %s\n%s", res.Result, dump(res))
	}
}

// Finding where an input stops being JSON is bounded (getters that make
// new objects forever), and follows toJSON as JSON.stringify does.
func TestNonJSONInputSearchIsBounded(t *testing.T) {
	r := newTestRunner(t, map[string]*mcp.Server{"calc": calcServer()})
	// Unbounded, the first call would run until the run's timeout, and
	// the result would be null. The bounded search is still 10,000 getter
	// calls, which -race makes minutes long on a loaded machine: the
	// timeout here is half an hour.
	r.cfg.MaxLimits.TimeoutMs = 30 * 60 * 1000
	res := r.Run(context.Background(), Request{Limits: config.Limits{TimeoutMs: r.cfg.MaxLimits.TimeoutMs}, Code: `import { add } from "@codemode/servers/calc";
function mk() { return { get a() { return mk(); }, get b() { return mk(); } }; }
const out = [];
for (const input of [mk(), (() => { const c = { x: 1 }; c.self = c; c.toJSON = () => "ok"; return { a: c, b: 1n }; })()]) {
  try { await add(input); out.push("called"); } catch (e) { out.push(e.name + " " + e.path); }
}
globalThis.__codemode_result__ = out;`})
	if string(res.Result) != `["SchemaValidationError ","SchemaValidationError /b"]` {
		t.Errorf("result %s\n%s", res.Result, dump(res))
	}
}

// A run that makes ten concurrent tool calls whose results together are
// more than twice its memory limit (the case was ten 15 MB results
// under 64 MiB, which took the process to 700 MB; this is the same at half
// the scale): the results count against the gateway's budget from the
// moment they arrive until the script has them, and against the run's own
// limit, so the process never holds more than the budget says, whatever
// the timing; every call gets its value or a SandboxLimitError.
func TestResultsInFlightCountAgainstTheBudget(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 15<<19)
	srv := mcp.NewServer(&mcp.Implementation{Name: "big", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "get", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: big}}}, nil
		})
	r := newTestRunner(t, map[string]*mcp.Server{"big": srv})
	const budget = 80 << 20
	a := admit.New(&admit.Options{MemoryBytes: budget})
	r.opts.Admission = a
	res := r.Run(context.Background(), Request{Code: `import { get } from "@codemode/servers/big";
const out = await Promise.allSettled(Array.from({ length: 10 }, () => get().then((s) => s.length)));
globalThis.__codemode_result__ = out.map((r) => r.status === "fulfilled" ? r.value : r.reason.name + ":" + r.reason.limit);`,
		Limits: config.Limits{MaxMemoryBytes: 32 << 20}})
	if !res.Failed() {
		var got []any
		json.Unmarshal(res.Result, &got)
		if len(got) != 10 {
			t.Fatalf("result: %s", dump(res))
		}
		for _, g := range got {
			if g != float64(15<<19) && g != "SandboxLimitError:maxMemoryBytes" && g != "SandboxLimitError:memoryBudget" {
				t.Errorf("a call ended with %v, neither its value nor SandboxLimitError", g)
			}
		}
		for _, e := range res.ToolTrace {
			if !e.OK && !strings.HasPrefix(e.Error, "SandboxLimitError:") {
				t.Errorf("the trace blames the server for an answer the gateway dropped: %+v", e)
			}
		}
	} else if d := res.Diagnostics[0]; d.Code != diag.SandboxLimit {
		// The sandbox may run out of memory taking several results in at
		// once: that is its own limit. Anything else is wrong.
		t.Fatalf("the run failed: %s", dump(res))
	}
	s := a.Stats()
	if s.PeakReserved <= 32<<20 || s.PeakReserved > budget {
		t.Errorf("peak reserved %d MiB: want the results counted on top of the sandbox's 32 MiB, and the total within the budget (%d MiB)", s.PeakReserved>>20, budget>>20)
	}
	if s.Reserved != 0 || s.Running != 0 {
		t.Errorf("after the run: %+v", s)
	}
}
