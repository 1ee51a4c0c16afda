package replay

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/naming"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/typegen"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// The client's tools become one catalog server, "client", so that the run
// layer validates their inputs, counts them against maxToolCalls and turns
// their failures into ToolCallErrors exactly as for an upstream server's
// tools. The script reaches them as the exports of @codemode/client and as
// globals (defined by a prelude module before the script starts).

const (
	// ClientModule is the module whose exports are the client's tools.
	ClientModule = "@codemode/client"
	// ClientServerID is the catalog id of the client's tools (their
	// ToolCallErrors carry it as serverId).
	ClientServerID = "client"
	globalsModule  = "@codemode/client/globals"
)

// toolset is what a step needs of a tools array; it is cached by the
// array's content, so that steps of one conversation share the compiled
// validators and generated modules.
type toolset struct {
	cat    *catalog.Catalog
	server *catalog.Server
	module string // source of @codemode/client
	prims  string // source of the globals prelude
	// folded maps a name with case and separators dropped (websearch) to
	// the tool name, or to "" when two tools fold alike.
	folded map[string]string
	// aliases maps export names to their camelCase alias, if they have one.
	aliases map[string]string

	declOnce sync.Once
	decls    string
}

// staticSource serves one snapshot as the catalog's only server.
type staticSource struct{ snap *upstream.Snapshot }

func (s staticSource) Servers() []config.Server {
	return []config.Server{{ID: s.snap.ServerID, Name: s.snap.Name}}
}

func (s staticSource) Snapshot(_ context.Context, id string) (*upstream.Snapshot, error) {
	if id != s.snap.ServerID {
		return nil, catalog.ErrUnknownServer
	}
	return s.snap, nil
}

// Status reports the client's tools as connected (discovery's listServers).
func (s staticSource) Status(string) upstream.Status {
	return upstream.Status{ServerID: s.snap.ServerID, Name: s.snap.Name, State: upstream.StateConnected}
}

var toolsets struct {
	sync.Mutex
	m map[[32]byte]*toolset
}

const maxToolsets = 64

// toolsetFor returns the (cached) toolset of tools.
func toolsetFor(tools []Tool) (*toolset, *Error) {
	key := sha256.Sum256(Marshal(tools))
	toolsets.Lock()
	ts := toolsets.m[key]
	toolsets.Unlock()
	if ts != nil {
		return ts, nil
	}
	ts, err := newToolset(tools)
	if err != nil {
		return nil, err
	}
	toolsets.Lock()
	if toolsets.m == nil || len(toolsets.m) >= maxToolsets {
		toolsets.m = map[[32]byte]*toolset{}
	}
	toolsets.m[key] = ts
	toolsets.Unlock()
	return ts, nil
}

var emptyObject = json.RawMessage(`{"type":"object","properties":{}}`)

func newToolset(tools []Tool) (*toolset, *Error) {
	const hint = `each tool is {"type": "function", "function": {"name": "...", "description": "...", "parameters": {JSON Schema}}}`
	seen := map[string]bool{}
	var mts []*mcp.Tool
	for i, t := range tools {
		at := fmt.Sprintf("/tools/%d", i)
		if t.Type != "" && t.Type != "function" {
			return nil, badRequest(at+"/type", hint, "tool type %q: only \"function\" tools can be called from code", t.Type)
		}
		f := t.Function
		if f.Name == "" {
			return nil, badRequest(at+"/function/name", hint, "a tool without a name")
		}
		if seen[f.Name] {
			return nil, badRequest(at+"/function/name", "give every tool its own name", "tool %q is defined twice", f.Name)
		}
		seen[f.Name] = true
		params := bytes.TrimSpace(f.Parameters)
		if len(params) == 0 || bytes.Equal(params, []byte("null")) {
			params = emptyObject
		} else if params[0] != '{' && !bytes.Equal(params, []byte("true")) {
			return nil, badRequest(at+"/function/parameters", "parameters is the JSON Schema of the input, an object", "tool %q: parameters is not a JSON Schema object", f.Name)
		}
		mts = append(mts, &mcp.Tool{Name: f.Name, Description: f.Description, InputSchema: json.RawMessage(params)})
	}
	slices.SortFunc(mts, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	snap := &upstream.Snapshot{ServerID: ClientServerID, Name: ClientServerID, Tools: mts,
		Info: &mcp.Implementation{Name: "client", Title: "The client's tools"}}
	ts := &toolset{cat: catalog.New(staticSource{snap}), folded: map[string]string{}, aliases: map[string]string{}}
	s, err := ts.cat.View().Server(context.Background(), ClientServerID)
	if err != nil {
		return nil, badRequest("/tools", hint, "%v", err) // cannot happen: the source always answers
	}
	ts.server = s
	ts.nameAliases()
	for _, t := range s.Tools {
		for _, n := range []string{t.Name, t.ExportName, ts.aliases[t.ExportName]} {
			if n == "" {
				continue
			}
			k := fold(n)
			if prev, ok := ts.folded[k]; ok && prev != t.Name {
				ts.folded[k] = ""
			} else {
				ts.folded[k] = t.Name
			}
		}
	}
	ts.module, ts.prims = ts.sources()
	return ts, nil
}

// fold drops case and everything but letters and digits: web_search,
// webSearch and web-search all fold to websearch.
func fold(name string) string {
	var b strings.Builder
	for _, r := range name {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// nameAliases gives each export name with an underscore its camelCase form
// (web_search → webSearch), the name models most often write, when that
// form is a valid identifier and names no other tool.
func (ts *toolset) nameAliases() {
	taken := map[string]int{}
	for _, t := range ts.server.Tools {
		taken[t.ExportName] += 2 // never an alias
	}
	cand := map[string]string{}
	for _, t := range ts.server.Tools {
		a := camel(t.ExportName)
		if a == "" || a == t.ExportName || naming.IsStrictReserved(a) || a == naming.MetaExport {
			continue
		}
		cand[t.ExportName] = a
		taken[a]++
	}
	for e, a := range cand {
		if taken[a] == 1 {
			ts.aliases[e] = a
		}
	}
}

// camel turns snake_case into camelCase; "" if there is nothing to change.
func camel(name string) string {
	parts := strings.Split(name, "_")
	if len(parts) < 2 || parts[0] == "" {
		return ""
	}
	var b strings.Builder
	b.WriteString(parts[0])
	for _, p := range parts[1:] {
		if p == "" {
			return "" // __2 suffixes, leading or doubled underscores: leave them
		}
		b.WriteString(strings.ToUpper(p[:1]) + p[1:])
	}
	return b.String()
}

// sources generates @codemode/client (one frozen async function per tool,
// from the internal bindTools, under its export name and its alias) and
// the prelude that makes each of them a global, unless a standard global
// already has the name.
// globalNames are the names the prelude binds to the client's tools (see
// sources): normalize.Options.Async, so that a call's value used without
// await is awaited.
func (ts *toolset) globalNames() []string {
	var out []string
	for _, t := range ts.server.Tools {
		out = append(out, t.ExportName)
		if a := ts.aliases[t.ExportName]; a != "" {
			out = append(out, a)
		}
	}
	return out
}

func (ts *toolset) sources() (module, prelude string) {
	s := ts.server
	ops := make([]string, len(s.Tools))
	names := make([]string, len(s.Tools))
	locals := make([]string, len(s.Tools))
	var exports []string
	globals := [][2]string{} // global name, export
	for i, t := range s.Tools {
		ops[i] = run.ToolOp(s.ID, t.Name)
		names[i] = t.ExportName
		locals[i] = fmt.Sprintf("t%d", i)
		exports = append(exports, fmt.Sprintf("t%d as %s", i, t.ExportName))
		globals = append(globals, [2]string{t.ExportName, t.ExportName})
		if t.Name != t.ExportName {
			globals = append(globals, [2]string{t.Name, t.ExportName}) // globalThis["web-search"] works too
		}
		if a := ts.aliases[t.ExportName]; a != "" {
			exports = append(exports, fmt.Sprintf("t%d as %s", i, a))
			globals = append(globals, [2]string{a, t.ExportName})
		}
	}
	meta := map[string]any{"serverId": s.ID, "serverName": s.Name, "tools": metaTools(s)}
	var b strings.Builder
	b.WriteString(`import { bindTools, deepFreeze } from "@codemode/internal";` + "\n")
	if len(s.Tools) > 0 {
		fmt.Fprintf(&b, "const [%s] = bindTools(%s, %s);\n", strings.Join(locals, ", "), Marshal(ops), Marshal(names))
	}
	fmt.Fprintf(&b, "const __meta__ = deepFreeze(%s);\n", Marshal(meta))
	exports = append(exports, "__meta__")
	fmt.Fprintf(&b, "export { %s };\n", strings.Join(exports, ", "))
	module = b.String()

	prelude = fmt.Sprintf(`import * as c from %q;
const globals = %s;
for (let i = 0; i < globals.length; i++) {
  const [name, exp] = globals[i];
  if (!(name in globalThis)) Object.defineProperty(globalThis, name, { value: c[exp], writable: true, enumerable: false, configurable: true });
}
`, ClientModule, Marshal(globals))
	return module, prelude
}

type metaTool struct {
	ToolName    string `json:"toolName"`
	ExportName  string `json:"exportName"`
	Description string `json:"description,omitempty"`
}

func metaTools(s *catalog.Server) []metaTool {
	out := make([]metaTool, len(s.Tools))
	for i, t := range s.Tools {
		out[i] = metaTool{ToolName: t.Name, ExportName: t.ExportName, Description: t.Tool.Description}
	}
	return out
}

// modules answers the imports of the client's modules (run.Extra.Modules).
func (ts *toolset) modules(_ context.Context, _ *run.View, spec string) (string, bool) {
	switch spec {
	case ClientModule:
		return ts.module, true
	case globalsModule:
		return ts.prims, true
	}
	return "", false
}

// same reports whether a recorded call's name names tool: its name, its
// export name or alias, or a spelling that differs only in case and
// separators (the seed's examples call web_search webSearch) when no other
// tool folds alike.
func (ts *toolset) same(recordedName, tool string) bool {
	if recordedName == tool {
		return true
	}
	if t := ts.server.Lookup(recordedName); t != nil {
		return t.Name == tool
	}
	return ts.folded[fold(recordedName)] == tool
}

// Declarations returns the TypeScript declarations of tools as the script
// sees them: the module @codemode/client, and each tool as a global. They
// are what a model is shown (the completion-API proxy puts them in its
// execute_code function's description).
func Declarations(tools []Tool) (string, error) {
	ts, err := toolsetFor(tools)
	if err != nil {
		return "", err
	}
	ts.declOnce.Do(ts.declare)
	return ts.decls, nil
}

func (ts *toolset) declare() {
	s := typegen.Server{ID: ClientServerID}
	for _, t := range ts.server.Tools {
		// The result is whatever the client answers: unknown.
		s.Tools = append(s.Tools, typegen.Tool{Name: t.Name, ExportName: t.ExportName, Description: t.Tool.Description,
			InputSchema: t.Tool.InputSchema, OutputSchema: json.RawMessage(`{}`)})
	}
	mod, _ := typegen.ServerModule(s, &typegen.Options{Module: ClientModule})
	var b strings.Builder
	b.WriteString("// The client's tools: async functions, each a global and an export of \"" + ClientModule + "\".\n")
	b.WriteString(mod)
	for _, t := range ts.server.Tools {
		if naming.IsStrictReserved(t.ExportName) {
			continue // not a name code can write
		}
		fmt.Fprintf(&b, "declare const %s: typeof import(%q).%s;\n", t.ExportName, ClientModule, t.ExportName)
	}
	ts.decls = b.String()
}
