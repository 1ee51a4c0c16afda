package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

// fuzzScript branches on what its calls return: parallel batches, a
// conditional call, caught failures, a loop whose length depends on the
// results.
const fuzzScript = `const seen = [];
for (let i = 0; i < 6; i++) {
  let r;
  try { r = await get({ i }); } catch (e) { seen.push("err:" + e.name); continue; }
  seen.push(typeof r);
  if (typeof r === "number" && r > 100) {
    const [a, b] = await Promise.all([get({ i: i * 10 }), get({ i: i * 10 + 1 }).catch(() => "x")]);
    seen.push(String(a).length + String(b).length);
  }
  if (r && r.stop) break;
  if (typeof r === "string" && r.length > 3) get({ i: -1 }).catch(() => {}); // not awaited
}
return seen;`

var fuzzTools = []Tool{{Type: "function", Function: Function{Name: "get", Parameters: json.RawMessage(`{"type":"object","properties":{"i":{"type":"integer"}}}`)}}}

// FuzzStep drives the fuzz script with results drawn from the input: for
// any sequence of tool results (JSON of every kind, plain text, failures,
// text parts, foreign ids, answers in any order) a step never panics,
// never returns an error for a well-formed request, never asks for a
// position twice or for one already answered, and ends the block.
func FuzzStep(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7})
	f.Add([]byte{3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3})
	f.Add([]byte{7, 200, 9, 1, 255, 0, 128})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		next := func() byte {
			if len(data) == 0 {
				return 0
			}
			b := data[0]
			data = data[1:]
			return b
		}
		req := Request{Messages: []Message{code("fz", fuzzScript)}, Tools: fuzzTools}
		asked := map[string]bool{}
		for step := 0; ; step++ {
			if step > 40 {
				t.Fatalf("no code result after 40 steps")
			}
			resp, err := Step(context.Background(), req)
			if err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			m := resp.Message
			if m.Role == RoleCodeResult {
				if m.Result == nil || (m.Result.Status != "success" && m.Result.Status != "error") {
					t.Fatalf("bad code result %s", Marshal(m))
				}
				return
			}
			if m.Role != RoleAssistant || len(m.ToolCalls) == 0 {
				t.Fatalf("step %d: message %s", step, Marshal(m))
			}
			for _, c := range m.ToolCalls {
				if asked[c.ID] {
					t.Fatalf("step %d asks for %s again", step, c.ID)
				}
				asked[c.ID] = true
			}
			req.Messages = append(req.Messages, m)
			answers := make([]Message, len(m.ToolCalls))
			for i, c := range m.ToolCalls {
				answers[i] = fuzzAnswer(next(), c)
			}
			if next()%4 == 0 { // answered in reverse order (by id)
				for i, j := 0, len(answers)-1; i < j; i, j = i+1, j-1 {
					answers[i], answers[j] = answers[j], answers[i]
				}
			}
			req.Messages = append(req.Messages, answers...)
		}
	})
}

func fuzzAnswer(b byte, c ToolCall) Message {
	m := Message{Role: RoleTool, ToolCallID: c.ID}
	if b&0x80 != 0 {
		m.ToolCallID = fmt.Sprintf("foreign-%d", b) // a client's own id
	}
	switch b % 8 {
	case 0:
		m.Content = Marshal(fmt.Sprint(int(b) * 3)) // a number as text
	case 1:
		m.Content = Marshal("plain text that is not JSON")
	case 2:
		m.Content = Marshal(`{"stop":true}`)
	case 3:
		m.Content = Marshal("boom")
		m.IsError = true
	case 4:
		m.Content = json.RawMessage(`[{"type":"text","text":"[1,"},{"type":"text","text":"2]"}]`)
	case 5:
		m.Content = json.RawMessage(`{"an":"object","n":1e400}`)
	case 6:
		m.Content = Marshal("")
	default:
		m.Content = Marshal(`"ok"`)
	}
	return m
}
