package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/redact"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serverConn is the state machine of one configured server:
//
//	not-connected ──use──▶ connecting ──ok──▶ connected ──died──▶ backoff
//	                           │                                     │
//	                           └──failed──▶ backoff ◀────────────────┘
//	backoff ──RetryIn elapsed──▶ error ──use──▶ connecting
//
// Invariants, all under mu: at most one of sess and attempt is non-nil; a
// non-nil lastErr with retryAt in the future means "fail fast"; every
// goroutine this type starts is tracked by the Manager's WaitGroup.
type serverConn struct {
	m      *Manager
	cfg    config.Server
	log    *slog.Logger
	client *mcp.Client
	// cfgErr is set at construction for a server that must never be
	// started (unresolved ${VAR}s); it is returned by every use.
	cfgErr *Error

	mu       sync.Mutex
	sess     *session
	attempt  *attempt
	lastErr  *Error
	failures int // consecutive failures, for the backoff delay
	retryAt  time.Time
	snaps    snapState // see snapshot.go

	// fwd is the calls in flight, for the server's own requests
	// (forward.go).
	fwd forwarding
}

// session is one live MCP session. It is never reused after it ends.
type session struct {
	cs   *mcp.ClientSession
	proc *process // nil unless a stdio child we started
	// direct, when set, takes tools/call past the SDK's client
	// (directcall.go).
	direct *lineConn
	// lists sees the tools/list responses as they arrived, for the
	// servers' own key order (rawschemas.go); nil for Options.Dial.
	lists *rawLists
	// ctx is the attempt's context, cancelled (by cancel) once the session
	// has ended; see connect.
	ctx     context.Context
	cancel  context.CancelCauseFunc
	started time.Time
	closing atomic.Bool // we closed it on purpose: its end is not a death

	done   chan struct{} // closed by watch once the session has ended
	endErr *Error        // why it ended (nil if closing); valid after done
}

// attempt is one connection attempt that concurrent callers share.
type attempt struct {
	done chan struct{} // closed when sess or err is set
	sess *session
	err  *Error
}

func newServerConn(m *Manager, cfg config.Server) *serverConn {
	c := &serverConn{m: m, cfg: cfg, log: m.log.With(slog.String("server", cfg.ID))}
	if len(cfg.Unresolved) > 0 {
		c.cfgErr = unresolvedErr(cfg)
	}
	c.client = mcp.NewClient(&mcp.Implementation{Name: m.opts.ClientName, Version: m.opts.ClientVersion}, &mcp.ClientOptions{
		Logger: c.log,
		// Elicitation, sampling and roots are passed on to the client of
		// the run that asked (forward.go); the tasks extension is
		// spoken (tasks.go).
		Capabilities: clientCapabilities(),
		// Input-required results are answered by c.inputRounds.
		MultiRoundTrip:              &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler:          c.handleElicit,
		CreateMessageHandler:        c.handleSampling,
		ToolListChangedHandler:      func(context.Context, *mcp.ToolListChangedRequest) { c.toolsChanged() },
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { m.progressNotified(r) },
		LoggingMessageHandler: func(ctx context.Context, r *mcp.LoggingMessageRequest) {
			if r.Params != nil && c.log.Enabled(ctx, slog.LevelDebug) {
				c.log.Debug("upstream log", slog.String("level", string(r.Params.Level)), slog.String("data", logData(c.m.redact, r.Params.Data)))
			}
		},
	})
	// The loop first: the middleware added last runs first, and each
	// round must be sent as taskParams made it.
	c.client.AddSendingMiddleware(c.inputRounds)
	c.client.AddSendingMiddleware(taskParams)
	c.client.AddReceivingMiddleware(c.rootsMiddleware)
	registerTaskMethods(c.client)
	return c
}

// session returns the live session, connecting if needed. Concurrent callers
// share one attempt, which runs on the Manager's context rather than the
// first caller's, so that a caller giving up does not fail the others (and
// a finished attempt is kept for the next caller). ctx only bounds the wait.
func (c *serverConn) session(ctx context.Context) (*session, error) {
	if c.cfgErr != nil {
		return nil, c.cfgErr
	}
	if c.m.isClosed() {
		return nil, c.closedErr("connect")
	}
	c.mu.Lock()
	if c.sess != nil {
		s := c.sess
		c.mu.Unlock()
		return s, nil
	}
	a := c.attempt
	if a == nil {
		if wait := c.retryAt.Sub(c.m.opts.Now()); c.lastErr != nil && wait > 0 {
			e := *c.lastErr
			e.RetryIn = wait
			c.mu.Unlock()
			return nil, &e
		}
		a = &attempt{done: make(chan struct{})}
		if !c.m.goBackground(func() { c.connect(a) }) {
			c.mu.Unlock()
			return nil, c.closedErr("connect")
		}
		c.attempt = a
	}
	c.mu.Unlock()
	select {
	case <-a.done:
		if a.err != nil {
			return nil, a.err
		}
		return a.sess, nil
	case <-ctx.Done():
		return nil, &Error{ServerID: c.cfg.ID, Kind: Canceled, Op: "connect", Err: ctx.Err()}
	}
}

// errConnectTimeout is the cause of an attempt's context that hit
// ConnectTimeout.
var errConnectTimeout = errors.New("upstream connect timeout")

// connect runs one attempt and publishes its outcome.
//
// The attempt's context must outlive the attempt when it succeeds: the SDK's
// SSE transport ties its event stream (the connection itself) to the
// context given to Connect. So the timeout is a timer that is stopped on
// success rather than a deadline, and the context is cancelled when the
// session ends.
func (c *serverConn) connect(a *attempt) {
	ctx, cancel := context.WithCancelCause(c.m.base)
	timer := time.AfterFunc(c.m.opts.ConnectTimeout, func() { cancel(errConnectTimeout) })
	started := time.Now()
	sess, err := c.dialAndInit(ctx, cancel)
	if !timer.Stop() && err == nil {
		// The timer fired as the handshake completed: the context is
		// gone, and with it an SSE stream.
		sess.close()
		err = c.connectErr(ctx, context.Cause(ctx), sess.proc)
		sess = nil
	}
	if err != nil {
		cancel(nil)
	}

	c.mu.Lock()
	c.attempt = nil
	var orphan *session // closed outside the lock: closing can take seconds
	if err == nil && c.m.isClosed() {
		orphan, sess = sess, nil
		err = c.closedErr("connect")
	}
	switch {
	case err != nil:
		if !errors.Is(err, ErrClosed) {
			c.recordFailure(err, 0)
			c.log.Warn("upstream failed to start", slog.Any("error", err))
		}
		a.err = err
	default:
		c.sess = sess
		c.snaps.sessionChanged()
		a.sess = sess
		if !c.m.goBackground(func() { c.watch(sess) }) {
			// Close is under way and will find c.sess and close it.
			close(sess.done)
		}
		c.log.Debug("upstream connected", slog.Duration("took", time.Since(started)))
	}
	c.mu.Unlock()
	close(a.done)
	if orphan != nil {
		orphan.close()
	}
}

// dialAndInit starts the server and completes the handshake. ctx and cancel
// become the session's (see connect).
func (c *serverConn) dialAndInit(ctx context.Context, cancel context.CancelCauseFunc) (*session, *Error) {
	t, proc, lists, err := c.m.dial(ctx, c.cfg, c.log)
	if err != nil {
		return nil, c.connectErr(ctx, err, nil)
	}
	var opts *mcp.ClientSessionOptions
	if v := c.m.opts.ProtocolVersion; v != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: v}
	}
	cs, err := c.client.Connect(ctx, t, opts)
	if err != nil {
		if proc != nil && !proc.waitExit(2*time.Second) {
			// The SDK closes the connection (and so the child) on almost
			// every failed Connect; this covers the rest.
			proc.kill()
		}
		return nil, c.connectErr(ctx, err, proc)
	}
	s := &session{cs: cs, proc: proc, lists: lists, ctx: ctx, cancel: cancel, started: c.m.opts.Now(), done: make(chan struct{})}
	if proc != nil && proc.conn != nil && directOK(cs) {
		s.direct = proc.conn
	}
	return s, nil
}

// watch waits for the session to end and, unless we ended it, records the
// death: the next use restarts the server after the backoff delay.
func (c *serverConn) watch(s *session) {
	waitErr := s.cs.Wait()
	s.cancel(nil)
	if !s.closing.Load() {
		s.endErr = c.diedErr(s, waitErr)
	}
	c.mu.Lock()
	if c.sess == s {
		c.sess = nil
		if s.endErr != nil {
			c.recordFailure(s.endErr, c.m.opts.Now().Sub(s.started))
			c.log.Warn("upstream died", slog.Any("error", s.endErr))
		}
	}
	c.mu.Unlock()
	close(s.done)
}

// abandon stops using s, whose connection is broken, at once: the next use
// starts a new session (after the backoff err calls for) while s finishes
// closing in the background. The watcher of s then records nothing more.
func (c *serverConn) abandon(s *session, err *Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess != s {
		return
	}
	c.sess = nil
	c.recordFailure(err, time.Since(s.started))
	c.log.Warn("upstream connection dropped", slog.Any("error", err))
}

// close ends a session on purpose. It may block while the SDK closes stdin
// and waits for the child.
func (s *session) close() {
	s.closing.Store(true)
	_ = s.cs.Close()
	s.cancel(nil)
}

// recordFailure moves to backoff. A session that lived longer than the
// longest delay counts as a fresh start, so that a server that crashes once
// a day restarts quickly while a crash loop backs off. c.mu is held.
func (c *serverConn) recordFailure(err *Error, lived time.Duration) {
	if errors.Is(err, ErrMessageTooLarge) {
		// The server is fine; the connection could not carry one answer.
		c.lastErr, c.retryAt = err, c.m.opts.Now()
		return
	}
	if lived >= c.m.opts.BackoffMax {
		c.failures = 0
	}
	c.failures++
	c.lastErr = err
	c.retryAt = c.m.opts.Now().Add(c.backoff(c.failures))
}

// backoff is BackoffInitial doubled per consecutive failure, capped at
// BackoffMax.
func (c *serverConn) backoff(failures int) time.Duration {
	d := c.m.opts.BackoffInitial
	for i := 1; i < failures && d < c.m.opts.BackoffMax; i++ {
		d *= 2
	}
	return min(d, c.m.opts.BackoffMax)
}

// errCallTimeout is the cause of a call context that hit the call timeout,
// to tell it apart from the caller's own deadline.
var errCallTimeout = errors.New("upstream call timeout")

// do runs one request on a live session with the call timeout, and turns its
// error into an *Error. Cancelling ctx (a run that ended) cancels the
// request through the SDK, which sends notifications/cancelled upstream.
func (c *serverConn) do(ctx context.Context, op string, fn func(context.Context, *session) error) error {
	s, err := c.session(ctx)
	if err != nil {
		return err
	}
	d := c.callTimeout()
	callCtx, cancel := c.callContext(ctx, s, d)
	defer cancel()
	err = fn(callCtx, s)
	if err == nil {
		return nil
	}
	return c.callErr(ctx, callCtx, s, op, d, err)
}

// errSessionEnded is the cause of a call context whose session ended.
var errSessionEnded = errors.New("upstream session ended")

// callContext bounds one request: by the call timeout d, by the Manager (Close
// must not wait for calls that could run for minutes), and by the session
// (the SDK's SSE transport can block on a POST to a server whose stream is
// gone). Each limit is recorded as the context's cause for callErr.
func (c *serverConn) callContext(ctx context.Context, s *session, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	stopClose := context.AfterFunc(c.m.base, func() { cancel(ErrClosed) })
	stopEnd := context.AfterFunc(s.ctx, func() { cancel(errSessionEnded) })
	ctx, cancelTimeout := context.WithTimeoutCause(ctx, d, errCallTimeout)
	return ctx, func() {
		cancelTimeout()
		stopClose()
		stopEnd()
		cancel(nil)
	}
}

func (c *serverConn) callTimeout() time.Duration {
	if c.cfg.CallTimeout > 0 {
		return c.cfg.CallTimeout
	}
	return c.m.opts.CallTimeout
}

// endedErr waits (briefly) for a session whose connection broke to be
// recorded as ended, and returns why, or nil if it did not end.
func (s *session) endedErr(wait time.Duration) *Error {
	select {
	case <-s.done:
		return s.endErr
	default:
	}
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-s.done:
		return s.endErr
	case <-t.C:
		return nil
	}
}

// isEnded reports whether err says the connection itself is gone.
func isEnded(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.ErrClosedPipe) ||
		errors.Is(err, mcp.ErrSessionMissing)
}

// logData is an upstream log notification's data as the gateway logs it:
// its JSON, redacted, then cut to maxLogLine, as a stderr line is (a server
// may log its own configuration, and the gateway's log is read by people
// and tools that must not learn the secrets either).
func logData(r *redact.Redactor, data any) string {
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Sprintf("(not JSON: %v)", err)
	}
	return r.Clip(string(r.JSON(b)), maxLogLine)
}
