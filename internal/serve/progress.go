package serve

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/progress"
)

// withProgress gives a tools/call that carries a progressToken a
// progress.Reporter: what its runs do is sent to the client as
// notifications/progress while they go on (see package progress). done
// sends what is queued; it must run before the call is answered. Without a
// token the context is unchanged and nothing is sent.
func (s *Server) withProgress(ctx context.Context, req *mcp.CallToolRequest) (_ context.Context, done func()) {
	if req.Params == nil || req.Session == nil {
		return ctx, func() {}
	}
	token := req.Params.GetProgressToken()
	if token == nil {
		return ctx, func() {}
	}
	session := req.Session
	r := progress.New(token, func(p *mcp.ProgressNotificationParams) error {
		// ctx is the request's: over Streamable HTTP the notification
		// goes on the stream that answers this call.
		return session.NotifyProgress(ctx, p)
	}, nil)
	return progress.With(ctx, r), r.Close
}
