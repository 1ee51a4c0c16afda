// A small stdio MCP server on the official TypeScript SDK for the
// long-run tests (issue #15), doing what the reference servers cannot on
// demand:
//
//   block      writes "@@BLOCKED" on stderr and waits until release is
//              called (→ "released") or the call is cancelled (then it
//              counts the cancellation and writes "@@CANCELLED")
//   release    releases every blocked call; returns how many
//   cancelled  waits until at least {atLeast} blocked calls were
//              cancelled, and returns the count
//
// The SDK is loaded from $CODEMODE_TEST_SDK, like client.mjs.
import { pathToFileURL } from "node:url";

const sdk = process.env.CODEMODE_TEST_SDK;
const load = (p) => import(pathToFileURL(`${sdk}/${p}`).href);
const { Server } = await load("server/index.js");
const { StdioServerTransport } = await load("server/stdio.js");
const { ListToolsRequestSchema, CallToolRequestSchema } = await load("types.js");

const obj = (props = {}) => ({ type: "object", properties: props });
const tools = [
  { name: "block", description: "Wait until release is called", inputSchema: obj() },
  { name: "release", description: "Release every blocked call", inputSchema: obj() },
  { name: "cancelled", description: "Wait until at least atLeast blocked calls were cancelled", inputSchema: obj({ atLeast: { type: "integer" } }) },
];
let waiters = [];
let cancelled = 0;
let cancelWaiters = [];
const text = (t) => ({ content: [{ type: "text", text: String(t) }] });

const server = new Server({ name: "e2e-long", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
  switch (req.params.name) {
    case "block":
      process.stderr.write("@@BLOCKED\n");
      return await new Promise((resolve, reject) => {
        const w = () => resolve(text("released"));
        waiters.push(w);
        extra.signal.addEventListener("abort", () => {
          waiters = waiters.filter((x) => x !== w);
          cancelled++;
          process.stderr.write("@@CANCELLED\n");
          cancelWaiters.forEach((f) => f());
          reject(new Error("cancelled"));
        });
      });
    case "release": {
      const n = waiters.length;
      waiters.forEach((w) => w());
      waiters = [];
      return text(n);
    }
    case "cancelled": {
      const atLeast = req.params.arguments?.atLeast ?? 1;
      while (cancelled < atLeast) {
        await new Promise((r) => cancelWaiters.push(r));
      }
      return text(cancelled);
    }
  }
  return { isError: true, ...text(`unknown tool ${req.params.name}`) };
});

await server.connect(new StdioServerTransport());
