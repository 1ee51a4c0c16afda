package upstream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	segjson "github.com/segmentio/encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// lineConn is the client end of a stdio server's connection: newline-
// delimited JSON-RPC over the process's pipes, as the SDK's IOTransport
// speaks it. It takes the place of the SDK's ioConn for a measured reason
// (docs/BENCHMARKS.md, "The stdio call path"): ioConn decodes every message
// through the SDK's internal JSON package, whose Unmarshal starts a fresh
// 32 KiB buffer for each value (twice per message: once trying a batch,
// once for the message), and hands each message from a reading goroutine of
// its own to Read through a channel. Those buffers, their zeroing and the
// collections they cause were most of the client's CPU per tool call.
//
// lineConn reads on the caller's goroutine (the SDK's connection already
// runs one goroutine that does nothing but Read) and decodes each line with
// the library and the flags the SDK uses (segmentio/encoding, field names
// matched case-sensitively), straight from the line instead of through a
// buffered Decoder: the same values, without the copies. What it accepts,
// and the messages it builds, follow jsonrpc2.DecodeMessage and ioConn.Read
// of go-sdk v1.8.0 (lineconn_test.go checks them against the SDK's own
// decoding); writes are the SDK's jsonrpc.EncodeMessage plus a newline, as
// ioConn writes them.
//
// Closing stdin ends the server (stdin.Close waits for it), and Wait closes
// stdout, which makes a blocked Read return: Read and Close may run
// concurrently, as mcp.Connection requires.
type lineConn struct {
	r     *bufio.Reader
	out   io.Closer // the stdout pipe, closed after stdin
	stdin io.WriteCloser

	// queue holds the rest of a batch whose first message Read returned.
	queue []jsonrpc.Message
	// long accumulates a line longer than r's buffer.
	long []byte

	writeMu sync.Mutex

	closeOnce sync.Once
	closeErr  error

	// Direct tool calls (directcall.go), by request id.
	mu      sync.Mutex
	pending map[string]chan directReply
	seq     int64
	ended   error // set once reading stopped: pending and later calls fail with it
}

// lineBufferSize is the read buffer: most messages fit in one read.
const lineBufferSize = 64 << 10

func newLineConn(out io.ReadCloser, filtered io.Reader, stdin io.WriteCloser) *lineConn {
	return &lineConn{r: bufio.NewReaderSize(filtered, lineBufferSize), out: out, stdin: stdin}
}

// maxFrame bounds one inbound message, as the SDK's ioConn does
// (mcp.DefaultMaxLineLength).
const maxFrame = 16 << 20

// errFrameTooLarge says what the SDK's own error says (isFrameTooLarge
// recognises either).
var errFrameTooLarge = errors.New("inbound JSON-RPC frame exceeded the configured maximum line length")

// maxDepth is the deepest nesting accepted, as the SDK's internal JSON
// package accepts (its defaultMaxDepth): a decoder recursing once per level
// must not be handed a million levels.
const maxDepth = 1000

var errTooDeep = fmt.Errorf("json: exceeded maximum nesting depth of %d", maxDepth)

func (c *lineConn) SessionID() string { return "" }

func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m, nil
	}
	for {
		line, err := c.readLine()
		if err != nil {
			c.end(err)
			return nil, err
		}
		line = trimSpace(line)
		if len(line) == 0 { // the SDK's decoder skips white space between values
			continue
		}
		msgs, err := decodeLine(line)
		if err != nil {
			c.end(err)
			return nil, err
		}
		msgs = c.deliver(msgs)
		if len(msgs) == 0 { // all answers to direct calls
			continue
		}
		c.queue = msgs[1:]
		return msgs[0], nil
	}
}

// readLine returns the next line, without its newline. The slice is valid
// until the next call.
func (c *lineConn) readLine() ([]byte, error) {
	c.long = c.long[:0]
	for {
		chunk, err := c.r.ReadSlice('\n')
		switch {
		case err == nil && len(c.long) == 0:
			return chunk[:len(chunk)-1], nil
		case err == nil:
			c.long = append(c.long, chunk[:len(chunk)-1]...)
			return c.long, nil
		case errors.Is(err, bufio.ErrBufferFull):
			if len(c.long)+len(chunk) > maxFrame {
				return nil, errFrameTooLarge
			}
			c.long = append(c.long, chunk...)
		case errors.Is(err, io.EOF) && len(c.long)+len(chunk) > 0:
			// A last message without its newline: ioConn's decoder
			// takes it too.
			c.long = append(c.long, chunk...)
			return c.long, nil
		default:
			return nil, err
		}
	}
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// parseFlags are the SDK's: its internal JSON package makes every decoder
// DontMatchCaseInsensitiveStructFields.
const parseFlags = segjson.DontMatchCaseInsensitiveStructFields

// unmarshal is the SDK's internal json.Unmarshal without its buffer.
func unmarshal(data []byte, v any) error {
	if err := checkDepth(data); err != nil {
		return err
	}
	_, err := segjson.Parse(data, v, parseFlags)
	return err
}

// decodeLine decodes one line: a message, or a batch of them (ioConn's
// readBatch).
func decodeLine(line []byte) ([]jsonrpc.Message, error) {
	if line[0] == '[' {
		var batch []segjson.RawMessage
		if err := unmarshal(line, &batch); err == nil {
			if len(batch) == 0 {
				return nil, errors.New("empty batch")
			}
			msgs := make([]jsonrpc.Message, 0, len(batch))
			for _, raw := range batch {
				m, err := decodeMessage(raw)
				if err != nil {
					return nil, err
				}
				msgs = append(msgs, m)
			}
			return msgs, nil
		}
	}
	m, err := decodeMessage(line)
	if err != nil {
		return nil, err
	}
	return []jsonrpc.Message{m}, nil
}

// wireDecode is jsonrpc2's: Method stays raw to tell a missing "method"
// from an empty one.
type wireDecode struct {
	VersionTag string             `json:"jsonrpc"`
	ID         any                `json:"id,omitempty"`
	Method     segjson.RawMessage `json:"method"`
	Params     segjson.RawMessage `json:"params,omitempty"`
	Result     segjson.RawMessage `json:"result,omitempty"`
	Error      *jsonrpc.Error     `json:"error,omitempty"`
}

// decodeMessage is jsonrpc2.DecodeMessage.
func decodeMessage(data []byte) (jsonrpc.Message, error) {
	var msg wireDecode
	if err := unmarshal(data, &msg); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	if msg.VersionTag != "2.0" {
		return nil, fmt.Errorf("invalid message version tag %q; expected %q", msg.VersionTag, "2.0")
	}
	id, err := jsonrpc.MakeID(msg.ID)
	if err != nil {
		return nil, err
	}
	if len(msg.Method) > 0 {
		var method string
		if err := unmarshal(msg.Method, &method); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		return &jsonrpc.Request{Method: method, ID: id, Params: []byte(msg.Params)}, nil
	}
	if !id.IsValid() {
		return nil, errInvalidRequest
	}
	resp := &jsonrpc.Response{ID: id, Result: []byte(msg.Result)}
	if msg.Error != nil {
		resp.Error = msg.Error
	}
	return resp, nil
}

// errInvalidRequest is jsonrpc2.ErrInvalidRequest.
var errInvalidRequest = &jsonrpc.Error{Code: -32600, Message: "invalid request"}

// checkDepth is the SDK's checkMaxDepth: one pass counting '{' and '['
// against '}' and ']', outside strings.
func checkDepth(data []byte) error {
	depth, inString, escaped := 0, false, false
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > maxDepth {
				return errTooDeep
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}

func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("marshaling message: %v", err)
	}
	data = append(data, '\n')
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err = c.stdin.Write(data)
	return err
}

// Close closes stdin, which ends the server (see stdin.Close), then stdout,
// in case Wait has not closed it yet.
func (c *lineConn) Close() error {
	c.closeOnce.Do(func() {
		c.end(errors.New("the connection was closed"))
		err := c.stdin.Close()
		if oerr := c.out.Close(); oerr != nil && err == nil && !errors.Is(oerr, os.ErrClosed) {
			err = oerr
		}
		c.closeErr = err
	})
	return c.closeErr
}
