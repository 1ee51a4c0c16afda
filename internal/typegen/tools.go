package typegen

import "strings"

// This file turns one MCP tool into a toolIR: its converted input and output
// types (§5.3) and its doc comment (description, title, §6.3 annotations).

// convertTool fills t (whose names build has set) from tool.
func convertTool(g *gen, tool Tool, t *toolIR) {
	var rootDocs []string
	in, err := decodeSchema(tool.InputSchema)
	switch {
	case err != nil:
		msg := "inputSchema cannot be read: " + err.Error()
		g.warns = append(g.warns, Warning{Tool: tool.Name, Path: "/inputSchema", Message: msg})
		t.input, t.inputOpt = unknownWarn(msg), true
	case in == nil:
	default:
		c := newConv(g, in, tool.Name, "inputSchema", t.export)
		t.input = c.root()
		t.inputOpt = optionalInput(t.input)
		if d, ok := in.str("description"); ok && !g.opts.OmitDescriptions {
			rootDocs = append(rootDocs, "@param input "+docLine(d))
		}
	}
	if t.input != nil && isUnknown(t.input) && len(t.input.warn) == 0 {
		t.input = nil // `{}` or `true`: an empty input schema (§5.3.1)
	}
	out, err := decodeSchema(tool.OutputSchema)
	switch {
	case err != nil:
		msg := "outputSchema cannot be read: " + err.Error()
		g.warns = append(g.warns, Warning{Tool: tool.Name, Path: "/outputSchema", Message: msg})
		t.output = unknownWarn(msg)
	case out != nil:
		c := newConv(g, out, tool.Name, "outputSchema", t.export)
		t.output = c.root()
		if d, ok := out.str("description"); ok && !g.opts.OmitDescriptions {
			rootDocs = append(rootDocs, "@returns "+docLine(d))
		}
	}
	t.doc = toolDoc(g.opts, tool, rootDocs)
	if t.input != nil {
		t.warns = append(t.warns, hoist(t.input)...)
	}
	if t.output != nil {
		t.warns = append(t.warns, hoist(t.output)...)
	}
	t.warns = dedupStrings(t.warns)
}

// optionalInput reports whether the input argument may be left out: an
// object (or a named object) with no required property.
func optionalInput(t *tsType) bool {
	if t.kind == tRef && t.ref.body != nil {
		t = t.ref.body
	}
	if t.kind != tObject {
		return isUnknown(t)
	}
	for _, p := range t.props {
		if !p.optional {
			return false
		}
	}
	return true
}

// toolDoc is the doc comment of a tool: description, title, MCP annotations
// (§6.3) and root schema descriptions. Warnings are added when printing.
func toolDoc(opts Options, tool Tool, rootDocs []string) docInfo {
	var d docInfo
	if !opts.OmitDescriptions {
		d.text = tool.Description
	}
	title := tool.Title
	var hints []string
	if a := tool.Annotations; a != nil {
		if title == "" {
			title = a.Title
		}
		// One tag per hint the server set, in MCP's words. destructiveHint
		// and idempotentHint only mean something when the tool is not
		// read-only (MCP spec), so @readOnly alone says it all.
		if a.ReadOnlyHint {
			hints = append(hints, "@readOnly")
		} else {
			if a.DestructiveHint != nil {
				hints = append(hints, pick(*a.DestructiveHint, "@destructive", "@nonDestructive"))
			}
			if a.IdempotentHint {
				hints = append(hints, "@idempotent")
			}
		}
		if a.OpenWorldHint != nil {
			hints = append(hints, pick(*a.OpenWorldHint, "@openWorld", "@closedWorld"))
		}
	}
	if title != "" && !sameWords(title, tool.Name) {
		d.tags = append(d.tags, "@title "+docLine(title))
	}
	if tool.RequiresApproval {
		// The gateway's policy, not the server's: first, so that a model
		// skimming the tags sees it.
		hints = append([]string{"@requiresApproval"}, hints...)
	}
	d.tags = append(d.tags, hints...)
	d.tags = append(d.tags, rootDocs...)
	return d
}

func pick(b bool, yes, no string) string {
	if b {
		return yes
	}
	return no
}

// minSharedPrefix is the shortest description prefix worth hoisting.
const minSharedPrefix = 20

// sharedPrefix returns the longest prefix, ending at a sentence or line
// boundary, that the descriptions of all tools (at least three) share and
// that leaves every description something of its own.
func sharedPrefix(tools []Tool) string {
	if len(tools) < 3 {
		return ""
	}
	p := tools[0].Description
	for _, t := range tools[1:] {
		n := 0
		for n < len(p) && n < len(t.Description) && p[n] == t.Description[n] {
			n++
		}
		p = p[:n]
	}
	cut := -1
	for i := 0; i+1 < len(p); i++ {
		if strings.IndexByte(".!?:", p[i]) >= 0 && (p[i+1] == ' ' || p[i+1] == '\n') || p[i] == '\n' {
			cut = i + 1
		}
	}
	if cut < minSharedPrefix {
		return ""
	}
	p = p[:cut]
	for _, t := range tools {
		if strings.TrimSpace(t.Description[len(p):]) == "" {
			return ""
		}
	}
	return p
}
