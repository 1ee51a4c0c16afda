package serve

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/outer"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// withForwarding gives a tools/call's runs the channel to its client
// (package outer) and passes the upstreams' own requests of its calls
// (elicitation, sampling, roots) on through it (upstream/forward.go).
func (s *Server) withForwarding(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	ch := outer.From(ctx)
	if ch == nil {
		ch = outer.New(req, nil)
		ctx = outer.With(ctx, ch)
	}
	return upstream.WithForwarder(ctx, callForwarder{Channel: ch, call: ctx})
}

// callForwarder sends what it passes on with the call's context, ended by
// the upstream request's: over Streamable HTTP a request to the client
// then goes on the stream that answers the call.
type callForwarder struct {
	*outer.Channel
	call context.Context
}

// within returns the call's context, cancelled when ctx is.
func (f callForwarder) within(ctx context.Context) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancel(context.WithoutCancel(f.call))
	stop := context.AfterFunc(ctx, cancel)
	stopCall := context.AfterFunc(f.call, cancel)
	return c, func() { stop(); stopCall(); cancel() }
}

func (f callForwarder) ForwardElicit(ctx context.Context, serverID string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	c, done := f.within(ctx)
	defer done()
	return f.Channel.ForwardElicit(c, serverID, p)
}

func (f callForwarder) ForwardSampling(ctx context.Context, serverID string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	c, done := f.within(ctx)
	defer done()
	return f.Channel.ForwardSampling(c, serverID, p)
}

func (f callForwarder) ForwardRoots(ctx context.Context, serverID string) (*mcp.ListRootsResult, error) {
	c, done := f.within(ctx)
	defer done()
	return f.Channel.ForwardRoots(c, serverID)
}
