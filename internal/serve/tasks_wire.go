package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What the official Go SDK (v1.8.0) lacks for MCP tasks, as a server, and
// how tasks.go gets it without a fork:
//
//   - The SDK decodes a tools/call's params into CallToolParamsRaw, which
//     has no `task` field (2025-11-25's request for a task). The
//     transports move it under _meta, which the SDK keeps: the stdio
//     connection as it reads each message (taskConn), the HTTP handler in
//     the body of each POST (taskBodies). Transport wraps any transport
//     the same way.
//   - ServerCapabilities has no `tasks` and Tool no `execution`: the
//     initialize and tools/list results are re-encoded with them
//     (patchResult), in a receiving middleware.
//   - tasks/* are custom methods (mcp.AddReceivingCustomMethod), answered
//     in that middleware, which has the request's auth information.
//   - Its results are JSON of our own (rawResult).

// taskParamKey is where the transports put a tools/call's params.task.
const taskParamKey = "codemode/task"

// moveTaskParam moves params.task of a tools/call request under
// params._meta; it reports whether it did.
func moveTaskParam(req *jsonrpc.Request) bool {
	if req.Method != "tools/call" || !bytes.Contains(req.Params, []byte(`"task"`)) {
		return false
	}
	var p map[string]json.RawMessage
	if json.Unmarshal(req.Params, &p) != nil {
		return false
	}
	task, ok := p["task"]
	if !ok {
		return false
	}
	meta := map[string]json.RawMessage{}
	if m, ok := p["_meta"]; ok && json.Unmarshal(m, &meta) != nil {
		return false
	}
	meta[taskParamKey] = task
	delete(p, "task")
	mb, err := json.Marshal(meta)
	if err != nil {
		return false
	}
	p["_meta"] = mb
	out, err := json.Marshal(p)
	if err != nil {
		return false
	}
	req.Params = out
	return true
}

// Transport returns t with what the SDK drops of requests kept (see
// above), as ServeStdio serves it. Tests connect in-memory transports
// through it.
func (s *Server) Transport(t mcp.Transport) mcp.Transport { return taskTransport{t} }

type taskTransport struct{ mcp.Transport }

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
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil {
		moveTaskParam(req)
	}
	return msg, err
}

// taskBodies moves params.task in the body of a POST (see above). The body
// is bounded as the SDK bounds it.
func taskBodies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBodyBytes))
		if err != nil {
			http.Error(w, "the request body is too large or unreadable: "+err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		if bytes.Contains(body, []byte(`"task"`)) {
			if msg, err := jsonrpc.DecodeMessage(body); err == nil {
				if req, ok := msg.(*jsonrpc.Request); ok && moveTaskParam(req) {
					if out, err := jsonrpc.EncodeMessage(req); err == nil {
						body = out
					}
				}
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// rawResult is a result whose JSON is ours. The SDK may still set its
// _meta (the 2026-07-28 serverInfo); MarshalJSON merges it in.
type rawResult struct {
	mcp.ResultBase
	body map[string]json.RawMessage
}

func newRawResult(v any) (*rawResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	r := &rawResult{}
	if err := json.Unmarshal(b, &r.body); err != nil {
		return nil, err
	}
	if r.body == nil {
		r.body = map[string]json.RawMessage{}
	}
	return r, nil
}

func (r *rawResult) set(key string, v any) {
	if b, err := json.Marshal(v); err == nil {
		r.body[key] = b
	}
}

// MarshalJSON writes the body without HTML escapes (see wire.go).
func (r *rawResult) MarshalJSON() ([]byte, error) {
	b, err := r.marshal()
	return unescapeHTML(b), err
}

func (r *rawResult) marshal() ([]byte, error) {
	if len(r.Meta) == 0 {
		return json.Marshal(r.body)
	}
	meta := map[string]any{}
	if m, ok := r.body["_meta"]; ok {
		json.Unmarshal(m, &meta)
	}
	for k, v := range r.Meta {
		meta[k] = v
	}
	out := make(map[string]json.RawMessage, len(r.body)+1)
	for k, v := range r.body {
		out[k] = v
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	out["_meta"] = b
	return json.Marshal(out)
}

// newProtocol reports whether a request follows the 2026-07-28 protocol or
// later (per-request _meta), whose results carry resultType.
func newProtocol(req mcp.Request) bool {
	type versioned interface{ ProtocolVersion() string }
	if v, ok := req.(versioned); ok {
		return v.ProtocolVersion() >= "2026-07-28"
	}
	return false
}

// completeType sets resultType "complete" on a result of ours answering a
// 2026-07-28 request, as the SDK does on its own results.
func completeType(r *rawResult, req mcp.Request) *rawResult {
	if newProtocol(req) {
		if _, ok := r.body["resultType"]; !ok {
			r.set("resultType", "complete")
		}
	}
	return r
}
