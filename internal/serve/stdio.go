package serve

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// replyTracker wraps a transport to know which tool calls have been read but
// not yet answered on the wire. A graceful shutdown over stdio must wait for
// the replies themselves: the SDK writes a reply after the handler returns,
// and refuses to once the connection is closing, so waiting for the handlers
// alone loses the last reply.
type replyTracker struct {
	mcp.Transport

	mu      sync.Mutex
	pending map[any]bool  // ids of tools/call requests not yet answered
	idle    chan struct{} // closed, and replaced, whenever pending empties
}

func newReplyTracker(t mcp.Transport) *replyTracker {
	return &replyTracker{Transport: t, pending: map[any]bool{}, idle: make(chan struct{})}
}

func (t *replyTracker) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &trackedConn{Connection: c, t: t}, nil
}

// wait returns once every tool call read so far has been answered, or ctx
// ends.
func (t *replyTracker) wait(ctx context.Context) error {
	for {
		t.mu.Lock()
		n, idle := len(t.pending), t.idle
		t.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

type trackedConn struct {
	mcp.Connection
	t *replyTracker
}

func (c *trackedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/call" && req.ID.IsValid() {
		c.t.mu.Lock()
		c.t.pending[req.ID.Raw()] = true
		c.t.mu.Unlock()
	}
	return msg, err
}

func (c *trackedConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.t.mu.Lock()
		if c.t.pending[resp.ID.Raw()] {
			delete(c.t.pending, resp.ID.Raw())
			if len(c.t.pending) == 0 {
				close(c.t.idle)
				c.t.idle = make(chan struct{})
			}
		}
		c.t.mu.Unlock()
	}
	return err
}
