package serve_test

// Peers' scripts: the shapes of the public examples and tests of
// Cloudflare's codemode and its API server, Anthropic's code-execution
// article, Bifrost, UTCP code-mode, pctx, Thoughtbox and emceepee, with
// only their tool and server names changed to the servers these tests run
// (server-everything, memory, filesystem, and the built-in thoughtbox).
// Each runs on the surface matching its origin, through the codemode binary
// and the TypeScript SDK client, and is checked by what it means: its
// result, or the error or warning (with the hint) that says what is wrong
// with it. Complementary to agents_test.go, whose corpus is ours.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// peerScript is one script: the tool it is sent to, its code ({{DIR}} is
// the filesystem server's directory) and what it must produce: want, the
// JSON of the result (an object matches if it has at least want's keys,
// recursively; "" leaves the result unchecked), err or warn, a diagnostic
// it must carry, whose hint contains hint.
type peerScript struct {
	origin, tool, code string
	want               string
	err, warn, hint    string
}

// peerScripts run in order, one MCP session per section (the sections
// share the servers' state: later ones read what earlier ones wrote).
var peerScripts = [][]peerScript{{ // Cloudflare codemode: an async arrow function on execute (often with a trailing `;`), the connector SDK's codemode.search/describe, and the shapes its normalizer test accepts
	{origin: "cloudflare README: branch on a tool's value, call another, return an object (trailing ;)", tool: "execute", code: "async () => {\n  const weather = await everything.echo({ message: \"sunny in London\" });\n  if (weather.includes(\"sunny\")) {\n    await memory.create_entities({\n      entities: [{ name: \"cf-nice-day\", entityType: \"note\", observations: [`It's ${weather}`] }]\n    });\n  }\n  return { weather, notified: true };\n};", want: "{\"weather\":\"Echo: sunny in London\",\"notified\":true}"},
	{origin: "cloudflare README (providers): Promise.all over a map, then a write", tool: "execute", code: "async () => {\n  const files = [\"a\", \"b\", \"c\"];\n  const results = await Promise.all(\n    files.map((f) => everything.echo({ message: f }))\n  );\n  await memory.create_entities({ entities: [{ name: \"cf-report\", entityType: \"report\", observations: results }] });\n  return results.length;\n};", want: "3"},
	{origin: "cloudflare connectors: discover with codemode.search, learn with codemode.describe, then call", tool: "execute", code: "async () => {\n  const matches = await codemode.search(\"sum of two numbers\");\n  const docs = await codemode.describe(matches.results[0].path);\n  const r = await everything.get_sum({ a: 1, b: 2 });\n  return { path: matches.results[0].path, kind: docs.kind, typed: docs.types.includes(\"get_sum(\"), r };\n};", want: "{\"path\":\"everything.get_sum\",\"kind\":\"method\",\"typed\":true,\"r\":\"The sum of 1 and 2 is 3.\"}"},
	{origin: "cloudflare runtime: a concise arrow that returns a tool call", tool: "execute", code: "async () => everything.echo({ message: \"Bug\" })", want: "\"Echo: Bug\""},
	{origin: "cloudflare executor test: await a tool call in a concise arrow", tool: "execute", code: "async () => await everything.get_sum({ a: 3, b: 4 })", want: "\"The sum of 3 and 4 is 7.\""},
	{origin: "cloudflare executor test: sequential calls, the second using the first", tool: "execute", code: "async () => {\n      const weather = await everything.get_sum({ a: 70, b: 2 });\n      const news = await everything.echo({ message: \"temp \" + weather });\n      return { weather, news };\n    }", want: "{\"weather\":\"The sum of 70 and 2 is 72.\",\"news\":\"Echo: temp The sum of 70 and 2 is 72.\"}"},
	{origin: "cloudflare executor test: concurrent calls through Promise.all", tool: "execute", code: "async () => {\n      const [a, b, c] = await Promise.all([\n        everything.echo({ message: \"1\" }),\n        everything.echo({ message: \"2\" }),\n        everything.echo({ message: \"3\" })\n      ]);\n      return [a, b, c];\n    }", want: "[\"Echo: 1\",\"Echo: 2\",\"Echo: 3\"]"},
	{origin: "cloudflare executor test: console output beside the value", tool: "execute", code: "async () => { console.log(\"hello\"); console.warn(\"careful\"); return \"done\"; }", want: "\"done\""},
	{origin: "cloudflare executor test: a template literal", tool: "execute", code: "async () => { return `hello ${\"world\"}`; }", want: "\"hello world\""},
	{origin: "cloudflare executor test: a thrown error", tool: "execute", code: "async () => { throw new Error(\"boom\"); }", err: "UNCAUGHT_EXCEPTION"},
	{origin: "cloudflare executor test: fetch is blocked", tool: "execute", code: "async () => { const r = await fetch(\"https://example.com\"); return r.status; }", err: "UNCAUGHT_EXCEPTION", hint: "no network"},
	{origin: "cloudflare executor test: a fenced bare expression", tool: "execute", code: "```js\n1 + 1\n```", want: "2"},
	{origin: "cloudflare executor test: a bare value", tool: "execute", code: "42", want: "42"},
	{origin: "cloudflare executor test: a delay awaited through setTimeout", tool: "execute", code: "async () => { await new Promise(r => setTimeout(r, 5)); return 'done'; }", want: "\"done\""},
	{origin: "cloudflare executor test: a dynamic import of a module", tool: "execute", code: "async () => {\n  const { get_sum } = await import(\"@codemode/servers/everything\");\n  return get_sum({ a: 2, b: 2 });\n}", want: "\"The sum of 2 and 2 is 4.\""},
	{origin: "cloudflare normalizer test: a sync arrow", tool: "execute", code: "() => { return 1; }", want: "1"},
	{origin: "cloudflare normalizer test: an arrow with parameters", tool: "execute", code: "async (a, b) => { return 7; }", want: "7"},
	{origin: "cloudflare normalizer test: statements then an expression", tool: "execute", code: "const x = 10;\nx * 2", want: "20"},
	{origin: "cloudflare normalizer test: an await expression", tool: "execute", code: "await everything.echo({ message: 'hi' })", want: "\"Echo: hi\""},
	{origin: "cloudflare normalizer test: a declaration only (null, said so)", tool: "execute", code: "const x = 42", want: "null", warn: "NO_RESULT", hint: "return x;"},
	{origin: "cloudflare normalizer test: a ```javascript fence", tool: "execute", code: "```javascript\nconst x = 1;\nx + 2\n```", want: "3"},
	{origin: "cloudflare normalizer test: a ```tsx fence", tool: "execute", code: "```tsx\n() => 42\n```", want: "42"},
	{origin: "cloudflare normalizer test: a bare fence with trailing spaces", tool: "execute", code: "```\nasync () => { return 1; }\n```  ", want: "1"},
	{origin: "cloudflare normalizer test: export default of an arrow", tool: "execute", code: "export default async () => { return 1; }", want: "1"},
	{origin: "cloudflare normalizer test: export default of a value", tool: "execute", code: "export default 42", want: "42"},
	{origin: "cloudflare normalizer test: export default of an anonymous function", tool: "execute", code: "export default function() { return 42; }", want: "42"},
	{origin: "cloudflare normalizer test: a named function declaration, never called", tool: "execute", code: "async function doStuff() { return 42; }", want: "42"},
	{origin: "cloudflare normalizer test: a helper, then its call", tool: "execute", code: "function helper() { return 1; }\nhelper()", want: "1"},
	{origin: "cloudflare normalizer test: an async IIFE", tool: "execute", code: "(async () => { return 42; })()", want: "42"},
	{origin: "cloudflare normalizer test: a top-level return", tool: "execute", code: "return 42", want: "42"},
	{origin: "cloudflare normalizer test: fence, export default and arrow at once", tool: "execute", code: "```js\nexport default async () => { return 1; }\n```", want: "1"},
	{origin: "cloudflare normalizer test: fence around a named function", tool: "execute", code: "```js\nasync function run() { return await everything.echo({ message: 'test' }); }\n```", want: "\"Echo: test\""},
	{origin: "cloudflare normalizer test: a syntax error", tool: "execute", code: "const = oops {{{", err: "SYNTAX_ERROR"},
	{origin: "cloudflare codemode-mcp example: reading the MCP envelope (results are unwrapped: the hint says so)", tool: "execute", code: "async () => {\n  const sum = await everything.get_sum({ a: 5, b: 3 });\n  const greeting = await everything.echo({\n    message: \"Result is \" + sum.content[0].text\n  });\n  return greeting;\n};", err: "UNCAUGHT_EXCEPTION", hint: "results are unwrapped"},
	{origin: "opencode's advice: a dashed tool name in brackets (the error names the function)", tool: "execute", code: "async () => await everything[\"get-sum\"]({ a: 1, b: 1 })", err: "UNCAUGHT_EXCEPTION", hint: "everything.get_sum("},
	{origin: "cloudflare README (the codemode namespace holds every tool): branch on a value, call another", tool: "execute", code: "async () => {\n  const weather = await codemode.echo({ message: \"sunny in Lisbon\" });\n  if (weather.includes(\"sunny\")) {\n    await codemode.create_entities({\n      entities: [{ name: \"cf-lisbon\", entityType: \"note\", observations: [`It's ${weather}`] }]\n    });\n  }\n  return { weather, notified: true };\n};", want: "{\"weather\":\"Echo: sunny in Lisbon\",\"notified\":true}"},
	{origin: "cloudflare MCP tools in the codemode namespace: <server>_<tool>", tool: "execute", code: "async () => {\n  const sum = await codemode.everything_get_sum({ a: 2, b: 5 });\n  return sum;\n}", want: "\"The sum of 2 and 5 is 7.\""},
	{origin: "cloudflare generated code: an executeTask function over codemode, never called", tool: "execute", code: "async function executeTask() {\n  const location = await codemode.echo({ message: \"NYC\" });\n  const forecast = await codemode.get_sum({ a: 60, b: 12 });\n  await codemode.add_observations({\n    observations: [{ entityName: \"cf-lisbon\", contents: [`${location}: ${forecast}`] }]\n  });\n  return { success: true, forecast };\n}", want: "{\"success\":true,\"forecast\":\"The sum of 60 and 12 is 72.\"}"},
	{origin: "cloudflare README: a tool codemode does not have (the hint says how to find it)", tool: "execute", code: "async () => {\n  const weather = await codemode.getWeather({ location: \"London\" });\n  return weather.conditions;\n};", err: "UNCAUGHT_EXCEPTION", hint: "codemode.search(\"getWeather\")"},
}, {
	// Cloudflare's API server: search over spec.paths, the OpenAPI form of the operations; execute with the servers as globals
	{origin: "cloudflare API README: endpoints by tag", tool: "search", code: "async () => {\n    const results = [];\n    for (const [path, methods] of Object.entries(spec.paths)) {\n      for (const [method, op] of Object.entries(methods)) {\n        if (op.tags?.some(t => t.toLowerCase() === 'memory')) {\n          results.push({ method: method.toUpperCase(), path, summary: op.summary });\n        }\n      }\n    }\n    return results.map((r) => r.method + \" \" + r.path).filter((p) => p.includes(\"entities\"));\n  }", want: "[\"POST /memory/create_entities\",\"POST /memory/delete_entities\"]"},
	{origin: "cloudflare API description: an endpoint's requestBody schema", tool: "search", code: "async () => {\n  const op = spec.paths['/memory/create_entities']?.post;\n  return { summary: op?.summary, requestBody: op?.requestBody };\n}", want: "{\"summary\":\"Create multiple new entities in the knowledge graph\",\"requestBody\":{\"required\":true,\"content\":{\"application/json\":{\"schema\":{\"type\":\"object\"}}}}}"},
	{origin: "cloudflare API description: an endpoint's parameters", tool: "search", code: "async () => {\n  const op = spec.paths['/everything/get_sum']?.post;\n  return op?.parameters.map((p) => [p.name, p.required]);\n}", want: "[[\"a\",true],[\"b\",true]]"},
	{origin: "cloudflare API blog: paths matching words, every method", tool: "search", code: "async () => {\n  const results = [];\n  for (const [path, methods] of Object.entries(spec.paths)) {\n    if (path.includes('/filesystem/') && path.includes('read_')) {\n      for (const [method, op] of Object.entries(methods)) {\n        results.push({ method: method.toUpperCase(), path, summary: op.summary });\n      }\n    }\n  }\n  return results.length;\n}", want: "4"},
	{origin: "cloudflare API blog: walk a response schema", tool: "search", code: "async () => {\n  const op = spec.paths['/everything/get_structured_content']?.post;\n  const schema = op?.responses?.['200']?.content?.['application/json']?.schema;\n  return { props: Object.keys(schema?.properties ?? {}).sort() };\n}", want: "{\"props\":[\"conditions\",\"humidity\",\"temperature\"]}"},
	{origin: "cloudflare API README: execute calls what search found", tool: "execute", code: "async () => {\n    const response = await everything.get_sum({ a: 5, b: 5 });\n    return response;\n  }", want: "\"The sum of 5 and 5 is 10.\""},
	{origin: "cloudflare API README: execute through cloudflare.request, a POST with a body, reading result", tool: "execute", code: "async () => {\n    const response = await cloudflare.request({\n      method: \"POST\",\n      path: \"/everything/get_sum\",\n      body: { a: 20, b: 22 }\n    });\n    return response.result;\n  }", want: "\"The sum of 20 and 22 is 42.\""},
	{origin: "cloudflare API docs: a GET through cloudflare.request, the whole envelope", tool: "execute", code: "async () => {\n  const r = await cloudflare.request({ method: \"GET\", path: \"/memory/read_graph\" });\n  return { success: r.success, isArray: Array.isArray(r.result.entities) };\n}", want: "{\"success\":true,\"isArray\":true}"},
	{origin: "cloudflare API docs: a path no server has (the hint says what paths are)", tool: "execute", code: "async () => cloudflare.request({ method: \"GET\", path: \"/accounts\" })", err: "UNCAUGHT_EXCEPTION", hint: "/<serverId>/<tool>"},
}, {
	// Anthropic's article: TypeScript modules importing the servers, on codemode_run
	{origin: "article: read a document, write it into another system (no result, said so)", tool: "codemode_run", code: "// Read a file and store it in the knowledge graph\nimport * as filesystem from '@codemode/servers/filesystem';\nimport * as memory from '@codemode/servers/memory';\n\nconst transcript = (await filesystem.read_text_file({ path: '{{DIR}}/notes.txt' })).content;\nawait memory.create_entities({\n  entities: [{ name: 'SalesMeeting', entityType: 'meeting', observations: [transcript] }]\n});", want: "null", warn: "NO_RESULT"},
	{origin: "article: the servers/ directory imported by relative path", tool: "codemode_run", code: "import * as filesystem from './servers/filesystem';\nimport * as memory from './servers/memory';\n\nconst transcript = (await filesystem.read_text_file({ path: '{{DIR}}/notes.txt' })).content;\nawait memory.create_entities({\n  entities: [{ name: 'SalesMeeting2', entityType: 'meeting', observations: [transcript] }]\n});", err: "IMPORT_FAILURE", hint: "\"@codemode/servers/filesystem\""},
	{origin: "article: the servers/ directory imported by relative path, with a return", tool: "codemode_run", code: "import * as filesystem from './servers/filesystem';\n\nconst transcript = (await filesystem.read_text_file({ path: '{{DIR}}/notes.txt' })).content;\nreturn transcript;", err: "UNCAUGHT_EXCEPTION", hint: "\"@codemode/servers/filesystem\""},
	{origin: "article: filter rows in the sandbox, log a few", tool: "codemode_run", code: "import * as filesystem from \"@codemode/servers/filesystem\";\nconst allRows = (await filesystem.read_text_file({ path: \"{{DIR}}/orders.csv\" })).content.split(\"\\n\").filter(Boolean).map((l) => { const [id, Status] = l.split(\",\"); return { id, Status }; });\nconst pendingOrders = allRows.filter(row =>\n  row[\"Status\"] === 'pending'\n);\nconsole.log(`Found ${pendingOrders.length} pending orders`);\nreturn pendingOrders.map((o) => o.id);", want: "[\"1\",\"3\"]"},
	{origin: "article: poll until a condition holds, waiting between tries", tool: "codemode_run", code: "import * as everything from \"@codemode/servers/everything\";\nlet found = false;\nlet n = 0;\nwhile (!found) {\n  const messages = await everything.echo({ message: n++ > 1 ? \"deployment complete\" : \"pending\" });\n  found = messages.includes('deployment complete');\n  if (!found) await new Promise(r => setTimeout(r, 1));\n}\nconsole.log('Deployment notification received');\nexport default n;", want: "3"},
	{origin: "article: data flows from one tool to the next in a loop", tool: "codemode_run", code: "import * as memory from \"@codemode/servers/memory\";\nconst sheet = { rows: [{ name: \"lead-1\", email: \"a@x\" }, { name: \"lead-2\", email: \"b@x\" }] };\nfor (const row of sheet.rows) {\n  await memory.create_entities({\n    entities: [{ name: row.name, entityType: \"Lead\", observations: [row.email] }]\n  });\n}\nglobalThis.__codemode_result__ = `Updated ${sheet.rows.length} leads`;", want: "\"Updated 2 leads\""},
	{origin: "article: Node's fs for state (the hint names the filesystem server)", tool: "codemode_run", code: "import * as memory from \"@codemode/servers/memory\";\nconst leads = (await memory.read_graph({})).entities;\nconst csvData = leads.map(l => `${l.name},${l.entityType}`).join('\\n');\nawait fs.writeFile('./workspace/leads.csv', csvData);", err: "UNCAUGHT_EXCEPTION", hint: "\"@codemode/servers/filesystem\""},
	{origin: "article: a skill, a module exporting a function, called as its default", tool: "codemode_run", code: "import * as filesystem from \"@codemode/servers/filesystem\";\nasync function saveSheetAsCsv(sheetId: string) {\n  const data = [[\"a\", \"b\"], [\"c\", \"d\"]];\n  const csv = data.map(row => row.join(',')).join('\\n');\n  await filesystem.write_file({ path: `{{DIR}}/sheet-${sheetId}.csv`, content: csv });\n  return `sheet-${sheetId}.csv`;\n}\nexport default async () => saveSheetAsCsv(\"abc123\");", want: "\"sheet-abc123.csv\""},
}, {
	// Bifrost: executeToolCode's fixtures and docs (TypeScript function bodies; imports and exports stripped; the last expression is the value)
	{origin: "bifrost fixture: a simple expression", tool: "executeToolCode", code: "1 + 1", want: "2"},
	{origin: "bifrost fixture: a string literal", tool: "executeToolCode", code: "\"hello\"", want: "\"hello\""},
	{origin: "bifrost fixture: var then its name", tool: "executeToolCode", code: "var x = 5; x", want: "5"},
	{origin: "bifrost fixture: a log, then a value", tool: "executeToolCode", code: "console.log(\"test\"); \"logged\"", want: "\"logged\""},
	{origin: "bifrost fixture: a bare tool call", tool: "executeToolCode", code: "everything.echo({message: \"hello\"})", want: "\"Echo: hello\""},
	{origin: "bifrost fixture: a then chain", tool: "executeToolCode", code: "everything.echo({message: \"test\"}).then(result => { console.log(result); return result; })", want: "\"Echo: test\""},
	{origin: "bifrost fixture: a chain of two tools", tool: "executeToolCode", code: "everything.get_sum({a: 1, b: 2}).then(result => everything.echo({message: result}))", want: "\"Echo: The sum of 1 and 2 is 3.\""},
	{origin: "bifrost fixture: a catch that handles", tool: "executeToolCode", code: "everything.get_sum({}).catch(err => { console.error(err); return \"handled\"; })", want: "\"handled\""},
	{origin: "bifrost fixture: an import of a module that does not exist, unused", tool: "executeToolCode", code: "import { something } from \"module\"; 1 + 1", want: "2"},
	{origin: "bifrost fixture: export stripped", tool: "executeToolCode", code: "export const x = 5; x", want: "5"},
	{origin: "bifrost fixture: several imports and an export", tool: "executeToolCode", code: "import a from \"a\"; import b from \"b\"; export const c = 1; 2 + 2", want: "4"},
	{origin: "bifrost fixture: an import between comments", tool: "executeToolCode", code: "// comment\nimport x from \"x\";\n// another comment\n2 + 2", want: "4"},
	{origin: "bifrost fixture: an object literal as the whole code", tool: "executeToolCode", code: "{a: 1, b: 2}", want: "{\"a\":1,\"b\":2}"},
	{origin: "bifrost fixture: an if/else as the last statement", tool: "executeToolCode", code: "if (true) { 1 } else { 2 }", want: "1"},
	{origin: "bifrost fixture: nested promise chains", tool: "executeToolCode", code: "Promise.resolve(1).then(x => Promise.resolve(x + 1).then(y => y + 1))", want: "3"},
	{origin: "bifrost fixture: a rejected promise caught", tool: "executeToolCode", code: "Promise.reject(\"error\").catch(err => \"handled\")", want: "\"handled\""},
	{origin: "bifrost fixture: map over literals", tool: "executeToolCode", code: "[{a: 1}, {b: 2}].map(x => x.a || x.b)", want: "[1,2]"},
	{origin: "bifrost fixture: a chain over several lines", tool: "executeToolCode", code: "everything.echo({message: \"test\"})\n  .then(result => {\n    return result;\n  })", want: "\"Echo: test\""},
	{origin: "bifrost fixture: a lone function definition", tool: "executeToolCode", code: "function test() { return 1; }", want: "1"},
	{origin: "bifrost fixture: typeof fetch", tool: "executeToolCode", code: "typeof fetch === \"undefined\"", want: "true"},
	{origin: "bifrost fixture: typeof require", tool: "executeToolCode", code: "typeof require === \"undefined\"", want: "true"},
	{origin: "bifrost fixture: a for loop, then the sum", tool: "executeToolCode", code: "var sum = 0; for (var i = 0; i < 5; i++) { sum += i; } sum", want: "10"},
	{origin: "bifrost fixture: await, then return", tool: "executeToolCode", code: "const result = await everything.echo({message: \"x\"}); return result", want: "\"Echo: x\""},
	{origin: "bifrost fixture: a type error tsc would catch (types are stripped)", tool: "executeToolCode", code: "const x: string = 123; return x", want: "123"},
	{origin: "bifrost fixture: code escaped twice (literal \\n)", tool: "executeToolCode", code: "const r = await everything.echo({message: \"nl\"});\\nreturn r;", want: "\"Echo: nl\""},
	{origin: "bifrost fixture: an undefined server", tool: "executeToolCode", code: "nonexistentServer.tool({})", err: "UNCAUGHT_EXCEPTION", hint: "use one of the server objects: everything"},
	{origin: "bifrost fixture: an undefined tool", tool: "executeToolCode", code: "everything.nonexistentTool({})", err: "UNCAUGHT_EXCEPTION", hint: "call one of the server's tools"},
	{origin: "bifrost fixture: a syntax error", tool: "executeToolCode", code: "var x = ", err: "SYNTAX_ERROR"},
	{origin: "bifrost fixture: invalid arguments", tool: "executeToolCode", code: "const result = await everything.echo({invalid: \"arg\"}); return result", err: "UNCAUGHT_EXCEPTION", hint: "\"message\""},
	{origin: "bifrost test: fetch's hint says it is not available", tool: "executeToolCode", code: "fetch(\"https://example.com\")", err: "UNCAUGHT_EXCEPTION", hint: "fetch is not available"},
	{origin: "bifrost docs: search, map, log, return a summary", tool: "executeToolCode", code: "// Search and return formatted results\nconst results = await memory.search_nodes({ query: \"lead\" });\nconst titles = results.entities.map(item => item.name).sort();\nconsole.log(\"Found\", titles.length, \"entities\");\nreturn { titles, count: titles.length };", want: "{\"titles\":[\"lead-1\",\"lead-2\"],\"count\":2}"},
	{origin: "bifrost description: log a result's structure with a recursive helper", tool: "executeToolCode", code: "const result = await memory.read_graph({}); const getStruct = (o, d=0) => d>2 ? '...' : o===null ? 'null' : Array.isArray(o) ? `Array[${o.length}]` : typeof o !== 'object' ? typeof o : Object.keys(o).reduce((a,k) => (a[k]=getStruct(o[k],d+1), a), {}); console.log('Structure:', getStruct(result)); return Object.keys(result);", want: "[\"entities\",\"relations\"]"},
}, {
	// UTCP code-mode: call_tool_chain bodies (UTCP's calls are synchronous: a call's value used without await is awaited), and its introspection globals
	{origin: "utcp test: arithmetic on locals", tool: "executeToolCode", code: "\n      const x = 5;\n      const y = 10;\n      return x + y;\n    ", want: "15"},
	{origin: "utcp test: a call without await, returned", tool: "executeToolCode", code: "\n      const result = everything.get_sum({ a: 15, b: 25 });\n      return result;\n    ", want: "\"The sum of 15 and 25 is 40.\""},
	{origin: "utcp README quick start: a call's value without await, logged, then returned", tool: "executeToolCode", code: "\n  const data = everything.echo({ message: 'London' });\n  console.log('Weather:', data);\n  return data;\n", want: "\"Echo: London\""},
	{origin: "utcp's synchronous call in a Cloudflare-style arrow on execute (run as written: the warning names the await)", tool: "execute", code: "async () => {\n  const r = everything.get_structured_content({ location: 'Chicago' });\n  return r.temperature;\n}", want: "null", warn: "UNAWAITED_PROMISE", hint: "const r = await everything.get_structured_content(...)"},
	{origin: "utcp's synchronous call in an arrow, a field of a field read (the error's hint names the await)", tool: "execute", code: "async () => {\n  const r = everything.get_structured_content({ location: 'Chicago' });\n  return r.temperature.toFixed(1);\n}", err: "UNCAUGHT_EXCEPTION", hint: "await everything.get_structured_content("},
	{origin: "utcp test: values of calls without await used in an object (a warning says so)", tool: "executeToolCode", code: "\n      const mathResult = everything.get_sum({ a: 10, b: 5 });\n      const greetResult = everything.echo({ message: \"Alice\" });\n\n      return {\n        math: mathResult,\n        greeting: greetResult,\n        combined: `${greetResult} ${mathResult}`\n      };\n    ", want: "{\"math\":\"The sum of 10 and 5 is 15.\",\"greeting\":\"Echo: Alice\",\"combined\":\"Echo: Alice The sum of 10 and 5 is 15.\"}"},
	{origin: "utcp test: a chain of calls without await, each using the last's fields", tool: "executeToolCode", code: "\n      // Step 1: read the graph\n      const graph = memory.read_graph({});\n      // Step 2: use its size in another call\n      const addResult = everything.get_sum({ a: graph.relations.length, b: 100 });\n      return { steps: { graph: graph.entities.length > 0, addition: addResult } };\n    ", want: "{\"steps\":{\"graph\":true,\"addition\":\"The sum of 0 and 100 is 100.\"}}"},
	{origin: "utcp: a call without await inside a plain callback (cannot be awaited there: a warning says how)", tool: "executeToolCode", code: "\n      const names = [\"a\", \"b\"];\n      return names.map((n) => { const r = everything.echo({ message: n }); return r.length; });\n    ", want: "[null,null]", warn: "UNAWAITED_PROMISE", hint: "make the function async"},
	{origin: "a result holding promises (a warning says the values are missing)", tool: "execute", code: "async () => ({ a: everything.echo({ message: 'x' }), b: 1 })", want: "{\"a\":{},\"b\":1}", warn: "UNAWAITED_PROMISE", hint: "put await before the call"},
	{origin: "utcp test: a failing call without await in try (the hint says await is missing)", tool: "executeToolCode", code: "\n      try {\n        everything.get_sum({ a: \"x\" });\n        return { error: false };\n      } catch (error) {\n        return { error: true, message: error.message, caught: true };\n      }\n    ", err: "UNCAUGHT_EXCEPTION", hint: "was not awaited"},
	{origin: "utcp test: built-ins", tool: "executeToolCode", code: "\n      return {\n        mathPi: Math.PI,\n        arrayMethods: Array.isArray([1, 2, 3]),\n        jsonStringify: JSON.stringify({ test: true }),\n        objectKeys: Object.keys({ a: 1, b: 2 })\n      };\n    ", want: "{\"mathPi\":3.141592653589793,\"arrayMethods\":true,\"jsonStringify\":\"{\\\"test\\\":true}\",\"objectKeys\":[\"a\",\"b\"]}"},
	{origin: "utcp test: __interfaces and __getToolInterface", tool: "executeToolCode", code: "\n      return {\n        hasInterfaces: typeof __interfaces === 'string',\n        interfacesContainNamespace: __interfaces.includes('namespace everything'),\n        canGetSpecificInterface: typeof __getToolInterface === 'function',\n        interfaceIsString: typeof __getToolInterface('everything.get_sum') === 'string',\n        unknown: __getToolInterface('everything.nope')\n      };\n    ", want: "{\"hasInterfaces\":true,\"interfacesContainNamespace\":true,\"canGetSpecificInterface\":true,\"interfaceIsString\":true,\"unknown\":null}"},
	{origin: "utcp README: runtime introspection decides what to call", tool: "execute", code: "\n  // Discover available tools at runtime\n  console.log('Available interfaces:', __interfaces.length);\n\n  // Get specific tool interface for validation\n  const prInterface = __getToolInterface('everything.echo');\n  console.log('PR tool expects:', prInterface);\n\n  // Use interface info for dynamic workflows\n  const hasSlackTools = __interfaces.includes('namespace slack');\n  if (hasSlackTools) {\n    await slack.post_message({ channel: '#dev', text: 'Analysis complete' });\n  }\n\n  return { toolsAvailable: hasSlackTools, echo: prInterface.includes('message') };\n", want: "{\"toolsAvailable\":false,\"echo\":true}"},
	{origin: "utcp test: an explicit async IIFE returned", tool: "executeToolCode", code: "\n        return await (async () => {\n          const r = await everything.get_sum({ a: 7, b: 8 });\n          return r;\n        })();\n      ", want: "\"The sum of 7 and 8 is 15.\""},
	{origin: "utcp test: Promise.resolve around a call", tool: "executeToolCode", code: "\n        console.log('inside async');\n        const r = await Promise.resolve(everything.get_sum({ a: 100, b: 200 }));\n        return r;\n      ", want: "\"The sum of 100 and 200 is 300.\""},
	{origin: "utcp test: return null", tool: "executeToolCode", code: "return null;", want: "null"},
	{origin: "utcp test: a rejected async IIFE", tool: "executeToolCode", code: "\n        await (async () => { throw new Error('async boom'); })();\n        return 'unreached';\n      ", err: "UNCAUGHT_EXCEPTION"},
	{origin: "utcp test: the console's four levels", tool: "executeToolCode", code: "\n      console.log('Regular log');\n      console.error('This is an error');\n      console.warn('This is a warning');\n      console.info('This is info');\n\n      return 'done';\n    ", want: "\"done\""},
	{origin: "utcp README: several calls, a summary object", tool: "executeToolCode", code: "\n  // Chain multiple operations in one request\n  const graph = await memory.read_graph({});\n  const sum = await everything.get_sum({ a: 1, b: 2 });\n  const echo = await everything.echo({ message: 'pr' });\n\n  // Process data in-sandbox\n  return {\n    title: echo,\n    hasEntities: graph.entities.length > 0,\n    sum\n  };\n", want: "{\"title\":\"Echo: pr\",\"hasEntities\":true,\"sum\":\"The sum of 1 and 2 is 3.\"}"},
	{origin: "utcp README: try, log at levels, rethrow", tool: "executeToolCode", code: "\n  try {\n    console.log('Starting multi-step workflow...');\n    const data = await memory.read_graph({});\n    console.log('Data fetched successfully');\n    const processed = await everything.echo({ message: String(data.relations.length) });\n    console.warn('Processing completed with', 0, 'warnings');\n    return processed;\n  } catch (error) {\n    console.error('Workflow failed:', error.message);\n    throw error;\n  }\n", want: "\"Echo: 0\""},
}, {
	// pctx: an async function run() that pctx calls itself, beside helpers; modules with a default export
	{origin: "pctx description: run, declared and never called", tool: "executeToolCode", code: "async function run() {\n    const s = await everything.get_sum({ a: 1, b: 2 });\n    return s;\n}", want: "\"The sum of 1 and 2 is 3.\""},
	{origin: "pctx: run beside a helper function", tool: "executeToolCode", code: "function summarize(items: string[]) {\n  return items.join(\", \");\n}\n\nasync function run() {\n  const a = await everything.echo({ message: \"a\" });\n  const b = await everything.echo({ message: \"b\" });\n  return summarize([a, b]);\n}", want: "\"Echo: a, Echo: b\""},
	{origin: "pctx: run beside a constant", tool: "executeToolCode", code: "const NAMES = [\"x\", \"y\"];\n\nasync function run() {\n  const out = [];\n  for (const n of NAMES) out.push(await everything.echo({ message: n }));\n  return out;\n}", want: "[\"Echo: x\",\"Echo: y\"]"},
	{origin: "pctx: run on execute", tool: "execute", code: "async function run() {\n  const graph = await memory.read_graph({});\n  return { entities: graph.entities.length > 0 };\n}", want: "{\"entities\":true}"},
	{origin: "pctx: run bound to a const, never called", tool: "executeToolCode", code: "const run = async () => {\n  const s = await everything.get_sum({ a: 2, b: 3 });\n  return s;\n};", want: "\"The sum of 2 and 3 is 5.\""},
	{origin: "pctx runtime test: a typed default export", tool: "executeToolCode", code: "const x: number = 1 + 1;\nexport default x;", want: "2"},
	{origin: "pctx runtime test: logs, then a default export", tool: "executeToolCode", code: "console.log(\"Processing...\");\nconst result = { value: 42 };\nconsole.log(\"Done!\");\nexport default result;", want: "{\"value\":42}"},
	{origin: "pctx runtime test: no default export, only a log", tool: "executeToolCode", code: "const x = 42;\nconsole.log(x);", want: "null"},
	{origin: "pctx README: filter in the sandbox, log a count", tool: "executeToolCode", code: "const sheet = (await memory.read_graph({})).entities;\nconst orders = sheet.filter((row) => row.entityType === \"Lead\");\nconsole.log(`Found ${orders.length} orders`);\nreturn orders.length;", want: "2"},
	{origin: "pctx: run with try/catch around a refused call", tool: "executeToolCode", code: "async function run() {\n  try {\n    const r = await everything.get_sum({ a: 1 });\n    return r;\n  } catch (e) {\n    console.log(\"failed:\", e.message);\n    return { error: e.name };\n  }\n}", want: "{\"error\":\"SchemaValidationError\"}"},
}, {
	// Thoughtbox: its docs' and test suite's scripts on thoughtbox_search and thoughtbox_execute
	{origin: "thoughtbox docs: one module's operations", tool: "thoughtbox_search", code: "async (catalog) => Object.keys(catalog.operations.session).sort()", want: "[\"analyze\",\"export\",\"extractLearnings\",\"get\",\"list\",\"resume\",\"search\"]"},
	{origin: "thoughtbox docs: operations whose name or description mention export", tool: "thoughtbox_search", code: "async (catalog) => {\nconst out = {};\nfor (const [mod, ops] of Object.entries(catalog.operations)) {\nfor (const [name, op] of Object.entries(ops)) {\nif (name.includes(\"export\") || op.description.includes(\"export\")) {\nout[`${mod}.${name}`] = op.signature;\n}\n}\n}\nreturn out;\n}", want: "{\"session.export\":\"tb.session.export(sessionId, format?)\"}"},
	{origin: "thoughtbox test: an operation under the name Thoughtbox's catalog gives it", tool: "thoughtbox_search", code: "async () => catalog.operations.session.session_list.signature", want: "\"tb.session.list({ limit?, offset?, tags? })\""},
	{origin: "thoughtbox suite: counts of prompts, resources and templates", tool: "thoughtbox_search", code: "async () => ({\n     prompts: catalog.prompts.length,\n     resources: catalog.resources.length,\n     resourceTemplates: catalog.resourceTemplates.length\n   })", want: "{\"prompts\":0,\"resources\":0,\"resourceTemplates\":0}"},
	{origin: "thoughtbox suite: module names", tool: "thoughtbox_search", code: "async () => Object.keys(catalog.operations).sort()", want: "[\"knowledge\",\"session\",\"thought\"]"},
	{origin: "thoughtbox suite: filter prompts", tool: "thoughtbox_search", code: "async () => catalog.prompts.filter(p => p.name.includes(\"spec\"))", want: "[]"},
	{origin: "thoughtbox suite: templates, with a log", tool: "thoughtbox_search", code: "async () => {\n     console.log(\"listing templates\");\n     return catalog.resourceTemplates.map(t => t.uriTemplate);\n   }", want: "[]"},
	{origin: "thoughtbox docs: record a thought", tool: "thoughtbox_execute", code: "async () => {\nreturn await tb.thought({\nthought: \"Retry logic fails because the backoff multiplier resets on partial success.\",\nthoughtType: \"reasoning\",\nnextThoughtNeeded: true,\nconfidence: \"medium\"\n});\n}", want: "{\"thoughtType\":\"reasoning\",\"confidence\":\"medium\",\"thoughtNumber\":1}"},
	{origin: "thoughtbox docs: a decision frame", tool: "thoughtbox_execute", code: "async () => tb.thought({\nthought: \"Choosing between Redis and in-memory caching for session state.\",\nthoughtType: \"decision_frame\",\nnextThoughtNeeded: false,\noptions: [\n{ label: \"Redis — durable, shared across instances\", selected: false },\n{ label: \"In-memory — zero dependencies\", selected: false }\n]\n})", want: "{\"thoughtType\":\"decision_frame\",\"thoughtNumber\":2}"},
	{origin: "thoughtbox docs: list recent sessions", tool: "thoughtbox_execute", code: "async () => (await tb.session.list({ limit: 5 })).sessions.length", want: "1"},
	{origin: "thoughtbox docs: an entity and an observation", tool: "thoughtbox_execute", code: "async () => {\nconst entity = await tb.knowledge.createEntity({\nname: \"rate-limiting-strategy\",\ntype: \"Decision\",\nlabel: \"Chose token bucket over sliding window\"\n});\nawait tb.knowledge.addObservation({\nentity_id: entity.id,\ncontent: \"Token bucket chosen for burst tolerance and simpler implementation.\"\n});\nreturn entity;\n}", want: "{\"name\":\"rate-limiting-strategy\",\"type\":\"Decision\"}"},
	{origin: "thoughtbox suite: three thoughts with totalThoughts and verbose", tool: "thoughtbox_execute", code: "async () => {\n     const t1 = await tb.thought({ thought: \"Test 1: Forward Thinking - Step 1\", thoughtType: \"reasoning\", nextThoughtNeeded: true, totalThoughts: 3, sessionTitle: \"Test 1: Forward Thinking\", verbose: true });\n     const t2 = await tb.thought({ thought: \"Test 1: Forward Thinking - Step 2\", thoughtType: \"reasoning\", nextThoughtNeeded: true, totalThoughts: 3, verbose: true });\n     const t3 = await tb.thought({ thought: \"Test 1: Forward Thinking - Step 3\", thoughtType: \"reasoning\", nextThoughtNeeded: false, totalThoughts: 3, verbose: true });\n     return [t1.thoughtNumber, t2.thoughtNumber, t3.thoughtNumber, t1.sessionId === t3.sessionId, t3.totalThoughts];\n   }", want: "[1,2,3,true,3]"},
	{origin: "thoughtbox suite: branches from a thought, seen in the session", tool: "thoughtbox_execute", code: "async () => {\n     const t1 = await tb.thought({ thought: \"Test 3: Main line 1\", thoughtType: \"reasoning\", nextThoughtNeeded: true, totalThoughts: 3, sessionTitle: \"Test 3: Branching\", verbose: true });\n     const t2 = await tb.thought({ thought: \"Test 3: Main line 2\", thoughtType: \"reasoning\", nextThoughtNeeded: true, verbose: true });\n     const t3 = await tb.thought({ thought: \"Test 3: Main line 3\", thoughtType: \"reasoning\", nextThoughtNeeded: true, verbose: true });\n     const branchA = await tb.thought({ thought: \"Test 3: Branch A from thought 2\", thoughtType: \"reasoning\", branchFromThought: 2, branchId: \"option-a\", nextThoughtNeeded: true, verbose: true });\n     const branchB = await tb.thought({ thought: \"Test 3: Branch B from thought 2\", thoughtType: \"reasoning\", branchFromThought: 2, branchId: \"option-b\", nextThoughtNeeded: false, verbose: true });\n     const session = await tb.session.get(t1.sessionId);\n     return { a: branchA.branchId, b: branchB.branchId, branches: Object.keys(session.branches).sort(), count: session.session.thoughtCount };\n   }", want: "{\"a\":\"option-a\",\"b\":\"option-b\",\"branches\":[\"option-a\",\"option-b\"],\"count\":5}"},
	{origin: "thoughtbox suite: a decision frame with verbose", tool: "thoughtbox_execute", code: "async () => await tb.thought({\n     thought: \"Test 5: Choosing between architectures\",\n     thoughtType: \"decision_frame\",\n     confidence: \"medium\",\n     options: [\n       { label: \"Option A: Monolith\", selected: true, reason: \"Simpler deployment\" },\n       { label: \"Option B: Microservices\", selected: false, reason: \"Too complex for team size\" }\n     ],\n     nextThoughtNeeded: false,\n     sessionTitle: \"Test 5: Decision Frame\",\n     verbose: true\n   })", want: "{\"thoughtType\":\"decision_frame\",\"confidence\":\"medium\"}"},
	{origin: "thoughtbox suite: agent attribution kept", tool: "thoughtbox_execute", code: "async () => {\n     const tagged = await tb.thought({ thought: \"Test 12: Agent-attributed thought\", thoughtType: \"reasoning\", agentId: \"agent-1\", agentName: \"Researcher\", nextThoughtNeeded: false, sessionTitle: \"Test 12: Multi-Agent\", verbose: true });\n     return { agentId: tagged.agentId, agentName: tagged.agentName };\n   }", want: "{\"agentId\":\"agent-1\",\"agentName\":\"Researcher\"}"},
	{origin: "thoughtbox suite: console capture", tool: "thoughtbox_execute", code: "async () => {\n     console.log(\"test 13 smoke\");\n     return \"ok\";\n   }", want: "\"ok\""},
	{origin: "thoughtbox suite: an error surfaces", tool: "thoughtbox_execute", code: "async () => { throw new Error(\"test 14 boom\") }", err: "UNCAUGHT_EXCEPTION"},
	{origin: "thoughtbox suite: legacy namespaces are absent", tool: "thoughtbox_execute", code: "async () => ({ hub: typeof tb.hub, init: typeof tb.init })", want: "{\"hub\":\"undefined\",\"init\":\"undefined\"}"},
	{origin: "thoughtbox suite: pagination", tool: "thoughtbox_execute", code: "async () => {\n     const page1 = await tb.session.list({ limit: 2, offset: 0 });\n     const page2 = await tb.session.list({ limit: 2, offset: 2 });\n     return { page1Count: page1.sessions.length, page2Count: page2.sessions.length, page1HasMore: page1.hasMore };\n   }", want: "{\"page1Count\":2,\"page2Count\":2,\"page1HasMore\":true}"},
	{origin: "thoughtbox suite: a whole session", tool: "thoughtbox_execute", code: "async () => {\n     const list = await tb.session.list({ limit: 1 });\n     const sessionId = list.sessions[0].id;\n     const full = await tb.session.get(sessionId);\n     return {\n       hasSession: !!full.session,\n       hasThoughts: Array.isArray(full.thoughts),\n       same: full.thoughts?.length === full.session?.thoughtCount\n     };\n   }", want: "{\"hasSession\":true,\"hasThoughts\":true,\"same\":true}"},
	{origin: "thoughtbox suite: resume appends to a session", tool: "thoughtbox_execute", code: "async () => {\n     const t1 = await tb.thought({ thought: \"Test 4-S: Original thought\", thoughtType: \"reasoning\", nextThoughtNeeded: false, sessionTitle: \"Test 4-S: Resume Test\" });\n     const sessionId = t1.sessionId;\n     const before = await tb.session.get(sessionId);\n     await tb.session.resume(sessionId);\n     const t2 = await tb.thought({ thought: \"Test 4-S: Resumed thought\", thoughtType: \"reasoning\", nextThoughtNeeded: false });\n     const after = await tb.session.get(sessionId);\n     return { beforeCount: before.session.thoughtCount, afterCount: after.session.thoughtCount };\n   }", want: "{\"beforeCount\":1,\"afterCount\":2}"},
	{origin: "thoughtbox suite: export as markdown", tool: "thoughtbox_execute", code: "async () => {\n     const list = await tb.session.list({ limit: 1 });\n     const exported = await tb.session.export(list.sessions[0].id, \"markdown\");\n     return { hasContent: typeof exported === \"string\" || typeof exported?.content === \"string\" };\n   }", want: "{\"hasContent\":true}"},
	{origin: "thoughtbox suite: create an entity, get it by entity_id", tool: "thoughtbox_execute", code: "async () => {\n     const created = await tb.knowledge.createEntity({ name: \"test-concept-001\", type: \"Concept\", label: \"Test Concept\" });\n     const retrieved = await tb.knowledge.getEntity(created.entity_id);\n     return { same: retrieved.name === created.name, type: created.type };\n   }", want: "{\"same\":true,\"type\":\"Concept\"}"},
	{origin: "thoughtbox test: getEntity by position and by named forms", tool: "thoughtbox_execute", code: "async () => {\n        const e = await tb.knowledge.createEntity({ name: \"coercion-test-entity\", type: \"Concept\", label: \"Coercion Test\" });\n        const positional = await tb.knowledge.getEntity(e.id);\n        const camel = await tb.knowledge.getEntity({ entityId: e.id });\n        const snake = await tb.knowledge.getEntity({ entity_id: e.id });\n        return [camel.id === positional.id, snake.id === positional.id];\n      }", want: "[true,true]"},
	{origin: "thoughtbox suite: an observation on an entity", tool: "thoughtbox_execute", code: "async () => {\n     const entity = await tb.knowledge.createEntity({ name: \"test-obs-entity\", type: \"Concept\", label: \"Observable\" });\n     const obs = await tb.knowledge.addObservation({ entity_id: entity.entity_id, content: \"This entity was observed during testing\" });\n     const retrieved = await tb.knowledge.getEntity(entity.entity_id);\n     return { hasId: typeof obs.observation_id === \"string\", name: retrieved.name };\n   }", want: "{\"hasId\":true,\"name\":\"test-obs-entity\"}"},
	{origin: "thoughtbox suite: relations, then a traversal", tool: "thoughtbox_execute", code: "async () => {\n     const a = await tb.knowledge.createEntity({ name: \"graph-node-a\", type: \"Concept\", label: \"Node A\" });\n     const b = await tb.knowledge.createEntity({ name: \"graph-node-b\", type: \"Insight\", label: \"Node B\" });\n     const c = await tb.knowledge.createEntity({ name: \"graph-node-c\", type: \"Decision\", label: \"Node C\" });\n     const rel1 = await tb.knowledge.createRelation({ from_id: a.entity_id, to_id: b.entity_id, relation_type: \"BUILDS_ON\" });\n     const rel2 = await tb.knowledge.createRelation({ from_id: b.entity_id, to_id: c.entity_id, relation_type: \"BUILDS_ON\" });\n     const graph = await tb.knowledge.queryGraph({ start_entity_id: a.entity_id, max_depth: 2 });\n     return { entities: graph.entities.length, relations: graph.relations.length };\n   }", want: "{\"entities\":3,\"relations\":2}"},
	{origin: "thoughtbox suite: graph stats", tool: "thoughtbox_execute", code: "async () => {\n     const stats = await tb.knowledge.stats();\n     return stats.relations > 0 && stats.entities > 0;\n   }", want: "true"},
	{origin: "thoughtbox test: export with named arguments", tool: "thoughtbox_execute", code: "async () => {\n        const t = await tb.thought({ thought: \"seed session\", thoughtType: \"reasoning\", nextThoughtNeeded: false, sessionTitle: \"Coercion Regression\" });\n        const md = await tb.session.export({ sessionId: t.sessionId ?? t.closedSessionId, format: \"markdown\", includeMetadata: true });\n        return md.includes(\"seed session\");\n      }", want: "true"},
	{origin: "thoughtbox suite: a protocol this SDK lacks (the hint lists what it has)", tool: "thoughtbox_execute", code: "async () => {\n     const init = await tb.theseus({ operation: \"init\", scope: [\"src/code-mode/execute-tool.ts\"], description: \"Test 1: Theseus lifecycle\" });\n     const status = await tb.theseus({ operation: \"status\" });\n     return { init, status };\n   }", err: "UNCAUGHT_EXCEPTION", hint: "tb.theseus is not part of this tb SDK"},
}, {
	// emceepee: codemode_execute bodies over the mcp API
	{origin: "emceepee README: count the tools", tool: "codemode_execute", code: "const tools = await mcp.listTools(); return tools.length > 10;", want: "true"},
	{origin: "emceepee README: find a tool by name, call it on its server", tool: "codemode_execute", code: "// Find all \"search\" tools and call the first one\nconst tools = await mcp.listTools();\nconst searchTools = tools.filter(t => t.name.includes('search_nodes'));\n\nif (searchTools.length === 0) {\n  return { error: 'No search tools found' };\n}\n\nconst tool = searchTools[0];\nmcp.log(`Calling ${tool.server}/${tool.name}`);\n\nconst result = await mcp.callTool(tool.server, tool.name, {\n  query: 'example'\n});\n\nreturn {\n  tool: tool.name,\n  server: tool.server,\n  result: result.content[0].type\n};", want: "{\"tool\":\"search_nodes\",\"server\":\"memory\",\"result\":\"text\"}"},
	{origin: "emceepee plan: look for a tool on every server", tool: "codemode_execute", code: "const servers = await mcp.listServers();\nfor (const s of servers) {\n  const tools = await mcp.listTools(s.name);\n  const target = tools.find(t => t.name === \"get-sum\");\n  if (target) {\n    return (await mcp.callTool(s.name, \"get-sum\", { a: 1, b: 2 })).content[0].text;\n  }\n}", want: "\"The sum of 1 and 2 is 3.\""},
	{origin: "emceepee plan: connected servers only, a fallback result", tool: "codemode_execute", code: "// Find a tool named \"echo\" on any server and call it\nconst servers = await mcp.listServers();\nfor (const server of servers.filter(s => s.status === \"connected\")) {\n  const tools = await mcp.listTools(server.name);\n  const weatherTool = tools.find(t => t.name === \"echo\");\n  if (weatherTool) {\n    return (await mcp.callTool(server.name, \"echo\", { message: \"London\" })).content[0].text;\n  }\n}\nreturn { error: \"echo tool not found on any server\" };", want: "\"Echo: London\""},
	{origin: "emceepee plan: read resources matching a pattern", tool: "codemode_execute", code: "// Read config from all servers and merge\nconst configs = {};\nconst resources = await mcp.listResources();\nfor (const r of resources.filter(r => r.uri.endsWith(\"/config.json\"))) {\n  const content = await mcp.readResource(r.server, r.uri);\n  configs[r.server] = JSON.parse(content.contents[0].text);\n}\nreturn configs;", want: "{}"},
	{origin: "emceepee plan: a pipeline in try/catch, a step that fails", tool: "codemode_execute", code: "// Run a pipeline of tools\nconst results = [];\ntry {\n  results.push(await mcp.callTool(\"everything\", \"echo\", { message: \"SELECT * FROM users LIMIT 5\" }));\n  results.push(await mcp.callTool(\"everything\", \"nope\", { data: results[0], format: \"csv\" }));\n  return { success: true };\n} catch (e) {\n  return { success: false, completedSteps: results.length };\n}", want: "{\"success\":false,\"completedSteps\":1}"},
	{origin: "emceepee test: 1 + 1", tool: "codemode_execute", code: "return 1 + 1", want: "2"},
	{origin: "emceepee test: mcp.sleep", tool: "codemode_execute", code: "await mcp.sleep(10); return 'done'", want: "\"done\""},
	{origin: "emceepee test: mcp.log between sleeps", tool: "codemode_execute", code: "\n      mcp.log(\"test1\");\n      await mcp.sleep(10);\n      mcp.log(\"test2\");\n      return \"done\";\n      ", want: "\"done\""},
	{origin: "emceepee test: callTool's content", tool: "codemode_execute", code: "\n      const result = await mcp.callTool(\"everything\", \"echo\", { message: \"hello\" });\n      return result.content[0].text;\n      ", want: "\"Echo: hello\""},
	{origin: "emceepee test: read a listed resource", tool: "codemode_execute", code: "\n      const resources = await mcp.listResources(\"everything\");\n      const content = await mcp.readResource(\"everything\", resources[0].uri);\n      return typeof content.contents[0].text;\n      ", want: "\"string\""},
	{origin: "emceepee test: typeof mcp", tool: "codemode_execute", code: "return typeof mcp", want: "\"object\""},
	{origin: "emceepee test: a syntax error", tool: "codemode_execute", code: "return {", err: "SYNTAX_ERROR"},
	{origin: "emceepee test: an undefined name", tool: "codemode_execute", code: "return undefinedVariable", err: "UNCAUGHT_EXCEPTION"},
	{origin: "emceepee test: a call's value as the last expression", tool: "codemode_execute", code: "const t = await mcp.listTools('memory');\nt.length", want: "9"},
}, {
	// Each peer's script sent to another peer's surface: the hint names what this surface has instead
	{origin: "cloudflare execute code sent to search (read-only)", tool: "search", code: "async () => await everything.echo({ message: 'x' })", err: "UNCAUGHT_EXCEPTION", hint: "call tools with the execute tool"},
	{origin: "thoughtbox search code sent to execute", tool: "execute", code: "async () => Object.keys(catalog.operations)", err: "UNCAUGHT_EXCEPTION", hint: "codemode.search("},
	{origin: "cloudflare API search code sent to executeToolCode", tool: "executeToolCode", code: "return Object.keys(spec.paths).length", err: "UNCAUGHT_EXCEPTION", hint: "listToolFiles"},
	{origin: "thoughtbox execute code sent to thoughtbox_search", tool: "thoughtbox_search", code: "async () => await tb.session.list()", err: "UNCAUGHT_EXCEPTION", hint: "thoughtbox_execute tool"},
	{origin: "thoughtbox search code sent to thoughtbox_execute", tool: "thoughtbox_execute", code: "async () => Object.keys(catalog.operations)", err: "UNCAUGHT_EXCEPTION", hint: "find operations there"},
	{origin: "cloudflare execute code sent to codemode_run", tool: "codemode_run", code: "const r = await everything.echo({ message: 'x' });\nreturn r;", err: "UNCAUGHT_EXCEPTION", hint: "import * as everything from \"@codemode/servers/everything\""},
	{origin: "bifrost code sent to codemode_execute", tool: "codemode_execute", code: "return await everything.echo({ message: 'x' });", err: "UNCAUGHT_EXCEPTION", hint: "mcp.callTool(\"everything\""},
	{origin: "emceepee code sent to execute", tool: "execute", code: "async () => await mcp.callTool('everything', 'echo', { message: 'x' })", err: "UNCAUGHT_EXCEPTION", hint: "each server is a global object"},
}}

func TestPeerScripts(t *testing.T) {
	n := 0
	for _, s := range peerScripts {
		n += len(s)
	}
	if n < 60 {
		t.Fatalf("%d scripts; the peers' corpus has at least 60", n)
	}
	dir := t.TempDir()
	for name, text := range map[string]string{"notes.txt": "hello\nworld\n", "orders.csv": "1,pending\n2,done\n3,pending\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir, _ = filepath.EvalSymlinks(dir)
	cfg := writeConfig(t, upstreams{"everything": everythingEntry(t), "memory": memoryEntry(t), "filesystem": filesystemEntry(t, dir)},
		map[string]any{"builtins": []string{"thoughtbox"}, "surfaces": []string{"run", "search-execute", "files", "emceepee", "thoughtbox"}})
	g := startHTTP(t, cfg, "--data-dir", t.TempDir())
	for _, section := range peerScripts {
		steps := make([]step, len(section))
		for i, s := range section {
			steps[i] = callStep(s.tool, map[string]any{"code": strings.ReplaceAll(s.code, "{{DIR}}", dir)})
			steps[i]["timeoutMs"] = 60000
		}
		out := runTS(t, httpConn(g.url, nil), steps...)
		for i, s := range section {
			checkPeerScript(t, s, out[i])
		}
	}
}

// checkPeerScript checks one script's response against its expectation.
func checkPeerScript(t *testing.T, s peerScript, raw json.RawMessage) {
	t.Helper()
	var resp runResponse
	if s.tool == "codemode_execute" {
		// emceepee's shape: {success, result, error: {name, message, code, hint}, logs}.
		res := decode[toolResult](t, raw)
		var e struct {
			Success bool            `json:"success"`
			Result  json.RawMessage `json:"result"`
			Error   *diagnostic     `json:"error"`
		}
		json.Unmarshal(res.StructuredContent, &e)
		ds := []diagnostic{}
		if !e.Success && e.Error != nil {
			e.Error.Severity = "error"
			ds = append(ds, *e.Error)
		}
		resp = runResponse{Result: e.Result, Diagnostics: &ds}
	} else {
		_, resp = asRun(t, raw)
	}
	fail := func(format string, args ...any) {
		t.Errorf("%s (%s): "+format+"\ncode:\n%s\nresponse: %s", append(append([]any{s.origin, s.tool}, args...), s.code, tail(string(raw), 2500))...)
	}
	find := func(severity, code string) *diagnostic {
		for _, d := range resp.diags() {
			if d.Severity == severity && d.Code == code {
				return &d
			}
		}
		return nil
	}
	switch {
	case s.err != "":
		d := find("error", s.err)
		if d == nil {
			fail("want an error %s", s.err)
		} else if !strings.Contains(d.Hint, s.hint) && !strings.Contains(d.Message, s.hint) {
			fail("the error's hint %q does not say %q", d.Hint, s.hint)
		}
		return
	case s.warn != "":
		d := find("warning", s.warn)
		if d == nil {
			fail("want a warning %s", s.warn)
		} else if !strings.Contains(d.Hint, s.hint) {
			fail("the warning's hint %q does not say %q", d.Hint, s.hint)
		}
	}
	if d := resp.errorDiag(); d != nil {
		fail("unexpected error %s: %s (hint: %s)", d.Code, d.Message, d.Hint)
		return
	}
	if s.want == "" {
		return
	}
	var got, want any
	if err := json.Unmarshal(resp.Result, &got); err != nil {
		fail("result %s is not JSON: %v", resp.Result, err)
		return
	}
	if err := json.Unmarshal([]byte(s.want), &want); err != nil {
		t.Fatalf("%s: bad want %q: %v", s.origin, s.want, err)
	}
	if !jsonContains(got, want) {
		fail("result %s, want %s", resp.Result, s.want)
	}
}

// jsonContains reports whether got has want's value: equal scalars, arrays
// element by element, objects with at least want's keys.
func jsonContains(got, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			gv, present := g[k]
			if !present || !jsonContains(gv, v) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !jsonContains(g[i], w[i]) {
				return false
			}
		}
		return true
	}
	return got == want
}
