package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK marshals a tool result (CallToolResult and its content have
// MarshalJSON methods) with encoding/json's defaults, which escape <, > and
// & as \u003c, \u003e and \u0026, six bytes for one, for the sake of HTML
// pages; the JSON-RPC envelope around it, and results without such methods
// (tools/list), are not escaped. A result of 1 MiB of "<" went out as
// 6 MiB. unescapedResults undoes that before tools/call results are sent.

// unescapedResults is a receiving middleware: tools/call results marshal
// without HTML escapes.
func unescapedResults(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil || res == nil {
			return res, err
		}
		if method == "tools/call" {
			return unescaped{res}, nil
		}
		return res, nil
	}
}

// unescaped is a result that marshals as the result does, less the HTML
// escapes. It is a Result itself (the methods are promoted), and the SDK
// only marshals what a method handler returns.
type unescaped struct{ mcp.Result }

func (u unescaped) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(u.Result)
	if err != nil {
		return nil, err
	}
	return unescapeHTML(b), nil
}

// unescapeHTML replaces the escapes \u003c, \u003e and \u0026 in the JSON
// text b with the characters themselves. Escapes occur only inside strings,
// and every escape is read whole, so an escaped backslash followed by
// "u003c" (the text \u003c itself) is left alone. The result is the same
// JSON value.
func unescapeHTML(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u00`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c != '\\' || i+1 >= len(b) {
			out = append(out, c)
			continue
		}
		if b[i+1] == 'u' && i+5 < len(b) && b[i+2] == '0' && b[i+3] == '0' {
			switch string(b[i+4 : i+6]) {
			case "3c":
				out = append(out, '<')
				i += 5
				continue
			case "3e":
				out = append(out, '>')
				i += 5
				continue
			case "26":
				out = append(out, '&')
				i += 5
				continue
			}
		}
		// Any other escape, \\ included, is copied whole.
		out = append(out, c, b[i+1])
		i++
	}
	return out
}

// notInitializedYet is a sending middleware that drops a list_changed
// notification to a session that has not been initialized: the SDK
// notifies every connected session when tools change, and the first
// refresh can come before a stdio client's initialize (a notification
// before initialization breaks the protocol's lifecycle). Such a client
// lists the tools after initializing anyway.
func notInitializedYet(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if strings.HasPrefix(method, "notifications/") && strings.HasSuffix(method, "/list_changed") {
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss.InitializeParams() == nil {
				return nil, nil
			}
		}
		return next(ctx, method, req)
	}
}
