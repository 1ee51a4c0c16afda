// Package serve exposes Code Mode as an MCP server, over stdio or Streamable
// HTTP, with the tool surfaces users know:
//
//   - "run" (the default): codemode-spec §3's single tool, codemode_run.
//   - "search-execute": Cloudflare's and Thoughtbox's search + execute pair.
//   - "files": Bifrost's listToolFiles, readToolFile and executeToolCode.
//   - "emceepee": codemode_search and codemode_execute with an `mcp` global.
//
// Start with [New], then [Server.ServeStdio] or [Server.Handler]. Every tool
// call runs in its own fresh sandbox through a run.Runner; concurrent calls
// are isolated and run in parallel.
//
// Each surface is a [Surface] in a file of its own (run_tool.go,
// search_execute.go, files.go, emceepee.go); surface.go says how to add
// one. The Server (this file) hosts them: registration, warm-up, refresh on
// upstream changes, graceful shutdown. A tool's input schema is generated
// from the Go type its handler decodes, and testdata/golden pins every
// surface's wire format.
//
// What the model reads is built here: the tool descriptions document what
// §3.2.1, §3.2.3, §3.2.4, §3.5 and §5.3.2 require a host to document, and
// (§4.4) carry either every server's TypeScript declarations, when they fit
// the configured token budget, or a compact index; in the latter case a
// server's declarations come with the first response of a session that uses
// it. When an upstream's tools change, the descriptions are rebuilt and, if
// they changed, clients get notifications/tools/list_changed.
package serve

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/admit"
	"github.com/codemode-mcp/codemode/internal/buildinfo"
	"github.com/codemode-mcp/codemode/internal/builtin"
	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/outer"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/store"
	"github.com/codemode-mcp/codemode/internal/typegen"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// Options configure a Server. All fields are optional.
type Options struct {
	Logger *slog.Logger
	// Version is reported in serverInfo. Default: buildinfo.Version().
	Version string
	// WarmupTimeout bounds how long tools/list waits for the first catalog
	// (connecting every upstream) before answering with what it has; a
	// server that comes up later is announced with list_changed.
	// Default 10s.
	WarmupTimeout time.Duration
	// CodeStep, if set, is served at POST /v1/code/step over HTTP (package
	// replay's Handler: one step of a code block whose tools the client
	// runs), behind the same token, origin check and body-size limit as
	// /mcp.
	CodeStep http.Handler
	// Metrics, if set, is served at GET /metrics over HTTP (package
	// metrics' Handler), without the token: what a scraper reads is
	// counts, and health checkers and scrapers rarely hold one. The origin
	// check still applies.
	Metrics http.Handler
	// Scripts, if set, resolves a tool call's {"script": NAME} (package
	// scripts' Resolve): every surface's code-taking tool then runs a
	// saved script by name, with "args". nil refuses such calls.
	Scripts func(ctx context.Context, ref string) (code, full string, _ *diag.Diagnostic)
	// UI, if set, is served at /ui over HTTP (package ui's pages), behind
	// the origin check; it checks the token itself, as a page must ask
	// for it.
	UI http.Handler
	// Ready, if set, is asked by /readyz besides the upstreams having been
	// attempted; an error (the store cannot be reached) makes the gateway
	// not ready, and its text is the reason shown.
	Ready func(ctx context.Context) error
	// Store keeps what outlives a request: runs started as MCP tasks
	// (tasks.go) and large results served as resources (results.go).
	// Without one, neither is offered.
	Store *store.Store
	// TaskAfter is how long a call from a 2026-07-28 client that declared
	// the tasks extension may take before it goes on as a task. Default 1s.
	TaskAfter time.Duration
	// ResultTTL is how long a large result is kept for reading
	// (results.go). Default: the configuration's codemode.resultTTLMs,
	// else 1h.
	ResultTTL time.Duration
}

// Server is the gateway's MCP server.
type Server struct {
	runner *run.Runner
	mgr    *upstream.Manager
	cfg    *config.Config
	cat    *catalog.Catalog
	log    *slog.Logger
	opts   Options
	mcp    *mcp.Server
	decls  *declCache
	// sealer protects the run state that input-required results carry
	// through clients (package outer).
	sealer *outer.Sealer
	// held are the runs held while their 2026-07-28 client answers an
	// upstream's question, by id (hold.go).
	held sync.Map
	// direct is set when servers are served as ordinary tools
	// (classic.go): their tools exist only once the servers answered.
	direct  bool
	tasks   *tasks   // nil without Options.Store
	results *results // nil without Options.Store

	// warm is closed once the first catalog refresh is done.
	warm      chan struct{}
	warmOnce  sync.Once
	refreshMu sync.Mutex // serialises refreshes
	refreshQ  chan struct{}

	// surfaces are the configured surfaces, in codemode.surfaces order.
	surfaces []*mounted
	regMu    sync.Mutex // serialises registrations

	mu      sync.Mutex
	tools   map[string]string // tool name → JSON of the definition last registered
	replies *replyTracker     // over stdio: calls read and not yet answered

	// inflight counts tool calls being served, for graceful shutdown;
	// draining refuses new ones.
	inflight sync.WaitGroup
	draining atomic.Bool
	// runs is the parent of every tool call's context: CancelRuns ends
	// them when the grace period is over. Over stdio the SDK waits for
	// its handlers before the session can close, so nothing else would.
	runs       context.Context
	cancelRuns context.CancelFunc
	// stateless is set when serving stateless HTTP: every request then has
	// a session of its own, so a session remembers nothing.
	stateless atomic.Bool
	// searchHook, if set, sees every step of a regular-expression search
	// (catalog.BudgetOptions.OnSpend); tests use it to cancel one midway.
	searchHook func(ctx context.Context, used int64)
	// searchTime, if set, replaces searchTimeBudget: tests of what the
	// work budget does set it beyond any machine's load, so that the time
	// budget cannot end the search first.
	searchTime time.Duration
	// sessionKeys names each MCP session for the built-in servers
	// (builtin.Caller.Session): Thoughtbox's current session is per MCP
	// session. Entries go when their session ends.
	sessionKeys map[*mcp.ServerSession]string

	// The live sessions of a stateful HTTP endpoint, and their bound
	// (httpbounds.go; 0 until Handler sets it: stdio has one session).
	sessMu      sync.Mutex
	sessUse     map[*mcp.ServerSession]*sessionUse
	maxSessions atomic.Int64
}

// New returns a Server for runner's catalog. mgr is used for the emceepee
// surface's resources and prompts and for server status; it may be nil if
// that surface is off.
func New(runner *run.Runner, mgr *upstream.Manager, opts *Options) *Server {
	s := &Server{
		runner:   runner,
		mgr:      mgr,
		cfg:      runner.Config(),
		cat:      runner.Catalog(),
		warm:     make(chan struct{}),
		refreshQ: make(chan struct{}, 1),
		tools:    map[string]string{},
		decls:    newDeclCache(runner.Config().Serve.TypesBudgetTokens),

		sessionKeys: map[*mcp.ServerSession]string{},
		sealer:      outer.NewSealer(),
		sessUse:     map[*mcp.ServerSession]*sessionUse{},
	}
	s.runs, s.cancelRuns = context.WithCancel(context.Background())
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Logger == nil {
		s.opts.Logger = slog.New(slog.DiscardHandler)
	}
	if s.opts.WarmupTimeout <= 0 {
		s.opts.WarmupTimeout = 10 * time.Second
	}
	if s.opts.Version == "" {
		s.opts.Version = buildinfo.Version()
	}
	s.log = s.opts.Logger
	for _, name := range s.cfg.Serve.Surfaces {
		kind := surfaceKinds[name]
		if kind == nil {
			// The config refuses unknown surfaces; a Config built in code
			// may still name one.
			s.log.Error("unknown surface; it is not served", "surface", name)
			continue
		}
		s.surfaces = append(s.surfaces, &mounted{name: name, Surface: kind(s)})
	}
	if c := newClassicSurface(s); c != nil {
		// Servers served as ordinary MCP tools (classic.go).
		s.surfaces = append(s.surfaces, &mounted{name: "classic", Surface: c})
		s.direct = true
	}
	// Tools; the gateway offers no prompts of its own, and logging goes
	// to stderr.
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}
	s.tasks, s.results = newTasks(s), newResults(s)
	s.tasks.declare(caps)
	s.results.declare(caps)
	// No title: the SDK repeats serverInfo in the _meta of every result,
	// and "codemode" says it (the tools/list budget, tokens_test.go).
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "codemode", Version: s.opts.Version},
		&mcp.ServerOptions{
			Instructions: s.instructions(),
			// The SDK narrates every session at Info; only its warnings
			// are worth a line on stderr.
			Logger:       slog.New(minLevel{s.log.Handler(), slog.LevelWarn}),
			Capabilities: caps,
		})
	s.tasks.mount()
	s.results.mount()
	// Register the tools at once, so that a call made before the first
	// refresh works; their descriptions are completed by that refresh,
	// which tools/list waits for. (A client connected by then may receive
	// one tools/list_changed before it has listed anything.)
	s.mcp.AddReceivingMiddleware(s.capSessions, s.waitForWarmup, unescapedResults)
	s.mcp.AddSendingMiddleware(notInitializedYet)
	s.register(nil)
	return s
}

// MCP returns the underlying go-sdk server.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Start connects the upstream servers in the background, to build the
// descriptions, and keeps them current until ctx ends.
func (s *Server) Start(ctx context.Context) {
	// The descriptions count tokens; the counter's table is built while
	// the upstreams start rather than when the first of them answers.
	go typegen.LoadTokenizer()
	go func() {
		s.refresh(ctx)
		for {
			select {
			case <-ctx.Done():
				return
			case <-s.refreshQ:
				// Coalesce bursts of list_changed from several servers.
				time.Sleep(100 * time.Millisecond)
				s.refresh(ctx)
			}
		}
	}()
}

// ToolsChanged tells the server that an upstream's tools changed. It is
// meant for upstream.Options.OnToolsChanged.
func (s *Server) ToolsChanged(serverID string) {
	select {
	case s.refreshQ <- struct{}{}:
	default:
	}
}

// refresh rebuilds the catalog view of every server and re-registers the
// tools whose description changed (the SDK then notifies clients).
func (s *Server) refresh(ctx context.Context) {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	serving := ctx
	ctx, cancel := context.WithTimeout(ctx, s.opts.WarmupTimeout)
	defer cancel()
	servers, failed := s.cat.View().All(ctx)
	for id, err := range failed {
		// Closed, or cut short because the server stops (codemode history
		// rerun ends while a server still starts): shutting down, not a
		// fault of the upstream.
		if !errors.Is(err, upstream.ErrClosed) && serving.Err() == nil {
			s.log.Warn("upstream unavailable", "server", id, "err", err)
		}
	}
	s.register(servers)
	s.warmOnce.Do(func() { close(s.warm) })
}

// callsDirect reports whether req calls a tool of the classic surface:
// the code-mode surfaces' tool names hold no "__".
func callsDirect(req mcp.Request) bool {
	p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
	return ok && strings.Contains(p.Name, "__")
}

// errShuttingDown refuses work once a shutdown has begun: a JSON-RPC
// internal error (-32603), since the request itself is fine. (A plain Go
// error would go out with code 0, which no client can classify.)
var errShuttingDown = &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
	Message: "codemode is shutting down and accepts no new calls; retry against a running instance"}

// waitForWarmup holds tools/list until the first refresh, so that the first
// description a client sees already knows the servers, and so a call of a
// direct tool (<serverId>__<tool>, classic.go), which is registered then: a
// client may call one it listed on another replica, or from a list it
// kept. It also refuses new calls once the server drains.
func (s *Server) waitForWarmup(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "tools/call" && s.draining.Load() {
			return nil, errShuttingDown
		}
		if method == "tools/list" || method == "tools/call" && s.direct && callsDirect(req) {
			select {
			case <-s.warm:
			case <-ctx.Done():
			case <-time.After(s.opts.WarmupTimeout):
			}
		}
		return next(ctx, method, req)
	}
}

// track counts in-flight calls for graceful shutdown, and says where the
// runs of a call come from (run.WithOrigin: the surface, tool, session,
// client and the request's _meta) for their observers and audit line.
func (s *Server) track(h mcp.ToolHandler, surface string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.inflight.Add(1)
		defer s.inflight.Done()
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(s.runs, cancel)()
		// The audit line of the run this call makes says who asked.
		var attrs []slog.Attr
		o := origin(req)
		o.Surface = surface
		if o.Tool != "" {
			attrs = append(attrs, slog.String("tool", o.Tool))
		}
		if o.Session != "" {
			attrs = append(attrs, slog.String("session", o.Session))
		}
		ctx = builtin.WithCaller(ctx, s.caller(req))
		if req.Session != nil {
			// Its runs count against the session's own bound.
			ctx = admit.WithSession(ctx, req.Session)
		}
		ctx, bad := s.useScript(ctx, req)
		if bad != nil {
			return bad, nil
		}
		// The channel back to this call's client: what a run asks it
		// (approvals) goes through it, whichever surface runs the code,
		// and so do its upstreams' own requests (forward.go).
		ch := outer.New(req, &outer.Options{Sealer: s.sealer})
		if res, err, ok := s.resumeHeld(ctx, req, ch); ok {
			// The client answers a held run's question (hold.go).
			return res, err
		}
		exec := func(ctx context.Context) (*mcp.CallToolResult, error) {
			ctx = s.withForwarding(outer.With(ctx, ch), req)
			ctx, progressed := s.withProgress(ctx, req)
			defer progressed()
			ctx, linkResults := s.results.forCall(ctx, req)
			res, err := h(run.WithOrigin(run.WithLogAttrs(ctx, attrs...), o), req)
			if ir, ok := ch.InputRequired(); ok && err == nil {
				// The run waits for the client's answers: the call is
				// answered with the questions (2026-07-28 protocol).
				return ir, nil
			}
			return linkResults(res), err
		}
		if s.canHold(req, ch) {
			// Its upstreams' requests can reach a 2026-07-28 client.
			return s.hold(ctx, req, ch, exec)
		}
		return exec(ctx)
	}
}

// caller says who makes a call, for the built-in servers: the namespace of
// the client whose token authenticated the request (see Handler), and the
// MCP session. Under stateless HTTP every call is a session of its own.
func (s *Server) caller(req *mcp.CallToolRequest) builtin.Caller {
	c := builtin.Caller{Client: s.clientOf(req.Extra)}
	if req.Session == nil || s.stateless.Load() {
		c.Session = "call-" + store.NewID()
		return c
	}
	c.Session = s.sessionKey(req.Session)
	return c
}

// sessionKey names an MCP session for what outlives one call (the
// built-ins' data, kept results) until the session ends.
func (s *Server) sessionKey(session *mcp.ServerSession) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	key, ok := s.sessionKeys[session]
	if !ok {
		key = "mcp-" + store.NewID()
		s.sessionKeys[session] = key
		go func() {
			session.Wait()
			s.mu.Lock()
			delete(s.sessionKeys, session)
			s.mu.Unlock()
		}()
	}
	return key
}

// clientOf is the namespace of the client whose token authenticated a
// request (see Handler), or builtin.DefaultClient.
func (s *Server) clientOf(extra *mcp.RequestExtra) string {
	client := builtin.DefaultClient
	if extra != nil && extra.TokenInfo != nil {
		for _, cl := range s.cfg.Clients {
			if cl.Name == extra.TokenInfo.UserID {
				client = cl.Namespace
			}
		}
	}
	return client
}

// ServeStdio serves one client over stdin and stdout until the client goes
// away or ctx ends. The end of ctx is a requested shutdown, not a failure:
// it returns nil.
func (s *Server) ServeStdio(ctx context.Context) error {
	return s.serveTransport(ctx, stdioTransport(os.Stdin, os.Stdout, s.log))
}

// serveTransport is mcp.Server.Run without its logging: Run reports the
// end of its ctx as an error ("server run cancelled"), which on a SIGTERM
// is exactly what was asked for.
func (s *Server) serveTransport(ctx context.Context, transport mcp.Transport) error {
	t := newReplyTracker(s.Transport(transport))
	s.mu.Lock()
	s.replies = t
	s.mu.Unlock()
	ss, err := s.mcp.Connect(ctx, t, nil)
	if err != nil {
		return err
	}
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case err := <-ended:
		return err
	case <-ctx.Done():
		ss.Close()
		<-ended
		return nil
	}
}

// CancelRuns cancels every tool call in flight: their runs end at once
// with a CANCELLED diagnostic, which is still answered. For the end of a
// graceful shutdown's grace period.
func (s *Server) CancelRuns() { s.cancelRuns() }

// StopAccepting refuses tool calls from now on (Drain does too): a caller
// that says it is shutting down calls it first, so that a call sent after
// the message is refused.
func (s *Server) StopAccepting() { s.draining.Store(true) }

// Drain stops accepting tool calls and waits until those in flight are done
// (and, over stdio, answered) or ctx ends.
func (s *Server) Drain(ctx context.Context) error {
	s.StopAccepting()
	s.mu.Lock()
	replies := s.replies
	s.mu.Unlock()
	if replies != nil {
		if err := replies.wait(ctx); err != nil {
			return err
		}
	}
	done := make(chan struct{})
	go func() { s.inflight.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// minLevel drops records below a level before they reach the handler.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(a []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(a), h.min}
}
func (h minLevel) WithGroup(n string) slog.Handler { return minLevel{h.Handler.WithGroup(n), h.min} }
