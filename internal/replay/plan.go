package replay

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/codemode-mcp/codemode/internal/diag"
)

// Error is a request a step cannot work with: a malformed message, a batch
// of calls not fully answered, a tool defined twice. It is not a script's
// failure (that is a code result with status "error"): the client must fix
// the request.
type Error struct {
	Code    diag.Code `json:"code"`
	Message string    `json:"message"`
	Hint    string    `json:"hint,omitempty"`
	// Path is the JSON Pointer of the offending part of the request.
	Path string `json:"path,omitempty"`
}

func (e *Error) Error() string {
	s := e.Message
	if e.Path != "" {
		s = e.Path + ": " + s
	}
	if e.Hint != "" {
		s += " (hint: " + e.Hint + ")"
	}
	return s
}

func badRequest(path, hint, format string, args ...any) *Error {
	return &Error{Code: diag.InvalidRequest, Message: fmt.Sprintf(format, args...), Hint: hint, Path: path}
}

// plan is what a request says: the code block and the calls answered so
// far, in the order the script made them.
type plan struct {
	codeID string
	code   string
	now    time.Time
	seed   uint32
	calls  []recorded
}

// recorded is one answered call: position i of plan.calls is the script's
// i-th tool call.
type recorded struct {
	id      string // the call's id as the conversation has it
	name    string
	args    string // JSON text of the arguments; "" for none
	content json.RawMessage
	isError bool
	ptr     string // JSON Pointer of the call in the request
}

// CallID is the id of the script's call at position pos (0-based) in the
// code block codeID: "<codeID>_<pos>". A rerun makes the same call at the
// same position, so it gets the same id.
func CallID(codeID string, pos int) string { return codeID + "_" + strconv.Itoa(pos) }

// ownPosition returns the position a call id of ours encodes.
func ownPosition(codeID, id string) (int, bool) {
	rest, ok := strings.CutPrefix(id, codeID+"_")
	if !ok || rest == "" || (len(rest) > 1 && rest[0] == '0') {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || strconv.Itoa(n) != rest {
		return 0, false
	}
	return n, true
}

const (
	hintCodeMessage = `begin the messages with {"role": "code", "id": "<id>", "code": "<script>"}`
	hintPairs       = "after the code message send, for each step's assistant message, that message unchanged and then one tool message per tool call"
)

// parse reads the code block of req.
func parse(req *Request) (*plan, *Error) {
	start := -1
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == RoleCode {
			start = i
			break
		}
	}
	if start < 0 {
		return nil, badRequest("/messages", hintCodeMessage, "there is no code message (role \"code\")")
	}
	cm := req.Messages[start]
	p := &plan{code: cm.Code, codeID: cm.ID}
	at := fmt.Sprintf("/messages/%d", start)
	if strings.TrimSpace(cm.Code) == "" {
		return nil, badRequest(at+"/code", hintCodeMessage, "the code message has no code")
	}
	if p.codeID == "" {
		sum := sha256.Sum256([]byte(cm.Code))
		p.codeID = "code_" + hex.EncodeToString(sum[:6])
	}
	h := fnv.New32a()
	h.Write([]byte(p.codeID))
	p.seed = h.Sum32()
	now, err := parseNow(cm.Now, p.codeID)
	if err != nil {
		return nil, badRequest(at+"/now", `give now as milliseconds since the epoch or an RFC 3339 string ("2025-06-01T12:00:00Z"), or leave it out`, "%v", err)
	}
	p.now = now

	msgs := req.Messages
	for i := start + 1; i < len(msgs); {
		m := msgs[i]
		at := fmt.Sprintf("/messages/%d", i)
		switch m.Role {
		case RoleCodeResult:
			return p, nil // the block is over; what follows is not ours
		case RoleAssistant:
		case RoleTool:
			return nil, badRequest(at, hintPairs, "a tool message with no assistant message (with tool_calls) before it")
		case RoleCode:
			panic("unreachable: start is the last code message")
		default:
			return nil, badRequest(at, hintPairs, "a %q message inside the code block: only assistant messages with tool_calls and tool messages may follow the code message, until its code_result", m.Role)
		}
		if len(m.ToolCalls) == 0 {
			return nil, badRequest(at, hintPairs, "an assistant message without tool_calls inside the code block")
		}
		n := len(m.ToolCalls)
		var answers []int // message indices of the tool messages
		for j := i + 1; j < len(msgs) && len(answers) < n && msgs[j].Role == RoleTool; j++ {
			answers = append(answers, j)
		}
		if len(answers) < n {
			c := m.ToolCalls[len(answers)]
			return nil, badRequest(fmt.Sprintf("%s/tool_calls/%d", at, len(answers)), "answer every call of an assistant message, each with a tool message {\"role\": \"tool\", \"tool_call_id\": \"<id>\", \"content\": \"<result>\"}, before stepping again",
				"tool call %q (%s) has no tool message: the assistant message has %d tool calls and %d tool messages follow it", c.ID, c.Function.Name, n, len(answers))
		}
		if j := i + 1 + n; j < len(msgs) && msgs[j].Role == RoleTool {
			return nil, badRequest(fmt.Sprintf("/messages/%d", j), hintPairs, "more tool messages than the %d tool calls of the assistant message before them", n)
		}
		order, err := match(p.codeID, msgs, i, answers)
		if err != nil {
			return nil, err
		}
		for k, c := range m.ToolCalls {
			pos := len(p.calls)
			ptr := fmt.Sprintf("%s/tool_calls/%d", at, k)
			if own, ok := ownPosition(p.codeID, c.ID); ok && own != pos {
				return nil, badRequest(ptr+"/id", "resend the assistant messages exactly as the steps returned them, in order",
					"tool call %q is the script's call #%d, but it is at position %d of the code block", c.ID, own, pos)
			}
			if c.Function.Name == "" {
				return nil, badRequest(ptr+"/function/name", hintPairs, "tool call %q has no function name", c.ID)
			}
			if c.Function.Arguments != "" && !json.Valid([]byte(c.Function.Arguments)) {
				return nil, badRequest(ptr+"/function/arguments", "arguments must be the JSON of the input, as a string or an object", "tool call %q: its arguments are not JSON", c.ID)
			}
			t := msgs[order[k]]
			p.calls = append(p.calls, recorded{id: c.ID, name: c.Function.Name, args: c.Function.Arguments, content: t.Content, isError: t.IsError, ptr: ptr})
		}
		i += 1 + n
	}
	return p, nil
}

// match pairs the calls of the assistant message at msgs[a] with the tool
// messages at answers (message indices). A tool message whose
// tool_call_id is the id of one of the calls answers that call, in any
// order; the others answer the calls left, in order. So answers carrying
// the calls' ids may come in any order, and answers whose ids are the
// client's own (the seed's examples: their ids do not always agree) are
// matched by position. A tool message with an id of ours that names a call
// of another batch is a mix-up, refused. It returns, per call, the message
// index of its answer.
func match(codeID string, msgs []Message, a int, answers []int) ([]int, *Error) {
	calls := msgs[a].ToolCalls
	byID := map[string]int{}
	for k, c := range calls {
		if _, dup := byID[c.ID]; !dup && c.ID != "" {
			byID[c.ID] = k
		}
	}
	order := make([]int, len(calls))
	taken := make([]bool, len(calls))
	var rest []int
	for _, j := range answers {
		id := msgs[j].ToolCallID
		if k, ok := byID[id]; ok && !taken[k] {
			taken[k] = true
			order[k] = j
			continue
		}
		if _, ours := ownPosition(codeID, id); ours {
			if _, inBatch := byID[id]; !inBatch {
				return nil, badRequest(fmt.Sprintf("/messages/%d/tool_call_id", j), hintPairs,
					"this tool message answers call %q, which is not a call of the assistant message before it", id)
			}
		}
		rest = append(rest, j)
	}
	k := 0
	for _, j := range rest {
		for taken[k] {
			k++
		}
		taken[k] = true
		order[k] = j
	}
	return order, nil
}

// parseNow reads a code message's now: milliseconds since the epoch or an
// RFC 3339 string. Without one the time is derived from the code id, so a
// step is still a function of its request: some instant between 2020 and
// 2030, the same for every step of the block.
func parseNow(raw json.RawMessage, codeID string) (time.Time, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		h := fnv.New64a()
		h.Write([]byte(codeID))
		const from, span = 1577836800, 10 * 365 * 24 * 3600 // 2020-01-01, ten years
		return time.Unix(from+int64(h.Sum64()%span), 0).UTC(), nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return time.Time{}, err
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}, fmt.Errorf("now %q is not an RFC 3339 time", s)
		}
		return t, nil
	}
	var ms float64
	if err := json.Unmarshal(raw, &ms); err != nil {
		return time.Time{}, fmt.Errorf("now %s is neither a number nor a string", raw)
	}
	if ms < -8.64e15 || ms > 8.64e15 {
		return time.Time{}, fmt.Errorf("now %s is out of range for a JavaScript Date", raw)
	}
	return time.UnixMilli(int64(ms)).UTC(), nil
}
