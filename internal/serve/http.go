package serve

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/config"
)

// HTTPOptions configure the Streamable HTTP endpoint.
type HTTPOptions struct {
	// AuthToken, if set, is required as "Authorization: Bearer <token>" on
	// every request. It must be set to listen on a non-loopback address.
	AuthToken string
	// AllowedOrigins are browser origins (scheme://host[:port]) accepted
	// besides localhost ones. Requests with another Origin are refused, which
	// defeats DNS rebinding.
	AllowedOrigins []string
	// Stateless serves every request with a temporary session, so that
	// replicas behind a load balancer need no session affinity.
	Stateless bool
	// SessionTimeout closes a session that has had no request for that
	// long (a request in progress, such as a long run, keeps it open), and
	// with it everything it holds: the SDK's goroutines and buffers and
	// codemode's own per-session state. A client that comes back later
	// gets 404 and starts a new session, as the protocol says. Zero keeps
	// sessions until the client deletes them. Default (in the serve
	// command): DefaultSessionTimeout.
	SessionTimeout time.Duration
	// MaxSessions bounds the sessions live at once: a new one closes the
	// one idle the longest (see httpbounds.go). Zero means
	// DefaultMaxSessions.
	MaxSessions int
}

// MaxRequestBodyBytes bounds the body of every HTTP request: /mcp's (the
// SDK's default) and /v1/code/step's.
const MaxRequestBodyBytes = mcp.DefaultMaxRequestBodyBytes

// StepPath is where Options.CodeStep is served.
const StepPath = "/v1/code/step"

// DefaultSessionTimeout is how long `codemode serve --http` keeps a session
// that receives no request: clients that go away without DELETE (most of
// them, on a crash or a closed laptop) would otherwise keep theirs forever.
const DefaultSessionTimeout = 5 * time.Minute

// ErrTokenRequired is returned by CheckListen for a non-loopback address
// without a token.
var ErrTokenRequired = errors.New("refusing to listen on a non-loopback address without an auth token")

// CheckListen refuses to expose the gateway beyond this machine without a
// token: anyone who reaches it can run code against every upstream with the
// gateway's credentials.
func CheckListen(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--http %q: %v (use host:port, e.g. 127.0.0.1:8808)", addr, err)
	}
	if isLoopback(host) || token != "" {
		return nil
	}
	return fmt.Errorf("%w: %q is reachable from other machines; set --auth-token (or CODEMODE_AUTH_TOKEN), or listen on 127.0.0.1", ErrTokenRequired, addr)
}

// CheckOrigin refuses an HTTPOptions.AllowedOrigins entry that no browser
// Origin could ever match: an Origin is scheme://host[:port] and nothing
// else, so "*", a wildcard host or a path would be accepted and never
// match. A trailing slash is tolerated, as the check does.
func CheckOrigin(o string) error {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Contains(u.Host, "*") ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("--allowed-origin %q: an Origin is scheme://host[:port], e.g. https://app.example.com (no wildcard or path)", o)
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Handler serves MCP over Streamable HTTP at /mcp, and Options.CodeStep at
// /v1/code/step.
func (s *Server) Handler(o HTTPOptions) http.Handler {
	s.stateless.Store(o.Stateless)
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	s.maxSessions.Store(int64(o.MaxSessions))
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp },
		&mcp.StreamableHTTPOptions{Stateless: o.Stateless, SessionTimeout: o.SessionTimeout, Logger: slog.New(minLevel{s.log.Handler(), slog.LevelWarn}), MaxRequestBodyBytes: MaxRequestBodyBytes,
			// The SDK refuses a foreign Host on a loopback listener, against
			// DNS rebinding; that also refuses a reverse proxy on the same
			// machine that keeps its own Host. With a token the check is
			// not needed: a rebinding page cannot send the token.
			DisableLocalhostProtection: o.AuthToken != ""})
	mux := http.NewServeMux()
	mux.Handle("/mcp", guard(o, s.cfg.Clients, taskBodies(h)))
	if s.opts.CodeStep != nil {
		mux.Handle(StepPath, guard(o, s.cfg.Clients, http.MaxBytesHandler(s.opts.CodeStep, MaxRequestBodyBytes)))
	}
	open := o
	open.AuthToken = "" // the origin check only
	mux.Handle("GET /healthz", guard(open, nil, http.HandlerFunc(s.healthz)))
	mux.Handle("GET /readyz", guard(open, nil, http.HandlerFunc(s.readyz)))
	if s.opts.Metrics != nil {
		mux.Handle("GET /metrics", guard(open, nil, s.opts.Metrics))
	}
	if s.opts.UI != nil {
		mux.Handle("/ui", guard(open, nil, s.opts.UI))
		mux.Handle("/ui/", guard(open, nil, s.opts.UI))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "codemode serves MCP at /mcp", http.StatusNotFound)
	})
	return limitBodies(&bodyBudget{limit: MaxBodyBytesInFlight}, mux)
}

// guard checks the Origin (against DNS rebinding) and the bearer token:
// --auth-token (the client "default") or a token of codemode.clients. A
// request that passes carries its client's name as the SDK's
// auth.TokenInfo.UserID, which the SDK uses to keep a session to the
// client that opened it, and the built-ins to choose the namespace (see
// Server.caller).
func guard(o HTTPOptions, clients []config.Client, next http.Handler) http.Handler {
	allowed := map[string]bool{}
	for _, a := range o.AllowedOrigins {
		allowed[strings.TrimRight(strings.ToLower(a), "/")] = true
	}
	type named struct{ token, name string }
	var tokens []named
	if o.AuthToken != "" {
		tokens = append(tokens, named{o.AuthToken, config.DefaultClient})
	}
	for _, c := range clients {
		if c.Token != "" {
			tokens = append(tokens, named{c.Token, c.Name})
		}
	}
	// who returns the client a token belongs to, comparing with every
	// token in constant time.
	who := func(got string) (string, bool) {
		name, ok := "", false
		for _, t := range tokens {
			if subtle.ConstantTimeCompare([]byte(got), []byte(t.token)) == 1 {
				name, ok = t.name, true
			}
		}
		return name, ok
	}
	identified := auth.RequireBearerToken(func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		if name, ok := who(token); ok {
			return &auth.TokenInfo{UserID: name}, nil
		}
		return nil, auth.ErrInvalidToken
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && !originAllowed(origin, allowed) {
			http.Error(w, "forbidden: Origin "+origin+" is not allowed (start codemode with --allowed-origin to accept it)", http.StatusForbidden)
			return
		}
		if len(tokens) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		// The scheme is case-insensitive (RFC 9110 §11.1).
		scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if ok {
			_, known := who(got)
			ok = strings.EqualFold(scheme, "Bearer") && known
		}
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="codemode"`)
			http.Error(w, "unauthorized: send Authorization: Bearer <token>", http.StatusUnauthorized)
			return
		}
		identified.ServeHTTP(w, r)
	})
}

func originAllowed(origin string, allowed map[string]bool) bool {
	if allowed[strings.TrimRight(strings.ToLower(origin), "/")] {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	return isLoopback(u.Hostname())
}
