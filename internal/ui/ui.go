// Package ui is the inspector: web pages that show what the gateway's runs
// did, served at /ui by `codemode serve --http` (behind the same token as
// /mcp) and by `codemode ui` over a local store with no gateway running.
//
// Start with [New], which returns the http.Handler of every page under
// Options.Prefix:
//
//	/ui/                      the runs, newest first, with filters (surface, outcome, server, time range) and pages
//	/ui/runs/{id}             one run: its code with each diagnostic at its line, logs, result, and a waterfall of its tool calls
//	/ui/servers               the upstream servers: status, tools, last error, declared capabilities
//	/ui/scripts               the saved scripts; /ui/scripts/{name} their versions and code
//	/ui/events                new runs as server-sent events (the run list adds them live)
//	/ui/static/               the page's CSS and JavaScript, embedded
//
// The pages are rendered on the server with html/template, from embedded
// templates and assets: no build step, nothing fetched from elsewhere. They
// work with JavaScript off, but for live updates. With a token
// (Options.Auth), the page asks for it once and keeps it in the tab's
// session storage, sending it as a bearer token with each request it makes
// (without JavaScript, the form sets a session cookie for /ui instead).
package ui

import (
	"context"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/codemode-mcp/codemode/internal/scripts"
	"github.com/codemode-mcp/codemode/internal/store"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Server is what the servers page shows of one upstream server.
type Server struct {
	ID, Name string
	// State is the connection state ("connected", "backoff", ...), or
	// "unknown" when no gateway runs in this process.
	State     string
	Tools     int
	LastError string
	// Capabilities the server declared: "tools", "resources", "prompts",
	// "logging", "completions", with list_changed/subscribe noted.
	Capabilities []string
}

// Options configure the pages. History is required.
type Options struct {
	// Prefix is where the pages are served. Default "/ui".
	Prefix string
	// History and Scripts are read; Scripts may be nil.
	History store.History
	Scripts *scripts.Scripts
	// Servers lists the upstream servers; nil shows the configured ones
	// as unknown (see Configured).
	Servers func(ctx context.Context) []Server
	// Configured names the configured servers, for the server filter and,
	// without Servers, the servers page.
	Configured []Server
	// Surfaces are the surface names the filter offers.
	Surfaces []string
	// Auth checks a bearer token: nil serves without one. It returns the
	// client the token belongs to and whether it is valid.
	Auth func(token string) bool
	// Wake, if set, signals that runs were written (history.Recorder's
	// Subscribe); live updates then come at once instead of at the next
	// poll.
	Wake func() (<-chan struct{}, func())
	// PollEvery is how often live updates look for new runs (other
	// processes write them too). Default 1s.
	PollEvery time.Duration
	// Standalone says no gateway runs in this process (codemode ui).
	Standalone bool
	Logger     *slog.Logger
}

// UI serves the pages.
type UI struct {
	opts Options
	tpl  map[string]*template.Template
	mux  *http.ServeMux
	log  *slog.Logger
}

// New returns the pages' handler.
func New(opts *Options) *UI {
	u := &UI{opts: *opts}
	if u.opts.Prefix == "" {
		u.opts.Prefix = "/ui"
	}
	u.opts.Prefix = strings.TrimRight(u.opts.Prefix, "/")
	if u.opts.PollEvery <= 0 {
		u.opts.PollEvery = time.Second
	}
	if u.opts.Logger == nil {
		u.opts.Logger = slog.New(slog.DiscardHandler)
	}
	u.log = u.opts.Logger
	u.tpl = parseTemplates(u.opts.Prefix)
	p := u.opts.Prefix
	mux := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET "+p+"/static/", http.StripPrefix(p+"/static/", staticHandler(http.FileServerFS(static))))
	mux.HandleFunc("GET "+p+"/{$}", u.runs)
	mux.HandleFunc("GET "+p+"/runs/{id}", u.run)
	mux.HandleFunc("GET "+p+"/servers", u.servers)
	mux.HandleFunc("GET "+p+"/scripts", u.scriptList)
	mux.HandleFunc("GET "+p+"/scripts/{name}", u.script)
	mux.HandleFunc("GET "+p+"/events", u.events)
	mux.HandleFunc("POST "+p+"/login", u.login)
	mux.HandleFunc("GET "+p, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, p+"/", http.StatusFound) })
	u.mux = mux
	return u
}

// staticHandler serves the embedded assets with a cache lifetime: they
// change only with the binary.
func staticHandler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		h.ServeHTTP(w, r)
	})
}

// cookieName holds the token of a browser without JavaScript.
const cookieName = "codemode_ui_token"

func (u *UI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// The pages load nothing from elsewhere, and no one frames them.
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	// same-origin, not no-referrer: with no-referrer a browser sends "Origin: null"
	// with the login form, which the origin check refuses.
	h.Set("Referrer-Policy", "same-origin")
	if u.opts.Auth != nil && !u.authorized(r) && !u.public(r) {
		u.askToken(w, r)
		return
	}
	u.mux.ServeHTTP(w, r)
}

// public: the assets and the login form need no token.
func (u *UI) public(r *http.Request) bool {
	p := r.URL.Path
	return strings.HasPrefix(p, u.opts.Prefix+"/static/") || (r.Method == http.MethodPost && p == u.opts.Prefix+"/login")
}

func (u *UI) authorized(r *http.Request) bool {
	if scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") && u.opts.Auth(tok) {
		return true
	}
	if c, err := r.Cookie(cookieName); err == nil && u.opts.Auth(c.Value) {
		return true
	}
	return false
}

// askToken answers a request without a valid token: 401 with the page
// that asks for it (its script retries with the token the tab kept).
func (u *UI) askToken(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="codemode"`)
	if r.URL.Path == u.opts.Prefix+"/events" || r.Header.Get("Authorization") != "" && r.Header.Get("X-Codemode-UI") != "" {
		http.Error(w, "unauthorized: send Authorization: Bearer <token>", http.StatusUnauthorized)
		return
	}
	u.render(w, r, http.StatusUnauthorized, "login", &page{Title: "Sign in", Next: r.URL.RequestURI(),
		Failed: r.Header.Get("Authorization") != ""})
}

// login takes the token from the form of a browser without JavaScript and
// keeps it in a session cookie for /ui.
func (u *UI) login(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	next := r.PostForm.Get("next")
	if !strings.HasPrefix(next, u.opts.Prefix+"/") || strings.HasPrefix(next, "//") {
		next = u.opts.Prefix + "/"
	}
	tok := r.PostForm.Get("token")
	if u.opts.Auth == nil || !u.opts.Auth(tok) {
		u.render(w, r, http.StatusUnauthorized, "login", &page{Title: "Sign in", Next: next, Failed: true})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: tok, Path: u.opts.Prefix, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// TokenChecker returns an Auth that accepts any of tokens (compared in
// constant time); empty tokens are ignored. nil when there are none.
func TokenChecker(tokens ...string) func(string) bool {
	var ts [][]byte
	for _, t := range tokens {
		if t != "" {
			ts = append(ts, []byte(t))
		}
	}
	if len(ts) == 0 {
		return nil
	}
	return func(got string) bool {
		ok := false
		for _, t := range ts {
			if subtle.ConstantTimeCompare([]byte(got), t) == 1 {
				ok = true
			}
		}
		return ok
	}
}

// page is what every template gets.
type page struct {
	Title  string
	Prefix string
	Nav    string // the section: runs, servers, scripts
	// Auth: the page was served behind a token (its script sends it).
	Auth       bool
	Standalone bool
	Error      string
	// login
	Next   string
	Failed bool
	// the pages' own data
	Data any
}

func (u *UI) render(w http.ResponseWriter, r *http.Request, status int, name string, p *page) {
	p.Prefix, p.Auth, p.Standalone = u.opts.Prefix, u.opts.Auth != nil, u.opts.Standalone
	t := u.tpl[name]
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, "layout", p); err != nil {
		u.log.Error("ui: rendering a page", "page", name, "err", err)
		http.Error(w, "the page could not be rendered: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	fmt.Fprint(w, b.String())
}

// fail renders the error page: not found, or the store's fault with its
// fix.
func (u *UI) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusInternalServerError
	var nf *store.NotFoundError
	var amb *store.AmbiguousError
	switch {
	case errors.As(err, &nf), errors.As(err, &amb):
		status = http.StatusNotFound
	case errors.Is(err, context.Canceled):
		return
	}
	u.render(w, r, status, "error", &page{Title: "Error", Error: err.Error()})
}
