// A small stdio MCP server on the official TypeScript SDK's low-level
// Server, for the behaviours the reference servers cannot show on demand:
//
//   whoami    returns {pid} (structured), to tell a restarted process apart
//   crash     exits the process without answering, as a crashing server does
//   add_tool  registers a new tool added_<n> and sends
//             notifications/tools/list_changed
//   added_<n> returns {added: n}
//
// The SDK is loaded from $CODEMODE_TEST_SDK, like client.mjs.
import { pathToFileURL } from "node:url";

const sdk = process.env.CODEMODE_TEST_SDK;
const load = (p) => import(pathToFileURL(`${sdk}/${p}`).href);
const { Server } = await load("server/index.js");
const { StdioServerTransport } = await load("server/stdio.js");
const { ListToolsRequestSchema, CallToolRequestSchema } = await load("types.js");

const empty = { type: "object", properties: {} };
const tools = [
  { name: "whoami", description: "Return this process's pid", inputSchema: empty,
    outputSchema: { type: "object", properties: { pid: { type: "integer" } }, required: ["pid"] } },
  { name: "crash", description: "Exit the process without answering", inputSchema: empty },
  { name: "add_tool", description: "Add a tool named added_<n> and notify list_changed", inputSchema: empty },
];
let added = 0;

const server = new Server({ name: "e2e-upstream", version: "1.0.0" }, { capabilities: { tools: { listChanged: true } } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, async (req) => {
  const name = req.params.name;
  if (name === "whoami") {
    return { structuredContent: { pid: process.pid }, content: [{ type: "text", text: JSON.stringify({ pid: process.pid }) }] };
  }
  if (name === "crash") {
    process.exit(3);
  }
  if (name === "add_tool") {
    added++;
    const n = added;
    tools.push({ name: `added_${n}`, description: `Tool number ${n} added at run time`, inputSchema: empty });
    // Answer first, then announce the change, as a server that changes its
    // tools as a side effect of a call would.
    setTimeout(() => server.sendToolListChanged().catch(() => {}), 10);
    return { content: [{ type: "text", text: `added_${n}` }] };
  }
  const m = /^added_(\d+)$/.exec(name);
  if (m && Number(m[1]) <= added) {
    return { structuredContent: { added: Number(m[1]) }, content: [{ type: "text", text: `{"added":${m[1]}}` }] };
  }
  return { isError: true, content: [{ type: "text", text: `unknown tool ${name}` }] };
});

await server.connect(new StdioServerTransport());
