package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// This file turns the SDK's and the OS's errors into *Error values with a
// Kind and a hint. The order of the checks matters: who gave up (the caller,
// the manager, our timeout) is decided before what the error says, because
// a cancelled request fails with whatever the transport saw at that moment.

func (c *serverConn) key() string { return "mcpServers." + c.cfg.Name }

func unresolvedErr(cfg config.Server) *Error {
	return &Error{
		ServerID: cfg.ID, Kind: Config, Op: "connect",
		Err:  fmt.Errorf("%w: %s", ErrUnresolvedEnv, strings.Join(cfg.Unresolved, ", ")),
		Hint: fmt.Sprintf("set %s in the gateway's environment, or give a default in mcpServers.%s as ${VAR:-default}", strings.Join(cfg.Unresolved, ", "), cfg.Name),
	}
}

func unknownServerErr(id string, known []string) *Error {
	hint := "there are no servers in the configuration"
	if len(known) > 0 {
		hint = "use one of: " + strings.Join(known, ", ")
	}
	return &Error{ServerID: id, Kind: Config, Err: ErrUnknownServer, Hint: hint}
}

func (c *serverConn) closedErr(op string) *Error {
	return &Error{ServerID: c.cfg.ID, Kind: Unavailable, Op: op, Err: ErrClosed, Hint: "the gateway is shutting down"}
}

// connectErr classifies a failed connection attempt. ctx is the attempt's
// context; proc is the child, if we started one.
func (c *serverConn) connectErr(ctx context.Context, err error, proc *process) *Error {
	return redactErr(c.m.redact, c.classifyConnect(ctx, err, proc))
}

func (c *serverConn) classifyConnect(ctx context.Context, err error, proc *process) *Error {
	e := &Error{ServerID: c.cfg.ID, Kind: StartFailed, Op: "connect", Err: err}
	if proc != nil {
		e.StderrTail = proc.stderr.Tail()
	}
	var httpErr *HTTPStatusError
	switch {
	case c.m.isClosed():
		return c.closedErr("connect")
	case errors.As(err, &httpErr):
		e.Kind, e.Err = Auth, httpErr
		e.Hint = fmt.Sprintf("check the credentials in %s.headers (for example the Authorization header)", c.key())
	case proc != nil && proc.startErr != nil:
		e.Hint = startHint(c, proc.startErr)
	case errors.Is(context.Cause(ctx), errConnectTimeout):
		// Checked before the exit: the SDK closes a child that timed out.
		e.Kind = Timeout
		e.Err = fmt.Errorf("no answer to initialize within %s", roundDuration(c.m.opts.ConnectTimeout))
		e.Hint = "check that the server starts and speaks MCP; a first `npx -y` download can be slow, so try again"
	case proc != nil && proc.garbage() != nil:
		e.Err = fmt.Errorf("wrote something other than JSON-RPC to stdout: %w", proc.garbage())
		e.Hint = garbageHint(c)
	case proc != nil && proc.waitExit(0):
		// It exited before answering initialize: say how, and point at
		// what it printed.
		e.Err = fmt.Errorf("%s before completing initialize", proc.describeExit())
		e.Hint = fmt.Sprintf("run %q by hand to see why it exits; the end of its stderr is in this error", c.cfg.Command)
	case proc == nil && isNetErr(err):
		e.Kind = Unavailable
		e.Hint = fmt.Sprintf("check that the server at %s is running and reachable", c.cfg.URL)
	case proc != nil:
		e.Hint = fmt.Sprintf("check that %s.command starts an MCP server speaking stdio", c.key())
	default:
		e.Hint = fmt.Sprintf("check %s.url and that it serves MCP (%s)", c.key(), transportOf(c.cfg))
	}
	if n, first := skippedOf(proc); n > 0 && proc.startErr == nil && e.Kind != Auth {
		// A started server that printed lines other than JSON-RPC and
		// never answered: what it printed is the likeliest explanation.
		e.Err = fmt.Errorf("%w; it wrote %d line(s) to stdout that are not JSON-RPC, the first: %q", e.Err, n, first)
		e.Hint = garbageHint(c)
	}
	return e
}

const tooLargeHint = "ask the tool for less at once (a page, a range, a filter, a smaller file); the server is restarted on its next use"

// skippedOf returns how many stdout lines of proc were not JSON-RPC
// (stdout.go), and the quote of the first.
func skippedOf(proc *process) (int, string) {
	if proc == nil {
		return 0, ""
	}
	return proc.skippedQuote()
}

func garbageHint(c *serverConn) string {
	return fmt.Sprintf("an MCP stdio server must keep stdout for the protocol and log to stderr: check %s.args for a flag that selects stdio mode or quiets its output", c.key())
}

func startHint(c *serverConn, err error) string {
	var pathErr *fs.PathError
	switch {
	case errors.Is(err, exec.ErrNotFound):
		return fmt.Sprintf("install %q or set %s.command to its full path", c.cfg.Command, c.key())
	case errors.As(err, &pathErr) && pathErr.Op == "chdir":
		return fmt.Sprintf("%s.cwd %q is not a directory: fix or remove it", c.key(), c.cfg.Cwd)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Sprintf("make %q executable", c.cfg.Command)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("%q does not exist: fix %s.command", c.cfg.Command, c.key())
	}
	return fmt.Sprintf("check %s.command", c.key())
}

// diedErr describes the end of a session we did not close.
func (c *serverConn) diedErr(s *session, waitErr error) *Error {
	return redactErr(c.m.redact, c.classifyDeath(s, waitErr))
}

func (c *serverConn) classifyDeath(s *session, waitErr error) *Error {
	e := &Error{ServerID: c.cfg.ID, Kind: Died, Err: waitErr}
	if s.proc != nil {
		e.StderrTail = s.proc.stderr.Tail()
		exited := s.proc.waitExit(time.Second)
		switch {
		case s.proc.tooLarge():
			e.Err, e.Hint = ErrMessageTooLarge, tooLargeHint
		case s.proc.garbage() != nil:
			e.Err = fmt.Errorf("wrote something other than JSON-RPC to stdout: %w", s.proc.garbage())
			e.Hint = garbageHint(c)
		case exited:
			e.Err = errors.New("the process " + s.proc.describeExit())
			e.Hint = "it is restarted on next use; the end of its stderr usually says why it stopped"
		default:
			e.Hint = "it is restarted on next use"
		}
		return e
	}
	if e.Err == nil {
		e.Err = errors.New("the connection was closed by the server")
	}
	e.Hint = "it is reconnected on next use"
	return e
}

// callErr classifies a failed request. ctx is the caller's, callCtx the one
// with the call timeout, d that timeout.
func (c *serverConn) callErr(ctx, callCtx context.Context, s *session, op string, d time.Duration, err error) *Error {
	return redactErr(c.m.redact, c.classifyCall(ctx, callCtx, s, op, d, err))
}

func (c *serverConn) classifyCall(ctx, callCtx context.Context, s *session, op string, d time.Duration, err error) *Error {
	e := &Error{ServerID: c.cfg.ID, Op: op, Err: err}
	var httpErr *HTTPStatusError
	var wireErr *jsonrpc.Error
	switch {
	case ctx.Err() != nil:
		e.Kind, e.Err = Canceled, ctx.Err()
	case c.m.isClosed() || errors.Is(context.Cause(callCtx), ErrClosed):
		return c.closedErr(op)
	case errors.Is(context.Cause(callCtx), errCallTimeout):
		e.Kind = Timeout
		e.Err = fmt.Errorf("no answer within %s", roundDuration(d))
		e.Hint = fmt.Sprintf("raise %s.timeoutMs (or codemode.callTimeoutMs), or ask for less work per call", c.key())
	case errors.As(err, &httpErr):
		e.Kind, e.Err = Auth, httpErr
		e.Hint = fmt.Sprintf("check the credentials in %s.headers (for example the Authorization header)", c.key())
	case s.proc == nil && (isNetErr(err) || isCutOff(err)):
		// Before the wire error: the SDK reports a POST that could not
		// be sent as "rejected by transport", but nothing was rejected,
		// the server is gone. (A POST on a kept-alive connection to a
		// server that has just died ends in EOF or a reset rather than a
		// refused connection, depending on whether the client noticed the
		// close before reusing it.)
		e.Kind = Unavailable
		e.Hint = fmt.Sprintf("check that the server at %s is running and reachable", c.cfg.URL)
	case errors.As(err, &wireErr):
		e.Kind = Rejected
		switch wireErr.Code {
		case jsonrpc.CodeInvalidParams:
			e.Hint = "check the name and the input against the server's tool list and inputSchema"
		case jsonrpc.CodeMethodNotFound:
			e.Hint = "the server does not implement this request"
		}
	case errors.Is(err, ErrNotSupported):
		e.Kind = Rejected
		e.Hint = "check the server's capabilities before asking"
	case isFrameTooLarge(err):
		// The answer to this very request, most likely: say so rather
		// than blame the server, which did nothing wrong. The SDK drops
		// the connection, and closing it can take seconds (a server that
		// ignores EOF on stdin waits for SIGTERM): the session is let go
		// of now, so that the caller's next call starts a new one, as the
		// hint says, instead of landing on the one being closed.
		e.Kind, e.Err, e.Hint = Died, ErrMessageTooLarge, tooLargeHint
		c.abandon(s, e)
		return e
	default:
		// A broken connection surfaces as EOF or "connection closed"; wait
		// for the watcher so that the error carries the exit and stderr.
		var wait time.Duration
		if isEnded(err) || errors.Is(context.Cause(callCtx), errSessionEnded) {
			wait = 2 * time.Second
		}
		if died := s.endedErr(wait); died != nil {
			d := *died
			d.Op = op
			return &d
		}
		switch {
		case isEnded(err) || errors.Is(context.Cause(callCtx), errSessionEnded):
			e.Kind = Died
			e.Hint = "it is restarted on next use"
		case isNetErr(err):
			e.Kind = Unavailable
			e.Hint = fmt.Sprintf("check that the server at %s is running and reachable", c.cfg.URL)
		default:
			e.Kind = Protocol
		}
	}
	if s.proc != nil && e.Kind != Canceled && e.Kind != Rejected {
		e.StderrTail = s.proc.stderr.Tail()
	}
	return e
}

// isCutOff reports whether a request's connection ended before any answer.
func isCutOff(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

func isNetErr(err error) bool {
	var opErr *net.OpError
	var dnsErr *net.DNSError
	return errors.As(err, &opErr) || errors.As(err, &dnsErr) || errors.Is(err, net.ErrClosed)
}
