package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/codemode-mcp/codemode/internal/buildinfo"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/replay"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/scripts"
	"github.com/codemode-mcp/codemode/internal/serve"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

const noConfigHint = `codemode: no configuration file (--config, $CODEMODE_CONFIG or ./codemode.json); serving the built-in servers only (thoughtbox, store).
  To add a server, write codemode.json, e.g.
    {"mcpServers": {"everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"]}}}
`

func (e *env) serve(args []string) int {
	fs := newFlagSet("serve", e.stderr, "serve [--config FILE] [--http ADDR [--auth-token T] [--stateless]]")
	var c common
	c.register(fs, "info")
	var httpAddr, token string
	var origins stringList
	var stateless bool
	var grace, sessionTimeout, warmup time.Duration
	fs.StringVar(&httpAddr, "http", "", "serve Streamable HTTP at ADDR/mcp (e.g. 127.0.0.1:8808) instead of stdio")
	fs.StringVar(&token, "auth-token", os.Getenv(config.AuthTokenEnv), "bearer token required on HTTP requests (default $CODEMODE_AUTH_TOKEN); mandatory off loopback")
	fs.Var(&origins, "allowed-origin", "browser Origin accepted besides localhost (repeatable)")
	fs.BoolVar(&stateless, "stateless", false, "HTTP without sessions, for replicas behind a load balancer")
	fs.DurationVar(&grace, "grace", 10*time.Second, "on SIGINT/SIGTERM, how long runs in flight may take to finish")
	fs.DurationVar(&sessionTimeout, "session-timeout", serve.DefaultSessionTimeout, "close an HTTP session that has had no request for this long (0: keep it until the client deletes it)")
	fs.DurationVar(&warmup, "warmup", 10*time.Second, "how long the first tools/list waits for the upstream servers to connect (later ones are announced with list_changed)")
	pos, err := parse(fs, args)
	if err != nil {
		return e.usageErr(err)
	}
	if len(pos) > 0 {
		return e.usageErr(fmt.Errorf("serve takes no arguments, got %q", pos))
	}
	if sessionTimeout < 0 {
		return e.usageErr(fmt.Errorf("--session-timeout %v: must be positive, or 0 to keep idle sessions", sessionTimeout))
	}
	for _, o := range origins {
		if err := serve.CheckOrigin(o); err != nil {
			return e.usageErr(err)
		}
	}
	var srv *serve.Server
	g, status := e.open(c, &upstream.Options{OnToolsChanged: func(id string) {
		if srv != nil {
			srv.ToolsChanged(id)
		}
	}})
	if g == nil {
		return status
	}
	defer g.close()
	if httpAddr != "" {
		// A named client's token (codemode.clients) is a token too.
		auth := token
		for _, c := range g.cfg.Clients {
			if len(c.Unresolved) > 0 {
				g.log.Warn("a client's token is not set; it cannot authenticate", "client", c.Name, "unset", c.Unresolved)
			} else if auth == "" {
				auth = c.Token
			}
		}
		if err := serve.CheckListen(httpAddr, auth); err != nil {
			return e.usageErr(err)
		}
	}
	// Bind the address before any upstream server starts: a port that is
	// taken or invalid must not cost a round of process starts first.
	var ln net.Listener
	if httpAddr != "" {
		if ln, err = net.Listen("tcp", httpAddr); err != nil {
			fmt.Fprintf(e.stderr, "codemode: cannot listen on --http %s: %v\n", httpAddr, err)
			return ExitUsage
		}
		defer ln.Close()
	}
	if g.cfg.File == "" {
		fmt.Fprint(e.stderr, noConfigHint)
	}
	// Open the data store and apply its migrations now, so that a problem
	// with it is in the log from the start; the gateway serves anyway, and
	// only calls of the built-ins that need the store fail (with the fix)
	// until it is solved.
	// It happens in the background: a PostgreSQL that does not answer
	// must not hold up serving.
	if len(g.builtins.Active()) > 0 || !g.cfg.History.Disabled {
		go func() {
			if err := g.store.Ready(e.ctx); err != nil {
				g.log.Warn("the data store is unavailable; the built-in servers' calls fail, and runs are not recorded, until it is fixed", "err", err)
			} else {
				g.log.Info("data store ready", "backend", g.store.Backend(), "where", g.store.Where())
			}
		}()
	}
	// One admission for MCP runs and steps alike: one bound, one budget.
	adm := g.admission()
	obs, err := e.observe(g, httpAddr != "")
	if err != nil {
		return e.usageErr(err)
	}
	defer obs.close()
	opts := &run.Options{Logger: g.log, Admission: adm, Observer: obs.observer()}
	var caller run.Caller = g.caller()
	if dir := g.cfg.Serve.RecordDir; dir != "" {
		rec := &replay.Recorder{Write: replay.DirWriter(dir), OnError: func(err error) { g.log.Warn("writing a replay bundle", "dir", dir, "err", err) }}
		opts.Record, caller = rec.Record, replay.Releasing(caller)
		g.log.Info("recording every run (deterministic) as a replay bundle", "dir", dir)
	}
	opts.Record = obs.record(opts.Record)
	r := run.New(g.cfg, g.cat, caller, opts)
	saved := scripts.New(g.store)
	so := &serve.Options{Logger: g.log, Version: buildinfo.Version(), WarmupTimeout: warmup,
		CodeStep: replay.Handler(replay.New(&replay.Options{Config: g.cfg, Logger: g.log, Admission: adm, Observer: opts.Observer})),
		Scripts:  saved.Resolve,
		// Runs started as MCP tasks and large results live in the store.
		Store: g.store}
	if obs.metrics != nil {
		so.Metrics = obs.metrics.Handler()
	}
	if len(g.builtins.Active()) > 0 || !g.cfg.History.Disabled {
		so.Ready = g.store.Ready
	}
	if httpAddr != "" {
		so.UI = e.inspector(g, obs, saved, token)
	}
	srv = serve.New(r, g.mgr, so)

	// Work stops on a signal; the server itself keeps running until the
	// runs in flight are done or the grace period ends.
	serveCtx, stop := context.WithCancel(context.WithoutCancel(e.ctx))
	defer stop()
	srv.Start(serveCtx)
	go func() {
		select {
		case <-e.ctx.Done():
		case <-serveCtx.Done():
			return // the client went away; nothing to drain
		}
		srv.StopAccepting() // before the message: a call sent after it is refused
		g.log.Info("shutting down: finishing runs in flight", "grace", grace)
		dctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		if err := srv.Drain(dctx); err != nil {
			g.log.Warn("grace period over; cancelling runs still in flight")
			srv.CancelRuns()
			// Their CANCELLED responses still reach the client. Cancelled
			// runs end at once (a handler that ignores its context is let
			// go by the sandbox); the bound is only against a client that
			// stopped reading, so it is generous: a loaded machine can take
			// seconds to write a reply.
			cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			srv.Drain(cctx)
			cancel()
		}
		stop()
	}()

	if httpAddr == "" {
		g.log.Info("serving MCP over stdio", "surfaces", g.cfg.Serve.Surfaces, "servers", len(g.cfg.Servers))
		if err := srv.ServeStdio(serveCtx); err != nil && !errors.Is(err, context.Canceled) {
			g.log.Error("stdio session ended", "err", err)
		}
		return ExitOK
	}
	return e.serveHTTP(serveCtx, srv, g, ln, serve.HTTPOptions{AuthToken: token, AllowedOrigins: origins, Stateless: stateless, SessionTimeout: sessionTimeout})
}

func (e *env) serveHTTP(ctx context.Context, srv *serve.Server, g *gateway, ln net.Listener, o serve.HTTPOptions) int {
	hs := &http.Server{Handler: srv.Handler(o)}
	ln = serve.ConfigureHTTPServer(hs, ln)
	g.log.Info("serving MCP over Streamable HTTP", "url", "http://"+ln.Addr().String()+"/mcp", "step", "http://"+ln.Addr().String()+serve.StepPath, "stateless", o.Stateless,
		"auth", o.AuthToken != "", "surfaces", g.cfg.Serve.Surfaces, "servers", len(g.cfg.Servers))
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		fmt.Fprintln(e.stderr, "codemode:", err)
		return ExitFailed
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	hs.Shutdown(sctx)
	return ExitOK
}
