// A scripted MCP client built on the official TypeScript SDK, driven by the
// Go end-to-end tests of `codemode serve`.
//
//   node client.mjs '<plan JSON>'
//
// The SDK is loaded from $CODEMODE_TEST_SDK (the dist/esm directory of
// @modelcontextprotocol/sdk in testdata/npm), since this file does not live
// under that node_modules tree.
//
// plan = {
//   connect: {transport: "stdio", command, args, env?, cwd?}
//          | {transport: "http", url, headers?},
//   steps: [step, ...]
// }
// step = {op: "list"}                          → tools/list result
//      | {op: "call", name, arguments?, timeoutMs?} → tools/call result, or {error}
//      | {op: "parallel", steps: [...]}        → array of the steps' outputs
//      | {op: "sequence", steps: [...]}        → array of the steps' outputs
//      | {op: "until", step, text?, notText?}  → the step's output, once its
//            JSON contains text (and not notText), retried until then
//      | {op: "mark", text}                    → writes "@@MARK <text>" on stderr
//      | {op: "waitStdin"}                     → waits for one line on stdin
//      | {op: "waitListChanged", timeoutMs?}   → {received: n}: waits for a
//            notifications/tools/list_changed not yet consumed
//      | {op: "waitListed", text, timeoutMs?} → {notifications, found, list}:
//            after each list_changed notification, lists the tools again
//            until their JSON contains text
//      | {op: "info"}                          → {serverVersion, capabilities, instructions}
//      | {op: "close"}                         → closes the client
//
// Long runs (issue #15):
//   a call step with progress: true       → the result, with `progress`: the
//            notifications/progress received ({progress, total, message})
//   {op: "taskStart", name, arguments?, ttl?, timeoutMs?} → {taskId}: calls
//            the tool as a 2025-11-25 task (callToolStream) and goes on
//            while the stream is followed in the background
//   {op: "taskWait"}                      → {types, result, error}: the
//            background stream's messages, once it ends
//   {op: "taskGet", taskId} | {op: "taskResult", taskId, timeoutMs?}
//      | {op: "taskCancel", taskId} | {op: "taskList"} → the SDK's answer
//   {op: "readResource", uri, timeoutMs?} → {mimeType, length, sha256} of
//            the first content's text (and text, if under 4 KiB)
//
// plan.client = {elicit?: {action, content}, sample?: {text}, roots?: [...]}
// declares those capabilities and answers elicitation/create (recording
// the messages asked in `asked`), sampling/createMessage and roots/list.
//
// Without timeoutMs a step waits as long as it takes: the Go test's deadline
// bounds the client.
//
// Output: one JSON line on stdout, {results: [...], listChanged: n}. A step
// that fails for a protocol reason yields {error: message}; a failure to
// connect prints {fatal: message} and exits 1.
import { pathToFileURL } from "node:url";
import { createInterface } from "node:readline";

const sdk = process.env.CODEMODE_TEST_SDK;
if (!sdk) {
  console.log(JSON.stringify({ fatal: "CODEMODE_TEST_SDK is not set" }));
  process.exit(1);
}
const load = (p) => import(pathToFileURL(`${sdk}/${p}`).href);
const { Client } = await load("client/index.js");
const { StdioClientTransport } = await load("client/stdio.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
const { ToolListChangedNotificationSchema, ElicitRequestSchema, CreateMessageRequestSchema, ListRootsRequestSchema, CallToolResultSchema } = await load("types.js");
const { createHash } = await import("node:crypto");

const plan = JSON.parse(process.argv[2]);

let listChanged = 0;
let consumed = 0;
let waiters = [];
const cc = plan.client ?? {};
const capabilities = {};
if (cc.elicit) capabilities.elicitation = { form: {} };
if (cc.sample) capabilities.sampling = {};
if (cc.roots) capabilities.roots = { listChanged: false };
const client = new Client({ name: "codemode-e2e-ts", version: "1.0.0" }, { capabilities });
const asked = [];
if (cc.elicit) {
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(req.params.message);
    return cc.elicit;
  });
}
if (cc.sample) {
  client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
    asked.push(JSON.stringify(req.params.messages));
    return { model: "scripted", role: "assistant", content: { type: "text", text: cc.sample.text } };
  });
}
if (cc.roots) {
  client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: cc.roots }));
}
let task; // the background task stream of taskStart
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  listChanged++;
  const w = waiters;
  waiters = [];
  w.forEach((f) => f());
});

let transport;
const c = plan.connect;
if (c.transport === "stdio") {
  transport = new StdioClientTransport({
    command: c.command,
    args: c.args ?? [],
    env: { ...process.env, ...(c.env ?? {}) },
    cwd: c.cwd,
    // Piped and forwarded rather than inherited, so that a server slow to
    // exit does not hold our stderr open after we are gone.
    stderr: "pipe",
  });
  transport.stderr?.on("data", (d) => process.stderr.write(d));
} else {
  transport = new StreamableHTTPClientTransport(new URL(c.url), {
    requestInit: { headers: c.headers ?? {} },
  });
}

try {
  await client.connect(transport);
} catch (e) {
  console.log(JSON.stringify({ fatal: `connect: ${e?.message ?? e}` }));
  process.exit(1);
}

let stdinLines;
function nextStdinLine() {
  if (!stdinLines) {
    const rl = createInterface({ input: process.stdin });
    const queue = [];
    const pending = [];
    rl.on("line", (l) => (pending.length ? pending.shift()(l) : queue.push(l)));
    stdinLines = () => (queue.length ? Promise.resolve(queue.shift()) : new Promise((r) => pending.push(r)));
  }
  return stdinLines();
}

const errOf = (e) => ({ error: String(e?.message ?? e), code: e?.code });

// Steps wait for what they wait for, however long a loaded machine takes:
// the Go test's own deadline bounds the whole client. A step may still set
// timeoutMs. (Node clamps a timer above 2^31-1 ms to 1 ms.)
const FOREVER = 2 ** 31 - 1;
const deadlineOf = (s) => (s.timeoutMs === undefined ? Infinity : Date.now() + s.timeoutMs);
const until = (deadline) => (deadline === Infinity ? FOREVER : Math.max(0, Math.min(FOREVER, deadline - Date.now())));

let lastTaskId; // "$task" in a step's taskId
let lastLink; // "$link" in a step's uri: the last resource_link a call returned
async function step(s) {
  if (s.taskId === "$task") s = { ...s, taskId: lastTaskId };
  if (s.uri === "$link") s = { ...s, uri: lastLink };
  switch (s.op) {
    case "list":
      try {
        return await client.listTools();
      } catch (e) {
        return errOf(e);
      }
    case "call":
      try {
        const progress = [];
        const opts = { timeout: s.timeoutMs ?? FOREVER };
        if (s.progress) opts.onprogress = (p) => progress.push(p);
        const res = await client.callTool({ name: s.name, arguments: s.arguments ?? {} }, undefined, opts);
        for (const c of res.content ?? []) if (c.type === "resource_link") lastLink = c.uri;
        return s.progress ? { ...res, progress } : res;
      } catch (e) {
        return errOf(e);
      }
    case "taskStart": {
      const stream = client.experimental.tasks.callToolStream({ name: s.name, arguments: s.arguments ?? {} }, CallToolResultSchema, {
        timeout: s.timeoutMs ?? FOREVER,
        task: { ttl: s.ttl ?? 600000 },
      });
      let created;
      const first = new Promise((r) => (created = r));
      task = (async () => {
        const out = { types: [] };
        try {
          for await (const m of stream) {
            out.types.push(m.type);
            if (m.type === "taskCreated") {
              lastTaskId = m.task.taskId;
              created({ taskId: m.task.taskId, status: m.task.status });
            }
            if (m.type === "result") out.result = m.result;
            if (m.type === "error") out.error = String(m.error?.message ?? m.error);
          }
        } catch (e) {
          out.error = String(e?.message ?? e);
        }
        created(out);
        return out;
      })();
      return await first;
    }
    case "taskWait":
      return await task;
    case "taskGet":
      try {
        return await client.experimental.tasks.getTask(s.taskId);
      } catch (e) {
        return errOf(e);
      }
    case "taskResult":
      try {
        return await client.experimental.tasks.getTaskResult(s.taskId, CallToolResultSchema, { timeout: s.timeoutMs ?? FOREVER });
      } catch (e) {
        return errOf(e);
      }
    case "taskCancel":
      try {
        return await client.experimental.tasks.cancelTask(s.taskId);
      } catch (e) {
        return errOf(e);
      }
    case "taskList":
      try {
        return await client.experimental.tasks.listTasks();
      } catch (e) {
        return errOf(e);
      }
    case "readResource":
      try {
        const res = await client.readResource({ uri: s.uri }, { timeout: s.timeoutMs ?? FOREVER });
        const c = res.contents[0];
        const text = c.text ?? "";
        const out = { mimeType: c.mimeType, length: Buffer.byteLength(text), sha256: createHash("sha256").update(text).digest("hex") };
        if (text.length < 4096) out.text = text;
        return out;
      } catch (e) {
        return errOf(e);
      }
    case "parallel":
      return await Promise.all(s.steps.map(step));
    case "sequence": {
      const out = [];
      for (const x of s.steps) out.push(await step(x));
      return out;
    }
    case "until": {
      // Repeats s.step until the JSON of its result contains s.text (or no
      // longer contains s.notText): the event the test waits for, such as
      // a server usable again after its restart backoff. Returns the last
      // result.
      for (;;) {
        const r = await step(s.step);
        const j = JSON.stringify(r);
        if ((s.text === undefined || j.includes(s.text)) && (s.notText === undefined || !j.includes(s.notText))) return r;
        await new Promise((res) => setTimeout(res, 20));
      }
    }
    case "mark":
      process.stderr.write(`@@MARK ${s.text}\n`);
      return null;
    case "waitStdin":
      return await nextStdinLine();
    case "waitListChanged": {
      const deadline = deadlineOf(s);
      while (listChanged <= consumed && Date.now() < deadline) {
        await new Promise((r) => {
          waiters.push(r);
          setTimeout(r, until(deadline));
        });
      }
      const n = listChanged - consumed;
      consumed = listChanged;
      return { received: n };
    }
    case "waitListed": {
      // Waits for notifications/tools/list_changed; after each, lists the
      // tools again, until the JSON of the list contains s.text.
      const deadline = deadlineOf(s);
      let notifications = 0;
      while (Date.now() < deadline) {
        while (listChanged <= consumed && Date.now() < deadline) {
          await new Promise((r) => {
            waiters.push(r);
            setTimeout(r, until(deadline));
          });
        }
        if (listChanged <= consumed) break;
        notifications += listChanged - consumed;
        consumed = listChanged;
        const list = await client.listTools();
        if (JSON.stringify(list).includes(s.text)) return { notifications, found: true, list };
      }
      return { notifications, found: false };
    }
    case "info":
      return {
        serverVersion: client.getServerVersion(),
        capabilities: client.getServerCapabilities(),
        instructions: client.getInstructions(),
      };
    case "close":
      await client.close();
      return null;
    default:
      return { error: `unknown op ${s.op}` };
  }
}

const results = [];
const t0 = Date.now();
for (const s of plan.steps) {
  results.push(await step(s));
  if (process.env.E2E_TRACE) process.stderr.write(`@@STEP ${s.op} ${s.name ?? ""} done at ${Date.now() - t0}ms\n`);
}
await client.close().catch(() => {});
// Exit only once stdout is flushed: a pipe is written asynchronously.
process.stdout.write(JSON.stringify({ results, listChanged, asked }) + "\n", () => process.exit(0));
