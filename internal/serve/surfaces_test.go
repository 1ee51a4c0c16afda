package serve_test

// Every surface of `codemode serve`, end to end: the codemode binary over
// stdio and over Streamable HTTP, driven by the TypeScript SDK client and
// by the MCP Inspector CLI, in front of the npm reference servers.

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
)

// surfaceCase is one surface configuration and what a client checks.
type surfaceCase struct {
	name     string
	settings map[string]any
	tools    []string // the exact tool list, sorted
	// scenario runs the surface's checks with the TypeScript SDK client,
	// starting with tools/list (checked against tools).
	scenario func(t *testing.T, conn map[string]any, tools []string)
	// inspectCall is one tools/call the Inspector makes, and its check.
	inspectCall []string
	inspectOK   func(t *testing.T, res toolResult)
}

func surfaceCases() []surfaceCase {
	return []surfaceCase{
		{
			name:     "run",
			settings: nil, // the default
			tools:    []string{"codemode_run"},
			scenario: runScenario,
			inspectCall: []string{"--tool-name", "codemode_run", "--tool-arg",
				`code=import { get_sum } from "@codemode/servers/everything"; globalThis.__codemode_result__ = await get_sum({a: 1, b: 2});`},
			inspectOK: func(t *testing.T, res toolResult) {
				resp := decode[runResponse](t, res.StructuredContent)
				if res.IsError || !strings.Contains(string(resp.Result), "The sum of 1 and 2 is 3") {
					t.Fatalf("codemode_run via the Inspector: %+v", res)
				}
			},
		},
		{
			name:     "search-execute",
			settings: map[string]any{"surfaces": []string{"search-execute"}},
			tools:    []string{"execute", "search"},
			scenario: searchExecuteScenario,
			inspectCall: []string{"--tool-name", "execute", "--tool-arg",
				`code=async () => everything.get_sum({a: 2, b: 3})`},
			inspectOK: func(t *testing.T, res toolResult) {
				resp := decode[runResponse](t, res.StructuredContent)
				if res.IsError || !strings.Contains(string(resp.Result), "The sum of 2 and 3 is 5") {
					t.Fatalf("execute via the Inspector: %+v", res)
				}
			},
		},
		{
			name:     "files",
			settings: map[string]any{"surfaces": []string{"files"}, "bindingLevel": "server"},
			tools:    []string{"executeToolCode", "listToolFiles", "readToolFile"},
			scenario: filesServerScenario,
			inspectCall: []string{"--tool-name", "executeToolCode", "--tool-arg",
				`code=return await everything.get_sum({a: 1, b: 2})`},
			inspectOK: func(t *testing.T, res toolResult) {
				resp := decode[runResponse](t, res.StructuredContent)
				if res.IsError || !strings.Contains(string(resp.Result), "The sum of 1 and 2 is 3") {
					t.Fatalf("executeToolCode via the Inspector: %+v", res)
				}
			},
		},
		{
			name:        "files-tool-level",
			settings:    map[string]any{"surfaces": []string{"files"}, "bindingLevel": "tool"},
			tools:       []string{"executeToolCode", "listToolFiles", "readToolFile"},
			scenario:    filesToolScenario,
			inspectCall: []string{"--tool-name", "readToolFile", "--tool-arg", "fileName=servers/everything/get_sum.d.ts"},
			inspectOK: func(t *testing.T, res toolResult) {
				if res.IsError || !strings.Contains(res.text(), "get_sum") {
					t.Fatalf("readToolFile via the Inspector: %+v", res)
				}
			},
		},
		{
			name:     "emceepee",
			settings: map[string]any{"surfaces": []string{"emceepee"}},
			tools:    []string{"codemode_execute", "codemode_search"},
			scenario: emceepeeScenario,
			inspectCall: []string{"--tool-name", "codemode_execute", "--tool-arg",
				`code=const r = await mcp.callTool("everything", "get-sum", {a: 1, b: 2}); return r.content[0].text`},
			inspectOK: func(t *testing.T, res toolResult) {
				var out struct {
					Success bool
					Result  string
				}
				if err := json.Unmarshal(res.StructuredContent, &out); err != nil || !out.Success || !strings.Contains(out.Result, "The sum of 1 and 2 is 3") {
					t.Fatalf("codemode_execute via the Inspector: %+v", res)
				}
			},
		},
	}
}

// surfaceUpstreams are the reference servers behind every surface test.
func surfaceUpstreams(t *testing.T) upstreams {
	return upstreams{"everything": everythingEntry(t), "memory": memoryEntry(t)}
}

// runListed runs tools/list and then steps with the TypeScript SDK client,
// checks the tool list and returns the steps' outputs.
func runListed(t *testing.T, conn map[string]any, tools []string, steps ...step) []json.RawMessage {
	t.Helper()
	out := runTS(t, conn, append([]step{listStep()}, steps...)...)
	checkToolList(t, decode[toolList](t, out[0]), tools)
	return out[1:]
}

func checkToolList(t *testing.T, l toolList, want []string) {
	t.Helper()
	if l.Error != "" {
		t.Fatalf("tools/list failed: %s", l.Error)
	}
	got := l.names()
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Fatalf("tools = %q, want %q", got, want)
	}
	for _, tool := range l.Tools {
		if !toolNameRE.MatchString(tool.Name) {
			t.Errorf("tool name %q does not match %s", tool.Name, toolNameRE)
		}
		if tool.Description == "" || len(tool.InputSchema) == 0 {
			t.Errorf("tool %q has no description or input schema", tool.Name)
		}
	}
}

// TestSurfacesTypeScriptStdio: the TypeScript SDK client starts codemode
// over stdio with each surface alone and runs the surface's scenario.
func TestSurfacesTypeScriptStdio(t *testing.T) {
	t.Parallel()
	for _, sc := range surfaceCases() {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			cfg := writeConfig(t, surfaceUpstreams(t), sc.settings)
			sc.scenario(t, stdioConn(t, cfg), sc.tools)
		})
	}
}

// TestSurfacesHTTP: one codemode serve --http per surface; the TypeScript
// SDK client runs the scenario and the Inspector CLI lists and calls.
func TestSurfacesHTTP(t *testing.T) {
	t.Parallel()
	for _, sc := range surfaceCases() {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			gw := startHTTP(t, writeConfig(t, surfaceUpstreams(t), sc.settings))
			sc.scenario(t, httpConn(gw.url, nil), sc.tools)

			var l toolList
			inspectJSON(t, &l, nil, httpArgs(gw.url, "--method", "tools/list")...)
			checkToolList(t, l, sc.tools)
			var res toolResult
			inspectJSON(t, &res, nil, httpArgs(gw.url, append([]string{"--method", "tools/call"}, sc.inspectCall...)...)...)
			sc.inspectOK(t, res)
		})
	}
}

// TestSurfacesInspectorStdio: the Inspector CLI starts codemode over stdio
// (one process per invocation) for tools/list and one call per surface.
func TestSurfacesInspectorStdio(t *testing.T) {
	t.Parallel()
	for _, sc := range surfaceCases() {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			cfg := writeConfig(t, upstreams{"everything": everythingEntry(t)}, sc.settings)
			var l toolList
			inspectJSON(t, &l, stdioTarget(t, cfg), "--method", "tools/list")
			checkToolList(t, l, sc.tools)
			var res toolResult
			inspectJSON(t, &res, stdioTarget(t, cfg), append([]string{"--method", "tools/call"}, sc.inspectCall...)...)
			sc.inspectOK(t, res)
		})
	}
}

// ---------------------------------------------------------------------------
// run

func runScenario(t *testing.T, conn map[string]any, tools []string) {
	out := runListed(t, conn, tools,
		// 0: a tool call, a log line and a result.
		runStep(`import { get_sum } from "@codemode/servers/everything";
console.log("adding", 1, 2);
globalThis.__codemode_result__ = await get_sum({ a: 1, b: 2 });`),
		// 1: a syntax error.
		runStep("const = 1;"),
		// 2: a thrown error after a log line.
		runStep(`console.log("before"); throw new Error("boom");`),
		// 3: code that is not a string.
		callStep("codemode_run", map[string]any{"code": 12}),
		// 4: no code at all.
		callStep("codemode_run", map[string]any{}),
		// 5: limits with an unknown key, requestedCapabilities with an unknown server.
		callStep("codemode_run", map[string]any{"code": `globalThis.__codemode_result__ = 1;`,
			"limits": map[string]any{"timeoutMs": 300000, "notALimit": 1}, "requestedCapabilities": []string{"memory", "nope"}}),
		// 6, 7: nothing leaks from one run to the next.
		runStep(`globalThis.leak = 42; globalThis.__codemode_result__ = globalThis.leak;`),
		runStep(`globalThis.__codemode_result__ = typeof globalThis.leak;`),
		// 8: discovery.
		runStep(`import { listServers } from "@codemode/discovery";
globalThis.__codemode_result__ = (await listServers()).map((s) => s.serverId + ":" + s.status);`),
		// 9: a limit the run hits.
		callStep("codemode_run", map[string]any{"code": `await new Promise((r) => setTimeout(r, 5000));`, "limits": map[string]any{"timeoutMs": 200}}),
	)

	res, resp := asRun(t, out[0])
	if res.IsError || !strings.Contains(string(resp.Result), "The sum of 1 and 2 is 3") {
		t.Errorf("get_sum run: %s", out[0])
	}
	if logs := resp.logMessages(); len(logs) != 1 || logs[0] != "adding 1 2" || (*resp.Logs)[0].Level != "log" {
		t.Errorf("logs = %+v, want one log entry \"adding 1 2\"", resp.Logs)
	}
	if len(resp.ToolTrace) != 1 || resp.ToolTrace[0].ServerID != "everything" || resp.ToolTrace[0].ToolName != "get-sum" || !resp.ToolTrace[0].OK {
		t.Errorf("toolTrace = %+v", resp.ToolTrace)
	}
	if !strings.Contains(res.Content[0].Text, `"toolName":"get-sum"`) || !strings.Contains(res.Content[0].Text, "adding 1 2") {
		t.Errorf("the text lacks the trace or the logs:\n%s", res.Content[0].Text)
	}

	// §3.3.4: a script failure is not a tool error.
	for i, code := range map[int]string{1: "SYNTAX_ERROR", 2: "UNCAUGHT_EXCEPTION"} {
		res, resp := asRun(t, out[i])
		d := resp.errorDiag()
		if res.IsError || d == nil || d.Code != code || string(resp.Result) != "null" {
			t.Errorf("step %d: want isError false, result null and a %s diagnostic; got %s", i, code, out[i])
		}
		if !strings.Contains(res.Content[0].Text, code) {
			t.Errorf("step %d: the text rendering does not name %s:\n%s", i, code, res.Content[0].Text)
		}
	}
	if _, resp := asRun(t, out[2]); !slices.Contains(resp.logMessages(), "before") || !strings.Contains(resp.errorDiag().Message, "boom") {
		t.Errorf("thrown error: logs before the failure or the message were lost: %s", out[2])
	}

	// A malformed request is refused with a message that says what to fix.
	for _, i := range []int{3, 4} {
		res := decode[toolResult](t, out[i])
		if res.Error != "" {
			if !strings.Contains(res.Error, "code") {
				t.Errorf("step %d: protocol error without a clear message: %s", i, res.Error)
			}
			continue
		}
		text := res.text()
		if len(res.StructuredContent) > 0 {
			// The response as JSON: the message is quoted in it.
			for _, d := range decode[runResponse](t, res.StructuredContent).diags() {
				text += "\n" + d.Message
			}
		}
		if !res.IsError || !strings.Contains(text, `"code" must be a string`) {
			t.Errorf("step %d: want a tool error saying \"code\" must be a string; got %s", i, out[i])
		}
		// When the refusal carries a §3.3 response, it must be a whole one:
		// logs, result and diagnostics present, logs an array.
		if len(res.StructuredContent) > 0 {
			t.Run(fmt.Sprintf("malformed request %d has a whole response", i), func(t *testing.T) {
				var m map[string]json.RawMessage
				if err := json.Unmarshal(res.StructuredContent, &m); err != nil {
					t.Fatal(err)
				}
				for _, k := range []string{"logs", "diagnostics", "toolTrace"} {
					if v := string(m[k]); len(v) == 0 || v[0] != '[' {
						t.Errorf("%s = %s, want an array (§3.3)", k, v)
					}
				}
			})
		}
	}

	if _, resp := asRun(t, out[5]); string(resp.Result) != "1" || resp.errorDiag() != nil {
		t.Errorf("unknown limit keys must be ignored (§3.2.4): %s", out[5])
	} else {
		var warned bool
		for _, d := range resp.diags() {
			warned = warned || (d.Severity == "warning" && strings.Contains(d.Message, "nope"))
		}
		if !warned {
			t.Errorf("requestedCapabilities [\"nope\"] gave no warning (§3.2.3): %s", out[5])
		}
	}

	if got := okRun(t, out[6]); got != "42" {
		t.Errorf("run 6 result = %s", got)
	}
	if got := okRun(t, out[7]); got != `"undefined"` {
		t.Errorf("a global of one run is visible in the next: typeof leak = %s", got)
	}
	if got := okRun(t, out[8]); !jsonEq(t, got, `["everything:connected","memory:connected"]`) {
		t.Errorf("listServers = %s", got)
	}
	if _, resp := asRun(t, out[9]); resp.errorDiag() == nil || resp.errorDiag().Code != "SANDBOX_LIMIT" {
		t.Errorf("limits.timeoutMs 200 was not applied: %s", out[9])
	}
}

// The run tool's name is configurable; the default names match the pattern
// every client accepts (checked by checkToolList in every surface test).
func TestRunToolNameConfigurable(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, upstreams{"everything": everythingEntry(t)}, map[string]any{"runToolName": "codemode.run"})
	var l toolList
	inspectJSON(t, &l, stdioTarget(t, cfg), "--method", "tools/list")
	if !slices.Equal(l.names(), []string{"codemode.run"}) {
		t.Fatalf("tools = %q, want [codemode.run]", l.names())
	}
	out := runTS(t, stdioConn(t, cfg), callStep("codemode.run", map[string]any{"code": `globalThis.__codemode_result__ = "named";`}))
	if got := okRun(t, out[0]); got != `"named"` {
		t.Fatalf("result = %s", got)
	}
}

// ---------------------------------------------------------------------------
// search + execute

func searchExecuteScenario(t *testing.T, conn map[string]any, tools []string) {
	search := func(code string) step { return callStep("search", map[string]any{"code": code}) }
	execute := func(code string) step { return callStep("execute", map[string]any{"code": code}) }
	out := runListed(t, conn, tools,
		// 0: the catalog's shape.
		search(`async (catalog) => ({
  servers: catalog.servers.map((s) => s.serverId),
  everythingOps: Object.keys(catalog.operations.everything).sort(),
  memoryOps: Object.keys(catalog.operations.memory).length,
  sum: catalog.operations.everything.get_sum,
  echoAnnotations: catalog.operations.everything.echo.annotations,
  structuredOutput: catalog.operations.everything.get_structured_content?.outputSchema,
  keys: Object.keys(catalog).sort(),
  prompts: (catalog.prompts.everything ?? []).length,
  resources: (catalog.resources.everything ?? []).length,
  templates: (catalog.resourceTemplates.everything ?? []).length,
})`),
		// 1: search is read-only: a tool call fails.
		search(`async (catalog) => { const m = await import("@codemode/servers/everything"); return await m.get_sum({ a: 1, b: 2 }); }`),
		// 2: execute with a server as a global.
		execute(`async () => { const r = await everything.get_sum({ a: 1, b: 2 }); console.log("got", r); return r; }`),
		// 3: execute with a server as a module, imported as the issue shows.
		execute(`import { get_sum } from "@codemode/servers/everything";
async () => get_sum({ a: 3, b: 4 })`),
		// 4: execute with a dynamic import of the module.
		execute(`async () => { const { get_sum } = await import("@codemode/servers/everything"); return get_sum({ a: 5, b: 6 }); }`),
		// 5: execute of a function body that returns.
		execute(`const r = await memory.read_graph({}); return Object.keys(r).sort();`),
		// 6: a thrown error is a diagnostic, not a tool error.
		execute(`async () => { throw new Error("nope") }`),
		// 7: a bad request.
		callStep("execute", map[string]any{"code": 1}),
	)

	var cat struct {
		Servers       []string
		EverythingOps []string
		MemoryOps     int
		Sum           map[string]json.RawMessage
		EchoAnnots    json.RawMessage `json:"echoAnnotations"`
		StructuredOut json.RawMessage `json:"structuredOutput"`
		Keys          []string
		Prompts       int
		Resources     int
		Templates     int
	}
	if err := json.Unmarshal([]byte(okRun(t, out[0])), &cat); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cat.Servers, []string{"everything", "memory"}) || !slices.Contains(cat.EverythingOps, "get_sum") || cat.MemoryOps < 5 {
		t.Errorf("catalog servers/operations: %+v", cat)
	}
	if !slices.Equal(cat.Keys, []string{"operations", "prompts", "resourceTemplates", "resources", "servers"}) {
		t.Errorf("catalog keys = %q", cat.Keys)
	}
	for _, k := range []string{"toolName", "description", "inputSchema"} {
		if _, ok := cat.Sum[k]; !ok {
			t.Errorf("catalog.operations.everything.get_sum lacks %s: %v", k, cat.Sum)
		}
	}
	if string(cat.Sum["toolName"]) != `"get-sum"` || !strings.Contains(string(cat.Sum["inputSchema"]), `"a"`) {
		t.Errorf("get_sum operation: %v", cat.Sum)
	}
	if !strings.Contains(string(cat.EchoAnnots), "readOnlyHint") {
		t.Errorf("echo's annotations are missing: %s", cat.EchoAnnots)
	}
	if !strings.Contains(string(cat.StructuredOut), "properties") {
		t.Errorf("get_structured_content's outputSchema is missing: %s", cat.StructuredOut)
	}
	if cat.Prompts == 0 || cat.Resources == 0 || cat.Templates == 0 {
		t.Errorf("server-everything's prompts, resources and resource templates are missing from the catalog: %+v", cat)
	}

	if res, resp := asRun(t, out[1]); res.IsError || resp.errorDiag() == nil || len(resp.ToolTrace) != 0 || !strings.Contains(resp.errorDiag().Message, "read-only") {
		t.Errorf("a tool call from search must fail as read-only, with no call made: %s", out[1])
	}
	if got := okRun(t, out[2]); !strings.Contains(got, "The sum of 1 and 2 is 3") {
		t.Errorf("execute with a global: %s", got)
	}
	// execute runs the code inside a function, where an import declaration
	// cannot be: the normaliser runs it as the dynamic import (below) and
	// says so in an info diagnostic that shows that form.
	if got := okRun(t, out[3]); !strings.Contains(got, "The sum of 3 and 4 is 7") {
		t.Errorf("execute with a static import: %s", out[3])
	} else if _, resp := asRun(t, out[3]); !hasInfo(resp, "await import(") {
		t.Errorf("execute with a static import: want an info diagnostic showing the dynamic import: %s", out[3])
	}
	if got := okRun(t, out[4]); !strings.Contains(got, "The sum of 5 and 6 is 11") {
		t.Errorf("execute with a dynamic import: %s", got)
	}
	if got := okRun(t, out[5]); !jsonEq(t, got, `["entities","relations"]`) {
		t.Errorf("execute body: %s", got)
	}
	if res, resp := asRun(t, out[6]); res.IsError || resp.errorDiag() == nil || !strings.Contains(resp.errorDiag().Message, "nope") {
		t.Errorf("a thrown error: %s", out[6])
	}
	if res := decode[toolResult](t, out[7]); !res.IsError && res.Error == "" {
		t.Errorf("execute {code: 1} was accepted: %s", out[7])
	}
}

// ---------------------------------------------------------------------------
// files

func filesCommon(t *testing.T, conn map[string]any, tools, listWant []string, readFile string) []json.RawMessage {
	t.Helper()
	read := func(args map[string]any) step { return callStep("readToolFile", args) }
	out := runListed(t, conn, tools,
		callStep("listToolFiles", map[string]any{}),                                                                      // 0
		read(map[string]any{"fileName": readFile}),                                                                       // 1
		read(map[string]any{"fileName": readFile, "startLine": 2, "endLine": 3}),                                         // 2
		read(map[string]any{"fileName": "../etc/passwd"}),                                                                // 3
		read(map[string]any{"fileName": "servers/nope.d.ts"}),                                                            // 4
		read(map[string]any{"fileName": "servers/../../etc/passwd"}),                                                     // 5
		callStep("executeToolCode", map[string]any{"code": "return await everything.get_sum({a: 1, b: 2})"}),             // 6
		callStep("executeToolCode", map[string]any{"code": "const r = await evrything.get_sum({a: 1, b: 2}); return r"}), // 7
		callStep("executeToolCode", map[string]any{"code": "console.log('x'); throw new Error('kaput')"}),                // 8
		read(map[string]any{"fileName": "codemode.d.ts"}),                                                                // 9
	)
	list := decode[toolResult](t, out[0])
	if list.IsError {
		t.Fatalf("listToolFiles: %s", out[0])
	}
	for _, w := range append(listWant, "codemode.d.ts") {
		if !strings.Contains(list.text(), w) {
			t.Errorf("listToolFiles lacks %q:\n%s", w, list.text())
		}
	}

	// The types the server files refer to are in the tree too.
	if std := decode[toolResult](t, out[9]); std.IsError || !strings.Contains(std.text(), "type ToolResult =") {
		t.Errorf("readToolFile codemode.d.ts: %.300s", out[9])
	}

	whole := decode[toolResult](t, out[1])
	if whole.IsError || whole.text() == "" {
		t.Fatalf("readToolFile %s: %s", readFile, out[1])
	}
	lines := strings.Split(strings.TrimRight(whole.text(), "\n"), "\n")
	part := decode[toolResult](t, out[2])
	if len(lines) < 3 || part.IsError || part.text() != strings.Join(lines[1:3], "\n") {
		t.Errorf("readToolFile startLine 2, endLine 3 (1-based, inclusive) = %q, want lines 2-3 of the file: %q", part.text(), lines[:min(len(lines), 4)])
	}
	for _, i := range []int{3, 4, 5} {
		res := decode[toolResult](t, out[i])
		if !res.IsError || strings.Contains(res.text(), "root:") {
			t.Errorf("step %d: a path outside the tree was not refused: %s", i, out[i])
		}
		if !strings.Contains(res.text(), "servers/everything") {
			t.Errorf("step %d: the refusal does not list the files that exist: %s", i, res.text())
		}
	}

	if got := okRun(t, out[6]); !strings.Contains(got, "The sum of 1 and 2 is 3") {
		t.Errorf("executeToolCode: %s", got)
	}
	res, resp := asRun(t, out[7])
	d := resp.errorDiag()
	if res.IsError || d == nil || !strings.Contains(d.Message, "evrything") {
		t.Fatalf("an unknown identifier: %s", out[7])
	}
	if !strings.Contains(d.Hint, "everything") || !strings.Contains(d.Hint, "memory") {
		t.Errorf("the hint does not list the server keys: %q", d.Hint)
	}
	if res, resp := asRun(t, out[8]); res.IsError || !slices.Contains(resp.logMessages(), "x") || resp.errorDiag() == nil {
		t.Errorf("a thrown error: %s", out[8])
	}
	return out
}

func filesServerScenario(t *testing.T, conn map[string]any, tools []string) {
	out := filesCommon(t, conn, tools, []string{"servers/", "everything.d.ts", "memory.d.ts"}, "servers/everything.d.ts")
	// The types the server files refer to are in the tree too.
	if std := decode[toolResult](t, out[9]); std.IsError || !strings.Contains(std.text(), "type ToolResult =") {
		t.Errorf("readToolFile codemode.d.ts: %.300s", out[9])
	}

	whole := decode[toolResult](t, out[1]).text()
	if !strings.Contains(whole, "get_sum") || !strings.Contains(whole, "echo") {
		t.Errorf("servers/everything.d.ts lacks the server's tools:\n%s", tail(whole, 1000))
	}
}

func filesToolScenario(t *testing.T, conn map[string]any, tools []string) {
	out := filesCommon(t, conn, tools, []string{"servers/", "everything/", "get_sum.d.ts", "memory/", "read_graph.d.ts"}, "servers/everything/get_sum.d.ts")
	if strings.Contains(decode[toolResult](t, out[0]).text(), "everything.d.ts") {
		t.Errorf("bindingLevel tool lists server-level files:\n%s", decode[toolResult](t, out[0]).text())
	}
	// The types the server files refer to are in the tree too.
	if std := decode[toolResult](t, out[9]); std.IsError || !strings.Contains(std.text(), "type ToolResult =") {
		t.Errorf("readToolFile codemode.d.ts: %.300s", out[9])
	}

	whole := decode[toolResult](t, out[1]).text()
	if !strings.Contains(whole, "get_sum") || strings.Contains(whole, "function echo") {
		t.Errorf("servers/everything/get_sum.d.ts should declare get_sum only:\n%s", whole)
	}
}

// ---------------------------------------------------------------------------
// emceepee

type emceepeeOut struct {
	Success bool            `json:"success"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Name    string `json:"name"`
		Message string `json:"message"`
		Stack   string `json:"stack"`
	} `json:"error"`
	Logs  *[]string `json:"logs"`
	Stats *struct {
		DurationMs *int64 `json:"durationMs"`
		MCPCalls   *int64 `json:"mcpCalls"`
	} `json:"stats"`
}

func asEmceepee(t *testing.T, raw json.RawMessage) emceepeeOut {
	t.Helper()
	res := decode[toolResult](t, raw)
	if res.Error != "" || res.IsError {
		t.Fatalf("codemode_execute failed as a call: %s", raw)
	}
	out := decode[emceepeeOut](t, res.StructuredContent)
	if out.Logs == nil || out.Stats == nil || out.Stats.DurationMs == nil || out.Stats.MCPCalls == nil || out.Result == nil {
		t.Fatalf("the response lacks {success, result, logs, stats: {durationMs, mcpCalls}}: %s", res.StructuredContent)
	}
	if !json.Valid([]byte(res.text())) {
		t.Errorf("the text content is not the JSON response: %s", res.text())
	}
	return out
}

func emceepeeScenario(t *testing.T, conn map[string]any, tools []string) {
	search := func(args map[string]any) step { return callStep("codemode_search", args) }
	exec := func(code string) step { return callStep("codemode_execute", map[string]any{"code": code}) }
	out := runListed(t, conn, tools,
		search(map[string]any{"query": "sum"}),                                                      // 0
		search(map[string]any{"query": "^get-(sum|env)$", "type": "tools", "includeSchemas": true}), // 1
		search(map[string]any{"query": ".", "type": "tools", "server": "^mem"}),                     // 2
		search(map[string]any{"query": ".", "type": "servers"}),                                     // 3
		search(map[string]any{"query": "(", "type": "tools"}),                                       // 4
		exec(`const servers = await mcp.listServers();
const tools = await mcp.listTools("^everything$");
const sum = await mcp.callTool("everything", "get-sum", { a: 1, b: 2 });
const resources = await mcp.listResources();
const read = await mcp.readResource(resources[0].server, resources[0].uri);
const templates = await mcp.listResourceTemplates("everything");
const prompts = await mcp.listPrompts();
const prompt = await mcp.getPrompt("everything", "simple-prompt", {});
await mcp.sleep(10);
mcp.log("done", 42);
return { servers, toolCount: tools.length, toolServers: [...new Set(tools.map((t) => t.server))], sum: sum.content[0].text,
  resources: resources.length, read: read.contents.length, readKeys: Object.keys(read), templates: templates.length, prompts: prompts.map((p) => p.name),
  promptNullArgs: prompts.filter((p) => "arguments" in p && p.arguments == null).length, promptMessages: prompt.messages.length };`), // 5
		exec(`return Object.keys(mcp).sort();`), // 6
		exec(`return [typeof mcp.addServer, typeof mcp.removeServer, typeof mcp.reconnect, typeof mcp.connectServer];`),                // 7
		exec(`mcp.log("about to fail"); throw new TypeError("bad thing");`),                                                            // 8
		callStep("codemode_execute", map[string]any{"code": "return 1", "timeout": 10}),                                                // 9
		callStep("codemode_execute", map[string]any{"code": "return 1", "timeout": 400000}),                                            // 10
		callStep("codemode_execute", map[string]any{"code": "return 2", "timeout": 1000}),                                              // 11
		callStep("codemode_execute", map[string]any{"code": "await new Promise(r => setTimeout(r, 4000)); return 3", "timeout": 1000}), // 12
	)

	var all struct {
		Tools     []map[string]any `json:"tools"`
		Resources []map[string]any `json:"resources"`
		Prompts   []map[string]any `json:"prompts"`
		Servers   []map[string]any `json:"servers"`
	}
	decodeSearch := func(i int, v any) {
		res := decode[toolResult](t, out[i])
		if res.IsError || res.Error != "" {
			t.Fatalf("codemode_search %d: %s", i, out[i])
		}
		if err := json.Unmarshal(res.StructuredContent, v); err != nil {
			t.Fatalf("codemode_search %d: %v", i, err)
		}
	}
	decodeSearch(0, &all)
	if all.Tools == nil || all.Resources == nil || all.Prompts == nil || all.Servers == nil {
		t.Errorf("type all must return tools, resources, prompts and servers: %s", out[0])
	}
	if len(all.Tools) == 0 || all.Tools[0]["name"] != "get-sum" || all.Tools[0]["server"] != "everything" {
		t.Errorf("query sum: %v", all.Tools)
	}
	var getTools struct {
		Tools     []map[string]any `json:"tools"`
		Resources json.RawMessage  `json:"resources"`
	}
	decodeSearch(1, &getTools)
	if len(getTools.Tools) != 2 || getTools.Tools[0]["inputSchema"] == nil || getTools.Resources != nil {
		t.Errorf("query ^get-(sum|env)$, type tools, includeSchemas: %s", out[1])
	}
	var memTools struct {
		Tools []map[string]any `json:"tools"`
	}
	decodeSearch(2, &memTools)
	for _, tool := range memTools.Tools {
		if tool["server"] != "memory" || tool["inputSchema"] != nil {
			t.Errorf("server ^mem: %v", tool)
		}
	}
	if len(memTools.Tools) == 0 {
		t.Errorf("server ^mem found no tools: %s", out[2])
	}
	var servers struct {
		Servers []struct {
			Name         string          `json:"name"`
			Status       string          `json:"status"`
			Capabilities map[string]bool `json:"capabilities"`
		} `json:"servers"`
	}
	decodeSearch(3, &servers)
	if len(servers.Servers) != 2 || servers.Servers[0].Status != "connected" || !servers.Servers[0].Capabilities["prompts"] {
		t.Errorf("type servers: %s", out[3])
	}
	if res := decode[toolResult](t, out[4]); !res.IsError || !strings.Contains(res.text(), "regular expression") {
		t.Errorf("an invalid regex: %s", out[4])
	}

	r := asEmceepee(t, out[5])
	if !r.Success || r.Error != nil {
		t.Fatalf("the mcp API script failed: %s", out[5])
	}
	var got struct {
		Servers []struct {
			Name         string          `json:"name"`
			Status       string          `json:"status"`
			Capabilities map[string]bool `json:"capabilities"`
		}
		ToolCount      int
		ToolServers    []string
		Sum            string
		Resources      int
		Read           int
		ReadKeys       []string
		PromptNullArgs int
		Templates      int
		Prompts        []string
		PromptMessages int
	}
	if err := json.Unmarshal(r.Result, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Servers) != 2 || got.Servers[0].Name != "everything" || got.Servers[0].Status != "connected" ||
		!got.Servers[0].Capabilities["tools"] || !got.Servers[0].Capabilities["resources"] || got.Servers[1].Capabilities["prompts"] {
		t.Errorf("listServers = %+v", got.Servers)
	}
	if got.ToolCount < 5 || !slices.Equal(got.ToolServers, []string{"everything"}) || !strings.Contains(got.Sum, "The sum of 1 and 2 is 3") {
		t.Errorf("listTools/callTool: %+v", got)
	}
	if got.Resources == 0 || got.Read == 0 || got.Templates == 0 || !slices.Contains(got.Prompts, "simple-prompt") || got.PromptMessages == 0 {
		t.Errorf("resources/prompts: %+v", got)
	}
	if !slices.Equal(got.ReadKeys, []string{"contents"}) || got.PromptNullArgs != 0 {
		t.Errorf("emceepee shapes: readResource keys %v (want [contents]), %d prompts with arguments: null", got.ReadKeys, got.PromptNullArgs)
	}
	if *r.Stats.MCPCalls != 8 {
		t.Errorf("stats.mcpCalls = %d, want 8 (sleep and log are not MCP calls)", *r.Stats.MCPCalls)
	}
	if !slices.Contains(*r.Logs, "done 42") {
		t.Errorf("logs = %q, want \"done 42\"", *r.Logs)
	}

	var keys []string
	if err := json.Unmarshal(asEmceepee(t, out[6]).Result, &keys); err != nil {
		t.Fatal(err)
	}
	want := []string{"callTool", "getPrompt", "listPrompts", "listResourceTemplates", "listResources", "listServers", "listTools", "log", "readResource", "sleep"}
	if !slices.Equal(keys, want) {
		t.Errorf("mcp has %q, want exactly %q (no server management)", keys, want)
	}
	if got := string(asEmceepee(t, out[7]).Result); got != `["undefined","undefined","undefined","undefined"]` {
		t.Errorf("server-management functions on mcp: %s", got)
	}

	fail := asEmceepee(t, out[8])
	if fail.Success || fail.Error == nil || fail.Error.Name != "TypeError" || fail.Error.Message != "bad thing" ||
		!strings.HasPrefix(fail.Error.Stack, "TypeError: bad thing\n    at ") || !slices.Contains(*fail.Logs, "about to fail") {
		t.Errorf("a thrown error: want {name: TypeError, message: bad thing, stack}: %s", out[8])
	}
	for _, i := range []int{9, 10} {
		if res := decode[toolResult](t, out[i]); !(res.IsError && strings.Contains(res.text(), `"timeout"`)) && res.Error == "" {
			t.Errorf("step %d: a timeout out of 1000..300000 was not refused: %s", i, out[i])
		}
	}
	if r := asEmceepee(t, out[11]); !r.Success || string(r.Result) != "2" {
		t.Errorf("timeout 1000: %s", out[11])
	}
	if r := asEmceepee(t, out[12]); r.Success || r.Error == nil {
		t.Errorf("a script longer than its timeout succeeded: %s", out[12])
	}
}

// ---------------------------------------------------------------------------
// The other reference servers

// TestAllReferenceServers puts the four npm reference servers behind one
// gateway and uses each from one script.
func TestAllReferenceServers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeConfig(t, upstreams{
		"everything": everythingEntry(t), "memory": memoryEntry(t),
		"filesystem": filesystemEntry(t, dir), "sequential-thinking": thinkingEntry(t),
	}, nil)
	code := fmt.Sprintf(`import { listServers } from "@codemode/discovery";
import * as fs from "@codemode/servers/filesystem";
import * as memory from "@codemode/servers/memory";
import * as thinking from "@codemode/servers/sequential-thinking";
import { echo } from "@codemode/servers/everything";
await fs.write_file({ path: %q, content: "hello" });
const text = await fs.read_text_file({ path: %q });
await memory.create_entities({ entities: [{ name: "n", entityType: "t", observations: ["o"] }] });
const graph = await memory.read_graph({});
const thought = await thinking.sequentialthinking({ thought: "t", thoughtNumber: 1, totalThoughts: 1, nextThoughtNeeded: false });
globalThis.__codemode_result__ = {
  servers: (await listServers()).map((s) => s.serverId + ":" + s.status),
  text: text.content ?? text, entities: graph.entities.length, thought: typeof thought, echo: await echo({ message: "hi" }),
};`, dir+"/a.txt", dir+"/a.txt")
	got := okRun(t, runTS(t, stdioConn(t, cfg), runStep(code))[0])
	var v struct {
		Servers  []string
		Text     string
		Entities int
		Thought  string
		Echo     string
	}
	if err := json.Unmarshal([]byte(got), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Servers) != 4 || v.Text != "hello" || v.Entities != 1 || v.Thought == "undefined" || !strings.Contains(v.Echo, "hi") {
		t.Errorf("result = %s", got)
	}
	for _, s := range v.Servers {
		if !strings.HasSuffix(s, ":connected") {
			t.Errorf("listServers: %s", s)
		}
	}
}

// hasInfo reports whether a response has a NORMALIZED info diagnostic whose
// message or hint contains text.
func hasInfo(resp runResponse, text string) bool {
	for _, d := range resp.diags() {
		if d.Severity == "info" && d.Code == "NORMALIZED" && (strings.Contains(d.Message, text) || strings.Contains(d.Hint, text)) {
			return true
		}
	}
	return false
}
