package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Snapshot is what one server offered at one moment: its identity,
// capabilities and complete tool list. A Snapshot is immutable: this package
// never changes one after handing it out, and callers must not either (the
// pointers inside are shared by every run that took the same snapshot). A
// run keeps the snapshot it took for its whole life (codemode-spec §8), even
// if the server's tools change meanwhile.
type Snapshot struct {
	ServerID string // the §5.0.1 id
	Name     string // the key in mcpServers
	// Info is the server's serverInfo (name, title, version, ...); it may be
	// nil for a server that sent none.
	Info            *mcp.Implementation
	ProtocolVersion string
	Instructions    string
	// Capabilities may be nil for a server that declared none.
	Capabilities *mcp.ServerCapabilities
	// Tools holds every page of tools/list, sorted by name, without
	// duplicate names (the first one wins) or invalid tools (dropped by the
	// SDK). A tool's InputSchema and OutputSchema are json.RawMessage, in
	// the server's own key order, for the servers this package dials
	// (rawschemas.go), and the SDK's map[string]any for Options.Dial ones.
	Tools []*mcp.Tool
	// TaskSupport is the execution.taskSupport that tools declared other
	// than "forbidden", by tool name: "optional" or "required" (MCP tasks;
	// a "required" tool answers a plain tools/call with -32601). The SDK's
	// Tool has no such field: it is read from the tools/list responses as
	// they arrived (rawschemas.go), so it is nil for Options.Dial servers.
	TaskSupport map[string]string
	// Generation orders the snapshots of one server: a snapshot whose
	// content differs from its predecessor's has a higher Generation. Equal
	// content keeps the predecessor (same pointer, same Generation), so
	// caches keyed by (ServerID, Generation) stay valid across restarts that
	// changed nothing.
	Generation uint64
}

// Tool returns the tool with the given name, or nil.
func (s *Snapshot) Tool(name string) *mcp.Tool {
	i, ok := slices.BinarySearchFunc(s.Tools, name, func(t *mcp.Tool, n string) int { return strings.Compare(t.Name, n) })
	if !ok {
		return nil
	}
	return s.Tools[i]
}

// snapState is a server's snapshot bookkeeping, guarded by serverConn.mu.
//
// staleSeq counts events that may have changed the tool list: a
// notifications/tools/list_changed, or a new session (a restarted server may
// have other tools). cur is valid while curSeq == staleSeq. At most one
// fetch runs at a time; a caller that arrives after a change waits for an
// older fetch to finish and then starts its own, so it never gets a list
// older than the change it may have been told about.
type snapState struct {
	cur      *Snapshot
	curSeq   uint64
	staleSeq uint64
	gen      uint64
	fetch    *fetch
	notified bool // a list_changed arrived since the last fetch started
}

func (st *snapState) sessionChanged() { st.staleSeq++ }

type fetch struct {
	seq         uint64
	sess        *session
	afterNotify bool // started because of a list_changed (already announced)
	done        chan struct{}
	snap        *Snapshot // set before done is closed, or err
	err         *Error
}

// toolsChanged handles notifications/tools/list_changed. It is announced
// only if someone may have seen the old list (a snapshot exists or is being
// fetched): servers such as the reference "everything" server send it right
// after initialize.
func (c *serverConn) toolsChanged() {
	c.mu.Lock()
	c.snaps.staleSeq++
	c.snaps.notified = true
	seen := c.snaps.cur != nil || c.snaps.fetch != nil
	c.mu.Unlock()
	c.log.Debug("upstream tool list changed")
	if seen {
		c.m.notifyToolsChanged(c.cfg.ID)
	}
}

func (c *serverConn) snapshot(ctx context.Context) (*Snapshot, error) {
	for {
		s, err := c.session(ctx)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		st := &c.snaps
		if st.cur != nil && st.curSeq == st.staleSeq {
			cur := st.cur
			c.mu.Unlock()
			return cur, nil
		}
		f := st.fetch
		if f == nil {
			if c.sess != s { // it died just now: reconnect (or report why not)
				c.mu.Unlock()
				continue
			}
			f = &fetch{seq: st.staleSeq, sess: s, afterNotify: st.notified, done: make(chan struct{})}
			if !c.m.goBackground(func() { c.runFetch(f) }) {
				c.mu.Unlock()
				return nil, c.closedErr("tools/list")
			}
			st.notified = false
			st.fetch = f
		}
		current := f.seq == st.staleSeq
		c.mu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, &Error{ServerID: c.cfg.ID, Kind: Canceled, Op: "tools/list", Err: ctx.Err()}
		}
		if !current {
			continue
		}
		if f.err != nil {
			return nil, f.err
		}
		return f.snap, nil
	}
}

// runFetch lists the tools on the Manager's context, not a caller's, because
// callers share it.
func (c *serverConn) runFetch(f *fetch) {
	d := c.callTimeout()
	ctx, cancel := c.callContext(context.Background(), f.sess, d)
	defer cancel()
	tools, tasks, err := c.listTools(ctx, f.sess)
	var snap *Snapshot
	fire, changed := false, false

	c.mu.Lock()
	st := &c.snaps
	if st.fetch == f {
		st.fetch = nil
	}
	if err != nil {
		f.err = c.callErr(context.Background(), ctx, f.sess, "tools/list", d, err)
	} else {
		snap = newSnapshot(c, f.sess, tools, tasks)
		if prev := st.cur; prev != nil && sameContent(prev, snap) {
			snap = prev
		} else {
			st.gen++
			snap.Generation = st.gen
			st.cur = snap
			changed = true
			// A change found without a notification (typically after a
			// restart) is announced too.
			fire = prev != nil && !f.afterNotify
		}
		st.curSeq = f.seq
		f.snap = snap
	}
	c.mu.Unlock()
	close(f.done)
	if changed {
		c.warnUnmatched(snap)
	}
	if fire {
		c.m.notifyToolsChanged(c.cfg.ID)
	}
}

// warnUnmatched logs, once per tool list, each policy pattern of the
// server's configuration that matches none of its tools (a denyTools
// entry written as the export name get_env hides nothing).
func (c *serverConn) warnUnmatched(snap *Snapshot) {
	names := make([]string, len(snap.Tools))
	for i, t := range snap.Tools {
		names[i] = t.Name
	}
	for _, msg := range c.cfg.UnmatchedPatterns(names) {
		c.log.Warn("a tool policy pattern matches no tool", slog.String("problem", msg))
	}
}

func newSnapshot(c *serverConn, s *session, tools []*mcp.Tool, tasks map[string]string) *Snapshot {
	snap := &Snapshot{ServerID: c.cfg.ID, Name: c.cfg.Name, Tools: tools, TaskSupport: tasks}
	if ir := s.cs.InitializeResult(); ir != nil {
		snap.Info = ir.ServerInfo
		snap.ProtocolVersion = ir.ProtocolVersion
		snap.Instructions = ir.Instructions
		snap.Capabilities = ir.Capabilities
	}
	redactSnapshot(c.m.redact, snap)
	return snap
}

// sameContent compares everything but Generation.
func sameContent(a, b *Snapshot) bool {
	enc := func(s *Snapshot) []byte {
		data, err := json.Marshal([]any{s.ServerID, s.Name, s.Info, s.ProtocolVersion, s.Instructions, s.Capabilities, s.Tools, s.TaskSupport})
		if err != nil {
			return nil
		}
		return data
	}
	x, y := enc(a), enc(b)
	return x != nil && bytes.Equal(x, y)
}

// listTools returns every page of tools/list, sorted and deduplicated, and
// the task support the tools declared (see Snapshot.TaskSupport). A server
// that declares no tools capability is still asked (some forget to declare
// it), and "method not found" then means no tools.
func (c *serverConn) listTools(ctx context.Context, s *session) ([]*mcp.Tool, map[string]string, error) {
	tools, err := listAll(ctx, func(ctx context.Context, cursor string) ([]*mcp.Tool, string, error) {
		res, err := s.cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return res.Tools, res.NextCursor, nil
	})
	var wireErr *jsonrpc.Error
	if err != nil && !declares(s, "tools") && errors.As(err, &wireErr) && wireErr.Code == jsonrpc.CodeMethodNotFound {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	seen := make(map[string]bool, len(tools))
	out := tools[:0]
	for _, t := range tools {
		if t == nil {
			continue
		}
		if seen[t.Name] {
			c.log.Warn("upstream lists a tool twice; keeping the first", slog.String("tool", t.Name))
			continue
		}
		seen[t.Name] = true
		out = append(out, t)
	}
	var tasks map[string]string
	if s.lists != nil {
		tasks = s.lists.taskSupport(out)
		s.lists.keepOrder(out)
	}
	slices.SortFunc(out, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	return slices.Clip(out), tasks, nil
}

// maxPages stops a server whose cursors never end.
const maxPages = 1000

// listAll follows cursors until the last page.
func listAll[T any](ctx context.Context, page func(ctx context.Context, cursor string) ([]T, string, error)) ([]T, error) {
	var all []T
	seen := map[string]bool{}
	cursor := ""
	for range maxPages {
		items, next, err := page(ctx, cursor)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		if next == "" {
			return all, nil
		}
		if seen[next] {
			return nil, fmt.Errorf("pagination cursor %q repeats", next)
		}
		seen[next] = true
		cursor = next
	}
	return nil, fmt.Errorf("more than %d pages", maxPages)
}

// declares reports whether the server declared a capability.
func declares(s *session, capability string) bool {
	ir := s.cs.InitializeResult()
	if ir == nil || ir.Capabilities == nil {
		return false
	}
	switch capability {
	case "tools":
		return ir.Capabilities.Tools != nil
	case "resources":
		return ir.Capabilities.Resources != nil
	case "prompts":
		return ir.Capabilities.Prompts != nil
	}
	return false
}
