package upstream

// In-process MCP connections. This is production code: the built-in servers
// are go-sdk servers in the gateway's own process, reached over
// NewMemoryTransports, and DialInMemory lets any embedder (and the tests and
// benchmarks of every package above this one) put such servers behind a
// Manager. Nothing here is specific to tests.

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/config"
)

// DialInMemory returns an [Options.Dial] that connects each server whose id
// is a key of servers to that in-process go-sdk server, over
// [NewMemoryTransports]. Each connection attempt gets a new server session,
// as a restarted process would. Other ids are dialed normally.
//
//	srv := mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "1"}, nil)
//	mcp.AddTool(srv, &mcp.Tool{Name: "add"}, add)
//	m := upstream.New([]config.Server{{ID: "calc", Name: "calc"}},
//		&upstream.Options{Dial: upstream.DialInMemory(map[string]*mcp.Server{"calc": srv})})
func DialInMemory(servers map[string]*mcp.Server) DialFunc {
	return func(ctx context.Context, s config.Server) (mcp.Transport, error) {
		srv, ok := servers[s.ID]
		if !ok {
			return nil, nil
		}
		clientT, serverT := NewMemoryTransports()
		// The server session lives until the client closes the connection,
		// not until the connect timeout.
		if _, err := srv.Connect(context.WithoutCancel(ctx), serverT, nil); err != nil {
			return nil, err
		}
		return clientT, nil
	}
}

// NewMemoryTransports returns the two ends of an in-process MCP connection
// that passes JSON-RPC messages as Go values. mcp.NewInMemoryTransports runs
// the same messages through net.Pipe, which costs an encode and a decode of
// every message, and the SDK's decoder allocates a 32 KiB buffer for each:
// much of an in-memory tool call's time (measured in docs/BENCHMARKS.md).
// Parameters and results are still JSON (the SDK marshals them before a
// message exists), so what the server sees is what it would see on a wire.
//
// Each end connects once. Closing either end closes both: a Read or Write
// on either then fails with io.EOF, as on a closed pipe.
func NewMemoryTransports() (client, server mcp.Transport) {
	a, b := make(chan jsonrpc.Message, 16), make(chan jsonrpc.Message, 16)
	p := &memPipe{done: make(chan struct{})}
	return &memTransport{c: &memConn{p: p, in: a, out: b}}, &memTransport{c: &memConn{p: p, in: b, out: a}}
}

type memTransport struct {
	once sync.Once
	c    *memConn
}

var errConnected = errors.New("in-memory transport: already connected")

func (t *memTransport) Connect(context.Context) (mcp.Connection, error) {
	first := false
	t.once.Do(func() { first = true })
	if !first {
		return nil, errConnected
	}
	return t.c, nil
}

// memPipe is what both ends share: closing it ends the connection.
type memPipe struct {
	once sync.Once
	done chan struct{}
}

type memConn struct {
	p   *memPipe
	in  <-chan jsonrpc.Message
	out chan<- jsonrpc.Message
}

func (c *memConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-c.p.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *memConn) Write(ctx context.Context, m jsonrpc.Message) error {
	select {
	case c.out <- m:
		return nil
	case <-c.p.done:
		return io.EOF
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *memConn) Close() error {
	c.p.once.Do(func() { close(c.p.done) })
	return nil
}

func (c *memConn) SessionID() string { return "" }
