// Package catalog is the gateway's view of its upstream servers and their
// tools as agent code sees them: server ids, export names (§6.1), lookup by
// either name, and ranked search (§4.1).
//
// Start with [New] and [Catalog.View]. A [View] belongs to one run and is
// immutable once filled (codemode-spec §8.2): the first time the run needs a
// server, the view takes that server's current snapshot from the [Source]
// (connecting it if need be) and keeps it until the run ends, so a
// tools/list_changed arriving mid-run affects only the next run.
//
// The per-snapshot work (export names, search index, compiled validators) is
// cached on the [Server] and shared by every view that took the same
// snapshot.
//
// The catalog is also where the tool policy of the configuration (allowTools,
// denyTools) takes effect: a Server holds only the tools its server's policy
// lets scripts have. Every surface, declaration, search, module and call
// works from a Server, so a denied tool does not exist anywhere a script
// (or a model) could look; the policy is applied here and nowhere else.
// Each remaining Tool carries whether a call needs the user's approval.
package catalog

import (
	"context"
	"sort"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/naming"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// Source provides server snapshots. *upstream.Manager is one.
type Source interface {
	Servers() []config.Server
	Snapshot(ctx context.Context, id string) (*upstream.Snapshot, error)
}

// Catalog turns snapshots into Servers, caching the result per snapshot.
type Catalog struct {
	src Source
	// keep says which configured servers the catalog has: those in code
	// mode (New), or those served as direct MCP tools (Direct).
	keep func(config.Server) bool

	mu    sync.Mutex
	cache map[string]*Server // by server id: the Server of the latest snapshot seen
}

// New returns the catalog of src's servers that scripts see: all but those
// configured with "codeMode": false.
func New(src Source) *Catalog {
	return &Catalog{src: src, keep: config.Server.InCodeMode, cache: map[string]*Server{}}
}

// Direct returns the catalog of the servers of c's source that the gateway
// serves as ordinary MCP tools ("codeMode": false or "both").
func (c *Catalog) Direct() *Catalog {
	return &Catalog{src: c.src, keep: config.Server.Direct, cache: map[string]*Server{}}
}

// statusSource is implemented by sources that know a server's connection
// state (*upstream.Manager does).
type statusSource interface {
	Status(id string) upstream.Status
}

// Status reports a server's connection state, if the source knows it.
func (c *Catalog) Status(id string) (upstream.Status, bool) {
	if ss, ok := c.src.(statusSource); ok {
		return ss.Status(id), true
	}
	return upstream.Status{}, false
}

// Configured returns the catalog's configured servers in declaration
// order.
func (c *Catalog) Configured() []config.Server {
	var out []config.Server
	for _, s := range c.src.Servers() {
		if c.keep(s) {
			out = append(out, s)
		}
	}
	return out
}

// View starts the view of one run.
func (c *Catalog) View() *View {
	return &View{c: c, servers: map[string]*Server{}, errs: map[string]error{}}
}

func (c *Catalog) server(snap *upstream.Snapshot) *Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.cache[snap.ServerID]; s != nil && s.Snapshot == snap {
		return s
	}
	var cfg config.Server
	for _, cs := range c.src.Servers() {
		if cs.ID == snap.ServerID {
			cfg = cs
			break
		}
	}
	s := newServer(snap, cfg)
	c.cache[snap.ServerID] = s
	return s
}

// Server is one upstream server as of one snapshot. It is immutable; its
// lazily built parts are safe for concurrent use.
type Server struct {
	ID       string
	Name     string // the config key
	Snapshot *upstream.Snapshot
	// Tools are sorted by tool name.
	Tools []*Tool

	byName   map[string]*Tool
	byExport map[string]*Tool

	indexOnce sync.Once
	index     *index
}

// Tool is one tool of a Server.
type Tool struct {
	Name       string // canonical MCP name
	ExportName string // §6.1 identifier
	Tool       *mcp.Tool
	// TaskSupport is the tool's declared execution.taskSupport when it is
	// "optional" or "required" (see upstream.Snapshot.TaskSupport), else "".
	TaskSupport string

	// NeedsApproval: a call needs the user's approval first (the server's
	// approval mode and the tool's annotations; config.Server.NeedsApproval).
	NeedsApproval bool
	// AutoApproved: the server's autoApprove lists the tool.
	AutoApproved bool

	// Compiled input validation, built on first use by whoever needs it;
	// the catalog only keeps it. See Once.
	once  sync.Once
	value any
}

// Once computes a per-tool value once (the run layer keeps its compiled
// input validator here) and returns it on every later call.
func (t *Tool) Once(f func(*Tool) any) any {
	t.once.Do(func() { t.value = f(t) })
	return t.value
}

// ReadOnly reports whether the tool's annotations say readOnlyHint: true.
func (t *Tool) ReadOnly() bool { return t.Tool.Annotations != nil && t.Tool.Annotations.ReadOnlyHint }

// FromSnapshot builds the Server of a snapshot, outside any Catalog (tests
// and tools that read recorded tools/list results use it), with every tool
// and no approval: no configuration, no policy.
func FromSnapshot(snap *upstream.Snapshot) *Server { return newServer(snap, config.Server{}) }

func newServer(snap *upstream.Snapshot, cfg config.Server) *Server {
	// The policy filters first, so that export names are computed over the
	// tools that exist: a denied tool must not even leave a suffix behind
	// (foo_2 would tell there is another foo).
	var tools []*mcp.Tool
	for _, t := range snap.Tools {
		if cfg.ToolAllowed(t.Name) {
			tools = append(tools, t)
		}
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	exports := naming.ExportNames(names)
	s := &Server{
		ID:       snap.ServerID,
		Name:     snap.Name,
		Snapshot: snap,
		byName:   make(map[string]*Tool, len(names)),
		byExport: make(map[string]*Tool, len(names)),
	}
	for _, mt := range tools {
		t := &Tool{Name: mt.Name, ExportName: exports[mt.Name], Tool: mt, TaskSupport: snap.TaskSupport[mt.Name]}
		var destructive *bool
		if a := mt.Annotations; a != nil {
			destructive = a.DestructiveHint
		}
		t.AutoApproved = cfg.AutoApproved(mt.Name)
		t.NeedsApproval = cfg.NeedsApproval(mt.Name, t.ReadOnly(), destructive)
		s.Tools = append(s.Tools, t)
		s.byName[t.Name] = t
		s.byExport[t.ExportName] = t
	}
	sort.Slice(s.Tools, func(i, j int) bool { return s.Tools[i].Name < s.Tools[j].Name })
	return s
}

// Lookup finds a tool by canonical name or export name.
func (s *Server) Lookup(name string) *Tool {
	if t := s.byName[name]; t != nil {
		return t
	}
	return s.byExport[name]
}

// Version returns the server's reported version, if any.
func (s *Server) Version() string {
	if s.Snapshot.Info != nil {
		return s.Snapshot.Info.Version
	}
	return ""
}

// Capabilities lists the MCP capabilities the server declared, by name.
func (s *Server) Capabilities() []string {
	c := s.Snapshot.Capabilities
	if c == nil {
		return nil
	}
	var out []string
	if c.Tools != nil {
		out = append(out, "tools")
	}
	if c.Resources != nil {
		out = append(out, "resources")
	}
	if c.Prompts != nil {
		out = append(out, "prompts")
	}
	if c.Completions != nil {
		out = append(out, "completions")
	}
	if c.Logging != nil {
		out = append(out, "logging")
	}
	return out
}
