package replay_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/codemode-mcp/codemode/internal/replay"
)

// A code block whose tools the client owns, step by step: the first step
// asks for both searches in one batch; the client runs them and sends the
// results; the next step gives the code's result.
func ExampleStep() {
	tools := []replay.Tool{{Type: "function", Function: replay.Function{Name: "web_search",
		Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`)}}}
	msgs := []replay.Message{{Role: "code", ID: "code_1", Code: `const [us, fr] = await Promise.all([
  webSearch({ query: "news US today" }),
  webSearch({ query: "actualités en france aujourd'hui" }),
]);
return { us, fr };`}}

	resp, _ := replay.Step(context.Background(), replay.Request{Messages: msgs, Tools: tools})
	fmt.Println(string(replay.Marshal(resp.Message)))

	msgs = append(msgs, resp.Message,
		replay.Message{Role: "tool", ToolCallID: "code_1_0", Content: json.RawMessage(`"[\"Fed holds rates\"]"`)},
		replay.Message{Role: "tool", ToolCallID: "code_1_1", Content: json.RawMessage(`"[\"Grève SNCF\"]"`)})
	resp, _ = replay.Step(context.Background(), replay.Request{Messages: msgs, Tools: tools})
	fmt.Println(string(replay.Marshal(resp.Message)))
	// Output:
	// {"role":"assistant","content":"","tool_calls":[{"id":"code_1_0","type":"function","function":{"name":"web_search","arguments":"{\"query\":\"news US today\"}"}},{"id":"code_1_1","type":"function","function":{"name":"web_search","arguments":"{\"query\":\"actualités en france aujourd'hui\"}"}}]}
	// {"role":"code_result","id":"code_1","result":{"status":"success","data":{"us":["Fed holds rates"],"fr":["Grève SNCF"]}}}
}
