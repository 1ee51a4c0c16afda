package typegen

import (
	"fmt"
	"strings"

	"github.com/codemode-mcp/codemode/internal/naming"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool is one MCP tool as the generator needs it.
type Tool struct {
	Name string
	// ExportName is the §6.1 identifier. If any tool of a server leaves it
	// empty, names are computed with naming.ExportNames over all the
	// server's tool names (given ones are kept).
	ExportName  string
	Title       string
	Description string
	// InputSchema and OutputSchema are JSON Schemas (draft-07, 2019-09 or
	// 2020-12): json.RawMessage or []byte keep their key order, any other Go
	// value (map[string]any, a struct) is marshalled with encoding/json,
	// which sorts map keys. nil means absent.
	InputSchema  any
	OutputSchema any
	Annotations  *mcp.ToolAnnotations
	// TaskSupport is MCP's execution.taskSupport. It does not change the
	// declaration: a task's call resolves when the task ends, as any
	// other call does.
	TaskSupport string
	// RequiresApproval: the gateway's policy puts every call of the tool
	// to the user first; the doc comment says @requiresApproval.
	RequiresApproval bool
}

// Server is one connected server: ID is its §5.0.1 module path segment.
type Server struct {
	ID, Name, Version, Description string
	Tools                          []Tool
}

// Options adjust generation. A nil *Options means the zero value.
type Options struct {
	// OmitDescriptions drops description text (of tools, properties, types
	// and union branches) and examples. Types, annotations, defaults,
	// formats, constraints and warnings stay.
	OmitDescriptions bool
	// Module is the specifier ServerModule declares; empty means
	// ModulePath(id). Replay's client tools are "@codemode/client".
	Module string
}

// Warning reports a schema feature that could not be represented and became
// `unknown` (§6.2), or a tool that could not be declared. The same text is in
// the generated doc comments.
type Warning struct {
	Tool    string // MCP tool name
	Path    string // JSON Pointer into the tool: "/inputSchema/properties/x"
	Message string
}

func (w Warning) String() string {
	if w.Path == "" {
		return fmt.Sprintf("%s: %s", w.Tool, w.Message)
	}
	return fmt.Sprintf("%s %s: %s", w.Tool, w.Path, w.Message)
}

// gen is everything generated for one server. Named types are shared by all
// its tools; their names are unique within the server.
type gen struct {
	opts  Options
	named []*named // in creation order: a type's dependencies come first
	byFP  map[string]*named
	taken map[string]bool
	warns []Warning
}

// toolIR is one tool ready to print.
type toolIR struct {
	name, export string
	local        string   // binding in the module form; differs from export for words like `enum`
	doc          docInfo  // description, title, annotations, root descriptions
	warns        []string // warnings about the root types
	input        *tsType  // nil: the function takes no declared input
	inputOpt     bool
	output       *tsType // nil: ToolResult, declared in Stdlib
}

type serverIR struct {
	s     Server
	opts  Options
	tools []*toolIR
	named []*named
	warns []Warning
	// descPrefix is the opening sentence(s) every tool description shares
	// (Twilio starts all 197 with the same two); the server header states
	// it once and the tools' doc comments omit it.
	descPrefix string
}

// build converts every tool of s. It is the one place schemas are read; the
// renderings only print its result.
func build(s Server, opts *Options) *serverIR {
	g := &gen{byFP: map[string]*named{}, taken: map[string]bool{}}
	if opts != nil {
		g.opts = *opts
	}
	exports := exportNames(s.Tools)
	ir := &serverIR{s: s, opts: g.opts}
	used := map[string]bool{naming.MetaExport: true}
	for _, e := range exports {
		used[e] = true
	}
	for i, tool := range s.Tools {
		t := &toolIR{name: tool.Name, export: exports[i], local: exports[i]}
		if naming.IsStrictReserved(t.export) || !isIdentName(t.export) {
			t.local = localName(t.export, used)
		}
		convertTool(g, tool, t)
		ir.tools = append(ir.tools, t)
	}
	breakCycles(g)
	factorShared(g, ir.tools)
	shareSubtrees(g, ir.tools)
	if !g.opts.OmitDescriptions {
		ir.descPrefix = sharedPrefix(s.Tools)
		for _, t := range ir.tools {
			t.doc.text = strings.TrimSpace(strings.TrimPrefix(t.doc.text, ir.descPrefix))
		}
	}
	ir.named, ir.warns = g.named, g.warns
	return ir
}

// namedDeps returns the named types t needs, directly or through other named
// types, in declaration order.
func namedDeps(all []*named, ts ...*tsType) []*named {
	need := map[*named]bool{}
	var walk func(t *tsType)
	walk = func(t *tsType) {
		if t == nil {
			return
		}
		switch t.kind {
		case tRef:
			if !need[t.ref] {
				need[t.ref] = true
				walk(t.ref.body)
			}
		case tArray:
			walk(t.elem)
		case tTuple:
			for _, e := range t.elems {
				walk(e)
			}
			walk(t.elem)
		case tObject:
			for _, p := range t.props {
				walk(p.t)
			}
			for _, s := range t.index {
				walk(s.t)
			}
		case tUnion, tInter:
			for _, m := range t.members {
				walk(m)
			}
		}
	}
	for _, t := range ts {
		walk(t)
	}
	var out []*named
	for _, n := range all {
		if need[n] {
			out = append(out, n)
		}
	}
	return out
}
