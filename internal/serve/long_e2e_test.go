package serve_test

// End-to-end tests of long runs (issue #15) through the real binary, the
// TypeScript SDK client (testdata/client.mjs) and the MCP Inspector CLI,
// against server-everything and testdata/long.mjs (what server-everything
// cannot do on demand: block until released, count cancellations).

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
)

// tsPlan runs client.mjs with a plan that may set the client's
// capabilities and answers (plan.client).
func tsPlan(t *testing.T, conn map[string]any, client map[string]any, steps ...step) *tsClient {
	t.Helper()
	plan, err := json.Marshal(map[string]any{"connect": conn, "client": client, "steps": steps})
	if err != nil {
		t.Fatal(err)
	}
	return &tsClient{startProc(t, baseEnv(), t.TempDir(), nodeBin(t), testdataFile("client.mjs"), string(plan))}
}

type tsLongOutput struct {
	Results []json.RawMessage `json:"results"`
	Asked   []string          `json:"asked"`
	Fatal   string            `json:"fatal"`
}

func (c *tsClient) longOutput(t *testing.T) tsLongOutput {
	t.Helper()
	code, err := c.wait()
	if err != nil {
		t.Fatalf("TypeScript client: %v", err)
	}
	var out tsLongOutput
	if jerr := json.Unmarshal([]byte(strings.TrimSpace(c.stdout.String())), &out); jerr != nil || code != 0 || out.Fatal != "" {
		t.Fatalf("TypeScript client failed (exit %d, %v): %s\nstdout: %s\nstderr:\n%s", code, jerr, out.Fatal,
			tail(c.stdout.String(), 2000), tail(c.stderr.String(), 4000))
	}
	return out
}

// dataDirConn is stdioConn with the gateway's data store in a directory of
// the test's own.
func dataDirConn(t *testing.T, cfg string) map[string]any {
	c := stdioConn(t, cfg)
	c["env"] = map[string]string{"CODEMODE_DATA_DIR": t.TempDir()}
	return c
}

type progressed struct {
	Error    string `json:"error"`
	Progress []struct {
		Progress float64 `json:"progress"`
		Message  string  `json:"message"`
	} `json:"progress"`
}

// Through the TypeScript SDK client against server-everything: the long-
// running operation's progress reaches the client (with the inner call's
// start and end and the script's console lines); its elicitation and
// sampling tools reach the client's handlers, named, and their answers go
// back; its roots tool gets the client's roots; its task-based research
// tool is called from a script.
func TestLongRunsWithEverything(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, upstreams{"everything": everythingEntry(t)}, nil)
	client := map[string]any{
		"elicit": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada Lovelace", "check": true}},
		"sample": map[string]any{"text": "a scripted answer"},
		"roots":  []map[string]any{{"uri": "file:///srv/project", "name": "project"}},
	}
	c := tsPlan(t, dataDirConn(t, cfg), client,
		step{"op": "call", "name": "codemode_run", "progress": true, "arguments": map[string]any{"code": `import { trigger_long_running_operation } from "@codemode/servers/everything";
console.log("starting");
globalThis.__codemode_result__ = await trigger_long_running_operation({ duration: 1, steps: 3 });`}},
		runStep(`import * as ev from "@codemode/servers/everything";
globalThis.__codemode_result__ = {
  elicit: await ev.trigger_elicitation_request({}),
  sample: await ev.trigger_sampling_request({ prompt: "hello", maxTokens: 20 }),
  roots: await ev.get_roots_list({}),
  research: await ev.simulate_research_query({ topic: "tide pools" }),
};`),
	)
	out := c.longOutput(t)

	var p progressed
	if err := json.Unmarshal(out.Results[0], &p); err != nil || p.Error != "" {
		t.Fatalf("long-running operation: %s", out.Results[0])
	}
	var msgs []string
	last := 0.0
	for _, n := range p.Progress {
		msgs = append(msgs, n.Message)
		if n.Progress <= last {
			t.Errorf("progress does not grow: %v after %v", n.Progress, last)
		}
		last = n.Progress
	}
	joined := strings.Join(msgs, "\n")
	for _, want := range []string{"console.log: starting", "everything/trigger-long-running-operation started", "everything: ", "everything/trigger-long-running-operation done"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no progress notification with %q:\n%s\n%.2000s", want, joined, out.Results[0])
		}
	}

	resp := asRunTS(t, out.Results[1])
	var got struct{ Elicit, Sample, Roots, Research json.RawMessage }
	if err := json.Unmarshal(resp.Result, &got); err != nil || resp.errorDiag() != nil {
		t.Fatalf("%s %+v", resp.Result, resp.diags())
	}
	if !strings.Contains(string(got.Elicit), "Ada Lovelace") || !strings.Contains(string(got.Sample), "a scripted answer") ||
		!strings.Contains(string(got.Roots), "file:///srv/project") || !strings.Contains(string(got.Research), "Research Report: tide pools") {
		t.Errorf("answers: %s", resp.Result)
	}
	if len(out.Asked) < 2 || !strings.HasPrefix(out.Asked[0], "[everything] ") {
		t.Errorf("the client was asked %q", out.Asked)
	}
}

// asRunTS decodes a codemode_run result as client.mjs reports it.
func asRunTS(t *testing.T, raw json.RawMessage) runResponse {
	t.Helper()
	var r toolResult
	if err := json.Unmarshal(raw, &r); err != nil || r.Error != "" || len(r.Content) == 0 {
		t.Fatalf("call: %s", raw)
	}
	var resp runResponse
	if err := json.Unmarshal([]byte(r.Content[0].Text), &resp); err != nil {
		t.Fatalf("response %.500s: %v", r.Content[0].Text, err)
	}
	return resp
}

const (
	blockCode   = `import { block } from "@codemode/servers/long"; globalThis.__codemode_result__ = await block({});`
	releaseCode = `import { release } from "@codemode/servers/long"; globalThis.__codemode_result__ = await release({});`
)

// A run started as a task outlives a client whose requests time out after
// 5 s: a plain call blocked as long times out meanwhile, the task goes on,
// and once the test releases the run, its result comes with the stream and
// again with tasks/result. Clock-free: the run waits for the release, which
// comes after the timeout, an event.
func TestTaskSurvivesTheClientsTimeout(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, upstreams{"long": scriptEntry(t, "long.mjs")}, nil)
	c := tsPlan(t, dataDirConn(t, cfg), nil,
		step{"op": "taskStart", "name": "codemode_run", "arguments": map[string]any{"code": blockCode, "limits": map[string]any{"timeoutMs": 300000}}, "timeoutMs": 5000},
		step{"op": "call", "name": "codemode_run", "arguments": map[string]any{"code": blockCode}, "timeoutMs": 5000},
		runStep(releaseCode),
		step{"op": "taskWait"},
		step{"op": "taskResult", "taskId": "$task", "timeoutMs": 5000},
		step{"op": "taskGet", "taskId": "$task"},
	)
	out := c.longOutput(t)
	var created struct{ TaskID, Status string }
	json.Unmarshal(out.Results[0], &created)
	if created.TaskID == "" || created.Status != "working" {
		t.Fatalf("taskStart: %s", out.Results[0])
	}
	var plain toolResult
	json.Unmarshal(out.Results[1], &plain)
	if !strings.Contains(strings.ToLower(plain.Error), "timed out") {
		t.Fatalf("the plain call did not time out: %s", out.Results[1])
	}
	var streamed struct {
		Types  []string
		Result json.RawMessage
		Error  string
	}
	json.Unmarshal(out.Results[3], &streamed)
	if streamed.Error != "" || len(streamed.Result) == 0 {
		t.Fatalf("the task's stream: %s", out.Results[3])
	}
	for _, raw := range []json.RawMessage{streamed.Result, out.Results[4]} {
		if resp := asRunTS(t, raw); string(resp.Result) != `"released"` || resp.errorDiag() != nil {
			t.Errorf("task result: %s %+v", resp.Result, resp.diags())
		}
	}
	var final struct{ Status string }
	json.Unmarshal(out.Results[5], &final)
	if final.Status != "completed" {
		t.Errorf("tasks/get after the end: %s", out.Results[5])
	}
}

var blockedLine = regexp.MustCompile(`@@BLOCKED`)

// A cancelled task cancels the run and its upstream calls.
func TestCancelledTaskCancelsItsCalls(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, upstreams{"long": scriptEntry(t, "long.mjs")}, nil)
	c := tsPlan(t, dataDirConn(t, cfg), nil,
		step{"op": "taskStart", "name": "codemode_run", "arguments": map[string]any{"code": blockCode}},
		step{"op": "waitStdin"},
		step{"op": "taskCancel", "taskId": "$task"},
		runStep(`import { cancelled } from "@codemode/servers/long"; globalThis.__codemode_result__ = await cancelled({ atLeast: 1 });`),
		step{"op": "taskGet", "taskId": "$task"},
	)
	if _, err := c.waitLine(blockedLine); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(c.stdin)
	out := c.longOutput(t)
	var cancelled struct{ Status string }
	json.Unmarshal(out.Results[2], &cancelled)
	if cancelled.Status != "cancelled" {
		t.Errorf("tasks/cancel: %s", out.Results[2])
	}
	if resp := asRunTS(t, out.Results[3]); string(resp.Result) != `"1"` {
		t.Errorf("the upstream saw %s cancellations: %+v", resp.Result, resp.diags())
	}
	var final struct{ Status string }
	json.Unmarshal(out.Results[4], &final)
	if final.Status != "cancelled" {
		t.Errorf("tasks/get: %s", out.Results[4])
	}
}

// A script returning 20 MiB: the response stays under maxResultBytes and
// parses as JSON, and it links to a resource whose resources/read returns
// the 20 MiB the script produced, byte for byte.
func TestTwentyMiBResult(t *testing.T) {
	t.Parallel()
	const rows, width = 20800, 1000
	code := fmt.Sprintf(`const s = "x".repeat(%d); const rows = [];
for (let i = 0; i < %d; i++) rows.push({ i, s });
globalThis.__codemode_result__ = { count: rows.length, rows };`, width, rows)
	type row struct {
		I int    `json:"i"`
		S string `json:"s"`
	}
	want := struct {
		Count int   `json:"count"`
		Rows  []row `json:"rows"`
	}{Count: rows}
	for i := range rows {
		want.Rows = append(want.Rows, row{i, strings.Repeat("x", width)})
	}
	wantJSON, _ := json.Marshal(want)
	if len(wantJSON) < 20<<20 {
		t.Fatalf("the script's result is %d bytes, under 20 MiB", len(wantJSON))
	}
	sum := sha256.Sum256(wantJSON)

	// Over Streamable HTTP: the TypeScript SDK's stdio transport reads at
	// most 10 MiB per message unless the client raises its maxBufferSize.
	cfg := writeConfig(t, upstreams{}, nil)
	p := startProc(t, baseEnv("CODEMODE_DATA_DIR="+t.TempDir()), t.TempDir(), codemodeBin(t), "serve", "--config", cfg, "--http", "127.0.0.1:0")
	m, err := p.waitLine(urlLine)
	if err != nil {
		t.Fatal(err)
	}
	c := tsPlan(t, httpConn(m[1], nil), nil,
		step{"op": "call", "name": "codemode_run", "timeoutMs": 120000,
			"arguments": map[string]any{"code": code, "limits": map[string]any{"maxMemoryBytes": 256 << 20, "timeoutMs": 120000}}},
		// The session that made it reads it.
		step{"op": "readResource", "uri": "$link", "timeoutMs": 120000})
	out := c.longOutput(t)
	if len(out.Results[0]) >= 1<<20 {
		t.Errorf("the response is %d bytes, over maxResultBytes (1 MiB)", len(out.Results[0]))
	}
	var res struct {
		Content []struct {
			Type string `json:"type"`
			URI  string `json:"uri"`
		} `json:"content"`
	}
	if err := json.Unmarshal(out.Results[0], &res); err != nil {
		t.Fatalf("call: %.1000s", out.Results[0])
	}
	resp := asRunTS(t, out.Results[0])
	if !json.Valid(resp.Result) || resp.errorDiag() != nil {
		t.Fatalf("the result is not JSON, or the run failed: %.300s %+v", resp.Result, resp.diags())
	}
	var uri string
	for _, ct := range res.Content {
		if ct.Type == "resource_link" {
			uri = ct.URI
		}
	}
	if !strings.HasPrefix(uri, "codemode://results/") || !strings.Contains(string(resp.Result), uri) {
		t.Fatalf("no resource_link named in the preview: %.1000s", out.Results[0])
	}
	var got struct {
		MimeType string `json:"mimeType"`
		Length   int    `json:"length"`
		SHA256   string `json:"sha256"`
		Error    string `json:"error"`
	}
	json.Unmarshal(out.Results[1], &got)
	if got.Error != "" || got.Length != len(wantJSON) || got.SHA256 != hex.EncodeToString(sum[:]) || got.MimeType != "application/json" {
		t.Errorf("resources/read: %s; want %d bytes, sha256 %x", out.Results[1], len(wantJSON), sum)
	}
}

// Through the MCP Inspector CLI (which declares no elicitation, sampling
// or roots, and asks for no progress) against server-everything: a script
// calls the long-running operation and the task-based research tool, and
// the elicitation tool's request is refused with a reason the script
// reads.
func TestLongRunsThroughTheInspector(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, upstreams{"everything": everythingEntry(t)}, nil)
	code := `import * as ev from "@codemode/servers/everything";
const out = {
  long: await ev.trigger_long_running_operation({ duration: 1, steps: 2 }),
  research: await ev.simulate_research_query({ topic: "kelp" }),
};
try { await ev.trigger_elicitation_request({}); } catch (e) { out.elicit = e.message; }
globalThis.__codemode_result__ = out;`
	args, _ := json.Marshal(map[string]any{"code": code})
	var res toolResult
	inspectJSON(t, &res, stdioTarget(t, cfg), "--method", "tools/call", "--tool-name", "codemode_run", "--tool-args-json", string(args))
	if res.IsError || len(res.Content) == 0 {
		t.Fatalf("%+v", res)
	}
	var resp runResponse
	if err := json.Unmarshal([]byte(res.Content[0].Text), &resp); err != nil {
		t.Fatal(err)
	}
	var got struct{ Long, Research, Elicit string }
	json.Unmarshal(resp.Result, &got)
	if !strings.Contains(got.Long, "Long running operation completed") || !strings.Contains(got.Research, "Research Report: kelp") ||
		!strings.Contains(got.Elicit, "did not declare the elicitation capability") {
		t.Errorf("%s %+v", resp.Result, resp.diags())
	}
}

// A mixed configuration: memory served directly ("codeMode": false), three
// servers in code mode. tools/list shows memory's tools (memory__<tool>)
// beside codemode_run; a direct call and a script both work, and scripts
// do not see memory. Through the TypeScript SDK client and the Inspector.
func TestMixedConfig(t *testing.T) {
	t.Parallel()
	mem := memoryEntry(t)
	mem["codeMode"] = false
	cfg := writeConfig(t, upstreams{"memory": mem, "everything": everythingEntry(t), "filesystem": filesystemEntry(t, t.TempDir()), "thinking": thinkingEntry(t)}, nil)
	c := tsPlan(t, stdioConn(t, cfg), nil,
		listStep(),
		callStep("memory__create_entities", map[string]any{"entities": []map[string]any{{"name": "ada", "entityType": "person", "observations": []string{"wrote the first program"}}}}),
		callStep("memory__read_graph", map[string]any{}),
		runStep(`import { listServers } from "@codemode/discovery";
import { get_sum } from "@codemode/servers/everything";
globalThis.__codemode_result__ = { ids: (await listServers()).map((s) => s.serverId), sum: await get_sum({ a: 2, b: 3 }) };`),
	)
	out := c.longOutput(t)
	var l toolList
	json.Unmarshal(out.Results[0], &l)
	names := strings.Join(l.names(), " ")
	for _, want := range []string{"codemode_run", "memory__create_entities", "memory__read_graph", "memory__search_nodes"} {
		if !strings.Contains(names, want) {
			t.Errorf("tools/list lacks %s: %s", want, names)
		}
	}
	if strings.Contains(names, "everything__") || strings.Contains(l.description("codemode_run"), "@codemode/servers/memory") {
		t.Errorf("code-mode servers are listed directly, or memory is in the run tool: %s", names)
	}
	var graph toolResult
	json.Unmarshal(out.Results[2], &graph)
	if graph.IsError || !strings.Contains(graph.text(), "wrote the first program") {
		t.Errorf("direct calls: %s / %s", out.Results[1], out.Results[2])
	}
	resp := asRunTS(t, out.Results[3])
	var got struct {
		IDs []string
		Sum json.RawMessage
	}
	json.Unmarshal(resp.Result, &got)
	if strings.Join(got.IDs, ",") != "everything,filesystem,thinking" || !strings.Contains(string(got.Sum), "5") {
		t.Errorf("script: %s %+v", resp.Result, resp.diags())
	}

	var il toolList
	inspectJSON(t, &il, stdioTarget(t, cfg), "--method", "tools/list")
	if n := strings.Join(il.names(), " "); !strings.Contains(n, "memory__read_graph") || !strings.Contains(n, "codemode_run") {
		t.Errorf("Inspector tools/list: %s", n)
	}
}

// Behind a load balancer that sends each request to the next of two
// `serve --http --stateless` replicas sharing a data store, a run started
// as a task on one replica is polled and fetched through both.
func TestTaskAcrossStatelessReplicas(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, upstreams{}, nil)
	data := t.TempDir()
	var urls []*url.URL
	for range 2 {
		p := startProc(t, baseEnv("CODEMODE_DATA_DIR="+data), t.TempDir(), codemodeBin(t), "serve", "--config", cfg, "--http", "127.0.0.1:0", "--stateless")
		m, err := p.waitLine(urlLine)
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(m[1])
		urls = append(urls, u)
	}
	var next atomic.Int64
	var served [2]atomic.Int64
	lb := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		i := next.Add(1) % 2
		served[i].Add(1)
		r.SetURL(&url.URL{Scheme: urls[i].Scheme, Host: urls[i].Host})
		r.Out.URL.Path = urls[i].Path
	}})
	t.Cleanup(lb.Close)
	code := `await new Promise((r) => setTimeout(r, 1500)); globalThis.__codemode_result__ = "done";`
	c := tsPlan(t, httpConn(lb.URL+"/mcp", nil), nil,
		step{"op": "taskStart", "name": "codemode_run", "arguments": map[string]any{"code": code}},
		step{"op": "taskWait"},
		step{"op": "taskGet", "taskId": "$task"},
		step{"op": "taskGet", "taskId": "$task"},
		step{"op": "taskResult", "taskId": "$task"},
		step{"op": "taskResult", "taskId": "$task"},
	)
	out := c.longOutput(t)
	var streamed struct {
		Result json.RawMessage
		Error  string
	}
	json.Unmarshal(out.Results[1], &streamed)
	if streamed.Error != "" || string(asRunTS(t, streamed.Result).Result) != `"done"` {
		t.Fatalf("stream: %s", out.Results[1])
	}
	for _, i := range []int{2, 3} {
		var got struct{ Status string }
		json.Unmarshal(out.Results[i], &got)
		if got.Status != "completed" {
			t.Errorf("tasks/get: %s", out.Results[i])
		}
	}
	for _, i := range []int{4, 5} {
		if r := asRunTS(t, out.Results[i]); string(r.Result) != `"done"` {
			t.Errorf("tasks/result: %s", out.Results[i])
		}
	}
	if served[0].Load() == 0 || served[1].Load() == 0 {
		t.Errorf("the balancer did not use both replicas: %d, %d", served[0].Load(), served[1].Load())
	}
}
