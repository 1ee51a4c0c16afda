package serve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/diag"
)

// The SDK's stdio connection ends the session at the first line that is not
// a JSON-RPC message: its decoder cannot find its way back into the
// stream, and the calls in flight lose their answers with it. JSON-RPC 2.0
// says to answer such a message with an error (-32700 or -32600, id null)
// and go on, which is what the guard does: it passes the lines that are
// messages through to the SDK and answers the others itself, writing
// through the same lock as the SDK so that no two messages interleave.

// stdioTransport is the SDK's stdio transport behind a stdinGuard.
func stdioTransport(in io.ReadCloser, out io.Writer, log *slog.Logger) mcp.Transport {
	w := &lockedWriter{w: out}
	return &mcp.IOTransport{Reader: &stdinGuard{in: bufio.NewReader(in), src: in, out: w, log: log}, Writer: w}
}

// lockedWriter serialises whole writes: the SDK writes each message, its
// newline included, in one Write.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Close leaves stdout open: it belongs to the process, not the session.
func (l *lockedWriter) Close() error { return nil }

type stdinGuard struct {
	in  *bufio.Reader
	src io.Closer
	out *lockedWriter
	log *slog.Logger
	buf []byte // what is left of the current message line

	started bool // the first line has been read
}

// maxLine is the SDK's own bound on one stdio message.
const maxLine = mcp.DefaultMaxLineLength

func (g *stdinGuard) Read(p []byte) (int, error) {
	for len(g.buf) == 0 {
		line, err := g.line()
		if !g.started && line != nil {
			// A byte order mark some Windows tools write first.
			line, g.started = bytes.TrimPrefix(line, []byte("\xEF\xBB\xBF")), true
		}
		if msg := g.admit(line); msg != nil {
			g.buf = msg
		}
		if err != nil && len(g.buf) == 0 {
			return 0, err
		}
		if err != nil {
			break
		}
	}
	n := copy(p, g.buf)
	g.buf = g.buf[n:]
	return n, nil
}

func (g *stdinGuard) Close() error { return g.src.Close() }

var errLineTooLong = fmt.Errorf("a message longer than %d MiB", maxLine>>20)

// line returns the next line, its newline included. A line over maxLine is
// skipped to its end and answered as an invalid request; it returns nil
// then.
func (g *stdinGuard) line() ([]byte, error) {
	var line []byte
	skipping := false
	for {
		chunk, err := g.in.ReadSlice('\n')
		if !skipping && len(line)+len(chunk) > maxLine {
			skipping, line = true, nil
		}
		if !skipping {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if skipping {
			g.reject(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: "+errLineTooLong.Error(), "send smaller messages")
			return nil, err
		}
		return line, err
	}
}

// admit returns the message on line, trimmed and ending in a newline as
// the SDK wants it (it refuses anything but a line break after a value),
// or nil after answering a line that is not a message. Lines are messages:
// MCP's stdio transport forbids newlines inside one, so pretty-printed
// JSON over several lines is refused line by line.
func (g *stdinGuard) admit(line []byte) []byte {
	msg := bytes.TrimSpace(line)
	switch {
	case len(msg) == 0:
		return nil // a blank line between messages
	case !json.Valid(msg):
		g.reject(nil, jsonrpc.CodeParseError, "Parse error: the line is not JSON: "+quote(msg), "send one JSON-RPC message per line")
		return nil
	case msg[0] == '[':
		// MCP 2025-06-18 dropped JSON-RPC batches, and the SDK ends the
		// session at one it does not take.
		g.reject(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: batches are not supported", "send one JSON-RPC message per line")
		return nil
	}
	if _, err := jsonrpc.DecodeMessage(msg); err != nil {
		var m struct {
			ID            json.RawMessage `json:"id"`
			Method        *string         `json:"method"`
			Result, Error json.RawMessage
		}
		json.Unmarshal(msg, &m)
		if m.Method == nil && (m.Result != nil || m.Error != nil) {
			// A malformed response: never answered, or two peers
			// could answer each other forever.
			g.log.Warn("stdin: a malformed JSON-RPC response; skipped", "error", err)
			return nil
		}
		g.reject(m.ID, jsonrpc.CodeInvalidRequest, "Invalid Request: "+err.Error(), `send a JSON-RPC 2.0 message: {"jsonrpc":"2.0","id":1,"method":"..."}`)
		return nil
	}
	return append(msg[:len(msg):len(msg)], '\n')
}

// reject answers a line that is not a message. id is the line's own id
// when it has a usable one (a string or a number), so that the client's
// wait for it ends; otherwise null, as JSON-RPC 2.0 requires.
func (g *stdinGuard) reject(id json.RawMessage, code int64, message, fix string) {
	g.log.Warn("stdin: not a JSON-RPC message; answered with an error and skipped", "error", message)
	var rid any
	if len(id) > 0 && (id[0] == '"' || id[0] == '-' || id[0] >= '0' && id[0] <= '9') {
		rid = id
	}
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": rid,
		"error": map[string]any{"code": code, "message": message + " (" + fix + ")"}})
	if err == nil {
		g.out.Write(append(b, '\n'))
	}
}

// quote shows the start of a bad line, cut at a character boundary.
func quote(b []byte) string {
	s := diag.Cut(string(b), 80)
	if len(s) < len(b) {
		return fmt.Sprintf("%q…", s)
	}
	return fmt.Sprintf("%q", s)
}
