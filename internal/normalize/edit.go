package normalize

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/grafana/sobek/ast"
)

// edit replaces del bytes at offset at of the readable JavaScript with ins.
type edit struct {
	at, del int
	ins     string
}

type edits []edit

func (e edits) sort() {
	slices.SortStableFunc(e, func(a, b edit) int { return a.at - b.at })
}

// apply returns s with the edits made (sorted, not overlapping).
func (e edits) apply(s string) string {
	var b strings.Builder
	last := 0
	for _, x := range e {
		if x.at < last { // overlapping: cannot happen, statements do not overlap
			continue
		}
		b.WriteString(s[last:x.at])
		b.WriteString(x.ins)
		last = x.at + x.del
	}
	b.WriteString(s[last:])
	return b.String()
}

// back maps an offset in the edited text to the original: a position in
// inserted text maps to where the insertion was made.
func (e edits) back(off int) int {
	shift := 0 // original = edited - shift, past the edits seen so far
	last := 0
	for _, x := range e {
		if x.at < last {
			continue
		}
		start := x.at - shift // where the edit's text starts in the edited text
		if off < start {
			break
		}
		if off < start+len(x.ins) {
			return x.at
		}
		shift += x.del - len(x.ins)
		last = x.at + x.del
	}
	return max(off+shift, 0)
}

// dynamicImport is the statement equivalent to an import declaration in a
// function body: `import d, { a, b as c } from "m"` is
// `const { default: d, a, b: c } = await import("m");`.
func dynamicImport(n *ast.ImportDeclaration) string {
	q, _ := json.Marshal(importSpecifier(n))
	call := "await import(" + string(q) + ")"
	c := n.ImportClause
	if c == nil {
		return call + ";"
	}
	var names []string
	if c.ImportedDefaultBinding != nil {
		names = append(names, "default: "+string(c.ImportedDefaultBinding.Name))
	}
	if c.NamedImports != nil {
		for _, s := range c.NamedImports.ImportsList {
			name, alias := string(s.IdentifierName), string(s.Alias)
			switch {
			case alias == "" || alias == name:
				names = append(names, name)
			case isIdentifier(name):
				names = append(names, name+": "+alias)
			default:
				k, _ := json.Marshal(name)
				names = append(names, string(k)+": "+alias)
			}
		}
	}
	if c.NameSpaceImport != nil {
		ns := string(c.NameSpaceImport.ImportedBinding)
		if len(names) == 0 {
			return "const " + ns + " = " + call + ";"
		}
		return "const " + ns + " = " + call + ", { " + strings.Join(names, ", ") + " } = " + ns + ";"
	}
	return "const { " + strings.Join(names, ", ") + " } = " + call + ";"
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		ok := c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80 || i > 0 && c >= '0' && c <= '9'
		if !ok {
			return false
		}
	}
	return true
}

// importSpecifier is the module an import declaration names.
func importSpecifier(n *ast.ImportDeclaration) string {
	if n.FromClause != nil {
		return string(n.FromClause.ModuleSpecifier)
	}
	return string(n.ModuleSpecifier)
}
