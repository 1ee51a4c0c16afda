package serve

import (
	"context"
	"time"

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
	return progress.With(ctx, r), func() {
		r.Close()
		if r.Sent() > 0 && req.ProtocolVersion() < "2026-07-28" {
			// Clients hand notifications to their handlers
			// asynchronously and drop those of a request already
			// answered (the TypeScript SDK does): a ping answered
			// after them makes sure they were handled before the
			// answer goes out. (A 2026-07-28 server sends its client
			// no requests in the middle of a call.)
			pctx, cancel := context.WithTimeout(ctx, pingFlushTimeout)
			session.Ping(pctx, nil)
			cancel()
		}
	}
}

// pingFlushTimeout bounds the ping after a call's progress notifications.
const pingFlushTimeout = 5 * time.Second
