package serve

// What several surfaces share: the results they answer with, the `{code}`
// input, and the module of per-server global objects that the execute tools
// of search-execute and files (and any surface whose code calls servers by
// name) import as a prelude.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/schema"
	"github.com/codemode-mcp/codemode/internal/typegen"
)

// codeArgs are the arguments of the tools that take only code.
type codeArgs struct {
	Code string `json:"code,omitempty"`
	scriptFields
}

// codeInput is the input of a tool that takes only code; example is what
// its code looks like, for refusals.
func codeInput(example string) *input[codeArgs] {
	return newInput[codeArgs](`{"code": "`+example+`"}`, codeOrScript)
}

// execArgs are the arguments of the tools that run code against the
// servers: the code, and dryRun (run.Request.DryRun).
type execArgs struct {
	Code   string `json:"code,omitempty"`
	DryRun bool   `json:"dryRun,omitempty" jsonschema:"only read-only calls run; others return null and are listed in plan"`
	scriptFields
}

// execInput is the input of a tool that runs code against the servers.
func execInput(example string) *input[execArgs] {
	return newInput[execArgs](`{"code": "`+example+`", "dryRun"?: boolean}`, codeOrScript)
}

// fixedLimits is run.Extra.LimitParams for tools whose limits the caller
// cannot change: no hint suggests raising one.
var fixedLimits = map[string]string{}

func errorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// responseResult wraps a §3.3 response as a tool result: the response as
// JSON text, once (see jsonResult), and extra, if any, as a second block. A
// failed script is not a failed call (§3.3.4): isError stays false.
func responseResult(resp *run.Response, extra string) *mcp.CallToolResult {
	res := jsonResult(resp)
	if extra != "" {
		res.Content = append(res.Content, &mcp.TextContent{Text: extra})
	}
	return res
}

// structuredLimit is the largest response also sent as structuredContent.
// Up to it, a result carries the response twice, as JSON text (which every
// client reads) and as structuredContent (which Claude Code and Cursor read
// instead, and which scripts and tests written against earlier releases
// read): at these sizes the second copy costs nothing worth saving. Above
// it the response goes out once, as text: a 1 MiB result would otherwise
// take 2 MiB on the wire, for a copy no client reads besides the first.
const structuredLimit = 64 << 10

// jsonResult is a tool result carrying v as JSON text in one text block,
// and as structuredContent too when it is small (see structuredLimit). MCP
// requires structuredContent only of a tool that declares an outputSchema,
// and codemode's tools declare none. The text is not HTML-escaped: a model
// reads "<b>&", not "\u003cb\u003e\u0026" (see unescapeHTML for the rest of
// the wire).
func jsonResult(v any) *mcp.CallToolResult {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "codemode could not encode its result: " + err.Error()}}}
	}
	text := strings.TrimSuffix(b.String(), "\n")
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
	if len(text) <= structuredLimit {
		res.StructuredContent = json.RawMessage(text)
	}
	return res
}

// exampleCall is a call of a connected server's tool as its global object
// names it, for the examples of the descriptions: a model copies examples,
// and one that names a server that is not there costs it a failed run. It
// prefers a read-only tool whose smallest valid input is short; failing
// that, the first tool, its input elided. Without any tool it is a
// placeholder that reads as one.
func exampleCall(servers []*catalog.Server) string {
	var first *catalog.Server
	for _, srv := range servers {
		if len(srv.Tools) > 0 {
			first = srv
			break
		}
	}
	if first == nil {
		return "<serverId>.<tool>({ ... })"
	}
	name := typegen.GlobalName(first.ID) + "."
	tools := first.Tools[:min(len(first.Tools), 20)]
	for _, readOnly := range []bool{true, false} {
		for _, t := range tools {
			if readOnly && (t.Tool.Annotations == nil || !t.Tool.Annotations.ReadOnlyHint) {
				continue
			}
			b, err := json.Marshal(schema.Example(t.Tool.InputSchema))
			if err == nil && len(b) <= 40 && !bytes.Equal(b, []byte("null")) {
				return name + t.ExportName + "(" + string(b) + ")"
			}
		}
	}
	return name + first.Tools[0].ExportName + "({ ... })"
}

func orNone(ids []string) string {
	if len(ids) == 0 {
		return "none connected"
	}
	return strings.Join(ids, ", ")
}

func serverIDs(servers []*catalog.Server) []string {
	out := make([]string, len(servers))
	for i, s := range servers {
		out[i] = s.ID
	}
	return out
}

// globalsModule defines one global object per configured server (see
// globalsSource); a surface imports it as a prelude.
const globalsModule = "@codemode/surface/globals"

// globalsSource defines one global object per configured server. A
// connected server's object is its module namespace: it answers exactly its
// tools (an unknown name is undefined to typeof, in, Object.keys and
// optional chaining alike), and calling an unknown one fails with the
// engine's "not a function", which missingTools reports as the
// ToolNotFoundError it is. A server that cannot be reached gets an object whose
// every tool rejects with the reason (ServerNotFoundError, or
// AuthenticationError): a script that uses it learns why, and one that
// does not is not told about it.
func (s *Server) globalsSource(ctx context.Context, v *run.View) string {
	servers, failed := s.reachable(ctx, v.Catalog())
	var b strings.Builder
	b.WriteString(`import { bindTools, freeze, call, classes } from "@codemode/internal";
const define = (name, value) => Object.defineProperty(globalThis, name, { value, writable: false, enumerable: false, configurable: false });
// route binds a name the way a server module binds a tool, through the same
// host operation: a name that is no tool throws ToolNotFoundError listing
// the tools there are (rather than "not a function"), and a server that is
// down throws why, or works if it is back.
const route = (op, name) => bindTools([op + name], [name])[0];
// Names asked of any object by the language and by common idioms; they stay
// undefined instead of turning into tool calls.
const inert = { __proto__: null, then: 1, toJSON: 1, toString: 1, valueOf: 1, constructor: 1 };
const unreachable = (op) => new Proxy(freeze(Object.create(null)), {
  get: (_, name) => typeof name !== "string" || name in inert ? undefined : route(op, name),
});
`)
	for i, srv := range servers {
		fmt.Fprintf(&b, "import * as s%d from %q;\n", i, run.ServerModulePrefix+srv.ID)
	}
	for i, srv := range servers {
		fmt.Fprintf(&b, "define(%q, s%d);\n", typegen.GlobalName(srv.ID), i)
	}
	for _, id := range v.Catalog().IDs() {
		if _, down := failed[id]; down {
			fmt.Fprintf(&b, "define(%q, unreachable(%q));\n", typegen.GlobalName(id), run.ToolOp(id, ""))
		}
	}
	ids := map[string]string{}
	for _, id := range v.Catalog().IDs() {
		ids[typegen.GlobalName(id)] = id
	}
	if _, taken := ids["codemode"]; !taken {
		j, _ := json.Marshal(ids)
		mods := make([]string, len(servers))
		for i, srv := range servers {
			mods[i] = fmt.Sprintf("[%q, s%d]", typegen.GlobalName(srv.ID), i)
		}
		fmt.Fprintf(&b, "const ids = %s;\nconst toolsOf = [%s];\n%s", j, strings.Join(mods, ", "), codemodeObjectSource)
	}
	return b.String()
}

// codemodeTools are the tools of the global `codemode`, by the names
// scripts written for Cloudflare's codemode call them (its default
// namespace holds every tool: codemode.get_sum(...)): each tool as
// <global>_<exportName>, and as its export name alone where no other
// server has a tool of that name (codemodeReserved excepted). The sandbox
// makes the same table from the server modules (codemodeObjectSource);
// this one names them in hints.
func codemodeTools(servers []*catalog.Server) []string {
	count := map[string]int{}
	for _, srv := range servers {
		for _, t := range srv.Tools {
			count[t.ExportName]++
		}
	}
	var out []string
	for _, srv := range servers {
		for _, t := range srv.Tools {
			out = append(out, typegen.GlobalName(srv.ID)+"_"+t.ExportName)
			if count[t.ExportName] == 1 && !slices.Contains(codemodeReserved, t.ExportName) {
				out = append(out, t.ExportName)
			}
		}
	}
	return out
}

// reservedJSON is codemodeReserved for codemodeObjectSource.
var reservedJSON = func() string { b, _ := json.Marshal(codemodeReserved); return string(b) }()

// codemodeReserved are codemode's own names, and those the language asks
// of any object (a tool named then would make codemode thenable): tools of
// these names keep only their prefixed names.
var codemodeReserved = []string{"search", "describe", "request", "then", "toJSON", "toString", "valueOf", "constructor"}

// codemodeObjectSource defines the global `codemode` of Cloudflare's
// codemode SDK: its tools (codemodeTools: tools maps each name to the
// index of its server's module in toolsOf and its export name), and
// discovery inside the sandbox: codemode.search(query) ranks
// the tools ({results: [{path: "server.tool", kind, score, description}],
// total, truncated}) and codemode.describe("server.tool" or "server")
// gives one's declarations ({path, kind, description, types}). Both lean on
// @codemode/discovery and the declarations, loaded when first called: a
// run that never calls them pays for neither. codemode.request({method,
// path, body}) calls the operation at a path of search's spec.paths, and is
// also the global cloudflare's (Cloudflare's API server's scripts call
// cloudflare.request). ids maps each server global's name to its server
// id.
var codemodeObjectSource = `const globalOf = (id) => Object.keys(ids).find((g) => ids[g] === id) ?? id;
let decls;
const declarations = async () => decls ??= await call("` + interfacesOp + `", []);
// The tools by the names of codemodeTools, made when codemode is first
// read: a run that never reads it pays nothing for them.
const reserved = ` + reservedJSON + `;
let table;
const tools = () => {
  if (table) return table;
  const own = Object.create(null), count = Object.create(null);
  const each = (f) => { for (const [g, ns] of toolsOf) for (const k of Object.keys(ns)) if (typeof ns[k] === "function") f(g, k, ns[k]); };
  each((g, k) => { count[k] = (count[k] ?? 0) + 1; });
  each((g, k, fn) => { own[g + "_" + k] = fn; });
  each((g, k, fn) => { if (count[k] === 1 && !reserved.includes(k) && !(k in own)) own[k] = fn; });
  return table = own;
};
// request calls the operation at a path of search's spec.paths, as
// Cloudflare's API server's cloudflare.request does, and answers in its
// envelope: the input is body (or query), the tool's value is result.
const request = freeze(async function request(options) {
  const path = String(options?.path ?? "");
  const [server, tool, ...rest] = path.replace(/^\/+|\/+$/g, "").split("/");
  const prefix = globalOf(server) + "_";
  const key = rest.length === 0 && tool ? prefix + tool : "";
  const t = tools();
  if (!Object.hasOwn(t, key)) {
    const example = Object.keys(t).find((k) => k.startsWith(prefix));
    throw new classes.ToolNotFoundError("no operation at " + JSON.stringify(path), { hint: example !== undefined ?
      "paths are /<serverId>/<tool>, the keys of search's spec.paths, e.g. /" + server + "/" + example.slice(prefix.length) :
      "paths are /<serverId>/<tool>, the keys of search's spec.paths; servers: " + Object.values(ids).join(", ") });
  }
  const result = await t[key](options?.body ?? options?.query ?? {});
  return { success: true, result, errors: [], messages: [] };
});
if (!Object.hasOwn(ids, "cloudflare")) define("cloudflare", freeze({ request }));
let codemode;
Object.defineProperty(globalThis, "codemode", { get: () => codemode ??= freeze(Object.assign(Object.assign(Object.create(null), tools()), {
  request,
  async search(query, options) {
    const { searchTools } = await import("@codemode/discovery");
    const limit = Math.min(Math.max(Number(options?.limit) || 50, 1), 100);
    const r = await searchTools(String(query ?? ""), { detail: "description", limit });
    const results = r.results.map((t, i) => ({ path: globalOf(t.serverId) + "." + t.exportName, kind: "method", score: r.results.length - i, description: t.description ?? "" }));
    return { results, total: results.length, truncated: results.length === limit };
  },
  async describe(target) {
    const path = String(target ?? "");
    const dot = path.indexOf(".");
    const server = dot < 0 ? path : path.slice(0, dot);
    const id = ids[server] ?? server;
    const { all, tools: declared } = await declarations();
    const discovery = await import("@codemode/discovery");
    if (dot < 0) {
      const d = await discovery.describeServer(id);
      const head = "/** namespace " + globalOf(id) + ":";
      const from = all.indexOf(head);
      const to = from < 0 ? -1 : all.indexOf("/** namespace ", from + head.length);
      return { path: globalOf(id), kind: "connector", description: d.description ?? d.serverName ?? "", types: from < 0 ? "" : all.slice(from, to < 0 ? undefined : to).trim() };
    }
    const t = await discovery.getTool(id, path.slice(dot + 1));
    return { path: globalOf(id) + "." + t.exportName, kind: "method", description: t.description ?? "", types: declared[globalOf(id) + "." + t.exportName] ?? "" };
  },
})), enumerable: false, configurable: false });
`

// reachable returns the servers a run can use, in configuration order, and
// why the others cannot be used. The servers come from the run's view, so
// that the run sees one state of each (§8.2); which ones are down is asked
// of a view of its own first, because a run's view remembers every server
// that failed it and the run then warns about it (UPSTREAM_UNAVAILABLE):
// listing servers, or giving each a global object, is not using them, and a
// script that never touches a broken server must not hear about it.
func (s *Server) reachable(ctx context.Context, v *catalog.View) ([]*catalog.Server, map[string]error) {
	_, failed := s.cat.View().All(ctx)
	var out []*catalog.Server
	for _, id := range v.IDs() {
		if _, down := failed[id]; down {
			continue
		}
		srv, err := v.Server(ctx, id)
		if err != nil {
			failed[id] = err
			continue
		}
		out = append(out, srv)
	}
	return out, failed
}

// missingTools reports a call of a server object's member that is no tool
// (the engine's "not a function", which does not name the callee) as the
// ToolNotFoundError it is, listing the server's closest tools.
func (s *Server) missingTools(ctx context.Context, resp *run.Response) {
	for i, d := range resp.Diagnostics {
		if d.Code != diag.UncaughtException || !strings.HasSuffix(d.Message, "not a function") || d.Path == "" {
			continue
		}
		line := pathLine(d.Path)
		servers, _ := s.reachable(ctx, s.cat.View())
		byGlobal := map[string]*catalog.Server{}
		for _, srv := range servers {
			byGlobal[typegen.GlobalName(srv.ID)] = srv
		}
		for _, c := range resp.Calls(ctx) {
			srv := byGlobal[c.Object]
			if c.Line == line && srv == nil && c.Object == "codemode" {
				// Cloudflare's namespace (codemodeTools), unless a server
				// took its name.
				names := append([]string{"search", "describe", "request"}, codemodeTools(servers)...)
				slices.Sort(names)
				resp.Diagnostics[i].ErrorClass = diag.ToolNotFoundError
				resp.Diagnostics[i].Message = fmt.Sprintf("Uncaught ToolNotFoundError: codemode.%s is not a tool (%s)", c.Member,
					strings.TrimPrefix(run.ClosestHint(c.Member, names, "tools"), "available "))
				resp.Diagnostics[i].Hint = fmt.Sprintf("find the tool with await codemode.search(%q); codemode's tools are named <server>_<tool>, or by the tool's name alone where no other server has one of that name", c.Member)
				if h := run.ClosestHint(c.Member, names, "tools"); strings.HasPrefix(h, "did you mean") {
					resp.Diagnostics[i].Hint = h[:strings.Index(h, "?")+1] + " " + resp.Diagnostics[i].Hint
				}
				break
			}
			if c.Line != line || srv == nil {
				continue
			}
			tools := make([]string, 0, len(srv.Tools))
			known, byName := false, ""
			for _, t := range srv.Tools {
				tools = append(tools, t.ExportName)
				known = known || t.ExportName == c.Member
				if t.Name == c.Member {
					byName = t.ExportName
				}
			}
			if known {
				continue
			}
			member := c.Object + "." + c.Member
			if strings.IndexFunc(c.Member, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '$' }) >= 0 {
				member = c.Object + "[" + strconv.Quote(c.Member) + "]"
			}
			resp.Diagnostics[i].ErrorClass = diag.ToolNotFoundError
			resp.Diagnostics[i].Message = fmt.Sprintf("Uncaught ToolNotFoundError: %s is not a tool of server %q (%s)", member, srv.ID,
				strings.TrimPrefix(run.ClosestHint(c.Member, tools, "tools"), "available "))
			resp.Diagnostics[i].Hint = "call one of the server's tools: " + run.ClosestHint(c.Member, tools, "tools")
			if byName != "" {
				// The MCP tool's own name: its function has a name that is
				// an identifier.
				resp.Diagnostics[i].Hint = fmt.Sprintf("the tool %q is called as %s.%s(...): a tool's function is named by its name with characters illegal in identifiers replaced by _", c.Member, c.Object, byName)
			}
			break
		}
	}
}

// hintServerKeys turns "x is not defined", for an x whose methods the
// code calls, into a hint listing the server objects that do exist, since
// a wrong server name is the usual cause (a name the run explained
// already, fs or fetch, keeps its hint); where says where their tools are
// listed.
func (s *Server) hintServerKeys(ctx context.Context, resp *run.Response, where string) {
	for i, d := range resp.Diagnostics {
		if d.Code != diag.UncaughtException || !strings.Contains(d.Message, "ReferenceError") || !strings.Contains(d.Message, "is not defined") ||
			strings.Contains(d.Hint, "@codemode/servers/") || strings.Contains(d.Hint, " is not available") {
			continue
		}
		name, _, _ := strings.Cut(d.Message[strings.Index(d.Message, "ReferenceError")+len("ReferenceError: "):], " is not defined")
		name = strings.Trim(name, "'")
		called := false
		for _, c := range resp.Calls(ctx) {
			called = called || c.Object == name
		}
		if !called {
			continue
		}
		servers, _ := s.cat.View().All(context.Background())
		keys := make([]string, len(servers))
		for j, srv := range servers {
			keys[j] = typegen.GlobalName(srv.ID)
		}
		resp.Diagnostics[i].Hint = "use one of the server objects: " + strings.Join(keys, ", ") + " (" + where + ")"
		if len(keys) == 0 {
			resp.Diagnostics[i].Hint = "no MCP server is connected, so there are no server objects"
		}
	}
}

// pathLine is the line of a "file:line:col" path, or 0.
func pathLine(p string) int {
	i := strings.LastIndexByte(p, ':')
	if i < 0 {
		return 0
	}
	j := strings.LastIndexByte(p[:i], ':')
	if j < 0 {
		return 0
	}
	n, _ := strconv.Atoi(p[j+1 : i])
	return n
}

// UTCP code-mode's introspection globals, on the surfaces with server
// globals: __interfaces, every server's declarations as one string, and
// __getToolInterface("server.tool"), one tool's (null for an unknown one).
// Both are synchronous in UTCP, so the module fetches the declarations
// with a top-level await, and the agent's module imports it (a prelude
// module would not be waited for) only when its code names them
// (interfacesImport): the other runs pay nothing.
const (
	interfacesModule = "@codemode/surface/interfaces"
	interfacesOp     = "surface.interfaces"
)

const interfacesSource = `import { call, freeze } from "@codemode/internal";
const { all, tools } = await call("` + interfacesOp + `", []);
const define = (name, value) => Object.defineProperty(globalThis, name, { value, writable: false, enumerable: false, configurable: false });
define("__interfaces", all);
define("__getToolInterface", freeze((name) => Object.hasOwn(tools, String(name)) ? tools[String(name)] : null));
`

// serverGlobals are the names of the server objects of the surfaces with
// server globals: a call of their methods is a tool call (see
// normalize.Options.Async).
func (s *Server) serverGlobals() []string {
	var out []string
	for _, c := range s.cat.Configured() {
		out = append(out, typegen.GlobalName(c.ID))
	}
	return out
}

// interfacesImport is the import a run with server globals puts before
// the agent's code: UTCP's introspection globals if the code names them.
func interfacesImport(code string) string {
	if strings.Contains(code, "__interfaces") || strings.Contains(code, "__getToolInterface") {
		return fmt.Sprintf("import %q;", interfacesModule)
	}
	return ""
}

// globalsModules serves the server globals and the introspection module.
func (s *Server) globalsModules(ctx context.Context, v *run.View, spec string) (string, bool) {
	switch spec {
	case globalsModule:
		return s.globalsSource(ctx, v), true
	case interfacesModule:
		return interfacesSource, true
	}
	return "", false
}

// interfacesOps serves the introspection module's declarations: each
// reachable server's, in the files surface's global form, headed by a line
// naming it as UTCP's namespaces are named, and each tool's by
// "<global>.<exportName>" and "<global>.<toolName>".
func (s *Server) interfacesOps(ctx context.Context, v *run.View, op string, _ json.RawMessage) (json.RawMessage, error, bool) {
	if op != interfacesOp {
		return nil, nil, false
	}
	servers, _ := s.reachable(ctx, v.Catalog())
	var all strings.Builder
	tools := map[string]string{}
	for _, srv := range servers {
		g := typegen.GlobalName(srv.ID)
		fmt.Fprintf(&all, "/** namespace %s: the tools of server %q, called as await %s.<tool>(input) */\n", g, srv.ID, g)
		all.WriteString(strings.TrimRight(s.decls.get(srv, globalForm).text, "\n") + "\n\n")
		ts := Declarations(srv)
		decls := typegen.ToolDecls(ts, nil)
		for i, t := range ts.Tools {
			if i < len(decls) {
				tools[g+"."+t.ExportName] = decls[i]
				tools[g+"."+t.Name] = decls[i]
			}
		}
	}
	b, err := json.Marshal(map[string]any{"all": all.String(), "tools": tools})
	if err != nil {
		return nil, &diag.Error{Class: diag.CodemodeError, Message: "the declarations could not be encoded: " + err.Error()}, true
	}
	return b, nil, true
}

// undefinedName returns x of an uncaught "x is not defined" whose hint the
// run left generic (not one that already names the fix, as fs's and
// fetch's do), or "".
func undefinedName(d diag.Diagnostic) string {
	if d.Code != diag.UncaughtException || !strings.Contains(d.Message, "ReferenceError") || !strings.Contains(d.Message, "is not defined") ||
		strings.Contains(d.Hint, "@codemode/servers/") || strings.Contains(d.Hint, " is not available") {
		return ""
	}
	name, _, _ := strings.Cut(d.Message[strings.Index(d.Message, "ReferenceError")+len("ReferenceError: "):], " is not defined")
	return strings.Trim(name, "'")
}

// hintUndefined gives "x is not defined" the fix this surface has for an x
// that another surface binds (search's catalog and spec, execute's server
// objects, Thoughtbox's tb, emceepee's mcp): fix returns the hint for a
// name, or "" to keep the one there is.
func hintUndefined(resp *run.Response, fix func(name string) string) {
	for i, d := range resp.Diagnostics {
		if name := undefinedName(d); name != "" {
			if h := fix(name); h != "" {
				resp.Diagnostics[i].Hint = h
			}
		}
	}
}

// globalIDs maps each configured server's global name to its id.
func (s *Server) globalIDs() map[string]string {
	out := map[string]string{}
	for _, c := range s.cat.Configured() {
		out[typegen.GlobalName(c.ID)] = c.ID
	}
	return out
}

// Which surface binds what, for hintUndefined.
var (
	searchNames = map[string]bool{"catalog": true, "spec": true}
	toolObjects = map[string]bool{"codemode": true, "tb": true, "mcp": true, "cloudflare": true}
)

// readOnlyFix is the fix on a search tool (search, thoughtbox_search) for
// a name its execute tool binds (bound).
func readOnlyFix(search, execute string, bound func(string) bool) func(string) string {
	return func(name string) string {
		if !bound(name) {
			return ""
		}
		return fmt.Sprintf("%s only reads the catalog (read-only): call tools with the %s tool, where %s is bound", search, execute, name)
	}
}

// globalsFix is the fix on the surfaces with server globals (execute,
// executeToolCode) for another surface's names; discover says how to find
// tools here.
func (s *Server) globalsFix(discover string) func(string) string {
	return func(name string) string {
		switch {
		case searchNames[name]:
			return name + " is bound by the search tool (the search-execute surface), not here: " + discover
		case name == "tb" || name == "mcp":
			keys := s.serverGlobals()
			return name + " is not bound here: each server is a global object (" + orNone(keys) + "), its tools async functions, e.g. await " + firstOr(keys, "server") + ".<tool>({...})"
		}
		return ""
	}
}

// firstOr is the first of list, or or.
func firstOr(list []string, or string) string {
	if len(list) == 0 {
		return or
	}
	return list[0]
}
