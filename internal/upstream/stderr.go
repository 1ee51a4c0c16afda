package upstream

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"

	"github.com/codemode-mcp/codemode/internal/redact"
)

// tailSize is how much of a stdio server's stderr is kept for error messages.
const tailSize = 4 << 10

// maxLogLine bounds one logged stderr line; longer lines are logged in
// pieces so that a server printing megabytes without a newline cannot make
// the sink buffer without bound.
const maxLogLine = 4 << 10

// stderrSink receives a stdio server's stderr (it is the exec.Cmd's Stderr,
// so os/exec copies into it from a pipe). Every complete line is logged
// through the gateway's slog logger, which writes to the gateway's stderr and
// never to stdout: stdout belongs to the MCP protocol when the gateway itself
// is served over stdio. The last tailSize bytes are kept in a ring so that a
// start failure or a death can show them; Tail hands them out redacted, and
// nothing else reads the ring, so that no unredacted stderr leaves the sink
// to be clipped by someone else.
type stderrSink struct {
	log    *slog.Logger
	redact *redact.Redactor

	mu   sync.Mutex
	ring [tailSize]byte
	n    int64  // total bytes written; ring holds the last min(n, tailSize)
	line []byte // incomplete last line, at most maxLogLine bytes
	// split: the last line logged was a piece of a longer one, cut at
	// maxLogLine; the next piece starts where it was cut.
	split bool
}

func newStderrSink(log *slog.Logger, r *redact.Redactor) *stderrSink {
	return &stderrSink{log: log, redact: r}
}

// Write never fails: losing the child's stderr is better than making the
// child block on a full pipe.
func (s *stderrSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range p {
		s.ring[s.n%tailSize] = c
		s.n++
	}
	rest := p
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		end := len(rest)
		if i >= 0 {
			end = i
		}
		if room := maxLogLine - len(s.line); end > room {
			s.line = append(s.line, rest[:room]...)
			rest = rest[room:]
			s.emit(true)
			continue
		}
		s.line = append(s.line, rest[:end]...)
		if i < 0 {
			break
		}
		rest = rest[i+1:]
		s.emit(false)
	}
	return len(p), nil
}

// emit logs the buffered line, redacted: the gateway's log is read by
// people and tools that must not learn the secrets either, and a server may
// print its own configuration. cut says the line goes on past what is
// buffered (it was cut at maxLogLine): a secret cut there is redacted in
// both pieces (Redactor.Fragment). s.mu is held.
func (s *stderrSink) emit(cut bool) {
	line := s.redact.Fragment(strings.ToValidUTF8(strings.TrimRight(string(s.line), "\r"), "\uFFFD"), s.split, cut)
	s.line = s.line[:0]
	s.split = cut
	if strings.TrimSpace(line) == "" {
		return
	}
	s.log.LogAttrs(context.Background(), slog.LevelInfo, "upstream stderr", slog.String("line", line))
}

// flush logs an incomplete last line, once the process is gone.
func (s *stderrSink) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.line) > 0 {
		s.emit(false)
	}
}

// Tail returns the last tailSize bytes written, redacted, starting at a
// line boundary when older output was dropped, as valid UTF-8.
//
// The ring is itself a cut: when it has wrapped, its first bytes may be the
// end of a secret whose start was dropped; and a server still running may
// be in the middle of writing one. So it goes through Redactor.Fragment,
// which removes such pieces, before anything else.
func (s *stderrSink) Tail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n <= tailSize {
		return s.redact.Fragment(strings.ToValidUTF8(string(s.ring[:s.n]), "\uFFFD"), false, true)
	}
	start := s.n % tailSize
	buf := make([]byte, 0, tailSize)
	buf = append(buf, s.ring[start:]...)
	buf = append(buf, s.ring[:start]...)
	out := s.redact.Fragment(string(buf), true, true)
	if i := strings.IndexByte(out, '\n'); i >= 0 && i < len(out)-1 {
		out = out[i+1:]
	}
	return strings.ToValidUTF8(out, "\uFFFD")
}
