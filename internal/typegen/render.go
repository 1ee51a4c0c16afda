package typegen

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// This file prints a built server in its three renderings (module, global,
// one tool) and the compact index.

// ServerModule renders s as the ambient module `@codemode/servers/<id>`
// (§5), the content of "<id>.d.ts": named types, one exported function per
// tool and `__meta__`. It never fails: what cannot be represented is
// `unknown`, reported in the returned warnings and in doc comments.
func ServerModule(s Server, opts *Options) (string, []Warning) {
	ir := build(s, opts)
	var b strings.Builder
	writeHeader(&b, ir)
	module := ModulePath(s.ID)
	if ir.opts.Module != "" {
		module = ir.opts.Module
	}
	b.WriteString("declare module " + quote(module) + " {\n")
	var p printer
	for _, n := range ir.named {
		writeNamed(&b, p, "", "export ", n)
	}
	var aliases []string
	for _, t := range ir.tools {
		writeToolDoc(&b, t)
		if t.local == t.export {
			b.WriteString("export function " + t.export)
		} else {
			b.WriteString("function " + t.local)
			aliases = append(aliases, t.local+" as "+exportSpec(t.export))
		}
		writeSig(&b, p, "", t)
	}
	if len(aliases) > 0 {
		b.WriteString("export { " + strings.Join(aliases, ", ") + " };\n")
	}
	b.WriteString("export const __meta__: CodeMode.ServerMeta;\n}\n")
	return b.String(), ir.warns
}

// ServerGlobal renders s for surfaces where each server is a global object
// named GlobalName(s.ID): `declare const <global>: { tool(input): …; … }`,
// with the server's named types in a namespace of the same name.
func ServerGlobal(s Server, opts *Options) (string, []Warning) {
	ir := build(s, opts)
	var b strings.Builder
	writeHeader(&b, ir)
	writeGlobal(&b, GlobalName(s.ID), ir.named, ir.tools)
	return b.String(), ir.warns
}

// ToolDecl renders one tool of s (by tool name or export name) in the global
// form, with the named types it needs: the "tool-level binding" file
// servers/<id>/<tool>.d.ts. Names agree with ServerGlobal's. Each such file
// stands alone: two of them declare the same global and do not compile
// together. ToolDecl converts the whole server (shared names depend on every
// tool); use ToolDecls to render all tools at once.
func ToolDecl(s Server, toolName string, opts *Options) (string, error) {
	ir := build(s, opts)
	// A tool name wins over an export name: "get_sum" is the tool get_sum
	// even when the tool get-sum exports get_sum.
	for _, t := range ir.tools {
		if t.name == toolName {
			return toolDecl(ir, t), nil
		}
	}
	for _, t := range ir.tools {
		if t.export == toolName {
			return toolDecl(ir, t), nil
		}
	}
	return "", fmt.Errorf("server %q has no tool %q", s.ID, toolName)
}

// ToolDecls is ToolDecl for every tool of s, in the order of s.Tools.
func ToolDecls(s Server, opts *Options) []string {
	ir := build(s, opts)
	out := make([]string, len(ir.tools))
	for i, t := range ir.tools {
		out[i] = toolDecl(ir, t)
	}
	return out
}

func toolDecl(ir *serverIR, t *toolIR) string {
	var ts []*tsType
	if t.input != nil {
		ts = append(ts, t.input)
	}
	if t.output != nil {
		ts = append(ts, t.output)
	}
	one := *t
	if ir.descPrefix != "" {
		one.doc.text = ir.descPrefix + " " + t.doc.text // standalone: the whole description
	}
	var b strings.Builder
	writeGlobal(&b, GlobalName(ir.s.ID), namedDeps(ir.named, ts...), []*toolIR{&one})
	return b.String()
}

func writeGlobal(b *strings.Builder, global string, named []*named, tools []*toolIR) {
	if len(named) > 0 {
		b.WriteString("declare namespace " + global + " {\n")
		var p printer
		for _, n := range named {
			writeNamed(b, p, "", "", n)
		}
		b.WriteString("}\n")
	}
	p := printer{qual: global + "."}
	b.WriteString("declare const " + global + ": {\n")
	for _, t := range tools {
		writeToolDoc(b, t)
		b.WriteString(propName(t.export))
		writeSig(b, p, "", t)
	}
	b.WriteString("};\n")
}

// writeHeader writes the server's doc comment: name, version, description
// and the description prefix all its tools share.
func writeHeader(b *strings.Builder, ir *serverIR) {
	var lines []string
	if first := strings.TrimSpace(ir.s.Name + " " + ir.s.Version); first != "" {
		lines = append(lines, docLine(first))
	}
	if !ir.opts.OmitDescriptions {
		lines = append(lines, cleanLines(ir.s.Description)...)
	}
	if ir.descPrefix != "" {
		lines = append(lines, "Every tool description below starts: "+docLine(ir.descPrefix))
	}
	writeBlock(b, "", lines)
}

// writeToolDoc writes a tool's doc comment on lines of its own.
func writeToolDoc(b *strings.Builder, t *toolIR) {
	writeDocAt(b, "", t.doc, t.warns, false)
}

// writeNamed writes `<export>type Name = …;` at indentation ind with the
// type's doc comment.
func writeNamed(b *strings.Builder, p printer, ind, export string, n *named) {
	writeDoc(b, ind, n.doc, hoist(n.body))
	b.WriteString(export + "type " + n.name + " = ")
	p.typ(b, n.body, ind, ctxTop)
	b.WriteString(";\n")
}

// writeSig writes `(input: T): Promise<R>;` following §5.3: no declared
// input takes an optional open object, an input whose properties are all
// optional is optional, and a tool without an outputSchema returns the
// §5.3.2 union declared once in the standard library.
func writeSig(b *strings.Builder, p printer, ind string, t *toolIR) {
	switch {
	case t.input == nil:
		b.WriteString("(input?: Record<string, unknown>)")
	default:
		b.WriteString("(input")
		if t.inputOpt {
			b.WriteString("?")
		}
		b.WriteString(": ")
		p.typ(b, t.input, ind, ctxTop)
		b.WriteString(")")
	}
	b.WriteString(": Promise<")
	if t.output == nil {
		b.WriteString("ToolResult")
	} else {
		p.typ(b, t.output, ind, ctxTop)
	}
	b.WriteString(">;\n")
}

// exportSpec is an export name as written after `as`: an identifier name, or
// a string literal for a caller-supplied name that is not one.
func exportSpec(name string) string {
	if isIdentName(name) {
		return name
	}
	return quote(name)
}

// Index renders a compact index of servers and their tools with one-line
// summaries, for when the full declarations would exceed a token budget. One
// line per server (`<id> — <name> <version>: <summary>`) and one indented
// line per tool (`<exportName> — <summary>`).
func Index(servers []Server, opts *Options) string {
	omit := opts != nil && opts.OmitDescriptions
	var b strings.Builder
	for _, s := range servers {
		head := s.ID
		if nv := strings.TrimSpace(s.Name + " " + s.Version); nv != "" {
			head += " — " + docLine(nv)
		}
		if sum := summary(s.Description); sum != "" && !omit {
			head += ": " + sum
		}
		b.WriteString(head + "\n")
		exports := exportNames(s.Tools)
		for i, t := range s.Tools {
			line := "  " + exports[i]
			if sum := summary(t.Description); sum != "" && !omit {
				line += " — " + sum
			}
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// maxSummary bounds a one-line summary, in runes.
const maxSummary = 120

// summary is the first sentence of a description, on one line.
func summary(desc string) string {
	s := docLine(desc)
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i+1]
	}
	if utf8.RuneCountInString(s) > maxSummary {
		r := []rune(s)
		s = strings.TrimSpace(string(r[:maxSummary])) + "…"
	}
	return s
}
