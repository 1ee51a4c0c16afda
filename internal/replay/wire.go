package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/sandbox"
)

// This file is the wire format: the seed's messages, which a completion-API
// client keeps in its ordinary message history. Decoding is lenient about
// spelling (the seed's own examples use toolCalls and toolCallId, and
// object-valued arguments); encoding always writes the OpenAI spelling.

// Roles of the messages a step reads and writes.
const (
	RoleCode       = "code"
	RoleCodeResult = "code_result"
	RoleAssistant  = "assistant"
	RoleTool       = "tool"
)

// Request is one step: the conversation of one code block so far, the
// client's tools and the limits of the run.
type Request struct {
	// Messages begins with a code message (earlier messages of the
	// conversation are skipped: the last code message opens the block),
	// followed by pairs of an assistant message with tool_calls and one
	// tool message per call. Messages from a code_result on are ignored.
	Messages []Message `json:"messages"`
	// Tools are the client's tools, OpenAI-style function definitions.
	Tools []Tool `json:"tools"`
	// Limits of each step (§3.2.4 names): timeoutMs, maxMemoryBytes,
	// maxLogBytes, maxResultBytes apply to the step's run; maxToolCalls to
	// the calls of all steps together.
	Limits config.Limits `json:"limits,omitzero"`
}

// Response is what a step answers: the next message of the conversation,
// and what the run printed and reported.
type Response struct {
	// Message is either an assistant message whose tool_calls the client
	// must answer (one tool message each, then step again with them
	// appended), or the code result, which ends the block.
	Message Message `json:"message"`
	// Logs is the console output of the whole run so far: every step reruns
	// the script from the start, so a step's logs include the earlier
	// steps'. Times are virtual milliseconds.
	Logs []sandbox.LogEntry `json:"logs"`
	// Diagnostics are the run's, plus REPLAY_DIVERGED when the script no
	// longer makes the calls the conversation recorded.
	Diagnostics []diag.Diagnostic `json:"diagnostics"`
}

// Message is one message. Which fields matter depends on Role; encoding
// writes only those.
type Message struct {
	Role string
	// Content of an assistant, tool, user or system message: a JSON string,
	// an array of text parts, or (tool messages) any JSON value.
	Content json.RawMessage
	// ID of a code or code_result message.
	ID string
	// Code of a code message: JavaScript or TypeScript.
	Code string
	// Now of a code message, optional: the time Date reads when the script
	// starts, as milliseconds since the epoch or an RFC 3339 string.
	Now json.RawMessage
	// ToolCalls of an assistant message.
	ToolCalls []ToolCall
	// ToolCallID of a tool message: the call it answers.
	ToolCallID string
	// IsError marks a tool message as the tool's failure: the script's call
	// throws a ToolCallError whose message is the content. Decoded from
	// "is_error": true, "isError": true, "status": "error", or an "error"
	// field (whose value is the failure when there is no content).
	IsError bool
	// Result of a code_result message.
	Result *CodeResult
}

// ToolCall is one call of an assistant message.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall names the tool and its arguments. Arguments is the JSON text
// of the input (decoded from a string, as OpenAI sends it, or from an
// object, as the seed's examples also do); it is encoded as a string.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// CodeResult is how a code block ended.
type CodeResult struct {
	Status string `json:"status"` // "success" or "error"
	// Data is the script's value (status success), JSON.
	Data json.RawMessage `json:"data,omitempty"`
	// Error says why the script failed (status error).
	Error *ErrorInfo `json:"error,omitempty"`
}

// ErrorInfo is a failed script's error: its class or JavaScript name, its
// message and, when there is one, a corrective hint.
type ErrorInfo struct {
	Name    string `json:"name"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
}

// Tool is one client tool, as OpenAI's tools array has it. A flat
// {name, description, parameters} is accepted too.
type Tool struct {
	Type     string   `json:"type"`
	Function Function `json:"function"`
}

// Function is a tool's definition. Parameters is its input's JSON Schema.
type Function struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

func (t *Tool) UnmarshalJSON(b []byte) error {
	var w struct {
		Type        string          `json:"type"`
		Function    *Function       `json:"function"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	t.Type = w.Type
	if w.Function != nil {
		t.Function = *w.Function
	} else {
		t.Function = Function{Name: w.Name, Description: w.Description, Parameters: w.Parameters}
	}
	return nil
}

// wireMessage is every spelling a message may arrive in.
type wireMessage struct {
	Role          string          `json:"role"`
	Content       json.RawMessage `json:"content"`
	ID            string          `json:"id"`
	Code          string          `json:"code"`
	Now           json.RawMessage `json:"now"`
	ToolCalls     []wireToolCall  `json:"tool_calls"`
	ToolCallsAlt  []wireToolCall  `json:"toolCalls"`
	ToolCallID    string          `json:"tool_call_id"`
	ToolCallIDAlt string          `json:"toolCallId"`
	IsError       bool            `json:"is_error"`
	IsErrorAlt    bool            `json:"isError"`
	Status        string          `json:"status"`
	Error         json.RawMessage `json:"error"`
	Result        *CodeResult     `json:"result"`
}

type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

func (m *Message) UnmarshalJSON(b []byte) error {
	var w wireMessage
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*m = Message{Role: w.Role, Content: w.Content, ID: w.ID, Code: w.Code, Now: w.Now,
		ToolCallID: w.ToolCallID, IsError: w.IsError || w.IsErrorAlt, Result: w.Result}
	if w.Role == RoleTool && (w.Status == "error" || !isNullJSON(w.Error)) {
		// Other spellings of a failed result: {"status": "error"}, as the
		// seed's code results say it, or an "error" field, whose value is
		// the failure when there is no content.
		m.IsError = true
		if len(m.Content) == 0 && !isNullJSON(w.Error) {
			m.Content = w.Error
		}
	}
	if isNullJSON(m.Content) {
		m.Content = nil
	}
	if m.Role == RoleCode && m.Code == "" {
		// Some clients carry every message's text in content.
		if text, ok := contentText(m.Content); ok {
			m.Code = text
		}
	}
	if m.ToolCallID == "" {
		m.ToolCallID = w.ToolCallIDAlt
	}
	calls := w.ToolCalls
	if len(calls) == 0 {
		calls = w.ToolCallsAlt
	}
	for i, c := range calls {
		args, err := argumentsText(c.Function.Arguments)
		if err != nil {
			return fmt.Errorf("tool call %d (%q): %v", i, c.ID, err)
		}
		m.ToolCalls = append(m.ToolCalls, ToolCall{ID: c.ID, Type: c.Type, Function: FunctionCall{Name: c.Function.Name, Arguments: args}})
	}
	return nil
}

func isNullJSON(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

// argumentsText returns the JSON text of a call's arguments, given as a
// JSON string holding it (OpenAI) or as the value itself.
func argumentsText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	if raw[0] != '"' {
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return "", err
		}
		return buf.String(), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", err
	}
	return s, nil
}

func (m Message) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"role":`)
	writeJSON(&b, m.Role)
	field := func(name string, v any) {
		b.WriteString(`,"` + name + `":`)
		writeJSON(&b, v)
	}
	content := func() {
		if len(m.Content) > 0 {
			field("content", m.Content)
		} else {
			field("content", "")
		}
	}
	switch m.Role {
	case RoleCode:
		field("id", m.ID)
		field("code", m.Code)
		if len(m.Now) > 0 {
			field("now", m.Now)
		}
	case RoleCodeResult:
		field("id", m.ID)
		field("result", m.Result)
	case RoleAssistant:
		content()
		if len(m.ToolCalls) > 0 {
			field("tool_calls", m.ToolCalls)
		}
	case RoleTool:
		field("tool_call_id", m.ToolCallID)
		content()
		if m.IsError {
			field("is_error", true)
		}
	default:
		content()
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// writeJSON encodes v without HTML escaping ("<b>" stays readable), and
// without the encoder's trailing newline.
func writeJSON(b *bytes.Buffer, v any) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		b.WriteString("null")
		return
	}
	b.Truncate(b.Len() - 1)
}

// Marshal encodes v as the wire does: no HTML escaping, no trailing newline.
func Marshal(v any) []byte {
	var b bytes.Buffer
	writeJSON(&b, v)
	return b.Bytes()
}

// contentText is the text of a message's content: a JSON string, or the
// concatenated text of an array of text parts ({"type": "text", "text"}).
// ok is false for any other JSON (a tool message may carry a value).
func contentText(raw json.RawMessage) (text string, ok bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", true
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s, true
		}
	case '[':
		var parts []struct {
			Type string  `json:"type"`
			Text *string `json:"text"`
		}
		if json.Unmarshal(raw, &parts) != nil || len(parts) == 0 {
			return "", false
		}
		var sb strings.Builder
		for _, p := range parts {
			if p.Type != "text" || p.Text == nil {
				return "", false
			}
			sb.WriteString(*p.Text)
		}
		return sb.String(), true
	}
	return "", false
}
