package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	segjson "github.com/segmentio/encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tool call to a stdio server is the gateway's hot path, and the SDK's
// client spends more on it than everything else codemode does per call:
// besides what lineConn saves, awaiting the answer decodes its result
// through the SDK's internal JSON package twice more (the result, then the
// CallToolResult inside its UnmarshalJSON), each time starting a fresh
// 32 KiB buffer (docs/BENCHMARKS.md, "The stdio call path"). So tools/call
// to a stdio server does not go through ClientSession.CallTool: lineConn
// writes the request itself, with a string id that the SDK's own requests
// (numbered) never use, and Read hands the answer to the waiting call
// instead of to the SDK. Everything else on the connection (initialize,
// lists, notifications, pings, the server's own requests) stays the
// SDK's.
//
// What stays the same as through the SDK: the request on the wire (the
// SDK's params encoding and envelope), notifications/cancelled when the
// caller gives up, the errors (wrapped as the SDK's call wraps them, so
// that classify.go sees what it would see), and the result: a result of the
// common shape (text blocks, structuredContent, isError, nothing else) is
// built directly, any other is decoded by the SDK's own
// CallToolResult.UnmarshalJSON. directcall_test.go checks both against the
// SDK's decoding.
//
// The path is taken only for sessions that negotiated a protocol version
// older than 2026-07-28: from that version on the SDK adds per-request
// _meta and handles multi-round-trip results, which this path does not.

// directReply is the answer to a direct call, or why there is none.
type directReply struct {
	resp *jsonrpc.Response
	err  error
}

// directIDPrefix starts the id of every direct call.
const directIDPrefix = "codemode-"

// newProtocolVersion is the first protocol version the direct path does not
// serve (see above).
const newProtocolVersion = "2026-07-28"

// directOK reports whether calls on cs may take the direct path.
func directOK(cs *mcp.ClientSession) bool {
	r := cs.InitializeResult()
	return r != nil && r.ProtocolVersion != "" && r.ProtocolVersion < newProtocolVersion
}

// deliver hands the answers to direct calls among msgs to their callers and
// returns the other messages, for the SDK.
func (c *lineConn) deliver(msgs []jsonrpc.Message) []jsonrpc.Message {
	out := msgs[:0]
	for _, m := range msgs {
		if r, ok := m.(*jsonrpc.Response); ok {
			if id, ok := r.ID.Raw().(string); ok && len(id) > len(directIDPrefix) && id[:len(directIDPrefix)] == directIDPrefix {
				c.mu.Lock()
				ch := c.pending[id]
				delete(c.pending, id)
				c.mu.Unlock()
				if ch != nil {
					ch <- directReply{resp: r}
				}
				// An answer to a call that gave up: dropped, as the
				// SDK drops answers to retired calls.
				continue
			}
		}
		out = append(out, m)
	}
	return out
}

// end fails the direct calls in flight, and every later one, once reading
// has stopped (the connection broke or was closed).
func (c *lineConn) end(cause error) {
	err := fmt.Errorf("%w: calling %q: %v", mcp.ErrConnectionClosed, "tools/call", cause)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended == nil {
		c.ended = err
	}
	for id, ch := range c.pending {
		ch <- directReply{err: c.ended}
		delete(c.pending, id)
	}
}

// notifyCancelTimeout bounds sending notifications/cancelled (the SDK's
// notifyCancellationTimeout).
const notifyCancelTimeout = 5 * time.Second

// callTool is tools/call on the direct path.
func (c *lineConn) callTool(ctx context.Context, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	const method = "tools/call"
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	q := *p
	if q.Arguments == nil {
		q.Arguments = map[string]any{} // as ClientSession.CallTool: never null on the wire
	}
	params, err := json.Marshal(&q)
	if err != nil {
		return nil, fmt.Errorf("calling %q: marshaling call parameters: %w", method, err)
	}
	ch := make(chan directReply, 1)
	c.mu.Lock()
	if c.ended != nil {
		err := c.ended
		c.mu.Unlock()
		return nil, err
	}
	c.seq++
	id := directIDPrefix + strconv.FormatInt(c.seq, 10)
	if c.pending == nil {
		c.pending = map[string]chan directReply{}
	}
	c.pending[id] = ch
	c.mu.Unlock()
	rid, _ := jsonrpc.MakeID(id)
	if err := c.Write(ctx, &jsonrpc.Request{ID: rid, Method: method, Params: params}); err != nil {
		c.forget(id)
		return nil, fmt.Errorf("calling %q: %w", method, err)
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, r.err
		}
		if r.resp.Error != nil {
			return nil, fmt.Errorf("calling %q: %w", method, r.resp.Error)
		}
		// The caller's ReceiveBudget holds the answer before it is decoded,
		// as metered does for calls through the SDK (receive.go), and
		// refuses it alike.
		if b, _ := ctx.Value(receiveKey{}).(ReceiveBudget); b != nil {
			if err := b.Reserve(int64(len(r.resp.Result))); err != nil {
				return nil, fmt.Errorf("calling %q: %w", method, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "codemode dropped the answer: " + err.Error()})
			}
		}
		res, err := decodeCallResult(r.resp.Result)
		if err != nil {
			return nil, fmt.Errorf("calling %q: %w", method, err)
		}
		return res, nil
	case <-ctx.Done():
		c.forget(id)
		// Best effort and off the caller's path, as the SDK sends it.
		reason := ctx.Err().Error()
		go func() {
			nctx, stop := context.WithTimeout(context.WithoutCancel(ctx), notifyCancelTimeout)
			defer stop()
			params, _ := json.Marshal(&mcp.CancelledParams{Reason: reason, RequestID: id})
			_ = c.Write(nctx, &jsonrpc.Request{Method: "notifications/cancelled", Params: params})
		}()
		return nil, ctx.Err()
	}
}

func (c *lineConn) forget(id string) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// textBlock and commonResult are the common shape of a tool result: text
// content, structured content, isError, and no other member anywhere.
type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type commonResult struct {
	Content           []textBlock `json:"content"`
	StructuredContent any         `json:"structuredContent"`
	IsError           bool        `json:"isError"`
}

// decodeCallResult decodes a tools/call result as the SDK does
// (CallToolResult.UnmarshalJSON), building the common shape directly.
func decodeCallResult(data []byte) (*mcp.CallToolResult, error) {
	if err := checkDepth(data); err != nil {
		return nil, err
	}
	var common commonResult
	if _, err := segjson.Parse(data, &common, parseFlags|segjson.DisallowUnknownFields); err == nil && allText(common.Content) && !isNull(data) {
		res := &mcp.CallToolResult{Content: make([]mcp.Content, 0, len(common.Content)), StructuredContent: common.StructuredContent, IsError: common.IsError}
		for _, b := range common.Content {
			res.Content = append(res.Content, &mcp.TextContent{Text: b.Text})
		}
		return res, nil
	}
	res := new(mcp.CallToolResult)
	if err := unmarshal(data, res); err != nil {
		return nil, err
	}
	return res, nil
}

func allText(bs []textBlock) bool {
	for _, b := range bs {
		if b.Type != "text" {
			return false
		}
	}
	return true
}

func isNull(data []byte) bool {
	t := trimSpace(data)
	return len(t) == 0 || string(t) == "null"
}
