// A scripted MCP client that answers elicitation requests as the test tells
// it, for the tool-policy tests of `codemode serve`. It is built on the
// official TypeScript SDK, in either generation:
//
//   - sdk "v1": @modelcontextprotocol/sdk, which speaks the 2025 protocol:
//     the gateway sends it elicitation/create requests;
//   - sdk "v2": @modelcontextprotocol/client, pinned to the 2026-07-28
//     protocol (or left on the legacy one with era "legacy"): the gateway
//     answers its tools/call with input-required results, which the client
//     fulfils through the same elicitation handler and retries.
//
//   node policy_client.mjs '<plan JSON>'
//
// The packages are loaded from $CODEMODE_TEST_NPM (testdata/npm's
// node_modules), since this file does not live under that tree.
//
// plan = {
//   sdk: "v1" | "v2", era?: "legacy" | "2026-07-28" (v2 only; default 2026-07-28),
//   elicitation: boolean,      // declare the elicitation capability
//   answers: ["accept" | "accept-all" | "decline" | "cancel", ...],
//                              // one per elicitation, in order; the last repeats
//   connect: {transport: "stdio", command, args, env?, cwd?} | {transport: "http", url, headers?},
//   steps: [{op: "call", name, arguments?} | {op: "list"} | {op: "info"}, ...]
// }
//
// Output: one JSON line on stdout, {results: [...], elicitations: [{message,
// calls, meta}], protocol}. A step that fails for a protocol reason yields
// {error: message}; a failure to connect prints {fatal: message} and exits 1.
import { pathToFileURL } from "node:url";

const npm = process.env.CODEMODE_TEST_NPM;
if (!npm) {
  console.log(JSON.stringify({ fatal: "CODEMODE_TEST_NPM is not set" }));
  process.exit(1);
}
const load = (p) => import(pathToFileURL(`${npm}/${p}`).href);
const plan = JSON.parse(process.argv[2]);
const answers = plan.answers ?? ["accept"];
const elicitations = [];

function answer(params) {
  const i = elicitations.length;
  elicitations.push({
    message: params.message,
    calls: params._meta?.["codemode/approval"]?.calls?.length ?? 0,
    meta: params._meta?.["codemode/approval"] ?? null,
  });
  const a = answers[Math.min(i, answers.length - 1)];
  if (a === "accept") return { action: "accept", content: { approveAll: false } };
  if (a === "accept-all") return { action: "accept", content: { approveAll: true } };
  return { action: a };
}

const capabilities = plan.elicitation ? { elicitation: { form: {} } } : {};
let client, transport;
const c = plan.connect;
if (plan.sdk === "v2") {
  const m = await load("@modelcontextprotocol/client/dist/index.mjs");
  const stdio = await load("@modelcontextprotocol/client/dist/stdio.mjs");
  const era = plan.era ?? "2026-07-28";
  client = new m.Client(
    { name: "codemode-policy-v2", version: "1.0.0" },
    { capabilities, versionNegotiation: era === "legacy" ? { mode: "legacy" } : { mode: { pin: era } } },
  );
  if (plan.elicitation) client.setRequestHandler("elicitation/create", (req) => answer(req.params));
  transport =
    c.transport === "stdio"
      ? new stdio.StdioClientTransport({ command: c.command, args: c.args ?? [], env: { ...process.env, ...(c.env ?? {}) }, cwd: c.cwd, stderr: "pipe" })
      : new m.StreamableHTTPClientTransport(new URL(c.url), { requestInit: { headers: c.headers ?? {} } });
} else {
  const sdk = `@modelcontextprotocol/sdk/dist/esm`;
  const { Client } = await load(`${sdk}/client/index.js`);
  const { StdioClientTransport } = await load(`${sdk}/client/stdio.js`);
  const { StreamableHTTPClientTransport } = await load(`${sdk}/client/streamableHttp.js`);
  const { ElicitRequestSchema } = await load(`${sdk}/types.js`);
  client = new Client({ name: "codemode-policy-v1", version: "1.0.0" }, { capabilities });
  if (plan.elicitation) client.setRequestHandler(ElicitRequestSchema, (req) => answer(req.params));
  transport =
    c.transport === "stdio"
      ? new StdioClientTransport({ command: c.command, args: c.args ?? [], env: { ...process.env, ...(c.env ?? {}) }, cwd: c.cwd, stderr: "pipe" })
      : new StreamableHTTPClientTransport(new URL(c.url), { requestInit: { headers: c.headers ?? {} } });
}
transport.stderr?.on("data", (d) => process.stderr.write(d));

try {
  await client.connect(transport);
} catch (e) {
  console.log(JSON.stringify({ fatal: `connect: ${e?.message ?? e}` }));
  process.exit(1);
}

const errOf = (e) => ({ error: String(e?.message ?? e), code: e?.code });

async function step(s) {
  try {
    switch (s.op) {
      case "call":
        return await client.callTool({ name: s.name, arguments: s.arguments ?? {} }, undefined, { timeout: s.timeoutMs ?? 60000 });
      case "list":
        return await client.listTools();
      case "info":
        return { capabilities: client.getServerCapabilities() };
      default:
        return { error: `unknown op ${s.op}` };
    }
  } catch (e) {
    return errOf(e);
  }
}

const results = [];
for (const s of plan.steps) results.push(await step(s));
const protocol = client.getNegotiatedProtocolVersion?.() ?? transport.protocolVersion ?? null;
await client.close().catch(() => {});
process.stdout.write(JSON.stringify({ results, elicitations, protocol }) + "\n", () => process.exit(0));
