package serve_test

// The tool policy end to end: `codemode serve` driven by the TypeScript SDK
// clients (testdata/policy_client.mjs, which answers elicitations as each
// test says: @modelcontextprotocol/sdk on the 2025 protocol, and
// @modelcontextprotocol/client pinned to 2026-07-28 for input-required
// results) against the real memory and filesystem servers. Every upstream
// runs behind a shell loop that copies what the gateway sends it into a wire log,
// so that "nothing reached the upstream" is checked on the upstream's side
// of the pipe.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/codemode-mcp/codemode/internal/testutil"
)

// wiredUpstream is an upstream whose stdin is copied into a wire log.
type wiredUpstream struct {
	entry map[string]any
	log   string
}

// wired runs bin args behind the copying loop; env is the server's own
// environment.
func wired(t *testing.T, bin string, args []string, env map[string]string) wiredUpstream {
	t.Helper()
	log := filepath.Join(t.TempDir(), "wire.log")
	if err := os.WriteFile(log, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := shellQuote(bin)
	for _, a := range args {
		cmd += " " + shellQuote(a)
	}
	e := map[string]string{"CM_WIRE_LOG": log}
	for k, v := range env {
		e[k] = v
	}
	// Each line is appended to the log before it is passed on, so that a
	// message the server received is in the log by then (tee would write
	// the server's copy first).
	loop := `while IFS= read -r line; do printf '%s\n' "$line" >> "$CM_WIRE_LOG"; printf '%s\n' "$line"; done`
	return wiredUpstream{log: log, entry: map[string]any{"command": "/bin/sh",
		"args": []string{"-c", loop + ` | exec ` + cmd}, "env": e}}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// with returns the entry with extra keys (the policy).
func (w wiredUpstream) with(kv map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range w.entry {
		out[k] = v
	}
	for k, v := range kv {
		out[k] = v
	}
	return out
}

// toolCalls returns the names of the tools the upstream was asked to call.
func (w wiredUpstream) toolCalls(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(w.log)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range bytes.Split(b, []byte("\n")) {
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &msg) == nil && msg.Method == "tools/call" {
			out = append(out, msg.Params.Name)
		}
	}
	return out
}

func (w wiredUpstream) count(t *testing.T, tool string) int {
	n := 0
	for _, c := range w.toolCalls(t) {
		if c == tool {
			n++
		}
	}
	return n
}

// memoryUpstream is the memory server with its graph in file, wired.
func memoryUpstream(t *testing.T, file string) wiredUpstream {
	return wired(t, testutil.NPMBin(t, "mcp-server-memory"), nil, map[string]string{"MEMORY_FILE_PATH": file})
}

// filesystemUpstream is the filesystem server allowed in dir, wired.
func filesystemUpstream(t *testing.T, dir string) wiredUpstream {
	return wired(t, testutil.NPMBin(t, "mcp-server-filesystem"), []string{dir}, nil)
}

// seedGraph writes a memory graph with the entities named.
func seedGraph(t *testing.T, names ...string) (file string, content []byte) {
	t.Helper()
	file = filepath.Join(t.TempDir(), "memory.jsonl")
	var b bytes.Buffer
	for _, n := range names {
		fmt.Fprintf(&b, `{"type":"entity","name":%q,"entityType":"thing","observations":["seeded"]}`+"\n", n)
	}
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return file, b.Bytes()
}

func graphEntities(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, line := range bytes.Split(b, []byte("\n")) {
		var e struct{ Type, Name string }
		if json.Unmarshal(line, &e) == nil && e.Type == "entity" {
			out = append(out, e.Name)
		}
	}
	return out
}

type elicitationSeen struct {
	Message string          `json:"message"`
	Calls   int             `json:"calls"`
	Meta    json.RawMessage `json:"meta"`
}

type policyOutput struct {
	Results      []json.RawMessage `json:"results"`
	Elicitations []elicitationSeen `json:"elicitations"`
	Protocol     string            `json:"protocol"`
	Fatal        string            `json:"fatal"`
}

// policyPlan is policy_client.mjs's plan.
type policyPlan struct {
	SDK         string         `json:"sdk"`
	Era         string         `json:"era,omitempty"`
	Elicitation bool           `json:"elicitation"`
	Answers     []string       `json:"answers,omitempty"`
	Connect     map[string]any `json:"connect"`
	Steps       []step         `json:"steps"`
}

func runPolicyClient(t *testing.T, plan policyPlan) policyOutput {
	t.Helper()
	b, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	p := startProc(t, baseEnv("CODEMODE_TEST_NPM="+npmDir), t.TempDir(), nodeBin(t), testdataFile("policy_client.mjs"), string(b))
	code, err := p.wait()
	if err != nil {
		t.Fatalf("policy client: %v", err)
	}
	var out policyOutput
	if jerr := json.Unmarshal(bytes.TrimSpace([]byte(p.stdout.String())), &out); jerr != nil || code != 0 || out.Fatal != "" {
		t.Fatalf("policy client failed (exit %d, %v): %s\nstdout: %s\nstderr:\n%s", code, jerr, out.Fatal,
			tail(p.stdout.String(), 2000), tail(p.stderr.String(), 6000))
	}
	if len(out.Results) != len(plan.Steps) {
		t.Fatalf("%d results for %d steps", len(out.Results), len(plan.Steps))
	}
	return out
}

// traceApprovals lists toolName=approval from a §3.3 response's trace.
func traceApprovals(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	res := decode[toolResult](t, raw)
	var r struct {
		ToolTrace []struct{ ToolName, Approval string } `json:"toolTrace"`
	}
	json.Unmarshal(res.StructuredContent, &r)
	var out []string
	for _, e := range r.ToolTrace {
		out = append(out, e.ToolName+"="+e.Approval)
	}
	return out
}

// An approval accepted through elicitation lets the write through exactly
// once; declined, the call throws ApprovalDeniedError and the graph is
// unchanged.
func TestPolicyE2EApprovalGrantedAndDenied(t *testing.T) {
	t.Parallel()
	file, seeded := seedGraph(t, "keep")
	mem := memoryUpstream(t, file)
	cfg := writeConfig(t, upstreams{"memory": mem.entry}, map[string]any{"approval": "writes"})
	create := `import { create_entities, read_graph } from "@codemode/servers/memory";
const before = (await read_graph({})).entities.length;
await create_entities({ entities: [{ name: "added", entityType: "thing", observations: [] }] });
globalThis.__codemode_result__ = { before, after: (await read_graph({})).entities.length };`
	denied := `import { delete_entities } from "@codemode/servers/memory";
import { ApprovalDeniedError } from "@codemode/errors";
try { await delete_entities({ entityNames: ["keep"] }); globalThis.__codemode_result__ = "deleted"; }
catch (e) { globalThis.__codemode_result__ = { denied: e instanceof ApprovalDeniedError, name: e.name, hint: e.hint }; }`

	// Declined first: nothing changes.
	out := runPolicyClient(t, policyPlan{SDK: "v1", Elicitation: true, Answers: []string{"decline"}, Connect: stdioConn(t, cfg),
		Steps: []step{runStep(denied)}})
	res := okRun(t, out.Results[0])
	var r struct {
		Denied bool   `json:"denied"`
		Name   string `json:"name"`
		Hint   string `json:"hint"`
	}
	json.Unmarshal([]byte(res), &r)
	if !r.Denied || r.Name != "ApprovalDeniedError" || r.Hint == "" {
		t.Errorf("declined: %s", res)
	}
	if len(out.Elicitations) != 1 || out.Elicitations[0].Calls != 1 || !strings.Contains(out.Elicitations[0].Message, "memory/delete_entities") ||
		!strings.Contains(out.Elicitations[0].Message, `"keep"`) {
		t.Errorf("elicitations: %+v", out.Elicitations)
	}
	if got, _ := os.ReadFile(file); !bytes.Equal(got, seeded) {
		t.Errorf("the graph changed after a declined call:\n%s", got)
	}
	if n := mem.count(t, "delete_entities"); n != 0 {
		t.Errorf("the memory server received delete_entities %d times", n)
	}
	if got := strings.Join(traceApprovals(t, out.Results[0]), " "); got != "delete_entities=denied" {
		t.Errorf("trace: %q", got)
	}

	// Accepted: the write goes through exactly once.
	out = runPolicyClient(t, policyPlan{SDK: "v1", Elicitation: true, Answers: []string{"accept"}, Connect: stdioConn(t, cfg),
		Steps: []step{runStep(create)}})
	if res := okRun(t, out.Results[0]); !jsonEq(t, res, `{"before": 1, "after": 2}`) {
		t.Errorf("accepted: %s", res)
	}
	if n := mem.count(t, "create_entities"); n != 1 {
		t.Errorf("the memory server received create_entities %d times, want exactly once", n)
	}
	if got := strings.Join(graphEntities(t, file), ","); got != "keep,added" {
		t.Errorf("graph: %s", got)
	}
	if got := strings.Join(traceApprovals(t, out.Results[0]), " "); got != "read_graph=auto create_entities=granted read_graph=auto" {
		t.Errorf("trace: %q", got)
	}
	if len(out.Elicitations) != 1 {
		t.Errorf("%d elicitations", len(out.Elicitations))
	}
}

// Five writes in one Promise.all make exactly one elicitation listing five
// calls; once accepted, each file is written once.
func TestPolicyE2EBatchOfFive(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fs := filesystemUpstream(t, dir)
	cfg := writeConfig(t, upstreams{"fs": fs.entry}, map[string]any{"approval": "destructive"})
	code := fmt.Sprintf(`import { write_file } from "@codemode/servers/fs";
const names = ["a", "b", "c", "d", "e"];
await Promise.all(names.map((n) => write_file({ path: %q + "/" + n + ".txt", content: "file " + n })));
globalThis.__codemode_result__ = names.length;`, dir)
	out := runPolicyClient(t, policyPlan{SDK: "v1", Elicitation: true, Answers: []string{"accept"}, Connect: stdioConn(t, cfg),
		Steps: []step{runStep(code)}})
	okRun(t, out.Results[0])
	if len(out.Elicitations) != 1 || out.Elicitations[0].Calls != 5 || !strings.Contains(out.Elicitations[0].Message, "5 tool calls") {
		t.Fatalf("elicitations: %+v", out.Elicitations)
	}
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		if !strings.Contains(out.Elicitations[0].Message, n+".txt") {
			t.Errorf("the request does not list %s.txt: %s", n, out.Elicitations[0].Message)
		}
		if b, err := os.ReadFile(filepath.Join(dir, n+".txt")); err != nil || string(b) != "file "+n {
			t.Errorf("%s.txt: %q %v", n, b, err)
		}
	}
	if n := fs.count(t, "write_file"); n != 5 {
		t.Errorf("the filesystem server received %d write_file calls, want 5", n)
	}
}

// A client without elicitation gets APPROVAL_REQUIRED, and nothing is
// written.
func TestPolicyE2ENoElicitation(t *testing.T) {
	t.Parallel()
	file, seeded := seedGraph(t, "keep")
	mem := memoryUpstream(t, file)
	cfg := writeConfig(t, upstreams{"memory": mem.entry}, map[string]any{"approval": "writes"})
	out := runPolicyClient(t, policyPlan{SDK: "v1", Elicitation: false, Connect: stdioConn(t, cfg), Steps: []step{runStep(
		`import { create_entities, read_graph } from "@codemode/servers/memory";
await read_graph({});
await create_entities({ entities: [{ name: "nope", entityType: "thing", observations: [] }] });
globalThis.__codemode_result__ = "written";`)}})
	_, resp := asRun(t, out.Results[0])
	d := resp.errorDiag()
	if d == nil || d.Code != "APPROVAL_REQUIRED" || !strings.Contains(d.Message, "memory/create_entities") || !strings.Contains(d.Message, `"nope"`) {
		t.Fatalf("%+v", resp.diags())
	}
	if got, _ := os.ReadFile(file); !bytes.Equal(got, seeded) {
		t.Errorf("the graph changed:\n%s", got)
	}
	if got := mem.toolCalls(t); len(got) != 1 || got[0] != "read_graph" {
		t.Errorf("the memory server received %q, want only read_graph", got)
	}
}

// The 2026-07-28 protocol: the TypeScript client (v2) is answered with an
// input-required result, asks its elicitation handler, and retries with the
// answer and the requestState; over stdio and over stateless HTTP, where
// nothing survives between the two calls but what the client carries.
func TestPolicyE2EInputRequired(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"stdio", "stateless http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			file, _ := seedGraph(t, "keep")
			mem := memoryUpstream(t, file)
			cfg := writeConfig(t, upstreams{"memory": mem.entry}, map[string]any{"approval": "writes"})
			conn := stdioConn(t, cfg)
			if transport != "stdio" {
				conn = httpConn(startHTTP(t, cfg, "--stateless").url, nil)
			}
			out := runPolicyClient(t, policyPlan{SDK: "v2", Elicitation: true, Answers: []string{"accept", "decline"}, Connect: conn, Steps: []step{
				runStep(`import { create_entities, read_graph } from "@codemode/servers/memory";
const before = (await read_graph({})).entities.map((e) => e.name);
await create_entities({ entities: [{ name: "mrtr", entityType: "thing", observations: [] }] });
globalThis.__codemode_result__ = { before, after: (await read_graph({})).entities.map((e) => e.name) };`),
				runStep(`import { delete_entities } from "@codemode/servers/memory";
try { await delete_entities({ entityNames: ["keep"] }); globalThis.__codemode_result__ = "deleted"; }
catch (e) { globalThis.__codemode_result__ = e.name; }`),
			}})
			if out.Protocol != "2026-07-28" {
				t.Errorf("negotiated protocol %q", out.Protocol)
			}
			if res := okRun(t, out.Results[0]); !jsonEq(t, res, `{"before": ["keep"], "after": ["keep", "mrtr"]}`) {
				t.Errorf("accepted: %s", res)
			}
			if res := okRun(t, out.Results[1]); res != `"ApprovalDeniedError"` {
				t.Errorf("declined: %s", res)
			}
			if len(out.Elicitations) != 2 || out.Elicitations[0].Calls != 1 || out.Elicitations[1].Calls != 1 {
				t.Errorf("elicitations: %+v", out.Elicitations)
			}
			if n := mem.count(t, "create_entities"); n != 1 {
				t.Errorf("create_entities reached the server %d times, want once", n)
			}
			if n := mem.count(t, "delete_entities"); n != 0 {
				t.Errorf("a declined delete_entities reached the server %d times", n)
			}
			// The first read ran once, though the script ran again after
			// the answer: the retry answered it from the requestState.
			if n := mem.count(t, "read_graph"); n != 2 {
				t.Errorf("read_graph reached the server %d times, want 2 (%q)", n, mem.toolCalls(t))
			}
			if got := strings.Join(graphEntities(t, file), ","); got != "keep,mrtr" {
				t.Errorf("graph: %s", got)
			}
		})
	}
}

// A dry run runs the reads, lists the writes in plan with their
// arguments, returns null for them, and writes nothing.
func TestPolicyE2EDryRun(t *testing.T) {
	t.Parallel()
	file, seeded := seedGraph(t, "keep")
	dir := t.TempDir()
	mem, fs := memoryUpstream(t, file), filesystemUpstream(t, dir)
	// No approval mode: a dry run is a preview whatever the policy.
	cfg := writeConfig(t, upstreams{"memory": mem.entry, "fs": fs.entry}, nil)
	code := fmt.Sprintf(`import { read_graph, create_entities, delete_entities } from "@codemode/servers/memory";
import { write_file, list_directory } from "@codemode/servers/fs";
const graph = await read_graph({});
const c = await create_entities({ entities: [{ name: "planned", entityType: "thing", observations: [] }] });
const d = await delete_entities({ entityNames: graph.entities.map((e) => e.name) });
const w = await write_file({ path: %q, content: "secret plan" });
const l = await list_directory({ path: %q });
globalThis.__codemode_result__ = { entities: graph.entities.length, c, d, w, listed: typeof l };`, filepath.Join(dir, "plan.txt"), dir)
	out := runPolicyClient(t, policyPlan{SDK: "v1", Elicitation: true, Connect: stdioConn(t, cfg),
		Steps: []step{callStep("codemode_run", map[string]any{"code": code, "dryRun": true})}})
	res := decode[toolResult](t, out.Results[0])
	if r := okRun(t, out.Results[0]); !jsonEq(t, r, `{"entities": 1, "c": null, "d": null, "w": null, "listed": "object"}`) {
		t.Errorf("result: %s", r)
	}
	var r struct {
		Plan []struct {
			ServerID  string          `json:"serverId"`
			ToolName  string          `json:"toolName"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"plan"`
	}
	json.Unmarshal(res.StructuredContent, &r)
	var plan []string
	for _, p := range r.Plan {
		plan = append(plan, p.ServerID+"/"+p.ToolName+" "+string(p.Arguments))
	}
	want := []string{
		`memory/create_entities {"entities":[{"name":"planned","entityType":"thing","observations":[]}]}`,
		`memory/delete_entities {"entityNames":["keep"]}`,
		fmt.Sprintf(`fs/write_file {"path":%q,"content":"secret plan"}`, filepath.Join(dir, "plan.txt")),
	}
	if strings.Join(plan, "\n") != strings.Join(want, "\n") {
		t.Errorf("plan:\n%s\nwant:\n%s", strings.Join(plan, "\n"), strings.Join(want, "\n"))
	}
	if got, _ := os.ReadFile(file); !bytes.Equal(got, seeded) {
		t.Errorf("the graph changed:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "plan.txt")); !os.IsNotExist(err) {
		t.Errorf("the dry run wrote a file (%v)", err)
	}
	if got := strings.Join(append(mem.toolCalls(t), fs.toolCalls(t)...), ","); got != "read_graph,list_directory" {
		t.Errorf("the upstreams received %s", got)
	}
	if len(out.Elicitations) != 0 {
		t.Errorf("a dry run asked the user %d times", len(out.Elicitations))
	}
	if got := strings.Join(traceApprovals(t, out.Results[0]), " "); got != "read_graph=auto create_entities=dry-run delete_entities=dry-run write_file=dry-run list_directory=auto" {
		t.Errorf("trace: %q", got)
	}
}

// Entries pasted from Cline (autoApprove, timeout in seconds, the legacy
// transportType) and Roo Code (alwaysAllow, disabledTools, watchPaths)
// load, and mean what they meant there: the auto-approved tools run
// without asking, Roo's disabled tools do not exist.
func TestPolicyE2EClineAndRooConfigs(t *testing.T) {
	t.Parallel()
	file, _ := seedGraph(t)
	dir := t.TempDir()
	mem, fs := memoryUpstream(t, file), filesystemUpstream(t, dir)
	cline := mem.with(map[string]any{"disabled": false, "timeout": 60, "transportType": "stdio", "autoApprove": []string{"create_entities", "read_graph"}})
	roo := fs.with(map[string]any{"disabled": false, "timeout": 60, "alwaysAllow": []string{"write_file", "list_*"}, "disabledTools": []string{"move_file"},
		"watchPaths": []string{dir}})
	cfg := writeConfig(t, upstreams{"memory": cline, "fs": roo}, map[string]any{"approval": "all"})
	code := fmt.Sprintf(`import * as fs from "@codemode/servers/fs";
import { create_entities, read_graph } from "@codemode/servers/memory";
await create_entities({ entities: [{ name: "cline", entityType: "thing", observations: [] }] });
await fs.write_file({ path: %q, content: "roo" });
globalThis.__codemode_result__ = { graph: (await read_graph({})).entities.length, listed: JSON.stringify(await fs.list_directory({ path: %q })).includes("roo.txt"), move: typeof fs.move_file };`,
		filepath.Join(dir, "roo.txt"), dir)
	out := runPolicyClient(t, policyPlan{SDK: "v1", Elicitation: false, Connect: stdioConn(t, cfg), Steps: []step{runStep(code)}})
	if res := okRun(t, out.Results[0]); !jsonEq(t, res, `{"graph": 1, "listed": true, "move": "undefined"}`) {
		t.Errorf("result: %s", res)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "roo.txt")); string(b) != "roo" {
		t.Errorf("roo.txt = %q", b)
	}
}

// The attack suite: scripts that try to reach a denied tool
// (memory.delete_entities, fs.write_file, and move_file by Roo's key) or an
// unapproved one (memory.create_entities, which the user declines) some
// other way than calling it. None may reach the upstream: the wire logs
// must show no call of those tools, and no script may report success.
func TestPolicyE2EAttackSuite(t *testing.T) {
	t.Parallel()
	file, seeded := seedGraph(t, "keep")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "seed.txt"), []byte("seed"), 0o644)
	mem, fs := memoryUpstream(t, file), filesystemUpstream(t, dir)
	cfg := writeConfig(t, upstreams{
		"memory": mem.with(map[string]any{"denyTools": []string{"delete_*"}, "autoApprove": []string{"read_graph"}}),
		"fs":     fs.with(map[string]any{"denyTools": []string{"write_file"}, "disabledTools": []string{"move_file"}}),
	}, map[string]any{"approval": "writes", "surfaces": []string{"run", "search-execute", "files", "emceepee"}})
	target := filepath.Join(dir, "pwned.txt")
	entity := `{ entities: [{ name: "pwned", entityType: "thing", observations: [] }] }`
	del := `{ entityNames: ["keep"] }`
	wf := fmt.Sprintf(`{ path: %q, content: "pwned" }`, target)
	// Each script returns (or sets) "REACHED" only if a call it made to a
	// forbidden tool returned normally.
	run := func(code string) step { return runStep(code) }
	exec := func(code string) step { return callStep("execute", map[string]any{"code": code}) }
	body := func(code string) step { return callStep("executeToolCode", map[string]any{"code": code}) }
	mcpx := func(code string) step { return callStep("codemode_execute", map[string]any{"code": code}) }
	attacks := []struct {
		name string
		step step
	}{
		{"static import of a denied tool", run(`import { delete_entities } from "@codemode/servers/memory"; await delete_entities(` + del + `); globalThis.__codemode_result__ = "REACHED";`)},
		{"namespace member of a denied tool", run(`import * as m from "@codemode/servers/memory"; await m["delete_entities"](` + del + `); globalThis.__codemode_result__ = "REACHED";`)},
		{"dynamic import, computed names", run(`const m = await import("@codemode/servers/" + ["mem", "ory"].join("")); await m["delete" + "_entities"](` + del + `); globalThis.__codemode_result__ = "REACHED";`)},
		{"crafted specifiers", run(`const out = [];
for (const s of ["@codemode/servers/memory/delete_entities", "@codemode/servers/memory?tool=delete_entities", "@codemode/servers/memory#delete_entities",
  "@codemode/servers/MEMORY", "@codemode/servers/memory\u0000", "@codemode/servers/../servers/memory", "@codemode/internal", "@codemode/servers/fs/write_file"]) {
  try { const m = await import(s); for (const k of ["delete_entities", "write_file", "call", "bindTools"]) if (typeof m[k] === "function") { await m[k](` + del + `); out.push("REACHED"); } } catch (e) { out.push(e.name); }
}
globalThis.__codemode_result__ = out.includes("REACHED") ? "REACHED" : out;`)},
		{"server global, denied tool", exec(`async () => { await memory.delete_entities(` + del + `); return "REACHED"; }`)},
		{"server global, case and separator variants", exec(`async () => { for (const n of ["Delete_Entities", "DELETE_ENTITIES", "delete-entities", "deleteEntities", "delete_entities ", " delete_entities", "delete_entities\u0000"]) { try { await memory[n](` + del + `); return "REACHED"; } catch (e) {} } return "refused"; }`)},
		{"unicode look-alikes", exec(`async () => { for (const n of ["delete_entіties", "ｄelete_entities", "delete\u200b_entities", "write_fіle"]) { for (const s of [memory, fs]) { try { await s[n](` + del + `); return "REACHED"; } catch (e) {} } } return "refused"; }`)},
		{"mcp.callTool, denied tool and variants", mcpx(`for (const [s, n] of [["memory", "delete_entities"], ["memory", "DELETE_ENTITIES"], ["memory", "delete-entities"], ["memory", "delete_entіties"], ["memory", "delete_entities\u0000x"], ["memory\u0000", "delete_entities"], ["MEMORY", "delete_entities"], ["fs", "write_file"], ["fs", "move_file"], ["fs", "Write_File"]]) {
  try { await mcp.callTool(s, n, ` + del + `); return "REACHED"; } catch (e) {}
} return "refused";`)},
		{"mcp.callTool of an unapproved tool", mcpx(`const r = await mcp.callTool("memory", "create_entities", ` + entity + `); return r && !r.isError ? "REACHED" : r;`)},
		{"stored reference and Reflect.apply of a denied tool", exec(`async () => { const f = memory.delete_entities; const keep = [f, memory["delete_entities"]]; for (const g of keep) { for (const go of [() => g(` + del + `), () => Reflect.apply(g, memory, [` + del + `]), () => g.call(null, ` + del + `)]) { try { await go(); return "REACHED"; } catch (e) { if (e.name !== "ToolNotFoundError") return e.name; } } } return "refused"; }`)},
		{"stored reference, aliasing", exec(`async () => { const f = memory.create_entities; const g = f; const h = { go: g }; await h.go(` + entity + `); return "REACHED"; }`)},
		{"Reflect.apply and call/bind", exec(`async () => { for (const go of [() => Reflect.apply(memory.create_entities, null, [` + entity + `]), () => memory.create_entities.call(memory, ` + entity + `), () => memory.create_entities.bind(null)(` + entity + `)]) { try { await go(); return "REACHED"; } catch (e) {} } return "refused"; }`)},
		{"Proxy around a server object", exec(`async () => { const p = new Proxy(memory, { get: (t, k) => t["delete" + "_entities"] ?? t["create_entities"] }); await p.anything(` + entity + `); return "REACHED"; }`)},
		{"prototype and property tricks", exec(`async () => {
  const tries = [() => Object.getPrototypeOf(memory), () => memory.__proto__, () => memory.constructor, () => Object.getOwnPropertyDescriptor(memory, "delete_entities"),
    () => globalThis.__cm_call, () => globalThis.__cm_handoff, () => Object.getOwnPropertyNames(globalThis).filter((n) => n.startsWith("__cm"))];
  for (const t of tries) { const v = t(); if (typeof v === "function") { try { await v("tool\u0000memory\u0000delete_entities", JSON.stringify(` + del + `)); return "REACHED"; } catch (e) {} } }
  Object.prototype.delete_entities = memory.read_graph;
  try { await memory.delete_entities(` + del + `); } catch (e) {}
  return "refused"; }`)},
		{"__meta__ and discovery cannot name it", run(`import { __meta__ } from "@codemode/servers/memory";
import { getTool, searchTools, listTools } from "@codemode/discovery";
try { __meta__.tools.push({ toolName: "delete_entities", exportName: "delete_entities" }); } catch (e) {}
const found = [];
try { await getTool("memory", "delete_entities"); found.push("getTool"); } catch (e) {}
if ((await searchTools("delete entities")).results.some((r) => r.toolName.startsWith("delete"))) found.push("search");
if ((await listTools("memory", { detail: "name" })).some((t) => t.toolName.startsWith("delete"))) found.push("list");
if (__meta__.tools.some((t) => t.toolName.startsWith("delete"))) found.push("meta");
globalThis.__codemode_result__ = found.length ? "REACHED" : "hidden";`)},
		{"files surface: denied write_file and Roo-disabled move_file", body(`for (const go of [() => fs.write_file(` + wf + `), () => fs.move_file({ source: "seed.txt", destination: "moved.txt" }), () => fs["write_file"](` + wf + `)]) { try { await go(); return "REACHED"; } catch (e) {} } return "refused";`)},
		{"search tool is read-only", callStep("search", map[string]any{"code": `async (catalog) => { const m = await import("@codemode/servers/memory"); await m.create_entities(` + entity + `); return "REACHED"; }`})},
		{"a declined call retried in a loop", exec(`async () => { for (let i = 0; i < 3; i++) { try { await memory.create_entities(` + entity + `); return "REACHED"; } catch (e) { if (e.name !== "ApprovalDeniedError") throw e; } } return "refused"; }`)},
		{"deferred through a timer and a then chain", exec(`async () => await new Promise((resolve) => setTimeout(() => Promise.resolve().then(() => memory.create_entities(` + entity + `)).then(() => resolve("REACHED"), (e) => resolve(e.name)), 1))`)},
		{"unapproved call hidden in a batch of reads", exec(`async () => { const r = await Promise.allSettled([memory.read_graph({}), memory.create_entities(` + entity + `), memory.read_graph({})]); return r[1].status === "fulfilled" ? "REACHED" : r.map((x) => x.status); }`)},
	}
	if len(attacks) < 15 {
		t.Fatalf("the suite has %d attacks; the issue asks for at least 15", len(attacks))
	}
	steps := make([]step, len(attacks))
	for i, a := range attacks {
		steps[i] = a.step
	}
	out := runPolicyClient(t, policyPlan{SDK: "v1", Elicitation: true, Answers: []string{"decline"}, Connect: stdioConn(t, cfg), Steps: steps})
	reached := regexp.MustCompile(`"REACHED"`)
	for i, a := range attacks {
		res := decode[toolResult](t, out.Results[i])
		if testing.Verbose() {
			t.Logf("%s: %s", a.name, tail(string(res.StructuredContent), 600))
		}
		if res.Error != "" {
			t.Errorf("%s: protocol error %s", a.name, res.Error)
			continue
		}
		if reached.Match(res.StructuredContent) {
			t.Errorf("%s: the script reached a forbidden tool: %s", a.name, tail(string(res.StructuredContent), 1500))
		}
	}
	for _, forbidden := range []string{"delete_entities", "create_entities"} {
		if n := mem.count(t, forbidden); n != 0 {
			t.Errorf("the memory server received %s %d times", forbidden, n)
		}
	}
	for _, forbidden := range []string{"write_file", "move_file"} {
		if n := fs.count(t, forbidden); n != 0 {
			t.Errorf("the filesystem server received %s %d times", forbidden, n)
		}
	}
	if got, _ := os.ReadFile(file); !bytes.Equal(got, seeded) {
		t.Errorf("the graph changed:\n%s", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the directory changed: %v", entries)
	}
	// The unapproved attempts were put to the user and declined.
	if len(out.Elicitations) == 0 {
		t.Errorf("no elicitation: the unapproved attempts were never asked about")
	}
}
