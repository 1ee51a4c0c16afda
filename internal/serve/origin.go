package serve

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/run"
)

// origin is what a tool call says of where its runs come from: the tool,
// the MCP session, the client (its clientInfo and the name its token
// authenticated) and the request's _meta,
// where a client puts its trace context. The caller adds the surface.
func origin(req *mcp.CallToolRequest) run.Origin {
	var o run.Origin
	if req == nil {
		return o
	}
	if req.Params != nil {
		o.Tool = req.Params.Name
		o.Meta = req.Params.Meta
	}
	if req.Extra != nil && req.Extra.TokenInfo != nil {
		o.Auth = req.Extra.TokenInfo.UserID
	}
	if ss := req.Session; ss != nil {
		o.Session = ss.ID()
		if ip := ss.InitializeParams(); ip != nil && ip.ClientInfo != nil {
			o.Client = ip.ClientInfo.Name
			if v := ip.ClientInfo.Version; v != "" {
				o.Client += "/" + v
			}
		}
	}
	return o
}
