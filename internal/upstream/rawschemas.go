package upstream

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK decodes a tool's inputSchema and outputSchema into Go maps, which
// forget the order of properties; declarations generated from them list
// every property alphabetically (edit_file(dryRun, edits, path) instead of
// the server's path, edits, dryRun), which reads worse to a model. For
// stdio servers, whose connection we wrap, the tools/list responses are
// also read as they arrived, and the schemas kept as JSON, in their order
// (see keepOrder). Streamable HTTP and SSE connections cannot be wrapped
// (the SDK looks for unexported methods on them), so those keep the maps.

// rawLists remembers the tools/list requests in flight on a connection and
// the schemas of the tools their responses listed.
type rawLists struct {
	mu      sync.Mutex
	pending map[any]bool             // ids of tools/list requests sent
	schemas map[string]rawToolSchema // by tool name, from the latest responses
}

type rawToolSchema struct {
	input, output json.RawMessage // compact; nil when absent
}

func (l *rawLists) sent(msg jsonrpc.Message) {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/list" && req.ID.IsValid() {
		l.mu.Lock()
		if l.pending == nil {
			l.pending = map[any]bool{}
		}
		l.pending[req.ID.Raw()] = true
		l.mu.Unlock()
	}
}

func (l *rawLists) received(msg jsonrpc.Message) {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.Result == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.pending[resp.ID.Raw()] {
		return
	}
	delete(l.pending, resp.ID.Raw())
	var page struct {
		Tools []struct {
			Name         string          `json:"name"`
			InputSchema  json.RawMessage `json:"inputSchema"`
			OutputSchema json.RawMessage `json:"outputSchema"`
		} `json:"tools"`
	}
	if json.Unmarshal(resp.Result, &page) != nil {
		return // the SDK reports what is wrong with it
	}
	if l.schemas == nil {
		l.schemas = map[string]rawToolSchema{}
	}
	for _, t := range page.Tools {
		l.schemas[t.Name] = rawToolSchema{compact(t.InputSchema), compact(t.OutputSchema)}
	}
}

// compact returns an object schema as compact JSON, or nil for anything
// else (absent, null, not an object: the SDK's value stays).
func compact(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return nil
	}
	return b.Bytes()
}

// keepOrder replaces the schemas of tools with the JSON they arrived as,
// when it was captured. The JSON decodes to the same value as the SDK's
// map (same response), so only the order of keys changes.
func (l *rawLists) keepOrder(tools []*mcp.Tool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range tools {
		r, ok := l.schemas[t.Name]
		if !ok {
			continue
		}
		if r.input != nil && t.InputSchema != nil {
			t.InputSchema = r.input
		}
		if r.output != nil && t.OutputSchema != nil {
			t.OutputSchema = r.output
		}
	}
}
