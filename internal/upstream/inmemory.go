package upstream

import (
	"context"

	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DialInMemory returns an [Options.Dial] that connects each server whose id
// is a key of servers to that in-process go-sdk server, over
// mcp.NewInMemoryTransports. Each connection attempt gets a new server
// session, as a restarted process would. Other ids are dialed normally.
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
		clientT, serverT := mcp.NewInMemoryTransports()
		// The server session lives until the client closes the pipe, not
		// until the connect timeout.
		if _, err := srv.Connect(context.WithoutCancel(ctx), serverT, nil); err != nil {
			return nil, err
		}
		return clientT, nil
	}
}
