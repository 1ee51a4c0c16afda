package typegen

import (
	"strings"
)

// This file prints tsType trees as TypeScript. Small types go on one line;
// objects whose members need doc comments, or that would be wider than
// lineBudget, go on several lines with two-space indentation.

// ctx is the syntactic position of a type, which decides parentheses.
type ctx uint8

const (
	ctxTop   ctx = iota // anywhere a full type is allowed
	ctxInter            // member of an intersection: unions need parentheses
	ctxPost             // before [] or ?: unions, intersections and negative literals need them
)

// lineBudget is the widest one-line rendering of an object type we keep on
// one line.
const lineBudget = 100

type printer struct {
	qual string // prefix of named type references ("ns." in the global rendering)
}

// flat renders t on one line. It fails when the text would exceed budget
// (budget < 0: no limit) or, if strict, when something inside needs a doc
// comment. With strict false it never fails: that is the canonical form used
// for comparisons (key), which has no notes.
func (p *printer) flat(t *tsType, c ctx, budget int) (string, bool) {
	f := flatPrinter{p: p, budget: budget, strict: budget >= 0}
	f.typ(t, c)
	return f.b.String(), !f.fail
}

type flatPrinter struct {
	p      *printer
	b      strings.Builder
	budget int
	strict bool
	fail   bool
}

func (f *flatPrinter) w(s string) {
	if f.fail {
		return
	}
	f.b.WriteString(s)
	if f.budget >= 0 && f.b.Len() > f.budget {
		f.fail = true
	}
}

func (f *flatPrinter) typ(t *tsType, c ctx) {
	if f.fail {
		return
	}
	switch t.kind {
	case tPrim, tRaw:
		f.w(t.name)
	case tLit:
		if c == ctxPost && strings.HasPrefix(t.name, "-") {
			f.w("(" + t.name + ")")
		} else {
			f.w(t.name)
		}
	case tRef:
		f.w(f.p.qual + t.ref.name)
	case tArray:
		f.typ(t.elem, ctxPost)
		f.w("[]")
	case tTuple:
		f.w("[")
		for i, e := range t.elems {
			if i > 0 {
				f.w(", ")
			}
			if i >= t.minLen {
				f.typ(e, ctxPost)
				f.w("?")
			} else {
				f.typ(e, ctxTop)
			}
		}
		if t.elem != nil {
			if len(t.elems) > 0 {
				f.w(", ")
			}
			f.w("...")
			f.typ(t.elem, ctxPost)
			f.w("[]")
		}
		f.w("]")
	case tUnion, tInter:
		sep, inner := " | ", ctxInter
		paren := c != ctxTop
		if t.kind == tInter {
			sep, inner, paren = " & ", ctxInter, c == ctxPost
		}
		if paren {
			f.w("(")
		}
		for i, m := range t.members {
			if i > 0 {
				f.w(sep)
			}
			if f.strict && t.kind == tUnion && m.note != "" {
				f.w("/** " + docLine(m.note) + " */ ")
			}
			f.typ(m, inner)
		}
		if paren {
			f.w(")")
		}
	case tObject:
		f.object(t)
	}
}

func (f *flatPrinter) object(t *tsType) {
	if len(t.props) == 0 && len(t.index) == 0 {
		f.w("Record<string, never>")
		return
	}
	// Record<string, T> is shorter than { [key: string]: T }, but TypeScript
	// expands it eagerly: a named type inside T could make its alias
	// circular (TS2456), so T must not refer to one.
	if len(t.props) == 0 && len(t.index) == 1 && t.index[0].prefix == "" && !f.needsDoc(t.index[0].doc, t.index[0].t) && !hasRef(t.index[0].t) {
		f.w("Record<string, ")
		f.typ(t.index[0].t, ctxTop)
		f.w(">")
		return
	}
	f.w("{ ")
	n := 0
	for _, pr := range t.props {
		if f.needsDoc(pr.doc, pr.t) {
			f.fail = true
			return
		}
		if n > 0 {
			f.w("; ")
		}
		n++
		f.w(propName(pr.name))
		if pr.optional {
			f.w("?")
		}
		f.w(": ")
		f.typ(pr.t, ctxTop)
	}
	for _, s := range t.index {
		if f.needsDoc(s.doc, s.t) {
			f.fail = true
			return
		}
		if n > 0 {
			f.w("; ")
		}
		n++
		f.w("[key: " + s.keyType() + "]: ")
		f.typ(s.t, ctxTop)
	}
	f.w(" }")
}

// hasRef reports whether t mentions a named type.
func hasRef(t *tsType) bool {
	if t == nil {
		return false
	}
	switch t.kind {
	case tRef:
		return true
	case tArray:
		return hasRef(t.elem)
	case tTuple:
		for _, e := range t.elems {
			if hasRef(e) {
				return true
			}
		}
		return hasRef(t.elem)
	case tObject:
		for _, p := range t.props {
			if hasRef(p.t) {
				return true
			}
		}
		for _, s := range t.index {
			if hasRef(s.t) {
				return true
			}
		}
	case tUnion, tInter:
		for _, m := range t.members {
			if hasRef(m) {
				return true
			}
		}
	}
	return false
}

func (f *flatPrinter) needsDoc(d docInfo, t *tsType) bool {
	return f.strict && (!d.empty() || len(hoist(t)) > 0)
}

func (s *indexSig) keyType() string {
	if s.prefix == "" {
		return "string"
	}
	return "`" + templateText(s.prefix) + "${string}`"
}

// templateText escapes s for the inside of a template literal type.
func templateText(s string) string {
	r := strings.NewReplacer("\\", "\\\\", "`", "\\`", "${", "\\${")
	return r.Replace(s)
}

// typ writes t, using several lines where one is not enough. ind is the
// indentation of the line t starts on.
func (p *printer) typ(b *strings.Builder, t *tsType, ind string, c ctx) {
	if s, ok := p.flat(t, c, lineBudget); ok {
		b.WriteString(s)
		return
	}
	switch t.kind {
	case tObject:
		p.object(b, t, ind)
	case tArray:
		p.typ(b, t.elem, ind, ctxPost)
		b.WriteString("[]")
	case tTuple:
		b.WriteString("[")
		for i, e := range t.elems {
			if i > 0 {
				b.WriteString(", ")
			}
			if i >= t.minLen {
				p.typ(b, e, ind, ctxPost)
				b.WriteString("?")
			} else {
				p.typ(b, e, ind, ctxTop)
			}
		}
		if t.elem != nil {
			if len(t.elems) > 0 {
				b.WriteString(", ")
			}
			b.WriteString("...")
			p.typ(b, t.elem, ind, ctxPost)
			b.WriteString("[]")
		}
		b.WriteString("]")
	case tUnion, tInter:
		sep, paren := " | ", c != ctxTop
		if t.kind == tInter {
			sep, paren = " & ", c == ctxPost
		}
		if paren {
			b.WriteString("(")
		}
		for i, m := range t.members {
			if i > 0 {
				b.WriteString(sep)
			}
			if t.kind == tUnion && m.note != "" {
				b.WriteString("/** " + docLine(m.note) + " */ ")
			}
			p.typ(b, m, ind, ctxInter)
		}
		if paren {
			b.WriteString(")")
		}
	default:
		s, _ := p.flat(t, c, -1)
		b.WriteString(s)
	}
}

func (p *printer) object(b *strings.Builder, t *tsType, ind string) {
	in := ind + "  "
	b.WriteString("{\n")
	for _, pr := range t.props {
		writeDoc(b, in, pr.doc, hoist(pr.t))
		b.WriteString(propName(pr.name))
		if pr.optional {
			b.WriteString("?")
		}
		b.WriteString(": ")
		p.typ(b, pr.t, in, ctxTop)
		b.WriteString(";\n")
	}
	for _, s := range t.index {
		writeDoc(b, in, s.doc, hoist(s.t))
		b.WriteString("[key: " + s.keyType() + "]: ")
		p.typ(b, s.t, in, ctxTop)
		b.WriteString(";\n")
	}
	b.WriteString(ind)
	b.WriteString("}")
}

// propName returns name as written in a type literal: bare if it is an ASCII
// identifier name (reserved words are fine there), otherwise quoted.
func propName(name string) string {
	if isIdentName(name) {
		return name
	}
	return quote(name)
}

// isIdentName reports whether s is an ASCII IdentifierName.
func isIdentName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
