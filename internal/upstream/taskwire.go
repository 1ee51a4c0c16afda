package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK decodes a tools/call answer into a CallToolResult, which keeps
// nothing of a CreateTaskResult (tasks.go). So the connection moves a
// CreateTaskResult under the _meta of a result the SDK can decode, where
// takeTask finds it:
//
//	{"resultType":"task","taskId":...}  →  {"content":[],"_meta":{"codemode/createdTask":{...}}}
//	{"task":{"taskId":...}}             →  likewise
//
// Connections this package wraps (stdio, Options.Dial) do it on each
// message read; HTTP ones on the response bodies of the POSTs that carry a
// tools/call made by startCall (their context says so) and on a legacy SSE
// stream, where every answer arrives.

// taskResultInMeta returns the result rewritten if it is a
// CreateTaskResult of either generation.
func taskResultInMeta(result json.RawMessage) (json.RawMessage, bool) {
	if !bytes.Contains(result, []byte(`"task`)) {
		return nil, false
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(result, &top) != nil {
		return nil, false
	}
	created := false
	if rt, ok := top["resultType"]; ok {
		var s string
		created = json.Unmarshal(rt, &s) == nil && s == "task"
	}
	if t, ok := top["task"]; ok && !created {
		// 2025-11-25: {task: {taskId, status, ...}}, and nothing of a
		// CallToolResult.
		var inner struct {
			TaskID string `json:"taskId"`
		}
		_, hasContent := top["content"]
		created = !hasContent && json.Unmarshal(t, &inner) == nil && inner.TaskID != ""
	}
	if !created {
		return nil, false
	}
	out, err := json.Marshal(map[string]any{"content": []any{}, "_meta": map[string]json.RawMessage{taskMetaKey: result}})
	if err != nil {
		return nil, false
	}
	return out, true
}

// rewriteTaskMessage applies taskResultInMeta to a response message.
func rewriteTaskMessage(msg jsonrpc.Message) {
	if r, ok := msg.(*jsonrpc.Response); ok && r.Result != nil {
		if out, ok := taskResultInMeta(r.Result); ok {
			r.Result = out
		}
	}
}

// rewriteTaskJSON applies taskResultInMeta to one encoded JSON-RPC
// message, returning it unchanged unless it is a CreateTaskResult.
func rewriteTaskJSON(data []byte) []byte {
	if !bytes.Contains(data, []byte(`"task`)) {
		return data
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return data
	}
	r, ok := msg.(*jsonrpc.Response)
	if !ok || r.Result == nil {
		return data
	}
	out, ok := taskResultInMeta(r.Result)
	if !ok {
		return data
	}
	r.Result = out
	enc, err := jsonrpc.EncodeMessage(r)
	if err != nil {
		return data
	}
	return enc
}

// taskTransport wraps a transport made by Options.Dial so that its
// connection rewrites task answers. HTTP transports are left alone: the
// SDK needs their connections unwrapped (they are tapped instead, see
// tapTasks), and a test that dials one does not call tasks.
type taskTransport struct{ mcp.Transport }

func wrapDialed(t mcp.Transport) mcp.Transport {
	switch t.(type) {
	case *mcp.StreamableClientTransport, *mcp.SSEClientTransport:
		return t
	}
	return taskTransport{t}
}

func (t taskTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &taskConn{Connection: c}, nil
}

type taskConn struct{ mcp.Connection }

func (c *taskConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		rewriteTaskMessage(msg)
	}
	return msg, err
}

// tapTasks makes resp's body rewrite task answers, for a POST that carries
// a tools/call of startCall's and for a legacy SSE stream.
func tapTasks(req *http.Request, resp *http.Response, sse bool) {
	if sse {
		if req.Method != http.MethodGet {
			return
		}
	} else if req.Method != http.MethodPost || taskCallFrom(req.Context()) == nil {
		return
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body = &eventRewriter{src: resp.Body}
		return
	}
	resp.Body = &jsonRewriter{src: resp.Body}
}

// maxTaskAnswer bounds what the rewriters hold to look at: a
// CreateTaskResult is a few hundred bytes, and a larger answer passes
// through as it comes (the memory budget counts answers as the SDK hands
// them over; holding a large one here would double it).
const maxTaskAnswer = 64 << 10

// jsonRewriter reads a JSON body and rewrites it if it is a task answer; a
// body larger than maxTaskAnswer passes through.
type jsonRewriter struct {
	src io.ReadCloser
	rd  io.Reader
}

func (r *jsonRewriter) Read(p []byte) (int, error) {
	if r.rd == nil {
		data, err := io.ReadAll(io.LimitReader(r.src, maxTaskAnswer+1))
		switch {
		case err != nil:
			r.rd = io.MultiReader(bytes.NewReader(data), errReader{err})
		case len(data) > maxTaskAnswer:
			r.rd = io.MultiReader(bytes.NewReader(data), r.src)
		default:
			r.rd = bytes.NewReader(rewriteTaskJSON(data))
		}
	}
	return r.rd.Read(p)
}

func (r *jsonRewriter) Close() error { return r.src.Close() }

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// eventRewriter passes an event stream through, event by event, rewriting
// the data of the events that are task answers. An event is held until its
// blank line, which the SDK waits for anyway; one larger than
// maxTaskAnswer passes through line by line.
type eventRewriter struct {
	src     io.ReadCloser
	in      []byte // read, not yet split into lines
	event   []byte // lines of the current event
	out     []byte // ready for the reader
	buf     []byte // what a Read of src fills
	err     error
	passing bool // an event grew past maxTaskAnswer: lines go through as they are
}

func (r *eventRewriter) Read(p []byte) (int, error) {
	for len(r.out) == 0 {
		if r.err != nil {
			// What is left of an event the stream ended in goes as it is.
			if rest := append(r.event, r.in...); len(rest) > 0 {
				r.out, r.event, r.in = rest, nil, nil
				continue
			}
			return 0, r.err
		}
		if r.buf == nil {
			r.buf = make([]byte, 32<<10)
		}
		n, err := r.src.Read(r.buf)
		r.in = append(r.in, r.buf[:n]...)
		r.err = err
		r.split()
	}
	n := copy(p, r.out)
	r.out = r.out[n:]
	return n, nil
}

// split moves the complete lines read into the current event, and
// complete events (rewritten) to out.
func (r *eventRewriter) split() {
	for {
		i := bytes.IndexByte(r.in, '\n')
		if i < 0 {
			return
		}
		line := r.in[:i+1]
		r.in = r.in[i+1:]
		if r.passing {
			r.out = append(r.out, line...)
			if len(bytes.TrimRight(line, "\r\n")) == 0 {
				r.passing = false
			}
			continue
		}
		r.event = append(r.event, line...)
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			r.out = append(r.out, rewriteEvent(r.event)...)
			r.event = r.event[:0]
			continue
		}
		if len(r.event) > maxTaskAnswer {
			r.out = append(r.out, r.event...)
			r.event, r.passing = r.event[:0], true
		}
	}
}

func (r *eventRewriter) Close() error { return r.src.Close() }

// rewriteEvent rewrites the data of one event (its lines, ending with the
// blank one) if it is a task answer.
func rewriteEvent(ev []byte) []byte {
	if !bytes.Contains(ev, []byte(`"task`)) {
		return ev
	}
	var data []byte
	var other [][]byte
	for _, line := range bytes.SplitAfter(ev, []byte("\n")) {
		trimmed := bytes.TrimRight(line, "\r\n")
		if d, ok := bytes.CutPrefix(trimmed, []byte("data:")); ok {
			d = bytes.TrimPrefix(d, []byte(" "))
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, d...)
			continue
		}
		if len(trimmed) > 0 {
			other = append(other, line)
		}
	}
	out := rewriteTaskJSON(data)
	if bytes.Equal(out, data) {
		return ev
	}
	var b bytes.Buffer
	for _, l := range other {
		b.Write(l)
	}
	b.WriteString("data: ")
	b.Write(out)
	b.WriteString("\n\n")
	return b.Bytes()
}

// taskNameHeader returns req with the Mcp-Name header a 2026-07-28
// tasks/get, tasks/update or tasks/cancel must carry over Streamable HTTP
// (the task id, for routing to the replica holding the task), which the
// SDK sets only for the methods it knows.
func taskNameHeader(req *http.Request) *http.Request {
	if !strings.HasPrefix(req.Header.Get("Mcp-Method"), "tasks/") || req.Header.Get("Mcp-Name") != "" || req.GetBody == nil {
		return req
	}
	body, err := req.GetBody()
	if err != nil {
		return req
	}
	defer body.Close()
	var msg struct {
		Params struct {
			TaskID string `json:"taskId"`
		} `json:"params"`
	}
	if json.NewDecoder(io.LimitReader(body, 64<<10)).Decode(&msg) != nil || msg.Params.TaskID == "" {
		return req
	}
	req = req.Clone(req.Context())
	req.Header.Set("Mcp-Name", msg.Params.TaskID)
	return req
}
