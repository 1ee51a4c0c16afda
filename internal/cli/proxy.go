package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/proxy"
	"github.com/codemode-mcp/codemode/internal/replay"
	"github.com/codemode-mcp/codemode/internal/serve"
)

func (e *env) proxy(args []string) int {
	fs := newFlagSet("proxy", e.stderr, "proxy --upstream URL [--model M] [--listen ADDR] [--auth-token T]")
	var c common
	c.register(fs, "info")
	var upstream, model, listen, token, keyEnv string
	fs.StringVar(&upstream, "upstream", "", "base URL of the OpenAI-compatible API to forward to, e.g. https://api.openai.com/v1 (required)")
	fs.StringVar(&model, "model", "", "model to use upstream, whatever the client asks for")
	fs.StringVar(&listen, "listen", "127.0.0.1:8810", "address to serve POST /v1/chat/completions on")
	fs.StringVar(&token, "auth-token", os.Getenv(config.AuthTokenEnv), "bearer token required from clients (default $CODEMODE_AUTH_TOKEN); mandatory off loopback")
	fs.StringVar(&keyEnv, "upstream-key-env", "OPENAI_API_KEY", "environment variable holding the upstream API key; when unset, the client's Authorization header is forwarded (if there is no --auth-token)")
	pos, err := parse(fs, args)
	if err != nil {
		return e.usageErr(err)
	}
	if len(pos) > 0 {
		return e.usageErr(fmt.Errorf("proxy takes no arguments, got %q", pos))
	}
	if upstream == "" {
		fs.Usage()
		return e.usageErr(errors.New("proxy needs --upstream URL, the OpenAI-compatible API to forward to (e.g. https://api.openai.com/v1)"))
	}
	if err := serve.CheckListen(listen, token); err != nil {
		return e.usageErr(errors.New(replaceFlag(err.Error())))
	}
	log, err := c.logger(e.stderr)
	if err != nil {
		return e.usageErr(err)
	}
	cfg, err := config.Load(c.config)
	if err != nil {
		fmt.Fprintln(e.stderr, "codemode: configuration error:", err)
		return ExitUsage
	}
	p, err := proxy.New(&proxy.Options{Upstream: upstream, Model: model, APIKey: os.Getenv(keyEnv), AuthToken: token,
		Stepper: replay.New(&replay.Options{Config: cfg, Logger: log, Admission: admission(cfg)}), Logger: log})
	if err != nil {
		return e.usageErr(err)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		fmt.Fprintf(e.stderr, "codemode: cannot listen on --listen %s: %v\n", listen, err)
		return ExitUsage
	}
	defer ln.Close()
	hs := &http.Server{Handler: serve.BoundBodies(p.Handler())}
	bounded := serve.ConfigureHTTPServer(hs, ln)
	log.Info("serving the completion-API proxy", "url", "http://"+ln.Addr().String()+"/v1/chat/completions", "upstream", upstream,
		"model", model, "auth", token != "")
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(bounded) }()
	select {
	case err := <-errc:
		fmt.Fprintln(e.stderr, "codemode:", err)
		return ExitFailed
	case <-e.ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hs.Shutdown(sctx)
	return ExitOK
}

// replaceFlag makes serve.CheckListen's message name this command's flag.
func replaceFlag(msg string) string { return strings.ReplaceAll(msg, "--http", "--listen") }
