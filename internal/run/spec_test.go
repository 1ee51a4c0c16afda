package run

// These tests check codemode-spec §3–§7, §10 and §11 end to end against the
// real reference servers from npm (installed by `make test`). Each names the
// section it checks.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/reexec"
	"github.com/codemode-mcp/codemode/internal/testutil"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

var (
	realOnce   sync.Once
	realRunner *Runner
	realDir    string
	realMgr    *upstream.Manager
)

// real returns a Runner over the four npm reference servers, shared by the
// tests of this file (starting them once keeps the suite fast). The memory
// server is configured as "Memory_Graph" so that §5.0.1 applies.
func real(t *testing.T) *Runner {
	t.Helper()
	realOnce.Do(func() {
		dir, err := os.MkdirTemp("", "codemode-run-spec")
		if err != nil {
			t.Fatal(err)
		}
		realDir = dir
		os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello from the filesystem server\n"), 0o644)
		cfg := testutil.Config(
			testutil.Everything(t, "everything"),
			config.Server{Name: "Memory_Graph", Transport: config.Stdio, Command: testutil.NPMBin(t, "mcp-server-memory"),
				Env: map[string]string{"MEMORY_FILE_PATH": filepath.Join(dir, "memory.jsonl")}},
			testutil.Filesystem(t, "filesystem", dir),
			testutil.SequentialThinking(t, "sequential-thinking"),
		)
		cfg.DefaultLimits.TimeoutMs = roomyMs // starting four node servers takes long on a loaded machine
		realMgr = upstream.New(cfg.Servers, nil)
		realRunner = New(cfg, catalog.New(realMgr), realMgr, nil)
	})
	if realRunner == nil {
		t.Fatal("the shared runner could not be built")
	}
	return realRunner
}

func TestMain(m *testing.M) {
	if reexec.Init() { // esbuild workers
		return
	}
	code := m.Run()
	if realMgr != nil {
		realMgr.Close()
		os.RemoveAll(realDir)
	}
	os.Exit(code)
}

func runCode(t *testing.T, r *Runner, code string) *Response {
	t.Helper()
	return r.Run(context.Background(), Request{Code: code})
}

// ok runs code and fails the test on any error diagnostic.
func ok(t *testing.T, r *Runner, code string) *Response {
	t.Helper()
	res := runCode(t, r, code)
	if res.Failed() {
		t.Fatalf("unexpected failure:\n%s", dump(res))
	}
	return res
}

func result[T any](t *testing.T, res *Response) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(res.Result, &v); err != nil {
		t.Fatalf("result %s: %v", res.Result, err)
	}
	return v
}

func firstError(t *testing.T, res *Response) diag.Diagnostic {
	t.Helper()
	for _, d := range res.Diagnostics {
		if d.Severity == diag.SeverityError {
			return d
		}
	}
	t.Fatalf("no error diagnostic:\n%s", dump(res))
	return diag.Diagnostic{}
}

// §3.2.1: ES module semantics with import/export and top-level await; §3.2.2
// the result is __codemode_result__, null when unset.
func TestSpecModuleSemanticsAndResult(t *testing.T) {
	r := real(t)
	res := ok(t, r, `import { get_sum } from "@codemode/servers/everything";
export const answer = 42;
const s = await get_sum({ a: 40, b: 2 });
globalThis.__codemode_result__ = { s, answer };`)
	got := result[map[string]any](t, res)
	if got["answer"] != float64(42) || !strings.Contains(got["s"].(string), "42") {
		t.Fatalf("result = %v", got)
	}
	res = ok(t, r, `const x = 1;`)
	if string(res.Result) != "null" {
		t.Fatalf("unset result = %s, want null", res.Result)
	}
}

// §3.3: the response always has logs, result, diagnostics and toolTrace,
// and §3.3.2: the trace never carries inputs or outputs.
func TestSpecResponseShapeAndTraceRedaction(t *testing.T) {
	r := real(t)
	res := ok(t, r, `import { echo } from "@codemode/servers/everything";
const out = await echo({ message: "secret-input-7f3a" });
console.log("done");
globalThis.__codemode_result__ = out.length;`)
	b, _ := json.Marshal(res)
	var m map[string]json.RawMessage
	json.Unmarshal(b, &m)
	for _, k := range []string{"logs", "result", "diagnostics", "toolTrace"} {
		if _, ok := m[k]; !ok {
			t.Errorf("response lacks %q: %s", k, b)
		}
	}
	trace, _ := json.Marshal(res.ToolTrace)
	if strings.Contains(string(trace), "secret-input-7f3a") {
		t.Fatalf("toolTrace leaks the input: %s", trace)
	}
	if len(res.ToolTrace) != 1 || res.ToolTrace[0].ServerID != "everything" || res.ToolTrace[0].ToolName != "echo" || !res.ToolTrace[0].OK {
		t.Fatalf("trace = %+v", res.ToolTrace)
	}
	if len(res.Logs) != 1 || res.Logs[0].Level != "log" || res.Logs[0].Message != "done" {
		t.Fatalf("logs = %+v", res.Logs)
	}
}

// §3.3.4: a failing script still gets a structured response: diagnostics,
// null result, the logs and trace from before the failure.
func TestSpecFatalErrorsKeepLogsAndTrace(t *testing.T) {
	r := real(t)
	res := runCode(t, r, `import { echo } from "@codemode/servers/everything";
await echo({ message: "first" });
console.log("before");
globalThis.__codemode_result__ = "should be discarded";
null.boom;`)
	d := firstError(t, res)
	if d.Code != diag.UncaughtException || !strings.HasPrefix(d.Path, "script.ts:5:") {
		t.Fatalf("diagnostic = %+v", d)
	}
	if string(res.Result) != "null" || len(res.Logs) != 1 || len(res.ToolTrace) != 1 {
		t.Fatalf("response = %s", dump(res))
	}
}

// §3.3.4: syntax errors carry line and column of the agent's source.
func TestSpecSyntaxError(t *testing.T) {
	res := runCode(t, real(t), "const a = 1;\nconst b = a +;\n")
	d := firstError(t, res)
	if d.Code != diag.SyntaxError || d.Path != "script.ts:2:14" {
		t.Fatalf("diagnostic = %+v", d)
	}
}

// §4.1–4.3: the discovery module and its detail levels.
func TestSpecDiscovery(t *testing.T) {
	r := real(t)
	res := ok(t, r, `import * as d from "@codemode/discovery";
const servers = await d.listServers();
const desc = await d.describeServer("everything");
const names = await d.listTools("everything", { detail: "name" });
const descs = await d.listTools("everything");
const full = await d.listTools("everything", { detail: "full" });
const tool = await d.getTool("everything", "get_sum");
const search = await d.searchTools("add two numbers", { limit: 3 });
const scoped = await d.searchTools("create entities", { serverId: "memory-graph", detail: "full", limit: 1 });
globalThis.__codemode_result__ = { specVersion: d.specVersion, servers, desc, names, descs, full, tool, search, scoped };`)
	var got struct {
		SpecVersion string
		Servers     []map[string]any
		Desc        map[string]any
		Names       []map[string]any
		Descs       []map[string]any
		Full        []map[string]any
		Tool        map[string]any
		Search      struct {
			Query   string
			Results []map[string]any
		}
		Scoped struct{ Results []map[string]any }
	}
	if err := json.Unmarshal(res.Result, &got); err != nil {
		t.Fatal(err)
	}
	if got.SpecVersion != SpecVersion {
		t.Errorf("specVersion = %q", got.SpecVersion)
	}
	if len(got.Servers) != 4 || got.Servers[1]["serverId"] != "memory-graph" || got.Servers[1]["serverName"] != "Memory_Graph" {
		t.Errorf("servers = %v", got.Servers)
	}
	if got.Desc["serverId"] != "everything" || got.Desc["version"] == nil || got.Desc["toolCount"].(float64) < 10 {
		t.Errorf("describeServer = %v", got.Desc)
	}
	for _, n := range got.Names {
		if len(n) != 2 || n["toolName"] == nil || n["exportName"] == nil {
			t.Fatalf("detail name returned %v", n)
		}
	}
	for _, n := range got.Descs {
		if n["inputSchema"] != nil || n["description"] == nil {
			t.Fatalf("detail description returned %v", n)
		}
	}
	for _, n := range got.Full {
		if n["inputSchema"] == nil {
			t.Fatalf("detail full lacks inputSchema: %v", n)
		}
	}
	if got.Tool["toolName"] != "get-sum" || got.Tool["exportName"] != "get_sum" || got.Tool["inputSchema"] == nil {
		t.Errorf("getTool = %v", got.Tool)
	}
	if got.Search.Query != "add two numbers" || len(got.Search.Results) == 0 || got.Search.Results[0]["toolName"] != "get-sum" || got.Search.Results[0]["serverId"] != "everything" {
		t.Errorf("searchTools = %+v", got.Search)
	}
	if len(got.Scoped.Results) != 1 || got.Scoped.Results[0]["toolName"] != "create_entities" || got.Scoped.Results[0]["outputSchema"] == nil {
		t.Errorf("scoped search = %+v", got.Scoped)
	}
}

// §6.3: annotations reach ToolSummary.annotations.
func TestSpecAnnotations(t *testing.T) {
	res := ok(t, real(t), `import { getTool } from "@codemode/discovery";
globalThis.__codemode_result__ = (await getTool("memory-graph", "read_graph")).annotations;`)
	got := result[map[string]any](t, res)
	if got["readOnlyHint"] != true {
		t.Fatalf("annotations = %v", got)
	}
}

// §5.0.1, §5.1, §5.2: module path mapping and __meta__.
func TestSpecServerModuleAndMeta(t *testing.T) {
	res := ok(t, real(t), `import { __meta__ } from "@codemode/servers/memory-graph";
import * as e from "@codemode/servers/everything";
globalThis.__codemode_result__ = { meta: __meta__, exports: Object.keys(e).sort(), frozen: Object.isFrozen(__meta__) && Object.isFrozen(__meta__.tools[0]) };`)
	var got struct {
		Meta struct {
			ServerID, ServerName, ServerVersion string
			Tools                               []map[string]string
		}
		Exports []string
		Frozen  bool
	}
	json.Unmarshal(res.Result, &got)
	if got.Meta.ServerID != "memory-graph" || got.Meta.ServerName != "Memory_Graph" || got.Meta.ServerVersion == "" || len(got.Meta.Tools) < 9 {
		t.Fatalf("__meta__ = %+v", got.Meta)
	}
	if !got.Frozen {
		t.Fatal("__meta__ is not frozen")
	}
	want := []string{"__meta__", "echo", "get_sum", "get_tiny_image", "trigger_long_running_operation"}
	for _, w := range want {
		if !slices.Contains(got.Exports, w) {
			t.Fatalf("exports %v lack %q", got.Exports, w)
		}
	}
}

// §5.3.1: a tool without required input is callable with no argument and
// with {}; §5.3.2 rule 1: structuredContent wins over content.
func TestSpecCallShapesAndStructuredContent(t *testing.T) {
	res := ok(t, real(t), `import { read_graph, create_entities } from "@codemode/servers/memory-graph";
await create_entities({ entities: [{ name: "alice", entityType: "person", observations: ["likes tea"] }] });
const a = await read_graph();
const b = await read_graph({});
globalThis.__codemode_result__ = { a, same: JSON.stringify(a) === JSON.stringify(b) };`)
	var got struct {
		A struct {
			Entities []struct{ Name string }
		}
		Same bool
	}
	json.Unmarshal(res.Result, &got)
	if !got.Same || len(got.A.Entities) == 0 || got.A.Entities[0].Name != "alice" {
		t.Fatalf("result = %s", res.Result)
	}
}

// §5.3.2 rules 2–4: one text block is a string; an image gives the whole
// result with base64 data; several blocks give the whole result.
func TestSpecUnwrapping(t *testing.T) {
	res := ok(t, real(t), `import { echo, get_tiny_image, get_resource_links } from "@codemode/servers/everything";
const text = await echo({ message: "x" });
const image = await get_tiny_image();
const links = await get_resource_links({ count: 2 });
globalThis.__codemode_result__ = { text, image, links };`)
	var got struct {
		Text  any
		Image struct {
			Content []map[string]any
		}
		Links struct {
			Content []map[string]any
		}
	}
	json.Unmarshal(res.Result, &got)
	if s, ok := got.Text.(string); !ok || !strings.Contains(s, "x") {
		t.Errorf("single text block = %#v, want a string", got.Text)
	}
	var sawImage bool
	for _, c := range got.Image.Content {
		if c["type"] == "image" {
			sawImage = true
			if d, _ := c["data"].(string); len(d) < 20 || strings.ContainsAny(d, " {") {
				t.Errorf("image data is not base64: %q", d)
			}
		}
	}
	if !sawImage {
		t.Errorf("image result = %+v", got.Image)
	}
	if len(got.Links.Content) < 2 {
		t.Errorf("multi-block result = %+v", got.Links)
	}
}

// §7.1–7.3: schema validation before the upstream is called, with every
// field of SchemaValidationError and a hint.
func TestSpecSchemaValidationError(t *testing.T) {
	res := ok(t, real(t), `import { get_sum } from "@codemode/servers/everything";
import { SchemaValidationError, CodemodeError } from "@codemode/errors";
try {
  await get_sum({ a: "one", b: 2 });
} catch (e) {
  globalThis.__codemode_result__ = {
    isSVE: e instanceof SchemaValidationError, isBase: e instanceof CodemodeError, name: e.name,
    toolName: e.toolName, exportName: e.exportName, path: e.path, expected: e.expected,
    received: e.received, example: e.example, hint: e.hint, message: e.message };
}`)
	got := result[map[string]any](t, res)
	if got["isSVE"] != true || got["isBase"] != true || got["name"] != "SchemaValidationError" {
		t.Fatalf("class = %v", got)
	}
	if got["toolName"] != "get-sum" || got["exportName"] != "get_sum" || got["path"] != "/a" {
		t.Errorf("fields = %v", got)
	}
	if !strings.Contains(got["expected"].(string), "number") || !strings.Contains(got["received"].(string), "one") {
		t.Errorf("expected/received = %v / %v", got["expected"], got["received"])
	}
	msg := got["message"].(string)
	for _, want := range []string{"get-sum", "/a", "number", "one"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if ex, ok := got["example"].(map[string]any); !ok || ex["a"] == nil || ex["b"] == nil {
		t.Errorf("example = %v", got["example"])
	}
	if got["hint"] == "" {
		t.Error("no hint")
	}
	// The upstream was never called.
	if len(res.ToolTrace) != 1 || res.ToolTrace[0].OK || !strings.HasPrefix(res.ToolTrace[0].Error, "SchemaValidationError") {
		t.Errorf("trace = %+v", res.ToolTrace)
	}
}

// §7.1: unknown tools and servers, with hints that list what exists.
func TestSpecNotFoundErrors(t *testing.T) {
	res := ok(t, real(t), `import { getTool, describeServer } from "@codemode/discovery";
import { ToolNotFoundError, ServerNotFoundError } from "@codemode/errors";
const out = {};
try { await getTool("everything", "get_summ") } catch (e) { out.tool = { ok: e instanceof ToolNotFoundError, hint: e.hint, available: e.available } }
try { await describeServer("everythin") } catch (e) { out.server = { ok: e instanceof ServerNotFoundError, hint: e.hint, available: e.available } }
globalThis.__codemode_result__ = out;`)
	var got struct {
		Tool, Server struct {
			OK        bool
			Hint      string
			Available []string
		}
	}
	json.Unmarshal(res.Result, &got)
	if !got.Tool.OK || !strings.Contains(got.Tool.Hint, "get_sum") || !slices.Contains(got.Tool.Available, "get_sum") {
		t.Errorf("tool = %+v", got.Tool)
	}
	if !got.Server.OK || !strings.Contains(got.Server.Hint, `"everything"`) || !slices.Contains(got.Server.Available, "memory-graph") {
		t.Errorf("server = %+v", got.Server)
	}
}

// §3.3.3/§5: importing an unknown server is an IMPORT_FAILURE whose hint
// names the available servers.
func TestSpecImportFailure(t *testing.T) {
	// TypeScript drops an import nothing uses (it may be a type), so the
	// test uses it.
	res := runCode(t, real(t), `import { x } from "@codemode/servers/github"; x();`)
	d := firstError(t, res)
	if d.Code != diag.ImportFailure || !strings.Contains(d.Hint, "everything") || !strings.Contains(d.Hint, "memory-graph") {
		t.Fatalf("diagnostic = %+v", d)
	}
	res = runCode(t, real(t), `import { nope } from "@codemode/servers/everything"; nope();`)
	if d := firstError(t, res); d.Code != diag.ImportFailure {
		t.Fatalf("missing export: %+v", d)
	}
}

// §7.1 ToolCallError for isError results, with the upstream's text; §10 the
// failure is an ordinary exception and the script goes on.
func TestSpecToolCallErrorDoesNotAbort(t *testing.T) {
	res := ok(t, real(t), `import { read_text_file } from "@codemode/servers/filesystem";
import { ToolCallError } from "@codemode/errors";
let caught;
try { await read_text_file({ path: "/etc/passwd" }) } catch (e) { caught = { ok: e instanceof ToolCallError, msg: e.message, toolName: e.toolName, serverId: e.serverId } }
const hello = await read_text_file({ path: `+jsString(filepath.Join(realDir, "hello.txt"))+` });
globalThis.__codemode_result__ = { caught, hello };`)
	var got struct {
		Caught struct {
			OK                      bool
			Msg, ToolName, ServerID string
		}
		Hello any
	}
	json.Unmarshal(res.Result, &got)
	if !got.Caught.OK || !strings.Contains(strings.ToLower(got.Caught.Msg), "denied") || got.Caught.ToolName != "read_text_file" || got.Caught.ServerID != "filesystem" {
		t.Fatalf("caught = %+v", got.Caught)
	}
	if !strings.Contains(string(res.Result), "hello from the filesystem server") {
		t.Fatalf("second call after the failure: %s", res.Result)
	}
}

// §10: several servers in one script, composed.
func TestSpecMultiServer(t *testing.T) {
	res := ok(t, real(t), `import { get_sum } from "@codemode/servers/everything";
import { sequentialthinking } from "@codemode/servers/sequential-thinking";
import { create_entities, open_nodes } from "@codemode/servers/memory-graph";
const sum = await get_sum({ a: 1, b: 2 });
const thought = await sequentialthinking({ thought: sum, thoughtNumber: 1, totalThoughts: 1, nextThoughtNeeded: false });
await create_entities({ entities: [{ name: "sum-note", entityType: "note", observations: [sum] }] });
const nodes = await open_nodes({ names: ["sum-note"] });
globalThis.__codemode_result__ = { thought, obs: nodes.entities[0].observations[0] };`)
	if !strings.Contains(string(res.Result), "The sum of 1 and 2 is 3") {
		t.Fatalf("result = %s", res.Result)
	}
	servers := map[string]bool{}
	for _, e := range res.ToolTrace {
		servers[e.ServerID] = true
	}
	if len(servers) != 3 {
		t.Fatalf("trace servers = %v", servers)
	}
}

// §3.2.3: an unavailable requested capability gives an eager warning and a
// structured error when used.
func TestSpecRequestedCapabilities(t *testing.T) {
	r := real(t)
	res := r.Run(context.Background(), Request{Code: `import { listServers } from "@codemode/discovery"; globalThis.__codemode_result__ = 1;`,
		RequestedCapabilities: []string{"everything", "github"}})
	var warned bool
	for _, d := range res.Diagnostics {
		if d.Code == diag.CapabilityUnavailable && d.Severity == diag.SeverityWarning && strings.Contains(d.Message, "github") {
			warned = true
		}
		if strings.Contains(d.Message, `"everything"`) {
			t.Errorf("available capability reported: %+v", d)
		}
	}
	if !warned || res.Failed() {
		t.Fatalf("response = %s", dump(res))
	}
	res = r.Run(context.Background(), Request{Code: `import * as g from "@codemode/servers/github"; console.log(g);`, RequestedCapabilities: []string{"github"}})
	if d := firstError(t, res); d.Code != diag.ImportFailure {
		t.Fatalf("using it: %+v", d)
	}
}

// §3.2.4: a request may lower limits; unknown limit keys are ignored.
func TestSpecLimitsRequest(t *testing.T) {
	var req Request
	if err := json.Unmarshal([]byte(`{"code":"for(;;){}","limits":{"timeoutMs":200,"maxCpuPercent":5}}`), &req); err != nil {
		t.Fatalf("unknown limit key rejected: %v", err)
	}
	res := real(t).Run(context.Background(), req)
	d := firstError(t, res)
	if d.Code != diag.SandboxLimit || d.ErrorClass != diag.SandboxLimitError || !strings.Contains(d.Message, "200") {
		t.Fatalf("diagnostic = %+v", d)
	}
}

// §7.1 SandboxLimitError for the tool-call cap, thrown as an exception.
func TestSpecMaxToolCalls(t *testing.T) {
	res := real(t).Run(context.Background(), Request{Limits: config.Limits{MaxToolCalls: 2}, Code: `import { echo } from "@codemode/servers/everything";
import { SandboxLimitError } from "@codemode/errors";
let n = 0, err;
try { for (let i = 0; i < 5; i++) { await echo({ message: "m" }); n++; } } catch (e) { err = { ok: e instanceof SandboxLimitError, limit: e.limit } }
globalThis.__codemode_result__ = { n, err };`})
	got := result[map[string]any](t, res)
	if got["n"] != float64(2) || got["err"].(map[string]any)["ok"] != true || got["err"].(map[string]any)["limit"] != "maxToolCalls" {
		t.Fatalf("result = %s", res.Result)
	}
	var warned bool
	for _, d := range res.Diagnostics {
		warned = warned || d.Code == diag.SandboxLimit
	}
	if !warned {
		t.Fatalf("no SANDBOX_LIMIT diagnostic: %s", dump(res))
	}
}

// §3.3.4: a script over 100 KB is refused with a diagnostic.
func TestSpecScriptTooLarge(t *testing.T) {
	res := runCode(t, real(t), "//"+strings.Repeat("x", MaxScriptBytes))
	if d := firstError(t, res); d.Code != diag.SandboxLimit {
		t.Fatalf("diagnostic = %+v", d)
	}
}

// §11: agent code cannot replace the bindings or tamper with __meta__.
func TestSpecBindingTamper(t *testing.T) {
	res := ok(t, real(t), `import * as e from "@codemode/servers/everything";
import { get_sum, __meta__ } from "@codemode/servers/everything";
const attempts = [];
const tryIt = (name, f) => { try { f(); attempts.push(name + ":allowed") } catch { attempts.push(name + ":refused") } };
tryIt("assign export", () => { e.get_sum = () => "hacked" });
tryIt("define on fn", () => { Object.defineProperty(get_sum, "x", { value: 1 }) });
tryIt("mutate meta", () => { __meta__.tools.push({}) });
tryIt("meta id", () => { __meta__.serverId = "x" });
const s = await get_sum({ a: 1, b: 1 });
globalThis.__codemode_result__ = { attempts, s };`)
	got := string(res.Result)
	if strings.Contains(got, "allowed") || !strings.Contains(got, "The sum of 1 and 1 is 2") {
		t.Fatalf("result = %s", got)
	}
}
