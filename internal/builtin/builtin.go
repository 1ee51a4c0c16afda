// Package builtin runs MCP servers inside the gateway: Thoughtbox's tb SDK
// (package builtin/thoughtbox) and a state store (builtin/state), both on
// the data store (internal/store). They appear in the catalog like any
// upstream (discovery, @codemode/servers/<id>, declarations, globals,
// search) because they are go-sdk servers that the upstream manager
// reaches over an in-memory transport.
//
// Start with [NewSet] over the servers, then [Set.Configure], which adds
// the enabled ones to the configuration (a configured server with the same
// id wins), [Set.Dial] for upstream.Options.Dial and [Set.Caller] around
// the caller given to run.New. The caller is the in-process fast path: a script's
// call of a built-in tool goes straight to its Go handler, without the
// SDK's client and server in between (which cost ~100 µs a call; see
// docs/BENCHMARKS.md), after the run layer has looked the tool up,
// counted it and validated its input like any other.
//
// Who is calling travels in the context ([WithCaller]): the client
// identity, which is the namespace of everything a built-in keeps, and the
// MCP session (or the run) that Thoughtbox's "current session" belongs to.
// A new built-in server is a package of its own that builds a [*Server]
// with [NewServer] and [Server.AddTool].
package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// DefaultClient is the client identity of calls that carry none: stdio,
// `codemode run`, and HTTP with the single --auth-token.
const DefaultClient = "default"

// Caller says who makes a call.
type Caller struct {
	// Client is the namespace of the calling client: the configured
	// client's (codemode.clients: by default its name, which is the name of
	// the token it authenticated with), or DefaultClient. Built-ins keep
	// each namespace's data apart.
	Client string
	// Session is the MCP session, or the run, the call belongs to; ""
	// when the caller did not say (one shared session).
	Session string
}

type callerKey struct{}

// WithCaller returns ctx carrying c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerOf returns the caller ctx carries; Client is DefaultClient when
// none was set.
func CallerOf(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	if c.Client == "" {
		c.Client = DefaultClient
	}
	return c
}

// Handler serves one tool: args is the tool's input, already validated
// against its input schema by the run layer (or by the SDK on the MCP
// path). The result is marshalled as the tool's structuredContent (it must
// encode as a JSON object), or, if it is a Text, returned as one text
// block. An error becomes an isError result carrying its message.
type Handler func(ctx context.Context, c Caller, args json.RawMessage) (any, error)

// Text is a handler result sent as a single text block: scripts receive it
// as a string (codemode-spec §5.3.2).
type Text string

// Server is one built-in MCP server.
type Server struct {
	ID    string
	MCP   *mcp.Server
	tools map[string]Handler
}

// NewServer returns a server named id (its server id in the catalog) with
// the given description as its instructions.
func NewServer(id, version, instructions string) *Server {
	s := &Server{ID: id, tools: map[string]Handler{}}
	s.MCP = mcp.NewServer(&mcp.Implementation{Name: id, Title: "codemode built-in: " + id, Version: version},
		&mcp.ServerOptions{Instructions: instructions, Logger: slog.New(slog.DiscardHandler)})
	return s
}

// AddTool registers a tool, served both over MCP and by the fast path.
func (s *Server) AddTool(t *mcp.Tool, h Handler) {
	s.tools[t.Name] = h
	s.MCP.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// Reached over MCP (not through Set.Caller) the caller is not
		// known: the default client, one session per MCP session.
		c := Caller{Client: DefaultClient}
		if req.Session != nil {
			c.Session = fmt.Sprintf("mcp-%p", req.Session)
		}
		return result(h(ctx, c, req.Params.Arguments))
	})
}

// Call runs tool directly, as the fast path does.
func (s *Server) Call(ctx context.Context, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	h, ok := s.tools[tool]
	if !ok {
		return nil, fmt.Errorf("built-in server %q has no tool %q", s.ID, tool)
	}
	return result(h(ctx, CallerOf(ctx), args))
}

func result(v any, err error) (*mcp.CallToolResult, error) {
	if err != nil {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
	}
	if t, ok := v.(Text); ok {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(t)}}}, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the result could not be encoded: " + err.Error()}}}, nil
	}
	return &mcp.CallToolResult{StructuredContent: json.RawMessage(b), Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
}

// Set is the gateway's built-in servers.
type Set struct {
	servers []*Server
	byID    map[string]*Server
	active  map[string]*Server // after Configure: the enabled ones no config server shadows
}

// NewSet returns the set of servers, in catalog order.
func NewSet(servers ...*Server) *Set {
	s := &Set{servers: servers, byID: map[string]*Server{}, active: map[string]*Server{}}
	for _, srv := range servers {
		s.byID[srv.ID] = srv
	}
	return s
}

// Active lists the ids of the built-ins Configure enabled.
func (s *Set) Active() []string {
	var ids []string
	for _, srv := range s.servers {
		if s.active[srv.ID] != nil {
			ids = append(ids, srv.ID)
		}
	}
	return ids
}

// Server returns the built-in with id, enabled or not.
func (s *Set) Server(id string) *Server { return s.byID[id] }

// Configure adds to cfg.Servers, after the configured ones, each built-in
// that cfg.Builtins enables (all when nil) and that no configured server
// already uses the id of; for those it logs a warning. It returns the ids
// added.
func (s *Set) Configure(cfg *config.Config, log *slog.Logger) []string {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var added []string
	for _, srv := range s.servers {
		if cfg.Builtins != nil && !slices.Contains(cfg.Builtins, srv.ID) {
			continue
		}
		if c, taken := cfg.Server(srv.ID); taken {
			log.Warn("a configured server has the id of a built-in one; the configured server is used and the built-in is off",
				"server", srv.ID, "configKey", "mcpServers."+c.Name, "fix", `rename the configured server, or leave "`+srv.ID+`" out of codemode.builtins to silence this`)
			continue
		}
		// The gateway-wide approval mode covers the built-ins too.
		cfg.Servers = append(cfg.Servers, config.Server{ID: srv.ID, Name: srv.ID, Transport: config.Builtin, Approval: cfg.Approval})
		s.active[srv.ID] = srv
		added = append(added, srv.ID)
	}
	return added
}

// Dial is an upstream.Options.Dial that connects the built-in servers over
// an in-memory transport (each connection a new server session) and leaves
// every other server to the normal transports.
func (s *Set) Dial() upstream.DialFunc {
	return func(ctx context.Context, cs config.Server) (mcp.Transport, error) {
		if cs.Transport != config.Builtin {
			return nil, nil
		}
		srv := s.active[cs.ID]
		if srv == nil {
			return nil, fmt.Errorf("there is no built-in server %q", cs.ID)
		}
		clientT, serverT := upstream.NewMemoryTransports()
		if _, err := srv.MCP.Connect(context.WithoutCancel(ctx), serverT, nil); err != nil {
			return nil, err
		}
		return clientT, nil
	}
}

// ToolCaller is what run.Caller is: *upstream.Manager is one.
type ToolCaller interface {
	CallTool(ctx context.Context, serverID, tool string, args any) (*mcp.CallToolResult, error)
}

// Caller returns a tool caller that answers the active built-ins' tools in
// process and passes every other call to next.
func (s *Set) Caller(next ToolCaller) ToolCaller { return &fastPath{s, next} }

type fastPath struct {
	set  *Set
	next ToolCaller
}

func (f *fastPath) CallTool(ctx context.Context, serverID, tool string, args any) (*mcp.CallToolResult, error) {
	srv := f.set.active[serverID]
	if srv == nil {
		return f.next.CallTool(ctx, serverID, tool, args)
	}
	var raw json.RawMessage
	switch a := args.(type) {
	case json.RawMessage:
		raw = a
	case nil:
		raw = json.RawMessage("{}")
	default:
		b, err := json.Marshal(a)
		if err != nil {
			return nil, err
		}
		raw = b
	}
	return srv.Call(ctx, tool, raw)
}

// InputSchema is the input schema of a tool whose arguments decode into T:
// jsonschema-go's schema of T (unknown properties refused, so that a
// misspelt argument is reported rather than ignored), with pointers and
// slices typed as what they hold rather than also null, which is not what
// to send and costs tokens in every declaration.
func InputSchema[T any]() *jsonschema.Schema {
	s, err := jsonschema.ForType(reflect.TypeFor[T](), &jsonschema.ForOptions{
		TypeSchemas: map[reflect.Type]*jsonschema.Schema{reflect.TypeFor[map[string]any](): {Type: "object"}},
	})
	if err != nil {
		panic(fmt.Sprintf("builtin: no input schema for %T: %v", *new(T), err))
	}
	dropNull(s)
	return s
}

func dropNull(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && slices.Contains(s.Types, "null") {
		s.Type = s.Types[0]
		if s.Type == "null" {
			s.Type = s.Types[1]
		}
		s.Types = nil
	}
	for _, p := range s.Properties {
		dropNull(p)
	}
	dropNull(s.Items)
}
