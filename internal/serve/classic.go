package serve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/schema"
)

// The classic surface: the tools of servers configured with "codeMode":
// false (or "both") served directly, as ordinary MCP tools beside the
// code-mode ones, as Bifrost lets a user keep small servers ("you can mix
// both"). Each is the upstream's tool under the name <serverId>__<tool>,
// with the upstream's description, schemas and annotations; a call goes
// through the run layer (run.Runner.CallDirect), so it is validated,
// traced, audited, redacted and reported as progress like a script's call.
// When an upstream's tools change, the surface's do too (the server
// re-registers them and clients get list_changed).
//
// The surface is not chosen in codemode.surfaces: it is mounted whenever a
// server asks for it. A server with "codeMode": false is absent from the
// sandbox catalog (scripts, declarations, search); with "both" it is in
// both places.

// classicSurface serves the direct servers' tools.
type classicSurface struct {
	s   *Server
	cat *catalog.Catalog // the servers served directly
	// started is set by the first call of Tools, which New makes before
	// any catalog: the surface connects nothing then.
	started atomic.Bool
}

// newClassicSurface returns the surface, or nil when no server is served
// directly.
func newClassicSurface(s *Server) *classicSurface {
	cat := s.cat.Direct()
	if len(cat.Configured()) == 0 {
		return nil
	}
	return &classicSurface{s: s, cat: cat}
}

// Tools ignores servers (the code-mode ones) and lists the direct
// servers' tools, connecting them as need be.
func (c *classicSurface) Tools([]*catalog.Server) []Tool {
	if !c.started.Swap(true) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.s.opts.WarmupTimeout)
	defer cancel()
	servers, failed := c.cat.View().All(ctx)
	for id, err := range failed {
		c.s.log.Warn("a server served as direct tools is unavailable; its tools are not listed", "server", id, "err", err)
	}
	var out []Tool
	for _, srv := range servers {
		for _, t := range srv.Tools {
			if schema.Keyword(t.Tool.InputSchema, "type") != "object" {
				// MCP requires an object schema; the SDK would refuse it.
				c.s.log.Warn("a tool's input schema is not an object; it is not served directly", "server", srv.ID, "tool", t.Name)
				continue
			}
			up := t.Tool
			out = append(out, Tool{Tool: &mcp.Tool{
				Name:         directName(srv.ID, t.Name),
				Title:        up.Title,
				Description:  up.Description,
				InputSchema:  up.InputSchema,
				OutputSchema: up.OutputSchema,
				Annotations:  up.Annotations,
				Icons:        up.Icons,
			}, Handler: c.handler(srv.ID, t.Name)})
		}
	}
	return out
}

func (c *classicSurface) handler(serverID, tool string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := c.s.runner.CallDirect(ctx, c.cat, serverID, tool, req.Params.Arguments)
		if errors.Is(err, run.ErrAwaitingApproval) {
			// The call is answered with the approval question
			// (Server.track sends the channel's input-required result).
			return &mcp.CallToolResult{}, nil
		}
		if err != nil {
			// A failed call is the tool's error, which the model reads.
			var de *diag.Error
			if errors.As(err, &de) {
				msg := string(de.Class) + ": " + de.Message
				if de.Hint != "" {
					msg += "\nhint: " + de.Hint
				}
				return errorResult(msg), nil
			}
			return errorResult(err.Error()), nil
		}
		return res, nil
	}
}

// directName is the gateway's name of tool on server id: id, "__", tool,
// with the characters a tool name may not hold replaced by "_", and cut to
// 64 characters (with a hash of the whole, so that two long names stay
// apart).
func directName(id, tool string) string {
	name := []byte(id + "__" + tool)
	for i, ch := range name {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '_' || ch == '-' || ch == '.') {
			name[i] = '_'
		}
	}
	if len(name) <= 64 {
		return string(name)
	}
	sum := sha256.Sum256([]byte(id + "\x00" + tool))
	return strings.TrimRight(string(name[:55]), "_") + "_" + hex.EncodeToString(sum[:4])
}
