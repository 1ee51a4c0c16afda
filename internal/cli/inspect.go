package cli

import (
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/scripts"
	"github.com/codemode-mcp/codemode/internal/serve"
	"github.com/codemode-mcp/codemode/internal/ui"
)

// ui serves the inspector over a local store, with no gateway running:
// `codemode ui [--data-dir D] [--addr 127.0.0.1:8809]`. It listens on
// loopback only: it has no token.
func (e *env) ui(args []string) int {
	fs := newFlagSet("ui", e.stderr, "ui [--data-dir D] [--addr 127.0.0.1:PORT] [--config FILE]")
	var c common
	c.register(fs, "info")
	var addr string
	fs.StringVar(&addr, "addr", "127.0.0.1:8809", "where to serve the pages (a loopback address)")
	pos, err := parse(fs, args)
	if err != nil {
		return e.usageErr(err)
	}
	if len(pos) > 0 {
		return e.usageErr(fmt.Errorf("ui takes no arguments, got %q", pos))
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return e.usageErr(fmt.Errorf("--addr %q: %v (use host:port, e.g. 127.0.0.1:8809)", addr, err))
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return e.usageErr(fmt.Errorf("--addr %q: codemode ui serves loopback only (it asks for no token); to see the pages from elsewhere, serve them with codemode serve --http --auth-token", addr))
	}
	log, err := c.logger(e.stderr)
	if err != nil {
		return e.usageErr(err)
	}
	// The configuration, if there is one, names the servers and surfaces
	// for the filters; the pages work without it.
	cfg, err := config.Load(c.config)
	if err != nil {
		log.Warn("configuration not loaded; the filters offer no servers", "err", err)
		cfg = config.Default()
	}
	st, err := e.openStore(c)
	if err != nil {
		return e.usageErr(err)
	}
	defer st.Close()
	if err := st.Ready(e.ctx); err != nil {
		fmt.Fprintln(e.stderr, "codemode:", err)
		return ExitUsage
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(e.stderr, "codemode: cannot listen on --addr %s: %v\n", addr, err)
		return ExitUsage
	}
	defer ln.Close()
	pages := ui.New(&ui.Options{History: st.History(), Scripts: scripts.New(st), Configured: configured(cfg), Surfaces: cfg.Serve.Surfaces,
		Standalone: true, Logger: log})
	mux := http.NewServeMux()
	mux.Handle("/ui", pages)
	mux.Handle("/ui/", pages)
	mux.Handle("/{$}", http.RedirectHandler("/ui/", http.StatusFound))
	hs := &http.Server{Handler: serve.BoundBodies(mux)}
	ln = serve.ConfigureHTTPServer(hs, ln)
	log.Info("serving the inspector", "url", "http://"+ln.Addr().String()+"/ui/", "store", st.Where())
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(e.stderr, "codemode:", err)
			return ExitFailed
		}
	case <-e.ctx.Done():
	}
	hs.Close()
	return ExitOK
}
