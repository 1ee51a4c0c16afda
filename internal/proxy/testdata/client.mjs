// An agent loop on the official `openai` npm client (pinned in
// testdata/npm), driven by the Go end-to-end test of `codemode proxy`. It
// owns one tool, a web search with canned results, and runs it itself when
// the model's response asks for it, as any tool-calling client does.
//
//   node client.mjs '<plan JSON>'
//
// plan = {baseURL, apiKey, toolName, prompt, stream}
//
// The client is loaded from $CODEMODE_TEST_OPENAI (index.mjs of the openai
// package), since this file does not live under that node_modules tree.
//
// Output: one JSON line on stdout: {final, calls: [{id, name, arguments}],
// requests, codeMessages: [id, ...]}.

const { default: OpenAI } = await import(process.env.CODEMODE_TEST_OPENAI);
const plan = JSON.parse(process.argv[2]);
const client = new OpenAI({ baseURL: plan.baseURL, apiKey: plan.apiKey, maxRetries: 0 });

const results = {
  "sport news": [{ title: "UEFA Champions League: Real Madrid advances to semifinals", url: "https://www.example.com/sport/real-madrid-semifinals" }],
  "international affaires news": [{ title: "US-China trade talks resume in Geneva", url: "https://www.example.com/world/us-china-trade-talks" }],
  "news in France today": [{ title: "Grèves dans les transports", description: "La SNCF et la RATP appellent au dialogue." }],
  "news in US today": [{ title: "California wildfires force thousands to evacuate", description: "Containment will take weeks." }],
};
function webSearch({ query }) {
  return results[query] ?? [];
}

const tools = [{
  type: "function",
  function: {
    name: plan.toolName,
    description: "Search the web for recent news",
    parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
  },
}];

// collect reads a streamed response into one assistant message, keeping
// the proxy's code_message (a field the client must send back).
async function collect(stream) {
  const msg = { role: "assistant", content: "" };
  const calls = [];
  for await (const chunk of stream) {
    const delta = chunk.choices[0]?.delta ?? {};
    if (delta.content) msg.content += delta.content;
    if (delta.code_message) msg.code_message = delta.code_message;
    for (const tc of delta.tool_calls ?? []) {
      const c = (calls[tc.index] ??= { id: "", type: "function", function: { name: "", arguments: "" } });
      if (tc.id) c.id = tc.id;
      if (tc.function?.name) c.function.name += tc.function.name;
      if (tc.function?.arguments) c.function.arguments += tc.function.arguments;
    }
  }
  if (calls.length > 0) msg.tool_calls = calls;
  return msg;
}

const messages = [
  { role: "system", content: "You are a news assistant." },
  { role: "user", content: plan.prompt },
];
const out = { final: null, calls: [], requests: 0, codeMessages: [] };
for (let round = 0; round < 10; round++) {
  out.requests++;
  let msg;
  if (plan.stream) {
    msg = await collect(await client.chat.completions.create({ model: "test-model", messages, tools, stream: true }));
  } else {
    const completion = await client.chat.completions.create({ model: "test-model", messages, tools });
    msg = completion.choices[0].message;
  }
  messages.push(msg); // unchanged: code_message included
  if (!msg.tool_calls || msg.tool_calls.length === 0) {
    out.final = msg.content;
    break;
  }
  if (msg.code_message) out.codeMessages.push(msg.code_message.id);
  for (const call of msg.tool_calls) {
    const args = JSON.parse(call.function.arguments);
    out.calls.push({ id: call.id, name: call.function.name, arguments: args });
    if (call.function.name !== plan.toolName) throw new Error("the model asked for an unknown tool " + call.function.name);
    messages.push({ role: "tool", tool_call_id: call.id, content: JSON.stringify(webSearch(args)) });
  }
}
process.stdout.write(JSON.stringify(out) + "\n");
