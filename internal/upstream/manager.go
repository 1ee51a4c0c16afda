package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codemode-mcp/codemode/internal/buildinfo"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/redact"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configures a Manager. The zero value is usable; New copies it and
// fills in defaults.
type Options struct {
	// Logger receives the servers' stderr (one record per line, level Info,
	// attribute "server") and this package's own events. Default:
	// slog.Default(). It must not write to stdout, which belongs to MCP when
	// the gateway is served over stdio.
	Logger *slog.Logger
	// ClientName and ClientVersion are the clientInfo sent in initialize.
	// Default "codemode" and buildinfo.Version().
	ClientName, ClientVersion string
	// CallTimeout bounds each request of a server whose config sets no
	// timeoutMs. Default config.DefaultCallTimeout.
	CallTimeout time.Duration
	// ConnectTimeout bounds starting a server and its initialize handshake.
	// Default 30s.
	ConnectTimeout time.Duration
	// OnToolsChanged is called, on its own goroutine, when a server's tool
	// list changed or may have changed: on notifications/tools/list_changed,
	// and when a refetch (after a restart) finds a different list. The next
	// Snapshot of that server has a higher Generation (unless the list turns
	// out to be unchanged). The serving layer uses it to notify its own
	// clients.
	OnToolsChanged func(serverID string)
	// Dial, if set, makes the transport of every connection attempt (each
	// restart dials again). Returning (nil, nil) falls back to the normal
	// transport for that server. Use it to put in-process go-sdk servers
	// behind a Manager, see [DialInMemory]. Servers with Unresolved
	// variables are refused before Dial is called.
	Dial DialFunc
	// BackoffInitial and BackoffMax shape restarts: after a server fails to
	// start or dies, uses fail fast for BackoffInitial, doubling with each
	// consecutive failure up to BackoffMax. Defaults 250ms and 30s.
	BackoffInitial, BackoffMax time.Duration
	// Now is the clock of backoffs (until when a failed server fails fast,
	// Status.RetryAt) and of how long a session lived (which resets the
	// backoff). Default time.Now; tests inject a clock they advance.
	Now func() time.Time
	// TerminateTimeout is how long closing a stdio server waits after
	// closing its stdin before SIGTERM, and again before SIGKILL. Default 2s.
	TerminateTimeout time.Duration
	// ProtocolVersion is the MCP version offered first. Default: the SDK's
	// latest, which probes with server/discover and falls back to
	// initialize for servers that do not know it. Setting an older version
	// (such as "2025-11-25") skips the probe.
	ProtocolVersion string
}

// Manager owns the connections to the configured upstream servers. It is
// safe for concurrent use. Nothing connects until a method needs a server;
// then only that server is started, and concurrent callers share the
// attempt. A server that fails is reported by error and the others keep
// working.
type Manager struct {
	opts     Options
	log      *slog.Logger
	servers  []*serverConn // config order
	byID     map[string]*serverConn
	httpBase http.RoundTripper // shared by remote servers, for connection reuse
	// redact removes every server's secrets from what the servers send
	// (redact.go); nil when there are none.
	redact *redact.Redactor
	// progress routes the upstreams' progress notifications to the calls
	// that asked for them (progress.go).
	progress progressTokens

	// base is the parent of all connection attempts and shared fetches, and
	// cancels every call when the Manager closes.
	base   context.Context
	cancel context.CancelFunc

	// closed is set once, under mu, so that goBackground (which checks it
	// under mu) never calls wg.Go after Close started waiting. Readers on
	// the hot path load it without the lock.
	mu     sync.Mutex
	closed atomic.Bool
	wg     sync.WaitGroup
}

// New returns a Manager for servers (normally config.Config.Servers). It
// starts nothing. A server id that appears twice keeps its first entry.
func New(servers []config.Server, opts *Options) *Manager {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ClientName == "" {
		o.ClientName = "codemode"
	}
	if o.ClientVersion == "" {
		o.ClientVersion = buildinfo.Version()
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = config.DefaultCallTimeout
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 30 * time.Second
	}
	if o.BackoffInitial <= 0 {
		o.BackoffInitial = 250 * time.Millisecond
	}
	if o.BackoffMax <= 0 {
		o.BackoffMax = 30 * time.Second
	}
	o.BackoffMax = max(o.BackoffMax, o.BackoffInitial)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.TerminateTimeout <= 0 {
		o.TerminateTimeout = 2 * time.Second
	}
	m := &Manager{
		opts:     o,
		log:      o.Logger,
		byID:     make(map[string]*serverConn, len(servers)),
		httpBase: http.DefaultTransport,
	}
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		m.httpBase = t.Clone() // our own pool, closed by Close
	}
	m.base, m.cancel = context.WithCancel(context.Background())
	secrets := environSecrets(os.Environ())
	for _, s := range servers {
		secrets = append(secrets, s.Secrets...)
	}
	m.redact = redact.New(secrets)
	for _, s := range servers {
		if _, dup := m.byID[s.ID]; dup {
			m.log.Warn("duplicate upstream server id; keeping the first", slog.String("server", s.ID))
			continue
		}
		// The config is the caller's.
		s.Args = slices.Clone(s.Args)
		s.Env, s.Headers = maps.Clone(s.Env), maps.Clone(s.Headers)
		s.Unresolved = slices.Clone(s.Unresolved)
		c := newServerConn(m, s)
		m.servers = append(m.servers, c)
		m.byID[s.ID] = c
	}
	return m
}

// Servers returns the configured servers in order. They share maps with the
// Manager: do not modify them.
func (m *Manager) Servers() []config.Server {
	out := make([]config.Server, len(m.servers))
	for i, c := range m.servers {
		out[i] = c.cfg
	}
	return out
}

func (m *Manager) server(id string) (*serverConn, error) {
	if c, ok := m.byID[id]; ok {
		return c, nil
	}
	ids := make([]string, len(m.servers))
	for i, c := range m.servers {
		ids[i] = c.cfg.ID
	}
	return nil, unknownServerErr(id, ids)
}

// Snapshot returns the server's current snapshot, connecting it if needed
// and refetching the tool list if it changed since the last snapshot.
func (m *Manager) Snapshot(ctx context.Context, id string) (*Snapshot, error) {
	c, err := m.server(id)
	if err != nil {
		return nil, err
	}
	return c.snapshot(ctx)
}

// SnapshotAll takes a snapshot of every server in parallel. Every server id
// is in exactly one of the two maps.
func (m *Manager) SnapshotAll(ctx context.Context) (map[string]*Snapshot, map[string]error) {
	type result struct {
		id   string
		snap *Snapshot
		err  error
	}
	results := make(chan result, len(m.servers))
	for _, c := range m.servers {
		go func() {
			snap, err := c.snapshot(ctx)
			results <- result{c.cfg.ID, snap, err}
		}()
	}
	snaps, errs := map[string]*Snapshot{}, map[string]error{}
	for range m.servers {
		r := <-results
		if r.err != nil {
			errs[r.id] = r.err
		} else {
			snaps[r.id] = r.snap
		}
	}
	return snaps, errs
}

// CallTool calls a tool. args may be nil, a json.RawMessage or []byte
// holding a JSON object, or any value that marshals to one. A result with
// IsError set is a successful call (the tool failed, not the transport);
// errors are *Error values.
func (m *Manager) CallTool(ctx context.Context, id, tool string, args any) (*mcp.CallToolResult, error) {
	c, err := m.server(id)
	if err != nil {
		return nil, err
	}
	op := "tools/call " + tool
	if !c.cfg.ToolAllowed(tool) {
		// The catalog never offers such a tool (that is where the policy
		// takes effect); this is the last line, for any caller that names
		// one anyway: a denied tool's call never leaves the gateway.
		return nil, &Error{ServerID: id, Kind: Rejected, Op: op, Err: ErrDeniedTool,
			Hint: "the gateway's configuration denies this tool (allowTools/denyTools)"}
	}
	args, err = normalizeArgs(args)
	if err != nil {
		return nil, &Error{ServerID: id, Kind: Rejected, Op: op, Err: err, Hint: "pass the tool's input as a JSON object"}
	}
	// The trace context (CallMeta), copied: the progress token and the
	// capabilities of this call are added to it.
	params := &mcp.CallToolParams{Meta: maps.Clone(CallMeta(ctx)), Name: tool, Arguments: args}
	defer m.withProgressToken(ctx, params)()
	defer c.track(ctx)() // for the server's own requests (forward.go)
	var res *mcp.CallToolResult
	var created *task
	outer := ctx
	err = c.do(ctx, op, func(ctx context.Context, s *session) (err error) {
		res, created, err = c.startCall(ctx, outer, s, params)
		return err
	})
	if err == nil && created != nil {
		// The server runs the call as a task (tasks.go): wait for it
		// within the caller's time, not the call timeout.
		res, err = c.awaitTask(ctx, tool, created)
	}
	return redactResult(m, res, err)
}

type callMetaKey struct{}

// WithCallMeta returns a ctx whose tool calls carry meta in their request's
// params._meta, merged over what an outer WithCallMeta put there. A tracer
// passes the W3C trace context on to the upstream this way (traceparent,
// tracestate, baggage: MCP's convention, SEP-414).
func WithCallMeta(ctx context.Context, meta map[string]any) context.Context {
	if prev := CallMeta(ctx); len(prev) > 0 {
		merged := maps.Clone(prev)
		maps.Copy(merged, meta)
		meta = merged
	}
	return context.WithValue(ctx, callMetaKey{}, mcp.Meta(meta))
}

// CallMeta returns the _meta WithCallMeta put in ctx, nil if none.
func CallMeta(ctx context.Context) mcp.Meta {
	m, _ := ctx.Value(callMetaKey{}).(mcp.Meta)
	return m
}

// normalizeArgs checks raw JSON arguments before they reach the SDK, which
// would otherwise fail to marshal them with a less helpful message.
func normalizeArgs(args any) (any, error) {
	var raw []byte
	switch a := args.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		raw = a
	case []byte:
		raw = a
	default:
		return args, nil
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return nil, nil
	}
	if trimmed[0] != '{' || !json.Valid(trimmed) {
		return nil, fmt.Errorf("%w, got %.40q", ErrInvalidArguments, trimmed)
	}
	return json.RawMessage(trimmed), nil
}

// ListResources returns every page of resources/list, or nothing for a
// server that does not offer resources.
func (m *Manager) ListResources(ctx context.Context, id string) ([]*mcp.Resource, error) {
	return list(ctx, m, id, "resources", "resources/list", func(ctx context.Context, cs *mcp.ClientSession, cursor string) ([]*mcp.Resource, string, error) {
		res, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return res.Resources, res.NextCursor, nil
	})
}

// ListResourceTemplates returns every page of resources/templates/list, or
// nothing for a server that does not offer resources.
func (m *Manager) ListResourceTemplates(ctx context.Context, id string) ([]*mcp.ResourceTemplate, error) {
	return list(ctx, m, id, "resources", "resources/templates/list", func(ctx context.Context, cs *mcp.ClientSession, cursor string) ([]*mcp.ResourceTemplate, string, error) {
		res, err := cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return res.ResourceTemplates, res.NextCursor, nil
	})
}

// ListPrompts returns every page of prompts/list, or nothing for a server
// that does not offer prompts.
func (m *Manager) ListPrompts(ctx context.Context, id string) ([]*mcp.Prompt, error) {
	return list(ctx, m, id, "prompts", "prompts/list", func(ctx context.Context, cs *mcp.ClientSession, cursor string) ([]*mcp.Prompt, string, error) {
		res, err := cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return res.Prompts, res.NextCursor, nil
	})
}

func list[T any](ctx context.Context, m *Manager, id, capability, op string, page func(context.Context, *mcp.ClientSession, string) ([]T, string, error)) ([]T, error) {
	c, err := m.server(id)
	if err != nil {
		return nil, err
	}
	var out []T
	err = c.do(ctx, op, func(ctx context.Context, s *session) (err error) {
		if !declares(s, capability) {
			return nil
		}
		out, err = listAll(ctx, func(ctx context.Context, cursor string) ([]T, string, error) {
			return page(ctx, s.cs, cursor)
		})
		return err
	})
	return redactOut(m, out, err)
}

// ReadResource reads one resource.
func (m *Manager) ReadResource(ctx context.Context, id, uri string) (*mcp.ReadResourceResult, error) {
	c, err := m.server(id)
	if err != nil {
		return nil, err
	}
	var res *mcp.ReadResourceResult
	err = c.do(ctx, "resources/read "+uri, func(ctx context.Context, s *session) (err error) {
		if !declares(s, "resources") {
			return ErrNotSupported
		}
		res, err = s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		return err
	})
	res, err = redactOut(m, res, err)
	if res != nil && !m.redact.Empty() {
		for _, c := range res.Contents {
			if c != nil {
				c.Blob = m.redact.Bytes(c.Blob)
			}
		}
	}
	return res, err
}

// GetPrompt gets one prompt with its arguments.
func (m *Manager) GetPrompt(ctx context.Context, id, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	c, err := m.server(id)
	if err != nil {
		return nil, err
	}
	var res *mcp.GetPromptResult
	err = c.do(ctx, "prompts/get "+name, func(ctx context.Context, s *session) (err error) {
		if !declares(s, "prompts") {
			return ErrNotSupported
		}
		res, err = s.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
		return err
	})
	res, err = redactOut(m, res, err)
	if res != nil && !m.redact.Empty() {
		for _, msg := range res.Messages {
			if msg != nil {
				redactBinary(m.redact, msg.Content)
			}
		}
	}
	return res, err
}

// Close closes every session (stdio children get their stdin closed, then
// SIGTERM, then SIGKILL, see Options.TerminateTimeout), cancels calls in
// flight, and waits for this package's goroutines. Later uses fail with
// ErrClosed. Close is idempotent.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed.Load() {
		m.mu.Unlock()
		return nil
	}
	m.closed.Store(true)
	m.mu.Unlock()
	m.cancel()
	var wg sync.WaitGroup
	for _, c := range m.servers {
		c.mu.Lock()
		s := c.sess
		c.sess = nil
		c.mu.Unlock()
		if s != nil {
			wg.Go(s.close)
		}
	}
	wg.Wait()
	m.wg.Wait()
	if t, ok := m.httpBase.(interface{ CloseIdleConnections() }); ok {
		t.CloseIdleConnections()
	}
	return nil
}

func (m *Manager) isClosed() bool { return m.closed.Load() }

// goBackground runs f on a goroutine that Close waits for, unless the
// Manager is closed.
func (m *Manager) goBackground(f func()) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed.Load() {
		return false
	}
	m.wg.Go(f)
	return true
}

func (m *Manager) notifyToolsChanged(id string) {
	if f := m.opts.OnToolsChanged; f != nil && !m.isClosed() {
		// Not tracked by wg: Close must not depend on a callback returning.
		go f(id)
	}
}
