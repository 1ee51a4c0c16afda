package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/redact"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DialFunc makes the transport for one connection attempt to s. It is called
// once per attempt (a restart dials again). ctx is cancelled when the
// attempt times out, and otherwise lives as long as the session: a transport
// may tie its connection to it. Dial and the transport's Connect must return
// when ctx is done. See [Options.Dial].
type DialFunc func(ctx context.Context, s config.Server) (mcp.Transport, error)

// dial makes the transport for one connection attempt. proc is non-nil for
// stdio servers that this package starts itself; it is nil for remote
// servers and for transports made by Options.Dial.
//
// lists, when not nil, sees the connection's tools/list responses as they
// arrived (rawschemas.go).
func (m *Manager) dial(ctx context.Context, s config.Server, log *slog.Logger) (t mcp.Transport, proc *process, lists *rawLists, err error) {
	if m.opts.Dial != nil {
		if t, err := m.opts.Dial(ctx, s); err != nil || t != nil {
			if t != nil {
				t = meteredTransport{wrapDialed(t)} // task answers (taskwire.go)
			}
			return t, nil, nil, err
		}
	}
	switch transportOf(s) {
	case config.Stdio:
		proc := m.newProcess(s, log)
		return &cmdTransport{proc: proc, terminate: m.opts.TerminateTimeout, log: log, redact: m.redact}, proc, &proc.lists, nil
	case config.Streamable:
		lists := &rawLists{}
		return &mcp.StreamableClientTransport{
			Endpoint:   s.URL,
			HTTPClient: m.httpClient(s, false, lists),
			// The SDK's own reconnect loop retries a broken stream 5 times
			// with growing delays; a dead remote should rather surface as
			// an error and go through our backoff.
			MaxRetries: 2,
		}, nil, lists, nil
	case config.SSE:
		lists := &rawLists{}
		return &mcp.SSEClientTransport{Endpoint: s.URL, HTTPClient: m.httpClient(s, true, lists)}, nil, lists, nil
	default:
		return nil, nil, nil, fmt.Errorf("unknown transport %q", s.Transport)
	}
}

// transportOf tolerates hand-built configs that leave Transport empty.
func transportOf(s config.Server) config.Transport {
	switch {
	case s.Transport != "":
		return s.Transport
	case s.Command != "":
		return config.Stdio
	case s.URL != "":
		return config.Streamable
	}
	return ""
}

// process is a stdio server's child process. The SDK's CommandTransport
// starts it and owns Wait; we learn how it ended through cmdConn.Close,
// which the SDK calls once the connection is done (and which returns Wait's
// error).
type process struct {
	cmd    *exec.Cmd
	stderr *stderrSink

	// Set by cmdTransport.Connect, on the goroutine that calls
	// Client.Connect, before the SDK uses the connection.
	pid      int
	startErr error // Start failed: there never was a process

	exitOnce sync.Once
	exited   chan struct{} // closed once Wait has returned
	exitErr  error         // Wait's error (nil: status 0); valid after exited

	mu      sync.Mutex
	readErr error // the first error reading stdout: io.EOF, or not JSON-RPC

	lists rawLists // tools/list responses as they arrived (rawschemas.go)

	// conn is the connection over the process's pipes, for direct tool
	// calls (directcall.go); set by cmdTransport.Connect.
	conn *lineConn

	// skipped counts the stdout lines that were not JSON-RPC (stdout.go);
	// written by the SDK's reading goroutine, read under mu.
	skipped skippedLines
}

// skip records a dropped stdout line.
func (p *process) skip(line []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.skipped.add(line)
}

// skippedQuote returns how many stdout lines were dropped and the quote of
// the first.
func (p *process) skippedQuote() (int, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.skipped.n, p.skipped.first
}

func (p *process) setReadErr(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.readErr == nil {
		p.readErr = err
	}
}

// garbage returns the error of a stdout that carried something other than
// JSON-RPC (a server logging to stdout), or nil.
func (p *process) garbage() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.readErr == nil || errors.Is(p.readErr, io.EOF) || errors.Is(p.readErr, os.ErrClosed) || isFrameTooLarge(p.readErr) {
		return nil
	}
	return p.readErr
}

// tooLarge reports whether reading stopped at a message larger than the
// SDK reads (ErrMessageTooLarge).
func (p *process) tooLarge() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.readErr != nil && isFrameTooLarge(p.readErr)
}

// isFrameTooLarge recognises the SDK's unexported errFrameTooLarge by its
// text (TestHugeResultRestartsTheServer fails if the text changes), and
// errBodyTooLarge, which the SDK quotes as text.
func isFrameTooLarge(err error) bool {
	return strings.Contains(err.Error(), "exceeded the configured maximum line length") || strings.Contains(err.Error(), errBodyTooLarge.Error())
}

func (m *Manager) newProcess(s config.Server, log *slog.Logger) *process {
	cmd := exec.Command(s.Command, s.Args...)
	// A minimal inherited environment plus the server's own (env.go).
	cmd.Env = childEnv(os.Environ(), s)
	cmd.Dir = s.Cwd
	sink := newStderrSink(log, m.redact)
	// Not an *os.File, so os/exec copies the pipe into sink; Wait returns
	// only once everything has been copied, so the tail is complete when
	// the exit is recorded. WaitDelay stops a grandchild that inherited
	// stderr from holding Wait open forever.
	cmd.Stderr = sink
	cmd.WaitDelay = time.Second
	setProcessGroup(cmd)
	return &process{cmd: cmd, stderr: sink, exited: make(chan struct{})}
}

func (p *process) recordExit(err error) {
	p.exitOnce.Do(func() {
		p.exitErr = err
		p.stderr.flush()
		close(p.exited)
	})
}

// waitExit waits up to d for the process to have been waited for, and
// reports whether it was.
func (p *process) waitExit(d time.Duration) bool {
	if p.pid == 0 {
		return false
	}
	select {
	case <-p.exited:
		return true
	default:
	}
	if d <= 0 {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// describeExit says how the process ended: "exit status 1", "signal:
// killed". Call only after exited is closed.
func (p *process) describeExit() string {
	switch err := p.exitErr.(type) {
	case nil:
		return "exited with status 0"
	case *exec.ExitError:
		if err.Exited() {
			return "exited with " + err.Error()
		}
		return "terminated: " + err.Error()
	default:
		return "ended: " + err.Error()
	}
}

// kill ends the process and everything it started, for the paths where the
// SDK will not close the connection itself.
func (p *process) kill() {
	if p.pid > 0 {
		killProcessGroup(p.pid)
	}
}

// cmdTransport is mcp.CommandTransport plus bookkeeping: it records the pid
// and a failed Start, wraps the connection to learn the exit, and reads
// stdout through a stdoutFilter (stdout.go), which drops lines that are not
// JSON-RPC instead of ending the connection.
type cmdTransport struct {
	proc      *process
	terminate time.Duration // see Options.TerminateTimeout
	log       *slog.Logger
	redact    *redact.Redactor // applied to the quotes of dropped lines
}

func (t *cmdTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, in, err := t.start(ctx)
	if err != nil {
		t.proc.startErr = err
		return nil, err
	}
	t.proc.pid = t.proc.cmd.Process.Pid
	return &cmdConn{Connection: conn, proc: t.proc, stdin: in}, nil
}

// start starts the command and connects to it over its stdin and stdout,
// as mcp.CommandTransport does (with a connection of our own: lineconn.go).
func (t *cmdTransport) start(ctx context.Context) (mcp.Connection, *stdin, error) {
	cmd := t.proc.cmd
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	w, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	terminate := t.terminate
	if terminate <= 0 {
		terminate = 5 * time.Second // the SDK's default
	}
	in := &stdin{WriteCloser: w, cmd: cmd, terminate: terminate}
	skipped := &t.proc.skipped
	skipped.redact = t.redact
	skipped.warn = func(quote string, n int) {
		msg := "upstream wrote a line to stdout that is not JSON-RPC; skipped it (stdout is for the protocol: a server should log to stderr)"
		if n == maxSkipWarnings {
			msg += "; further such lines are skipped without a warning"
		}
		t.log.Warn(msg, slog.String("line", quote))
	}
	// The connection is closed by closing stdin (see stdin.Close), as the
	// SDK does; lineConn replaces the SDK's IOTransport (see lineconn.go).
	filter := &stdoutFilter{r: out, skipped: t.proc.skip}
	conn := newLineConn(out, filter, in)
	t.proc.conn = conn
	return conn, in, nil
}

// cmdConn wraps the SDK's stdio connection. Wrapping is safe: the SDK looks
// for optional interfaces only on HTTP connections on the client side.
type cmdConn struct {
	mcp.Connection
	proc  *process
	stdin *stdin
	m     metered // answers held as they arrive (WithReceiveBudget)
}

// Read records why reading stopped: EOF means the child closed stdout
// (usually by exiting), anything else that it wrote garbage, after which the
// SDK closes the connection and so the child. Only this tells the two apart.
func (c *cmdConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil && ctx.Err() == nil {
		c.proc.setReadErr(err)
	}
	if err == nil {
		c.proc.lists.received(msg)
		msg = c.m.received(msg)
		rewriteTaskMessage(msg) // task answers (taskwire.go)
	}
	return msg, err
}

func (c *cmdConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	c.proc.lists.sent(msg)
	c.m.sent(ctx, msg)
	return c.Connection.Write(ctx, msg)
}

// Close is called by the SDK when the session ends for any reason (our
// Close, the child closing stdout, a failed initialize). The inner Close
// closes stdin, waits for the child (SIGTERM, then SIGKILL, after
// TerminateDuration) and returns Wait's error. Whatever the leader did, the
// rest of its process group is killed so that wrappers such as npx leave no
// orphans.
func (c *cmdConn) Close() error {
	err := c.Connection.Close()
	killProcessGroup(c.proc.pid)
	// Wait's own error (the SDK joins it with the reader's Close).
	c.proc.recordExit(c.stdin.waitErr)
	return err
}

// httpClient returns the client for one remote server: the manager's shared
// connection pool behind a RoundTripper that adds the configured headers to
// every request and turns 401/403 into *HTTPStatusError.
func (m *Manager) httpClient(s config.Server, sse bool, lists *rawLists) *http.Client {
	h := make(http.Header, len(s.Headers))
	for k, v := range s.Headers {
		h.Set(k, v)
	}
	return &http.Client{Transport: &headerTransport{base: m.httpBase, headers: h, authOnGET: sse, lists: lists, redact: m.redact}}
}

// headerTransport adds headers and detects credential rejections.
//
// Why an error instead of the response: the SDK turns a non-2xx status into
// a string ("sending \"initialize\": Unauthorized") and, for SSE, drops the
// status entirely. An error returned here reaches the caller wrapped with %w
// (through *url.Error and the SDK's wrapping), so errors.As finds the
// status, the method and WWW-Authenticate.
//
// A 401/403 on a Streamable HTTP GET is left alone: that GET only opens the
// optional server-to-client stream, which the SDK tolerates being refused;
// the POSTs carry the calls. For SSE the GET is the connection itself.
type headerTransport struct {
	base      http.RoundTripper
	headers   http.Header
	authOnGET bool
	lists     *rawLists // taps tools/list responses (rawschemas.go); may be nil
	redact    *redact.Redactor
}

// maxAuthBody is how much of a 401/403 body the error quotes.
const maxAuthBody = 512

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		req = req.Clone(req.Context()) // a RoundTripper must not modify its request
		for k, vs := range t.headers {
			if k == "Host" {
				req.Host = vs[0]
				continue
			}
			req.Header[k] = vs
		}
	}
	req = taskNameHeader(req)
	list := t.lists != nil && t.lists.sentHTTP(req)
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) &&
		(req.Method != http.MethodGet || t.authOnGET) {
		// One byte more than is quoted, to know whether the body was cut:
		// then its last bytes may be the start of a secret (an error page
		// echoing the token), which Fragment removes.
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxAuthBody+1))
		resp.Body.Close()
		cut := len(body) > maxAuthBody
		// Made valid UTF-8 before it is redacted: dropping bytes after
		// would join the two halves of a secret split by an invalid one.
		text := strings.ToValidUTF8(string(body[:min(len(body), maxAuthBody)]), "")
		text = t.redact.Fragment(text, false, cut)
		return nil, &HTTPStatusError{
			StatusCode:      resp.StatusCode,
			Method:          req.Method,
			URL:             t.redact.String(redactURL(req.URL)),
			WWWAuthenticate: t.redact.String(resp.Header.Get("WWW-Authenticate")),
			Body:            strings.TrimSpace(text),
		}
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if (mt == "application/json" || resp.StatusCode < 200 || resp.StatusCode > 299) && (resp.ContentLength < 0 || resp.ContentLength > maxMessageBytes) {
		// The SDK reads a JSON answer whole, and the body of any error
		// status (an event stream's events it bounds itself, as it does a
		// stdio server's messages): a server answering with gigabytes took
		// the gateway's memory with it. A body that declares a length
		// within the bound is left as it is: net/http reads no further.
		resp.Body = &cappedBody{ReadCloser: resp.Body, left: maxMessageBytes}
	}
	if t.lists != nil {
		t.lists.tapHTTP(req, resp, t.authOnGET, list)
	}
	tapTasks(req, resp, t.authOnGET)
	return resp, nil
}

// maxMessageBytes bounds one message from a remote server answered as
// JSON: the size the MCP SDK allows one stdio message or one event of an
// event stream.
const maxMessageBytes = mcp.DefaultMaxLineLength

// errBodyTooLarge is the error reading a remote server's JSON answer longer
// than maxMessageBytes. The SDK quotes it in its own error, as text, which
// isFrameTooLarge recognises.
var errBodyTooLarge = errors.New("the answer is larger than the most the gateway reads in one message")

// cappedBody fails once more than left bytes have been read.
type cappedBody struct {
	io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errBodyTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, errBodyTooLarge
	}
	return n, err
}

// redactURL drops the query and user info, which may carry secrets.
func redactURL(u *url.URL) string {
	c := *u
	c.User = nil
	c.RawQuery = ""
	c.Fragment = ""
	return c.String()
}
