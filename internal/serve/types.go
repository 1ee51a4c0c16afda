package serve

import (
	"fmt"
	"strings"
	"sync"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/typegen"
)

// Declarations converts a catalog server to typegen's input.
func Declarations(s *catalog.Server) typegen.Server {
	// A server's instructions can run to pages; the declarations carry
	// their first paragraph, and describeServer() has the rest.
	ts := typegen.Server{ID: s.ID, Name: s.Name, Version: s.Version(), Description: firstParagraph(s.Snapshot.Instructions, 300)}
	if info := s.Snapshot.Info; info != nil && info.Title != "" && ts.Description == "" {
		ts.Description = info.Title
	}
	for _, t := range s.Tools {
		ts.Tools = append(ts.Tools, typegen.Tool{
			Name: t.Name, ExportName: t.ExportName, Title: t.Tool.Title, Description: t.Tool.Description,
			InputSchema: t.Tool.InputSchema, OutputSchema: t.Tool.OutputSchema, Annotations: t.Tool.Annotations, TaskSupport: t.TaskSupport,
			RequiresApproval: t.NeedsApproval,
		})
	}
	return ts
}

// form is how a server's declarations are rendered.
type form int

const (
	moduleForm form = iota // declare module "@codemode/servers/<id>"
	globalForm             // declare const <id>: {...}, for surfaces with server globals
)

type declKey struct {
	id   string
	gen  uint64
	form form
}

type decl struct {
	text string
	// tokens is text's size in tokens, exact up to the cache's budget and
	// otherwise some number past it: it is only compared with the budget,
	// and counting what cannot fit costs the tokenizer's time and memory
	// for nothing (a 200,000-value enum's 2.7 MB of declarations, 600 MB
	// allocated).
	tokens int
}

// declCache keeps rendered declarations per server snapshot: snapshots are
// immutable, so a rendering is valid until the server's tools change.
type declCache struct {
	mu     sync.Mutex
	m      map[declKey]decl
	budget int
}

// newDeclCache returns a cache whose token counts are exact up to budget
// (TypesBudgetTokens).
func newDeclCache(budget int) *declCache {
	return &declCache{m: map[declKey]decl{}, budget: budget}
}

func (c *declCache) get(s *catalog.Server, f form) decl {
	k := declKey{s.ID, s.Snapshot.Generation, f}
	c.mu.Lock()
	d, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return d
	}
	var text string
	if f == moduleForm {
		text, _ = typegen.ServerModule(Declarations(s), nil)
	} else {
		text, _ = typegen.ServerGlobal(Declarations(s), nil)
	}
	d = decl{text: text, tokens: typegen.CountTokensUpTo(text, c.budget)}
	c.mu.Lock()
	// Drop renderings of older snapshots of the same server.
	for old := range c.m {
		if old.id == s.ID && old.form == f && old.gen != k.gen {
			delete(c.m, old)
		}
	}
	c.m[k] = d
	c.mu.Unlock()
	return d
}

// declTypes defines, in one line, the types of codemode.d.ts that server
// declarations refer to: a model reading them in a description has no other
// way to learn what ToolResult is.
const declTypes = "They use: type ToolResult = string | CodeMode.CallToolResult | { [key: string]: unknown } (see the unwrapping rules); " +
	"CodeMode.CallToolResult = { content: ({ type: \"text\", text } | { type: \"image\" | \"audio\", data, mimeType } | ...)[], structuredContent?, isError? }; " +
	"CodeMode.ServerMeta = { serverId, serverName, tools: { toolName, exportName }[] }.\n"

// context is what a tool description carries about the servers (§4.4):
// every declaration when they fit budget tokens, otherwise a compact index
// within indexBudget tokens. full reports which.
func (s *Server) context(servers []*catalog.Server, f form) (text string, full bool) {
	if len(servers) == 0 {
		configured := s.cat.Configured() // those in code mode
		if len(configured) == 0 {
			return "No MCP servers are configured.", false
		}
		ids := make([]string, len(configured))
		for i, c := range configured {
			ids[i] = c.ID
		}
		return "Servers (not connected yet): " + strings.Join(ids, ", ") + ".", false
	}
	var b strings.Builder
	total := 0
	for _, srv := range servers {
		d := s.decls.get(srv, f)
		total += d.tokens
		b.WriteString(d.text)
	}
	if total <= s.cfg.Serve.TypesBudgetTokens {
		return "TypeScript declarations of every server. " + declTypes + b.String(), true
	}
	return s.index(servers), false
}

// index lists every server id with its tool count, then, while the index
// budget allows, each server's tool names; what does not fit is counted, and
// discovery finds it.
func (s *Server) index(servers []*catalog.Server) string {
	budget := s.cfg.Serve.IndexBudgetTokens
	head := "Servers (a server's declarations come with the first result that imports it; searchTools/getTool describe any tool):\n"
	if s.cfg.ApprovalPossible() {
		head = "Servers (a server's declarations come with the first result that imports it; searchTools/getTool describe any tool; * requires approval):\n"
	}
	used := typegen.CountTokens(head)
	lines := make([]string, 0, len(servers))
	shown := len(servers)
	for i, srv := range servers {
		line := fmt.Sprintf("%s (%d tools)\n", srv.ID, len(srv.Tools))
		n := typegen.CountTokens(line)
		if used+n > budget {
			shown = i
			break
		}
		used += n
		lines = append(lines, line)
	}
	// Spend what is left on tool names, server by server.
	for i := 0; i < shown; i++ {
		srv := servers[i]
		names := make([]string, len(srv.Tools))
		for j, t := range srv.Tools {
			names[j] = t.ExportName
			if t.NeedsApproval {
				names[j] += "*"
			}
		}
		full := fmt.Sprintf("%s (%d tools): %s\n", srv.ID, len(srv.Tools), strings.Join(names, ", "))
		if extra := typegen.CountTokens(full) - typegen.CountTokens(lines[i]); used+extra <= budget {
			lines[i] = full
			used += extra
		}
	}
	var b strings.Builder
	b.WriteString(head)
	for _, l := range lines {
		b.WriteString(l)
	}
	if shown < len(servers) {
		fmt.Fprintf(&b, "… and %d more servers (listServers() has them all)\n", len(servers)-shown)
	}
	return b.String()
}

// firstParagraph returns the first paragraph of text, skipping Markdown
// headings, cut at max bytes on a word boundary.
func firstParagraph(text string, max int) string {
	var para []string
	for _, line := range strings.Split(text, "\n") {
		l := strings.TrimSpace(line)
		if strings.HasPrefix(l, "#") {
			if len(para) > 0 {
				break
			}
			continue
		}
		if l == "" {
			if len(para) > 0 {
				break
			}
			continue
		}
		para = append(para, l)
	}
	p := strings.Join(para, " ")
	if len(p) <= max {
		return p
	}
	cut := strings.LastIndexByte(p[:max], ' ')
	if cut < max/2 {
		cut = max
	}
	return strings.TrimRight(p[:cut], " ,;:") + "…"
}
