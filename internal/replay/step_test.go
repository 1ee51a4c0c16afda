package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/diag"
)

// The seed's two example conversations (testdata/seed-*.json, verbatim
// from seeds/tool-calls-as-code-replay.md) replayed step by step, and the
// shapes the issue lists: a loop with a conditional over three steps, a
// failed result the script catches, a divergence, determinism and limits
// across steps.

func searchTool(name string) Tool {
	return Tool{Type: "function", Function: Function{Name: name, Description: "Search the web",
		Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`)}}
}

// seedMessages reads a seed conversation.
func seedMessages(t testing.TB, file string) []Message {
	t.Helper()
	b, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []Message
	if err := json.Unmarshal(b, &msgs); err != nil {
		t.Fatal(err)
	}
	return msgs
}

// wireStep sends req through the wire format (JSON in, JSON out) and
// returns the decoded response and its JSON.
func wireStep(t *testing.T, req Request) (Response, string) {
	t.Helper()
	body := Marshal(req)
	var in Request
	if err := json.Unmarshal(body, &in); err != nil {
		t.Fatalf("decoding the request: %v\n%s", err, body)
	}
	resp, err := Step(context.Background(), in)
	if err != nil {
		t.Fatalf("step: %v\nrequest: %s", err, body)
	}
	out := Marshal(resp)
	var back Response
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatalf("decoding the response: %v\n%s", err, out)
	}
	return back, string(out)
}

// wantCalls checks that a response asks for exactly these calls (name and
// arguments), with our ids from position first.
func wantCalls(t *testing.T, resp Response, codeID string, first int, calls ...string) []ToolCall {
	t.Helper()
	m := resp.Message
	if m.Role != RoleAssistant {
		t.Fatalf("message %s, want an assistant message with %d calls; diagnostics %v", Marshal(m), len(calls), resp.Diagnostics)
	}
	var got []string
	for i, c := range m.ToolCalls {
		got = append(got, c.Function.Name+" "+c.Function.Arguments)
		if want := CallID(codeID, first+i); c.ID != want || c.Type != "function" {
			t.Errorf("call %d: id %q type %q, want %q function", i, c.ID, c.Type, want)
		}
	}
	if strings.Join(got, "\n") != strings.Join(calls, "\n") {
		t.Fatalf("calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(calls, "\n"))
	}
	return m.ToolCalls
}

func wantSuccess(t *testing.T, resp Response, codeID, data string) {
	t.Helper()
	m := resp.Message
	if m.Role != RoleCodeResult || m.ID != codeID || m.Result == nil || m.Result.Status != "success" {
		t.Fatalf("message %s, want a successful code result; diagnostics %v", Marshal(m), resp.Diagnostics)
	}
	if !jsonEq(m.Result.Data, data) {
		t.Fatalf("data %s\nwant %s", m.Result.Data, data)
	}
}

func wantError(t *testing.T, resp Response, name, contains string) {
	t.Helper()
	m := resp.Message
	if m.Role != RoleCodeResult || m.Result == nil || m.Result.Status != "error" || m.Result.Error == nil {
		t.Fatalf("message %s, want a failed code result", Marshal(m))
	}
	if e := m.Result.Error; e.Name != name || !strings.Contains(e.Message, contains) {
		t.Fatalf("error %+v, want %s containing %q", e, name, contains)
	}
}

func jsonEq(a json.RawMessage, b string) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal([]byte(b), &y) == nil && fmt.Sprint(x) == fmt.Sprint(y) && string(Marshal(x)) == string(Marshal(y))
}

func toolMsg(id, content string) Message {
	return Message{Role: RoleTool, ToolCallID: id, Content: Marshal(content)}
}

func code(id, src string) Message { return Message{Role: RoleCode, ID: id, Code: src} }

// TestSeedParallel replays the seed's parallel example: one step asks for
// both searches in one batch; the next, with the seed's own messages (its
// client's ids, and web_search for what the code calls webSearch), gives
// the code result.
func TestSeedParallel(t *testing.T) {
	msgs := seedMessages(t, "seed-parallel.json")
	// [user, code, assistant, tool, tool, code_result, assistant]
	for _, toolName := range []string{"web_search", "webSearch"} {
		t.Run(toolName, func(t *testing.T) {
			tools := []Tool{searchTool(toolName)}
			resp, _ := wireStep(t, Request{Messages: msgs[:2], Tools: tools})
			wantCalls(t, resp, "JZsSpZjh0", 0,
				toolName+` {"query":"sport news"}`,
				toolName+` {"query":"international affaires news"}`)
			resp, _ = wireStep(t, Request{Messages: msgs[:5], Tools: tools})
			var sport, world any
			json.Unmarshal([]byte(mustText(t, msgs[3].Content)), &sport)
			json.Unmarshal([]byte(mustText(t, msgs[4].Content)), &world)
			wantSuccess(t, resp, "JZsSpZjh0", string(Marshal(map[string]any{"sportNews": sport, "internationalAffairesNews": world})))
			// The whole conversation, final answer included: the block
			// ends at its code_result, which the step recomputes.
			again, _ := wireStep(t, Request{Messages: msgs, Tools: tools})
			wantSuccess(t, again, "JZsSpZjh0", string(resp.Message.Result.Data))
		})
	}
}

// TestSeedSequential replays the seed's sequential example: two steps of
// one call each, then the result. Its second tool message's id matches no
// call: results are matched by position.
func TestSeedSequential(t *testing.T) {
	msgs := seedMessages(t, "seed-sequential.json")
	// [user, code, assistant, tool, assistant, tool, code_result, assistant]
	for _, toolName := range []string{"webSearch", "web_search"} {
		t.Run(toolName, func(t *testing.T) {
			tools := []Tool{searchTool(toolName)}
			resp, _ := wireStep(t, Request{Messages: msgs[:2], Tools: tools})
			wantCalls(t, resp, "UB4cbzkvQ", 0, toolName+` {"query":"news in France today"}`)
			resp, _ = wireStep(t, Request{Messages: msgs[:4], Tools: tools})
			wantCalls(t, resp, "UB4cbzkvQ", 1, toolName+` {"query":"news in US today"}`)
			resp, _ = wireStep(t, Request{Messages: msgs[:6], Tools: tools})
			var fr, us any
			json.Unmarshal([]byte(mustText(t, msgs[3].Content)), &fr)
			json.Unmarshal([]byte(mustText(t, msgs[5].Content)), &us)
			wantSuccess(t, resp, "UB4cbzkvQ", string(Marshal(map[string]any{"france": fr, "us": us})))
		})
	}
}

func mustText(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	s, ok := contentText(raw)
	if !ok {
		t.Fatalf("content %s is not text", raw)
	}
	return s
}

// converse drives a code block to its end: answer gives each call's tool
// message. It returns every response and fails after max steps.
func converse(t *testing.T, req Request, max int, answer func(ToolCall) Message) []Response {
	t.Helper()
	var out []Response
	for range max {
		resp, _ := wireStep(t, req)
		out = append(out, resp)
		if resp.Message.Role != RoleAssistant {
			return out
		}
		req.Messages = append(req.Messages, resp.Message)
		for _, c := range resp.Message.ToolCalls {
			req.Messages = append(req.Messages, answer(c))
		}
	}
	t.Fatalf("no code result after %d steps", max)
	return nil
}

var counterTools = []Tool{
	{Type: "function", Function: Function{Name: "next_page", Description: "Fetch a page of items",
		Parameters: json.RawMessage(`{"type":"object","properties":{"page":{"type":"integer","minimum":1}},"required":["page"]}`)}},
	{Type: "function", Function: Function{Name: "flag", Parameters: json.RawMessage(`{"type":"object","properties":{"item":{"type":"string"}}}`)}},
}

// TestLoopWithConditional: a loop whose continuation depends on each
// result takes one step per call; a call made only under a condition
// appears only when the results meet it.
func TestLoopWithConditional(t *testing.T) {
	src := `const items = [];
for (let page = 1; ; page++) {
  const r = await next_page({ page });
  items.push(...r.items);
  if (!r.more) break;
}
if (items.includes("b")) await flag({ item: "b" });
return items;`
	pages := map[string]string{
		`{"page":1}`: `{"items":["a"],"more":true}`,
		`{"page":2}`: `{"items":["b"],"more":true}`,
		`{"page":3}`: `{"items":["c"],"more":false}`,
	}
	steps := converse(t, Request{Messages: []Message{code("loop", src)}, Tools: counterTools}, 10, func(c ToolCall) Message {
		if c.Function.Name == "flag" {
			return toolMsg(c.ID, "ok")
		}
		return toolMsg(c.ID, pages[c.Function.Arguments])
	})
	if len(steps) != 5 {
		t.Fatalf("%d steps, want 3 pages + flag + result", len(steps))
	}
	wantCalls(t, steps[0], "loop", 0, `next_page {"page":1}`)
	wantCalls(t, steps[2], "loop", 2, `next_page {"page":3}`)
	wantCalls(t, steps[3], "loop", 3, `flag {"item":"b"}`)
	wantSuccess(t, steps[4], "loop", `["a","b","c"]`)

	// Without "b", no flag call.
	pages[`{"page":2}`] = `{"items":["x"],"more":true}`
	steps = converse(t, Request{Messages: []Message{code("loop2", src)}, Tools: counterTools}, 10, func(c ToolCall) Message {
		return toolMsg(c.ID, pages[c.Function.Arguments])
	})
	if len(steps) != 4 {
		t.Fatalf("%d steps, want 3 pages + result", len(steps))
	}
	wantSuccess(t, steps[3], "loop2", `["a","x","c"]`)
}

// TestUnawaitedCall: a tool call whose value is used without await (a
// model that writes calls as synchronous, as UTCP's scripts do) is awaited,
// under its name and its camelCase alias.
func TestUnawaitedCall(t *testing.T) {
	src := "const r = next_page({ page: 1 });\nconst s = nextPage({ page: 2 });\nreturn [...r.items, ...s.items];"
	steps := converse(t, Request{Messages: []Message{code("sync", src)}, Tools: counterTools}, 10, func(c ToolCall) Message {
		return toolMsg(c.ID, `{"items":["p`+c.Function.Arguments[8:9]+`"]}`)
	})
	wantSuccess(t, steps[len(steps)-1], "sync", `["p1","p2"]`)
}

// TestErrorResultCaught: a tool message marked is_error (or isError)
// throws ToolCallError in the script, with the content as its message and
// parsed JSON as its result; the script catches it and goes on.
func TestErrorResultCaught(t *testing.T) {
	src := `import { ToolCallError } from "@codemode/errors";
try {
  await web_search({ query: "x" });
  globalThis.__codemode_result__ = "no error";
} catch (e) {
  globalThis.__codemode_result__ = { isToolCallError: e instanceof ToolCallError, name: e.name, message: e.message, toolName: e.toolName, result: e.result };
}`
	for _, field := range []string{`"is_error":true`, `"isError":true`, `"status":"error"`} {
		var errMsg Message
		json.Unmarshal([]byte(`{"role":"tool","tool_call_id":"e_0","content":"{\"code\":429,\"message\":\"rate limited\"}",`+field+`}`), &errMsg)
		resp, _ := wireStep(t, Request{Messages: []Message{code("e", src),
			{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "e_0", Type: "function", Function: FunctionCall{Name: "web_search", Arguments: `{"query":"x"}`}}}},
			errMsg,
		}, Tools: []Tool{searchTool("web_search")}})
		wantSuccess(t, resp, "e", `{"isToolCallError":true,"name":"ToolCallError","message":"web_search failed: {\"code\":429,\"message\":\"rate limited\"}","toolName":"web_search","result":{"code":429,"message":"rate limited"}}`)
	}
	// An "error" field instead of content.
	var errField Message
	json.Unmarshal([]byte(`{"role":"tool","tool_call_id":"e_0","error":"rate limited"}`), &errField)
	if !errField.IsError || mustText(t, errField.Content) != "rate limited" {
		t.Errorf("an error field: %+v", errField)
	}
	// Uncaught, it fails the block with the class and the hint.
	resp, _ := wireStep(t, Request{Messages: []Message{code("u", `const { ToolCallError } = await import("@codemode/errors");
try { await web_search({ query: "x" }); } catch (e) { if (!(e instanceof ToolCallError)) return "not a ToolCallError"; }
return await web_search({ query: "x" });`),
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "u_0", Function: FunctionCall{Name: "web_search", Arguments: `{"query":"x"}`}}}},
		{Role: RoleTool, ToolCallID: "u_0", Content: Marshal("quota exceeded"), IsError: true},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "u_1", Function: FunctionCall{Name: "web_search", Arguments: `{"query":"x"}`}}}},
		{Role: RoleTool, ToolCallID: "u_1", Content: Marshal("quota exceeded"), IsError: true},
	}, Tools: []Tool{searchTool("web_search")}})
	wantError(t, resp, "ToolCallError", "web_search failed: quota exceeded")
}

// TestDivergence: a tool message for a different call (the script's call
// at that position has other arguments) ends the block with
// REPLAY_DIVERGED naming the position, the recorded call and the new one;
// the script cannot catch it, and nothing is called again.
func TestDivergence(t *testing.T) {
	src := `try { return [await web_search({ query: "a" }), await web_search({ query: "b" })]; } catch (e) { return "caught"; }`
	msgs := []Message{code("d", src),
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "d_0", Function: FunctionCall{Name: "web_search", Arguments: `{"query":"a"}`}}}},
		toolMsg("d_0", "A"),
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "d_1", Function: FunctionCall{Name: "web_search", Arguments: `{"query":"c"}`}}}},
		toolMsg("d_1", "C"),
	}
	resp, _ := wireStep(t, Request{Messages: msgs, Tools: []Tool{searchTool("web_search")}})
	wantError(t, resp, "ReplayDivergedError", "position 1")
	var d *diag.Diagnostic
	for i := range resp.Diagnostics {
		if resp.Diagnostics[i].Code == diag.ReplayDiverged {
			d = &resp.Diagnostics[i]
		}
	}
	if d == nil {
		t.Fatalf("no REPLAY_DIVERGED diagnostic: %v", resp.Diagnostics)
	}
	for _, want := range []string{"position 1", `web_search({"query":"b"})`, `web_search({"query":"c"})`, `"d_1"`} {
		if !strings.Contains(d.Message, want) {
			t.Errorf("diagnostic %q does not mention %s", d.Message, want)
		}
	}
	if d.Path != "/messages/3/tool_calls/0" {
		t.Errorf("path %q", d.Path)
	}
	// Another tool: diverged too.
	msgs[3].ToolCalls[0].Function = FunctionCall{Name: "other", Arguments: `{"query":"b"}`}
	resp, _ = wireStep(t, Request{Messages: msgs, Tools: []Tool{searchTool("web_search")}})
	wantError(t, resp, "ReplayDivergedError", "other")
	// More results recorded than the script makes.
	msgs = append(msgs[:3], Message{Role: RoleAssistant, ToolCalls: []ToolCall{
		{ID: "d_1", Function: FunctionCall{Name: "web_search", Arguments: `{"query":"b"}`}},
		{ID: "d_2", Function: FunctionCall{Name: "web_search", Arguments: `{"query":"z"}`}}}},
		toolMsg("d_1", "B"), toolMsg("d_2", "Z"))
	resp, _ = wireStep(t, Request{Messages: msgs, Tools: []Tool{searchTool("web_search")}})
	wantError(t, resp, "ReplayDivergedError", "never made")
}

// TestDeterminismAcrossSteps: Math.random and Date give the same values in
// every step (seeded from the code id; Date from the code message's now),
// so values computed before a call and sent in its arguments do not
// diverge; and a step is byte for byte the same when repeated.
func TestDeterminismAcrossSteps(t *testing.T) {
	src := `const r = Math.random();
const t0 = Date.now();
const a = await web_search({ query: "r=" + r + " t=" + new Date().toISOString() });
await new Promise((res) => setTimeout(res, 1500));
const b = await web_search({ query: "r2=" + Math.random() + " dt=" + (Date.now() - t0) });
console.log("done", Date.now());
return { a, b, r, t0 };`
	req := Request{Messages: []Message{{Role: RoleCode, ID: "det", Code: src, Now: json.RawMessage(`"2025-06-01T12:00:00Z"`)}}, Tools: []Tool{searchTool("web_search")}}
	var raw []string
	steps := converse(t, req, 5, func(c ToolCall) Message { return toolMsg(c.ID, "echo "+c.Function.Arguments) })
	for _, s := range steps {
		raw = append(raw, string(Marshal(s)))
	}
	if len(steps) != 3 {
		t.Fatalf("%d steps", len(steps))
	}
	first := steps[0].Message.ToolCalls[0].Function.Arguments
	if !strings.Contains(first, "t=2025-06-01T12:00:00.000Z") {
		t.Errorf("first call %s: Date is not the code message's now", first)
	}
	if second := steps[1].Message.ToolCalls[0].Function.Arguments; !strings.Contains(second, "dt=1500") {
		t.Errorf("second call %s: the virtual clock did not move by the timer's 1500 ms", second)
	}
	var res struct {
		R  float64
		T0 int64
	}
	json.Unmarshal(steps[2].Message.Result.Data, &res)
	if res.T0 != 1748779200000 || !strings.Contains(first, fmt.Sprint(res.R)) {
		t.Errorf("result %s; first call %s", steps[2].Message.Result.Data, first)
	}
	if len(steps[2].Logs) != 1 || steps[2].Logs[0].TimeMs != 1500 || steps[2].Logs[0].Message != "done 1748779201500" {
		t.Errorf("logs %+v", steps[2].Logs)
	}
	// Byte for byte, again; another code id seeds Math.random differently.
	again := converse(t, req, 5, func(c ToolCall) Message { return toolMsg(c.ID, "echo "+c.Function.Arguments) })
	for i := range again {
		if string(Marshal(again[i])) != raw[i] {
			t.Errorf("step %d differs:\n%s\n%s", i, Marshal(again[i]), raw[i])
		}
	}
	req.Messages[0].ID = "det2"
	other, _ := wireStep(t, req)
	if other.Message.ToolCalls[0].Function.Arguments == first {
		t.Errorf("code ids det and det2 drew the same Math.random")
	}
	// Without now, Date is derived from the id: still the same every step.
	req.Messages[0].Now = nil
	a, _ := wireStep(t, req)
	b, _ := wireStep(t, req)
	if string(Marshal(a)) != string(Marshal(b)) {
		t.Errorf("without now, two runs of a step differ")
	}
}

// TestLimitsAcrossSteps: maxToolCalls counts the calls of every step
// together (the script's third call is refused when the limit is 2, in the
// step after the two were answered), and the other limits hold in each
// step.
func TestLimitsAcrossSteps(t *testing.T) {
	src := `const out = [];
for (let i = 0; i < 5; i++) {
  try { out.push(await web_search({ query: "q" + i })); } catch (e) { out.push(e.name + ": " + e.limit); break; }
}
return out;`
	req := Request{Messages: []Message{code("lim", src)}, Tools: []Tool{searchTool("web_search")}, Limits: limits(2)}
	steps := converse(t, req, 5, func(c ToolCall) Message { return toolMsg(c.ID, "r") })
	if len(steps) != 3 {
		t.Fatalf("%d steps", len(steps))
	}
	wantSuccess(t, steps[2], "lim", `["r","r","SandboxLimitError: maxToolCalls"]`)
	found := false
	for _, d := range steps[2].Diagnostics {
		found = found || d.Code == diag.SandboxLimit && strings.Contains(d.Message, "maxToolCalls")
	}
	if !found {
		t.Errorf("no maxToolCalls warning: %v", steps[2].Diagnostics)
	}

	// maxResultBytes and maxLogBytes apply to the step that finishes.
	req = Request{Messages: []Message{code("big", `const r = await web_search({ query: "q" }); console.log("x".repeat(5000)); return r.repeat(1000);`)},
		Tools: []Tool{searchTool("web_search")}}
	req.Limits.MaxResultBytes = 500
	req.Limits.MaxLogBytes = 100
	steps = converse(t, req, 3, func(c ToolCall) Message { return toolMsg(c.ID, "abc") })
	wantError(t, steps[1], "SandboxLimitError", "maxResultBytes")
	if n := len(steps[1].Logs); n == 0 || len(steps[1].Logs[0].Message) > 100 {
		t.Errorf("logs not capped at 100 bytes: %+v", steps[1].Logs)
	}
	// A loop that never ends is stopped by the timeout of its step. (The
	// timeout is doubled until the first step reached the call before it:
	// on a loaded machine, starting a step can take longer than 200 ms.)
	for ms := int64(200); ; ms *= 2 {
		req = Request{Messages: []Message{code("spin", `await web_search({ query: "q" }); for (;;) {}`)}, Tools: []Tool{searchTool("web_search")}}
		req.Limits.TimeoutMs = ms
		steps = converse(t, req, 3, func(c ToolCall) Message { return toolMsg(c.ID, "r") })
		if len(steps) > 1 || ms > 120_000 {
			break
		}
	}
	if len(steps) < 2 {
		t.Fatalf("the first step never reached its call: %+v", steps)
	}
	wantError(t, steps[1], "SandboxLimitError", "timeoutMs")
}

// TestShapes: what a script's value is, with no tools at all.
func TestShapes(t *testing.T) {
	for _, tc := range []struct{ code, want string }{
		{`return 1 + 1`, `2`},
		{`1 + 1`, `2`},
		{`async () => 42`, `42`},
		{`async function main() { return "main"; }`, `"main"`},
		{`globalThis.__codemode_result__ = 7`, `7`},
		{`globalThis.__codemode_result__ = 7; console.log("x");`, `7`},
		{`import { CodemodeError } from "@codemode/errors"; globalThis.__codemode_result__ = typeof CodemodeError;`, `"function"`},
		// The shapes the normaliser brought: a last expression after other
		// statements, and static imports beside a top-level return.
		{`const a = 20; const b = 22; a + b`, `42`},
		{`import { CodemodeError } from "@codemode/errors"; return typeof CodemodeError;`, `"function"`},
		{"```js\nreturn 5\n```", `5`},
	} {
		resp, _ := wireStep(t, Request{Messages: []Message{code("s", tc.code)}})
		wantSuccess(t, resp, "s", tc.want)
	}
	resp, _ := wireStep(t, Request{Messages: []Message{code("s", `throw new TypeError("bad")`)}})
	wantError(t, resp, "TypeError", "bad")
	resp, _ = wireStep(t, Request{Messages: []Message{code("s", `return webSearch({ query: "x" })`)}})
	if e := resp.Message.Result.Error; e.Name != "ReferenceError" || !strings.Contains(e.Hint, "tools") {
		t.Errorf("an undefined tool: %+v", e)
	}
}

// TestInputValidated: arguments that do not match the tool's parameters
// throw SchemaValidationError in the script; nothing is sent to the client.
func TestInputValidated(t *testing.T) {
	resp, _ := wireStep(t, Request{Messages: []Message{code("v", `try { await web_search({ q: 1 }); } catch (e) { return e.name; }`)},
		Tools: []Tool{searchTool("web_search")}})
	wantSuccess(t, resp, "v", `"SchemaValidationError"`)
}

// TestClientModule: the tools are exports of @codemode/client too, and a
// tool named like a standard global does not replace it.
func TestClientModule(t *testing.T) {
	tools := []Tool{searchTool("web_search"), {Type: "function", Function: Function{Name: "console"}}, searchTool("get-item")}
	resp, _ := wireStep(t, Request{Messages: []Message{code("m", `import { web_search as ws, webSearch, console as c, get_item, __meta__ } from "@codemode/client";
globalThis.__codemode_result__ = [ws === web_search, webSearch === web_search, typeof console.log, typeof c,
  globalThis["get-item"] === get_item && getItem === get_item, __meta__.tools.map((t) => t.toolName)];`)}, Tools: tools})
	wantSuccess(t, resp, "m", `[true,true,"function","function",true,["console","get-item","web_search"]]`)
}

// TestParallelBatchOrder: the calls of one Promise.all go out in one batch
// in the script's order, whatever the order their results come back in.
func TestParallelBatchOrder(t *testing.T) {
	src := `const qs = ["a", "b", "c", "d"]; return await Promise.all(qs.map((q) => web_search({ query: q })));`
	req := Request{Messages: []Message{code("p", src)}, Tools: []Tool{searchTool("web_search")}}
	resp, _ := wireStep(t, req)
	calls := wantCalls(t, resp, "p", 0, `web_search {"query":"a"}`, `web_search {"query":"b"}`, `web_search {"query":"c"}`, `web_search {"query":"d"}`)
	req.Messages = append(req.Messages, resp.Message)
	// Answered in reverse order, by id.
	for i := len(calls) - 1; i >= 0; i-- {
		req.Messages = append(req.Messages, toolMsg(calls[i].ID, strings.ToUpper(string(rune('a'+i)))))
	}
	resp, _ = wireStep(t, req)
	wantSuccess(t, resp, "p", `["A","B","C","D"]`)
}

// TestBadRequests: malformed requests are errors that say what to fix.
func TestBadRequests(t *testing.T) {
	call := func(id string) Message {
		return Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: id, Function: FunctionCall{Name: "web_search", Arguments: `{"query":"a"}`}}}}
	}
	tools := []Tool{searchTool("web_search")}
	for _, tc := range []struct {
		name string
		req  Request
		want string
	}{
		{"no code message", Request{Messages: []Message{{Role: "user", Content: Marshal("hi")}}}, "no code message"},
		{"empty code", Request{Messages: []Message{code("x", " ")}}, "no code"},
		{"unanswered call", Request{Messages: []Message{code("x", "1"), call("x_0")}, Tools: tools}, "has no tool message"},
		{"tool without call", Request{Messages: []Message{code("x", "1"), toolMsg("x_0", "a")}, Tools: tools}, "no assistant message"},
		{"user inside", Request{Messages: []Message{code("x", "1"), {Role: "user", Content: Marshal("hi")}}}, `"user" message`},
		{"extra tool message", Request{Messages: []Message{code("x", "1"), call("x_0"), toolMsg("x_0", "a"), toolMsg("x_1", "b")}, Tools: tools}, "more tool messages"},
		{"our id out of place", Request{Messages: []Message{code("x", "1"), call("x_1"), toolMsg("x_1", "a")}, Tools: tools}, "call #1"},
		{"bad arguments", Request{Messages: []Message{code("x", "1"), {Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c", Function: FunctionCall{Name: "f", Arguments: "{nope"}}}}, toolMsg("c", "a")}}, "not JSON"},
		{"duplicate tool", Request{Messages: []Message{code("x", "1")}, Tools: []Tool{searchTool("a"), searchTool("a")}}, "defined twice"},
		{"bad now", Request{Messages: []Message{{Role: RoleCode, ID: "x", Code: "1", Now: json.RawMessage(`"yesterday"`)}}}, "RFC 3339"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Step(context.Background(), tc.req)
			e, ok := err.(*Error)
			if !ok || !strings.Contains(e.Message, tc.want) || e.Hint == "" || e.Code != diag.InvalidRequest {
				t.Fatalf("error %v, want an *Error mentioning %q with a hint", err, tc.want)
			}
		})
	}
}

func limits(maxToolCalls int64) (l config.Limits) {
	l.MaxToolCalls = maxToolCalls
	return l
}
