package upstream

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
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
// (the SDK looks for unexported methods on them): their HTTP exchanges are
// tapped instead (tapHTTP).

// rawLists remembers the tools/list requests in flight on a connection and
// the schemas of the tools their responses listed.
type rawLists struct {
	mu      sync.Mutex
	pending map[any]bool             // ids of tools/list requests sent
	schemas map[string]rawToolSchema // by tool name, from the latest responses
}

type rawToolSchema struct {
	input, output json.RawMessage // compact; nil when absent
	taskSupport   string          // execution.taskSupport, as declared
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
			Execution    *struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		} `json:"tools"`
	}
	if json.Unmarshal(resp.Result, &page) != nil {
		return // the SDK reports what is wrong with it
	}
	if l.schemas == nil {
		l.schemas = map[string]rawToolSchema{}
	}
	for _, t := range page.Tools {
		r := rawToolSchema{input: compact(t.InputSchema), output: compact(t.OutputSchema)}
		if t.Execution != nil {
			r.taskSupport = t.Execution.TaskSupport
		}
		l.schemas[t.Name] = r
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

// taskSupport returns the execution.taskSupport of the tools that declared
// one other than "forbidden" (MCP's default), by name, or nil. Like
// keepOrder, it trusts a capture only if its input schema is the one the
// SDK decoded. Call it before keepOrder, which ends the listing.
func (l *rawLists) taskSupport(tools []*mcp.Tool) map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out map[string]string
	for _, t := range tools {
		r, ok := l.schemas[t.Name]
		if !ok || r.taskSupport == "" || r.taskSupport == "forbidden" || !(r.input == nil && t.InputSchema == nil || same(r.input, t.InputSchema)) {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[t.Name] = r.taskSupport
	}
	return out
}

// keepOrder replaces the schemas of tools with the JSON they arrived as,
// when it was captured and decodes to exactly what the SDK decoded: a
// capture missed or stale (an answer the tap did not see, a name listed
// twice, decoders that disagree) keeps the SDK's map, so only the order of
// keys can ever change. A listing is over, so no answer is awaited any
// more.
func (l *rawLists) keepOrder(tools []*mcp.Tool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.pending)
	for _, t := range tools {
		r, ok := l.schemas[t.Name]
		if !ok {
			continue
		}
		if same(r.input, t.InputSchema) {
			t.InputSchema = r.input
		}
		if same(r.output, t.OutputSchema) {
			t.OutputSchema = r.output
		}
	}
	l.schemas = nil
}

// same reports whether raw decodes to decoded, the SDK's value.
func same(raw json.RawMessage, decoded any) bool {
	if raw == nil || decoded == nil {
		return false
	}
	var v any
	return json.Unmarshal(raw, &v) == nil && reflect.DeepEqual(v, decoded)
}

// waiting reports whether a tools/list answer is awaited.
func (l *rawLists) waiting() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pending) > 0
}

// receivedJSON is received for a message still in its JSON form.
func (l *rawLists) receivedJSON(data []byte) {
	if !l.waiting() {
		return
	}
	if msg, err := jsonrpc.DecodeMessage(data); err == nil {
		l.received(msg)
	}
}

// The tools/list exchanges of an HTTP connection: a POST's body says which
// ids are tools/list requests (sentHTTP, before the request goes out: a
// legacy SSE server may answer on its stream before the POST returns), and
// the answer, a JSON body or an event stream, is read through a tap as the
// SDK reads it (tapHTTP). The legacy SSE transport (sse) answers on its GET
// event stream, which is tapped whole; Streamable HTTP answers each POST in
// its response.

// maxListRequest bounds the body of a request sentHTTP looks into.
const maxListRequest = 4 << 10

// sentHTTP records a tools/list request in req's body, and reports whether
// there was one.
func (l *rawLists) sentHTTP(req *http.Request) bool {
	// A tools/list request is small (its only parameter is a cursor), and
	// most POSTs are tool calls, whose arguments may be large: they cost
	// one bounded read and no decode.
	if req.Method != http.MethodPost || req.GetBody == nil || req.ContentLength > maxListRequest {
		return false
	}
	body, err := req.GetBody()
	if err != nil {
		return false
	}
	data, err := io.ReadAll(io.LimitReader(body, maxListRequest+1))
	body.Close()
	if err != nil || len(data) > maxListRequest || !bytes.Contains(data, []byte(`"tools/list"`)) {
		return false
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return false
	}
	l.sent(msg)
	r, ok := msg.(*jsonrpc.Request)
	return ok && r.Method == "tools/list"
}

// tapHTTP reads resp through a tap when it may carry a tools/list answer:
// the answer to a POST that sent one (list, Streamable HTTP), or the event
// stream of a legacy SSE connection.
func (l *rawLists) tapHTTP(req *http.Request, resp *http.Response, sse, list bool) {
	if sse && req.Method != http.MethodGet || !sse && !list {
		return
	}
	events := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	resp.Body = &tap{ReadCloser: resp.Body, l: l, events: events}
}

// tap passes a response body through to the SDK and hands the JSON-RPC
// messages in it to rawLists: the whole body for JSON, each event's data
// for an event stream. It gives up on a message larger than the SDK reads.
type tap struct {
	io.ReadCloser
	l      *rawLists
	events bool
	buf    []byte // the JSON body, or the event stream's current line
	data   []byte // the current event's data
	off    bool
}

func (t *tap) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if !t.off && n > 0 {
		if t.events {
			t.feed(p[:n])
		} else if t.buf = append(t.buf, p[:n]...); len(t.buf) > maxTap {
			t.off, t.buf = true, nil
		}
	}
	if err == io.EOF && !t.events && !t.off {
		t.l.receivedJSON(t.buf)
		t.off, t.buf = true, nil
	}
	return n, err
}

// maxTap is the SDK's own bound on one message.
const maxTap = mcp.DefaultMaxLineLength

// feed reads event-stream lines: "data:" lines make up an event's data,
// and a blank line ends the event.
func (t *tap) feed(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			t.buf = append(t.buf, b...)
			if len(t.buf) > maxTap {
				t.off, t.buf, t.data = true, nil, nil
			}
			return
		}
		line := bytes.TrimSuffix(append(t.buf, b[:i]...), []byte("\r"))
		b = b[i+1:]
		switch {
		case len(line) == 0:
			if len(t.data) > 0 {
				t.l.receivedJSON(t.data)
			}
			t.data = t.data[:0]
			if cap(t.data) > 1<<20 {
				t.data = nil // a long stream keeps no big event's buffer
			}
		case bytes.HasPrefix(line, []byte("data:")):
			d := bytes.TrimPrefix(line[len("data:"):], []byte(" "))
			if len(t.data) > 0 {
				t.data = append(t.data, '\n')
			}
			t.data = append(t.data, d...)
			if len(t.data) > maxTap {
				t.off, t.buf, t.data = true, nil, nil
				return
			}
		}
		t.buf = t.buf[:0]
		if cap(t.buf) > 1<<20 {
			t.buf = nil
		}
	}
}
