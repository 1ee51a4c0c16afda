package typegen

import (
	"strings"
	"unicode/utf8"
)

// docInfo is what a doc comment says about one property, type or function:
// the description and tags such as "@default 10". Warnings are not stored
// here: the printer collects them from the type (see hoist) so that they
// appear even when descriptions are omitted.
type docInfo struct {
	text string
	tags []string
}

func (d docInfo) empty() bool { return d.text == "" && len(d.tags) == 0 }

// cleanLines makes description text safe and compact inside a block comment:
// `*/` cannot end the comment early, control characters and the JavaScript
// line separators become spaces, trailing blanks go and blank lines collapse.
func cleanLines(s string) []string {
	if s == "" {
		return nil
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case r == '\r' || r < 0x20 || r == 0x7f || r == 0x2028 || r == 0x2029 || r == 0x85:
			return ' '
		}
		return r
	}, s)
	s = strings.ReplaceAll(s, "*/", "*\\/")
	var out []string
	blank := true // drop leading blank lines
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimRight(l, " \t")
		if l == "" {
			if !blank {
				out = append(out, "")
			}
			blank = true
			continue
		}
		blank = false
		out = append(out, l)
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return dedent(out)
}

// dedent removes indentation that only comes from how the description was
// written in source code (a Python docstring, a Go raw string): the first
// line's, and the indentation common to all later non-blank lines, like
// Python's inspect.cleandoc. Relative indentation (nested lists) stays.
func dedent(lines []string) []string {
	if len(lines) == 0 {
		return lines
	}
	lines[0] = strings.TrimLeft(lines[0], " \t")
	common := -1
	for _, l := range lines[1:] {
		if l == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " \t"))
		if common < 0 || n < common {
			common = n
		}
	}
	if common > 0 {
		for i := 1; i < len(lines); i++ {
			if len(lines[i]) >= common {
				lines[i] = lines[i][common:]
			}
		}
	}
	return lines
}

// docLine is s cleaned onto a single line.
func docLine(s string) string {
	ls := cleanLines(s)
	for i := range ls {
		ls[i] = strings.TrimSpace(ls[i])
	}
	return strings.Join(strings.Fields(strings.Join(ls, " ")), " ")
}

// writeDoc starts a declaration at indentation ind with its doc comment:
// nothing but the indentation if there is no doc, `/** … */ ` on the same
// line as the declaration when the description is one line (the common case,
// and the one that costs fewest tokens), a block comment otherwise. The
// caller writes the declaration next.
func writeDoc(b *strings.Builder, ind string, d docInfo, warns []string) {
	writeDocAt(b, ind, d, warns, true)
}

// writeDocAt is writeDoc with a choice: sameLine false puts even a one-line
// comment on a line of its own (tools, whose declarations are long).
func writeDocAt(b *strings.Builder, ind string, d docInfo, warns []string, sameLine bool) {
	lines := cleanLines(d.text)
	extra := append([]string(nil), d.tags...)
	for _, w := range warns {
		extra = append(extra, "@warning "+docLine(w))
	}
	if len(lines) <= 1 {
		parts := append(lines, extra...)
		b.WriteString(ind)
		if len(parts) > 0 {
			b.WriteString("/** " + strings.Join(parts, " ") + " */")
			if sameLine {
				b.WriteString(" ")
			} else {
				b.WriteString("\n" + ind)
			}
		}
		return
	}
	writeBlock(b, ind, append(lines, extra...))
	b.WriteString(ind)
}

// writeBlock writes lines as a doc comment, on one line if there is only
// one.
func writeBlock(b *strings.Builder, ind string, lines []string) {
	switch len(lines) {
	case 0:
		return
	case 1:
		b.WriteString(ind + "/** " + lines[0] + " */\n")
		return
	}
	b.WriteString(ind + "/**\n")
	for _, l := range lines {
		if l == "" {
			b.WriteString("\n")
		} else {
			b.WriteString(ind + l + "\n")
		}
	}
	b.WriteString(ind + "*/\n")
}
