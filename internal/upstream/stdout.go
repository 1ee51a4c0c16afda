package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/codemode-mcp/codemode/internal/redact"
)

// A stdio server's stdout belongs to JSON-RPC, but servers print banners
// there ("Weather MCP Server running on stdio"), or log lines, before or
// between messages. The SDK's reader ends the connection at the first byte
// that is not JSON ("invalid character 'W'"); the TypeScript SDK's clients
// skip any line that is not a JSON-RPC message and go on. stdoutFilter does
// what they do, in front of the SDK's reader: a line that is not a JSON-RPC
// message is dropped, with a warning that quotes it, and the connection
// goes on.

// maxJudgedLine is the longest line stdoutFilter reads whole to decide
// whether it is a JSON-RPC message. A longer line is passed on unjudged
// when it starts like JSON ('{' or '['), as large tool results do, and
// dropped otherwise.
const maxJudgedLine = 64 << 10

// maxQuotedLine bounds the quote of a dropped line in its warning.
const maxQuotedLine = 200

// maxSkipWarnings bounds the warnings of one connection: a server that
// logs to stdout all the time is reported, not echoed.
const maxSkipWarnings = 5

// stdoutFilter reads a stdio server's stdout and passes on only the lines
// that are JSON-RPC messages (or batches of them), each with its newline.
// Blank lines pass (the SDK's decoder skips white space). A leading UTF-8
// byte order mark is dropped.
type stdoutFilter struct {
	r io.Reader
	// skipped is called with each dropped line (its first
	// maxJudgedLine bytes, without the line break).
	skipped func(line []byte)

	buf     []byte // read, not yet judged
	out     []byte // judged, not yet handed to the SDK
	pass    bool   // in a long line that is passed on unjudged
	drop    bool   // in a long line that is being dropped
	started bool   // past the first bytes (where a BOM may be)
	err     error  // the pipe's read error, once it has one
}

var bom = []byte("\uFEFF")

func (f *stdoutFilter) Read(p []byte) (int, error) {
	for {
		if len(f.out) > 0 {
			n := copy(p, f.out)
			f.out = f.out[n:]
			return n, nil
		}
		if len(f.buf) == 0 {
			if f.err != nil {
				return 0, f.err
			}
			f.buf = f.buf[:0] // everything handed out: reuse the buffer
		}
		if f.step() {
			continue
		}
		if f.err != nil {
			// The stream ends inside a line.
			f.judge(f.buf, false)
			f.buf = f.buf[len(f.buf):]
			continue
		}
		f.fill()
	}
}

// step judges what buf holds, if it can without reading more, and reports
// whether it did.
func (f *stdoutFilter) step() bool {
	if !f.started {
		if len(f.buf) < len(bom) && bytes.HasPrefix(bom, f.buf) && f.err == nil {
			return false // maybe a BOM: read on
		}
		f.buf = bytes.TrimPrefix(f.buf, bom)
		f.started = true
	}
	i := bytes.IndexByte(f.buf, '\n')
	switch {
	case f.pass:
		if i < 0 {
			f.out, f.buf = f.buf, f.buf[len(f.buf):]
			return len(f.out) > 0
		}
		f.out, f.buf, f.pass = f.buf[:i+1], f.buf[i+1:], false
		return true
	case f.drop:
		if i < 0 {
			f.buf = f.buf[len(f.buf):]
			return false
		}
		f.buf, f.drop = f.buf[i+1:], false
		return true
	case i >= 0:
		f.judge(f.buf[:i+1], true)
		f.buf = f.buf[i+1:]
		return true
	case len(f.buf) >= maxJudgedLine:
		// A long line: its first byte decides.
		if c := firstNonSpace(f.buf); c == '{' || c == '[' {
			f.out, f.buf, f.pass = f.buf, f.buf[len(f.buf):], true
		} else {
			f.skipped(f.buf[:maxJudgedLine])
			f.buf, f.drop = f.buf[len(f.buf):], true
		}
		return true
	}
	return false
}

// judge passes line on, or drops it. newline says that it ends with one.
func (f *stdoutFilter) judge(line []byte, newline bool) {
	body := line
	if newline {
		body = bytes.TrimSuffix(line[:len(line)-1], []byte("\r"))
	}
	if isJSONRPC(body) || len(bytes.TrimSpace(body)) == 0 {
		f.out = line
		return
	}
	f.skipped(body)
}

func (f *stdoutFilter) fill() {
	if cap(f.buf)-len(f.buf) < 4096 {
		nb := make([]byte, len(f.buf), max(2*cap(f.buf), 8192))
		copy(nb, f.buf)
		f.buf = nb
	}
	n, err := f.r.Read(f.buf[len(f.buf):cap(f.buf)])
	f.buf = f.buf[:len(f.buf)+n]
	if err != nil {
		f.err = err
	}
}

func firstNonSpace(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c
	}
	return 0
}

// isJSONRPC reports whether line is a JSON-RPC message (an object with a
// "jsonrpc" member) or a non-empty batch of them. What is wrong with one
// that is (a bad id, an unknown method) is the SDK's to report.
func isJSONRPC(line []byte) bool {
	type probe struct {
		JSONRPC *string `json:"jsonrpc"`
	}
	switch firstNonSpace(line) {
	case '{':
		// Every message of a stdio connection comes this way: checked
		// without decoding it (the SDK does that next).
		return json.Valid(line) && hasTopLevelKey(line, "jsonrpc")
	case '[':
		var batch []probe
		if json.Unmarshal(line, &batch) != nil || len(batch) == 0 {
			return false
		}
		for _, m := range batch {
			if m.JSONRPC == nil {
				return false
			}
		}
		return true
	}
	return false
}

// hasTopLevelKey reports whether obj, a valid JSON object, has a member
// named key (spelled without escapes) at its top level.
func hasTopLevelKey(obj []byte, key string) bool {
	depth := 0
	expectKey := false // the next string at depth 1 is a member name
	for i := 0; i < len(obj); i++ {
		switch c := obj[i]; c {
		case '{', '[':
			depth++
			expectKey = depth == 1 && c == '{'
		case '}', ']':
			depth--
		case ',':
			expectKey = depth == 1
		case '"':
			start := i + 1
			for i++; i < len(obj) && obj[i] != '"'; i++ {
				if obj[i] == '\\' {
					i++
				}
			}
			if expectKey && string(obj[start:i]) == key {
				return true
			}
			expectKey = false
		}
	}
	return false
}

// skippedLines counts and quotes the lines a connection's filter dropped,
// for the warnings and for the error of a server that never answers.
type skippedLines struct {
	warn   func(quote string, n int) // a warning for the nth line (1-based)
	redact *redact.Redactor
	n      int
	first  string // the quote of the first one
}

func (s *skippedLines) add(line []byte) {
	s.n++
	if s.n > maxSkipWarnings {
		return
	}
	q := quoteLine(line, s.redact)
	if s.n == 1 {
		s.first = q
	}
	s.warn(q, s.n)
}

// quoteLine is line as a warning quotes it: valid UTF-8, the secrets r
// knows redacted, cut to maxQuotedLine bytes (redact.Clip: redacted first,
// so that a secret cut in half cannot escape).
func quoteLine(line []byte, r *redact.Redactor) string {
	return r.Clip(strings.TrimSpace(strings.ToValidUTF8(string(line), "\uFFFD")), maxQuotedLine)
}

// stdin is the write end of a stdio connection. Closing it ends the
// connection as the MCP spec says a client should: close the child's
// stdin, wait for it to exit, then SIGTERM, then SIGKILL, terminate apart.
// The SDK's CommandTransport does the same, but reads stdout itself.
type stdin struct {
	io.WriteCloser
	cmd       *exec.Cmd
	terminate time.Duration
	// waitErr is Wait's error once Close has returned (the SDK wraps
	// Close's error).
	waitErr error
}

func (s *stdin) Close() error {
	s.waitErr = s.close()
	return s.waitErr
}

func (s *stdin) close() error {
	if err := s.WriteCloser.Close(); err != nil {
		return fmt.Errorf("closing stdin: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	wait := func() (error, bool) {
		t := time.NewTimer(s.terminate)
		defer t.Stop()
		select {
		case err := <-done:
			return err, true
		case <-t.C:
			return nil, false
		}
	}
	if err, ok := wait(); ok {
		return err
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err == nil {
		if err, ok := wait(); ok {
			return err
		}
	}
	if err := s.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	if err, ok := wait(); ok {
		return err
	}
	return errors.New("unresponsive subprocess")
}
