package upstream

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/redact"
)

// The Manager is the door through which everything a server sends enters
// the gateway, and it redacts the configured secrets (config.Server.Secrets
// of every server, and the values of the gateway's own secret-named
// environment variables, env.go) on the way in:
//
//   - snapshots: tool names, titles, descriptions, schemas, annotations, the
//     server's instructions and serverInfo (newSnapshot);
//   - resource and prompt lists, resource contents, prompts, tool results
//     (the Manager's methods), binary data included (images, audio, blobs:
//     a script can decode their base64, so their bytes are searched too);
//   - errors: the SDK's messages (which quote a remote URL), the server's
//     JSON-RPC error texts, hints naming the URL, the stderr tail (redacted
//     by the sink, whose ring is itself a cut) and a 401/403 body (redacted
//     before it is cut, by headerTransport).
//
// So no configured secret reaches a script, a declaration, a search index or
// a surface's tool description, and no later clip can split one that was
// never there. Redacting tool results means a script cannot receive a
// configured secret, and so cannot transform it (base64, reverse, split)
// past the output redaction either.

// redactTool returns t with its secrets redacted: t itself when it has none.
// Schemas that are json.RawMessage (the server's own bytes, see
// rawschemas.go) stay raw, redacted in place.
func redactTool(r *redact.Redactor, t *mcp.Tool) *mcp.Tool {
	if r.Empty() || t == nil {
		return t
	}
	out := redact.Value(r, t)
	if out == t {
		return t
	}
	if out == nil { // did not survive the round trip: keep only what is safe
		return &mcp.Tool{Name: r.String(t.Name), InputSchema: json.RawMessage(`{"type":"object"}`)}
	}
	if raw, ok := t.InputSchema.(json.RawMessage); ok {
		out.InputSchema = r.JSON(raw)
	}
	if raw, ok := t.OutputSchema.(json.RawMessage); ok && raw != nil {
		out.OutputSchema = r.JSON(raw)
	}
	return out
}

// redactSnapshot redacts a new snapshot in place, before anyone sees it.
func redactSnapshot(r *redact.Redactor, s *Snapshot) {
	if r.Empty() {
		return
	}
	for i, t := range s.Tools {
		s.Tools[i] = redactTool(r, t)
	}
	s.Instructions = r.String(s.Instructions)
	s.Info = redact.Value(r, s.Info)
	s.Capabilities = redact.Value(r, s.Capabilities)
}

// redactedError is an error whose text has been redacted; errors.Is and
// errors.As still see the original.
type redactedError struct {
	text string
	err  error
}

func (e *redactedError) Error() string { return e.text }
func (e *redactedError) Unwrap() error { return e.err }

// redactErr redacts, in place, the texts of a new *Error that may quote
// what a server sent or the configuration's values (a remote URL): the
// cause's message, the hint and the operation. The stderr tail comes
// redacted from the sink. classify.go calls it on every *Error it makes,
// before the error is shared.
func redactErr(r *redact.Redactor, e *Error) *Error {
	if r.Empty() || e == nil {
		return e
	}
	if e.Err != nil {
		if msg := e.Err.Error(); r.Occurs(msg) {
			e.Err = &redactedError{text: r.String(msg), err: e.Err}
		}
	}
	e.Hint, e.Op, e.StderrTail = r.String(e.Hint), r.String(e.Op), r.String(e.StderrTail)
	return e
}

// redactOut redacts what a Manager method returns (its errors are redacted
// where classify.go makes them).
func redactOut[T any](m *Manager, v T, err error) (T, error) {
	return redact.Value(m.redact, v), err
}

// redactResult is redactOut for a tool result, the hot path, with a fast
// check: a result whose every string this function knows how to read (text
// blocks, structured content made of plain JSON values) and that holds no
// secret is returned as it is, without the JSON encoding redact.Value
// needs (which costs several times the scan: docs/BENCHMARKS.md, "Secrets
// and search").
// Anything else, or a result that holds a secret, goes through
// redact.Value.
func redactResult(m *Manager, res *mcp.CallToolResult, err error) (*mcp.CallToolResult, error) {
	if m.redact.Empty() || res == nil || resultClean(m.redact, res) {
		return res, err
	}
	res, err = redactOut(m, res, err)
	if res != nil {
		for _, c := range res.Content {
			redactBinary(m.redact, c)
		}
	}
	return res, err
}

// redactBinary redacts, in place, the binary data of a content block that
// the SDK decoded from base64 (a fresh value of this call's own): JSON
// redaction sees it only base64-encoded, and a script can decode it.
func redactBinary(r *redact.Redactor, c mcp.Content) {
	switch c := c.(type) {
	case *mcp.ImageContent:
		c.Data = r.Bytes(c.Data)
	case *mcp.AudioContent:
		c.Data = r.Bytes(c.Data)
	case *mcp.EmbeddedResource:
		if c.Resource != nil {
			c.Resource.Blob = r.Bytes(c.Resource.Blob)
		}
	}
}

// resultClean reports whether res surely holds no secret.
func resultClean(r *redact.Redactor, res *mcp.CallToolResult) bool {
	// The SDK's client fills _meta (with the server's serverInfo).
	if res.InputRequests != nil || res.RequestState != "" || !plainClean(r, map[string]any(res.Meta), 0) {
		return false
	}
	for _, c := range res.Content {
		tc, ok := c.(*mcp.TextContent)
		if !ok || r.Occurs(tc.Text) || !plainClean(r, map[string]any(tc.Meta), 0) {
			return false
		}
		if a := tc.Annotations; a != nil {
			if r.Occurs(a.LastModified) {
				return false
			}
			for _, role := range a.Audience {
				if r.Occurs(string(role)) {
					return false
				}
			}
		}
	}
	return plainClean(r, res.StructuredContent, 0)
}

// plainClean reports whether v, a decoded JSON value, surely holds no
// secret (in a string, a key or a number's literal).
func plainClean(r *redact.Redactor, v any, depth int) bool {
	if depth > 64 {
		return false
	}
	switch v := v.(type) {
	case nil, bool:
		return true
	case string:
		return !r.Occurs(v)
	case float64, json.Number:
		b, err := json.Marshal(v)
		return err == nil && !r.Occurs(string(b))
	case json.RawMessage:
		return !r.Occurs(string(v))
	case []any:
		for _, x := range v {
			if !plainClean(r, x, depth+1) {
				return false
			}
		}
		return true
	case map[string]any:
		for k, x := range v {
			if r.Occurs(k) || !plainClean(r, x, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}
