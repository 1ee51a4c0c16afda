package serve_test

// The agent corpus: scripts in the shapes models write, taken from the
// forms of the public examples of Cloudflare's codemode and its API server,
// Anthropic's code-execution article, Bifrost, UTCP code-mode, pctx,
// Thoughtbox and emceepee (written for these servers, not copied), each run
// on the surface that matches its origin against the real npm servers, and
// each checked by the value of its result.

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/serve"
	"github.com/codemode-mcp/codemode/internal/testutil"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// agentScript is one script of the corpus: the tool (surface) it is sent
// to, its code ({{DIR}} is the filesystem server's directory) and the JSON
// of the result it must produce.
type agentScript struct {
	origin, tool, code, want string
}

var agentCorpus = []agentScript{
	// Cloudflare codemode: an async arrow function, often with a trailing
	// semicolon, on execute; servers as global objects.
	{"cloudflare: arrow with trailing ;", "execute", "async () => {\n  const r = await everything.get_sum({ a: 1, b: 2 });\n  return r;\n};", `"The sum of 1 and 2 is 3."`},
	{"cloudflare: fenced arrow", "execute", "```js\nasync () => {\n  return await everything.echo({ message: \"fenced\" });\n}\n```", `"Echo: fenced"`},
	{"cloudflare: Promise.all", "execute", "async () => {\n  const [a, b] = await Promise.all([everything.get_sum({ a: 2, b: 3 }), everything.get_sum({ a: 4, b: 5 })]);\n  return { a, b };\n};", `{"a":"The sum of 2 and 3 is 5.","b":"The sum of 4 and 5 is 9."}`},
	{"cloudflare: TypeScript arrow", "execute", "async (): Promise<string> => {\n  const r: string = await everything.echo({ message: \"ts\" });\n  return r;\n};", `"Echo: ts"`},
	{"cloudflare: caught schema error", "execute", "async () => {\n  try {\n    return await everything.get_sum({ a: \"x\" });\n  } catch (e) {\n    return e.name;\n  }\n};", `"SchemaValidationError"`},
	{"cloudflare: statements, last expression", "execute", "const r = await everything.echo({ message: \"x\" });\nr", `"Echo: x"`},
	{"cloudflare: async IIFE", "execute", "(async () => {\n  return 1 + 1;\n})()", `2`},
	{"cloudflare: arithmetic", "execute", "1 + 1", `2`},
	{"cloudflare: then chain", "execute", "everything.echo({ message: \"then\" }).then((r) => r.toUpperCase())", `"ECHO: THEN"`},
	{"cloudflare: value after console.log", "execute", "console.log(\"working\");\n\"done\"", `"done"`},
	{"cloudflare: static import then arrow", "execute", "import { get_sum } from \"@codemode/servers/everything\";\nasync () => get_sum({ a: 3, b: 4 });", `"The sum of 3 and 4 is 7."`},
	{"a scope parameter: the tools destructured from it", "execute", "async ({ codemode, everything }) => {\n  const a = await codemode.echo({ message: \"scope\" });\n  return [a, await everything.get_sum({ a: 1, b: 1 })];\n}", `["Echo: scope","The sum of 1 and 1 is 2."]`},
	{"pctx on execute: function declaration", "execute", "async function run() {\n  return await everything.get_sum({ a: 10, b: 5 });\n}", `"The sum of 10 and 5 is 15."`},

	// Cloudflare's API server and Thoughtbox: search gets the catalog as a
	// parameter and as the free variables spec and catalog.
	{"cloudflare api: free spec", "search", "async () => Object.keys(spec.operations).sort()", `["everything","filesystem","memory"]`},
	{"thoughtbox: catalog parameter", "search", "async (catalog) => catalog.servers.map((s) => s.serverId).sort()", `["everything","filesystem","memory"]`},
	{"cloudflare api: loop over operations", "search", "async () => {\n  const results = [];\n  for (const [id, ops] of Object.entries(catalog.operations)) {\n    for (const [name, op] of Object.entries(ops)) {\n      if (op.toolName.includes(\"sum\")) results.push(id + \".\" + name);\n    }\n  }\n  return results;\n}", `["everything.get_sum"]`},
	{"thoughtbox: per-server lists", "search", "async () => [Array.isArray(catalog.resources.memory), Array.isArray(catalog.resourceTemplates.memory), Array.isArray(catalog.prompts.filesystem), Object.values(catalog.resourceTemplates).flat().every((t) => typeof t === \"object\")]", `[true,true,true,true]`},
	{"thoughtbox: free catalog in a function", "search", "async () => {\n  const names = Object.keys(catalog.operations.memory);\n  return names.includes(\"read_graph\");\n};", `true`},
	{"thoughtbox: fenced search", "search", "```javascript\nasync (catalog) => catalog.operations.everything.echo.toolName\n```", `"echo"`},
	{"thoughtbox: tool name lookup", "search", "async (catalog) => catalog.operations.memory.read_graph.toolName;", `"read_graph"`},

	{"thoughtbox: filter by description", "search", "async (catalog) => {\n  const out = {};\n  for (const [mod, ops] of Object.entries(catalog.operations)) {\n    for (const [name, op] of Object.entries(ops)) {\n      if (name.includes(\"sum\") || op.description.includes(\"sum of\")) {\n        out[`${mod}.${name}`] = op.toolName;\n      }\n    }\n  }\n  return out;\n}", `{"everything.get_sum":"get-sum"}`},

	// Anthropic's article: modules that import servers; codemode_run's
	// return and default-export extensions.
	{"article: spec form", "codemode_run", "import * as everything from \"@codemode/servers/everything\";\nconst r = await everything.echo({ message: \"article\" });\nconsole.log(r);\nglobalThis.__codemode_result__ = r;", `"Echo: article"`},
	{"article: top-level return", "codemode_run", "import { get_sum } from \"@codemode/servers/everything\";\nconst r = await get_sum({ a: 20, b: 22 });\nreturn { r };", `{"r":"The sum of 20 and 22 is 42."}`},
	{"article: default export arrow", "codemode_run", "import { echo } from \"@codemode/servers/everything\";\nexport default async () => await echo({ message: \"default\" });", `"Echo: default"`},
	{"article: default export value", "codemode_run", "const x = 6 * 7;\nexport default { x };", `{"x":42}`},
	{"article: default export function declaration", "codemode_run", "import { get_sum } from \"@codemode/servers/everything\";\nexport default async function main() {\n  return await get_sum({ a: 1, b: 4 });\n}", `"The sum of 1 and 4 is 5."`},
	{"article: lone arrow", "codemode_run", "async () => {\n  const { echo } = await import(\"@codemode/servers/everything\");\n  return echo({ message: \"lone\" });\n};", `"Echo: lone"`},
	{"article: lone function declaration", "codemode_run", "async function run() {\n  const m = await import(\"@codemode/servers/memory\");\n  const g = await m.read_graph({});\n  return Array.isArray(g.entities);\n}", `true`},
	{"article: fenced TypeScript with return", "codemode_run", "```ts\nimport { get_sum } from \"@codemode/servers/everything\";\nconst s: string = await get_sum({ a: 1, b: 1 });\nreturn s;\n```", `"The sum of 1 and 1 is 2."`},
	{"article: read a file", "codemode_run", "import * as fs from \"@codemode/servers/filesystem\";\nconst f = await fs.read_text_file({ path: \"{{DIR}}/notes.txt\" });\nreturn f.content.split(\"\\n\").filter(Boolean).length;", `2`},
	{"article: data flows between tools", "codemode_run", "import * as fs from \"@codemode/servers/filesystem\";\nconst src = await fs.read_text_file({ path: \"{{DIR}}/notes.txt\" });\nawait fs.write_file({ path: \"{{DIR}}/copy.txt\", content: src.content.toUpperCase() });\nconst back = await fs.read_text_file({ path: \"{{DIR}}/copy.txt\" });\nreturn back.content.trim();", `"HELLO\nWORLD"`},
	{"article: console.info", "codemode_run", "console.info(\"starting\");\nglobalThis.__codemode_result__ = \"ok\";", `"ok"`},

	// Bifrost: TypeScript function bodies on executeToolCode, with the
	// imports and exports its users wrote.
	{"bifrost: body with return", "executeToolCode", "const r = await everything.get_sum({ a: 5, b: 6 });\nreturn r;", `"The sum of 5 and 6 is 11."`},
	{"bifrost: import and export", "executeToolCode", "import { echo } from \"@codemode/servers/everything\";\nexport const out: string = await echo({ message: \"bifrost\" });\nreturn out;", `"Echo: bifrost"`},
	{"bifrost: last expression after console.log", "executeToolCode", "const results = await Promise.all([\"a\", \"b\"].map((m) => everything.echo({ message: m })));\nconsole.log(results);\nresults", `["Echo: a","Echo: b"]`},
	{"bifrost: interfaces and a last expression", "executeToolCode", "interface Entity { name: string; entityType: string; observations: string[] }\nconst e: Entity = { name: \"bifrost-e\", entityType: \"test\", observations: [\"x\"] };\nawait memory.create_entities({ entities: [e] });\nconst g = await memory.open_nodes({ names: [\"bifrost-e\"] });\ng.entities.map((x: Entity) => x.name)", `["bifrost-e"]`},
	{"bifrost: feature detection", "executeToolCode", "if (everything.get_sum && !everything.nope) {\n  return \"ok\";\n}\nreturn \"no\";", `"ok"`},
	{"bifrost: async IIFE", "executeToolCode", "(async () => {\n  const r = await everything.echo({ message: \"iife\" });\n  return r;\n})();", `"Echo: iife"`},
	{"bifrost: fenced body", "executeToolCode", "```typescript\nconst r: string = await everything.echo({ message: \"fenced body\" });\nreturn r;\n```", `"Echo: fenced body"`},

	// UTCP code-mode: the last expression is the value.
	{"utcp: object literal last", "executeToolCode", "const a = await everything.get_sum({ a: 1, b: 2 });\nconst b = await everything.get_sum({ a: 3, b: 4 });\n({ a, b })", `{"a":"The sum of 1 and 2 is 3.","b":"The sum of 3 and 4 is 7."}`},
	{"utcp: catch chain last", "executeToolCode", "everything.echo({ message: \"catch\" }).catch((e) => e.message)", `"Echo: catch"`},
	{"utcp: tool names", "executeToolCode", "const tools = Object.keys(everything).filter((k) => k.startsWith(\"get_s\")).sort();\ntools", `["get_structured_content","get_sum"]`},
	{"utcp: if/else tail", "executeToolCode", "const r = await everything.get_sum({ a: 2, b: 2 });\nif (r.includes(\"4\")) {\n  \"four\"\n} else {\n  \"other\"\n}", `"four"`},

	{"bifrost: summary object", "executeToolCode", "// Search the graph and return a summary\nconst results = await memory.search_nodes({ query: \"nothing-matches-this\" });\nconst names = results.entities.map((e) => e.name);\nconsole.log(\"Found\", names.length, \"entities\");\nreturn { names, count: names.length };", `{"names":[],"count":0}`},

	// pctx: a function named run, declared and never called.
	{"pctx: run on executeToolCode", "executeToolCode", "async function run() {\n  const s = await everything.get_sum({ a: 7, b: 8 });\n  return s;\n}", `"The sum of 7 and 8 is 15."`},
	{"pctx: exported run", "executeToolCode", "export async function run() {\n  const s = await everything.get_sum({ a: 9, b: 9 });\n  return s;\n}", `"The sum of 9 and 9 is 18."`},
	{"pctx: export default run", "executeToolCode", "export default async function run() {\n  return await everything.echo({ message: \"pctx\" });\n}", `"Echo: pctx"`},

	// Thoughtbox: execute with the servers as globals.
	{"thoughtbox: memory round trip", "execute", "async () => {\n  await memory.create_entities({ entities: [{ name: \"tb-1\", entityType: \"thought\", observations: [\"first\"] }] });\n  const g = await memory.search_nodes({ query: \"tb-1\" });\n  return g.entities.length;\n}", `1`},

	// emceepee: function bodies with the mcp global.
	{"emceepee: list servers", "codemode_execute", "const servers = await mcp.listServers();\nreturn servers.map((s) => s.name).sort();", `["everything","filesystem","memory"]`},
	{"emceepee: callTool", "codemode_execute", "const r = await mcp.callTool(\"everything\", \"echo\", { message: \"mcp\" });\nreturn r.content[0].text;", `"Echo: mcp"`},
	{"emceepee: last expression", "codemode_execute", "const tools = await mcp.listTools(\"memory\");\ntools.length", `9`},
	{"emceepee: lone function", "codemode_execute", "async function main() {\n  const r = await mcp.callTool(\"everything\", \"get-sum\", { a: 2, b: 2 });\n  return r.content[0].text;\n}", `"The sum of 2 and 2 is 4."`},
	{"emceepee: fenced", "codemode_execute", "```js\nconst r = await mcp.callTool(\"everything\", \"echo\", { message: \"fence\" });\nreturn r.content[0].text;\n```", `"Echo: fence"`},
	{"emceepee: console.info and a value", "codemode_execute", "console.info(\"x\");\nconst n = (await mcp.listServers()).length;\nn", `3`},
}

// agentGateway serves everything, memory and filesystem (a directory with
// notes.txt) on every surface, in process, to an in-memory client.
type agentGateway struct {
	cs  *mcp.ClientSession
	dir string
}

func newAgentGateway(t *testing.T) *agentGateway {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hello\nworld\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir, _ = filepath.EvalSymlinks(dir)
	cfg := testutil.Config(testutil.Everything(t, "everything"), testutil.Memory(t, "memory"), testutil.Filesystem(t, "filesystem", dir))
	cfg.Serve.Surfaces = []string{"run", "search-execute", "files", "emceepee"}
	mgr := upstream.New(cfg.Servers, &upstream.Options{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { mgr.Close() })
	srv := serve.New(run.New(cfg, catalog.New(mgr), mgr, nil), mgr, &serve.Options{Logger: slog.New(slog.DiscardHandler)})
	return &agentGateway{cs: connectInMemory(t, srv, "agents"), dir: dir}
}

// run sends code to tool and returns the run's response (codemode_execute's
// {success, result, error} is turned into one).
func (g *agentGateway) run(t *testing.T, tool, code string) (json.RawMessage, runResponse) {
	t.Helper()
	ctx := testutil.Context(t)
	res, err := g.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"code": strings.ReplaceAll(code, "{{DIR}}", g.dir)}})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	raw, _ := json.Marshal(res)
	// The answer is the response as JSON text (and structuredContent when
	// the client asked for it).
	sc, _ := json.Marshal(res.StructuredContent)
	if res.StructuredContent == nil && len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			sc = []byte(tc.Text)
		}
	}
	var resp runResponse
	if tool == "codemode_execute" {
		var e struct {
			Success bool            `json:"success"`
			Result  json.RawMessage `json:"result"`
			Error   *diagnostic     `json:"error"`
		}
		json.Unmarshal(sc, &e)
		resp.Result = e.Result
		var ds []diagnostic
		if !e.Success {
			d := diagnostic{Severity: "error", Message: string(sc)}
			if e.Error != nil {
				d.Message = e.Error.Message
			}
			ds = append(ds, d)
		}
		resp.Diagnostics = &ds
		return raw, resp
	}
	if err := json.Unmarshal(sc, &resp); err != nil {
		t.Fatalf("%s: %v: %s", tool, err, raw)
	}
	return raw, resp
}

// TestAgentCorpus runs every script of the corpus and checks its result.
func TestAgentCorpus(t *testing.T) {
	if len(agentCorpus) < 40 {
		t.Fatalf("the corpus has %d scripts; it must have at least 40", len(agentCorpus))
	}
	g := newAgentGateway(t)
	for _, s := range agentCorpus {
		t.Run(s.origin, func(t *testing.T) {
			raw, resp := g.run(t, s.tool, s.code)
			if d := resp.errorDiag(); d != nil {
				t.Fatalf("%s failed: %+v\n%s", s.tool, *d, tail(string(raw), 3000))
			}
			if !jsonEq(t, string(resp.Result), s.want) {
				t.Fatalf("%s: result %s, want %s\n%s", s.tool, resp.Result, s.want, tail(string(raw), 3000))
			}
		})
	}
}

// The hints of what agents get wrong name the real fix: the server module
// for Node's fs and require and for the article's relative import, the
// missing await of a tool call in a try, the console's methods; and a null
// result the code did not mean gets NO_RESULT with the one-line fix.
func TestAgentHints(t *testing.T) {
	g := newAgentGateway(t)
	for _, c := range []struct {
		tool, code     string
		code_, contain string // the diagnostic's code and a text its hint must contain
		not            string // a text the hint must not contain
	}{
		{"codemode_run", "const fs = require(\"fs\");\nglobalThis.__codemode_result__ = fs.readFileSync(\"x\");", "UNCAUGHT_EXCEPTION", `"@codemode/servers/filesystem"`, ""},
		{"codemode_run", "const t = fs.readFileSync(\"{{DIR}}/notes.txt\", \"utf8\");\nreturn t;", "UNCAUGHT_EXCEPTION", `"@codemode/servers/filesystem"`, ""},
		{"executeToolCode", "const t = fs.readFileSync(\"{{DIR}}/notes.txt\", \"utf8\");\nreturn t;", "UNCAUGHT_EXCEPTION", `"@codemode/servers/filesystem"`, ""},
		{"codemode_run", "import * as fs from \"./servers/filesystem\";\nreturn await fs.read_text_file({ path: \"{{DIR}}/notes.txt\" });", "IMPORT_FAILURE", `"@codemode/servers/filesystem"`, ""},
		{"executeToolCode", "try {\n  memory.create_entities({ entities: 5 });\n} catch (e) {\n  return \"caught\";\n}\nreturn \"done\";", "UNCAUGHT_EXCEPTION", "not awaited", ""},
		{"codemode_run", "console.info(\"fine\");\nconsole.success(\"no\");\nglobalThis.__codemode_result__ = 1;", "UNCAUGHT_EXCEPTION", "console has log, info", "export name"},
		{"codemode_run", "import { echo } from \"@codemode/servers/everything\";\nawait echo({ message: \"x\" });", "NO_RESULT", `globalThis.__codemode_result__ = await echo({ message: "x" });`, ""},
		{"executeToolCode", "const r = await everything.echo({ message: \"x\" });\nconst n = r.length;", "NO_RESULT", "return n;", ""},
	} {
		raw, resp := g.run(t, c.tool, c.code)
		var found *diagnostic
		for _, d := range resp.diags() {
			// A relative import in a script run as a function body is a
			// dynamic import, whose failure is an exception.
			if d.Code == c.code_ || c.code_ == "IMPORT_FAILURE" && d.Code == "UNCAUGHT_EXCEPTION" {
				found = &d
				break
			}
		}
		if found == nil || !strings.Contains(found.Hint, c.contain) || c.not != "" && strings.Contains(found.Hint, c.not) {
			t.Errorf("%s %q: want %s with a hint containing %q: %+v\n%s", c.tool, c.code, c.code_, c.contain, found, tail(string(raw), 2000))
		}
	}
	// console.info logs at level "log".
	_, resp := g.run(t, "codemode_run", "console.info(\"hello\", 1);\nglobalThis.__codemode_result__ = 1;")
	if m := resp.logMessages(); len(m) != 1 || !strings.Contains(m[0], "hello 1") || (*resp.Logs)[0].Level != "log" {
		t.Errorf("console.info: %+v", resp.Logs)
	}
}
