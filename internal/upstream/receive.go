package upstream

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ReceiveBudget holds the answers to a caller's requests as they arrive:
// Reserve is called with the size of each answer's result, in bytes of
// JSON, when the message has been read and before it is decoded or handed
// to the caller. An answer it refuses is dropped there and the request
// fails; the caller learns why from its ReceiveBudget. The caller gives
// the bytes back once it is done with the result.
type ReceiveBudget interface {
	Reserve(n int64) error
}

type receiveKey struct{}

// WithReceiveBudget returns a context whose requests (CallTool,
// ReadResource, GetPrompt, the lists) have their answers held by b as they
// arrive. It applies to stdio servers and to transports made by
// Options.Dial; over HTTP the SDK reads an answer whole before this package
// sees it, and the caller counts it when it gets it.
func WithReceiveBudget(ctx context.Context, b ReceiveBudget) context.Context {
	return context.WithValue(ctx, receiveKey{}, b)
}

// metered notes, as requests go out, whose ReceiveBudget holds their
// answers, and charges it as they come in. It wraps a connection's Read and
// Write; the zero value is ready to use.
type metered struct {
	mu      sync.Mutex
	pending map[jsonrpc.ID]ReceiveBudget
}

// sent records the budget of an outgoing call, until the call's ctx ends.
func (m *metered) sent(ctx context.Context, msg jsonrpc.Message) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return
	}
	b, _ := ctx.Value(receiveKey{}).(ReceiveBudget)
	if b == nil {
		return
	}
	m.mu.Lock()
	if m.pending == nil {
		m.pending = map[jsonrpc.ID]ReceiveBudget{}
	}
	m.pending[req.ID] = b
	m.mu.Unlock()
	// A call that is given up on is never answered, or answered to no one.
	context.AfterFunc(ctx, func() {
		m.mu.Lock()
		if m.pending[req.ID] == b {
			delete(m.pending, req.ID)
		}
		m.mu.Unlock()
	})
}

// received charges an answer to its call's budget; one it refuses is
// replaced by an error answer, and the result is dropped.
func (m *metered) received(msg jsonrpc.Message) jsonrpc.Message {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.Error != nil {
		return msg
	}
	m.mu.Lock()
	b := m.pending[resp.ID]
	delete(m.pending, resp.ID)
	m.mu.Unlock()
	if b == nil {
		return msg
	}
	if err := b.Reserve(int64(len(resp.Result))); err != nil {
		return &jsonrpc.Response{ID: resp.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "codemode dropped the answer: " + err.Error()}}
	}
	return msg
}

// meteredTransport meters the connections of a transport made by
// Options.Dial.
type meteredTransport struct{ mcp.Transport }

func (t meteredTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &meteredConn{Connection: c}, nil
}

type meteredConn struct {
	mcp.Connection
	m metered
}

func (c *meteredConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		msg = c.m.received(msg)
	}
	return msg, err
}

func (c *meteredConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	c.m.sent(ctx, msg)
	return c.Connection.Write(ctx, msg)
}
