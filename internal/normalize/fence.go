package normalize

import "strings"

// Markdown fences are not JavaScript: they are the wrapping a model puts
// around code in a chat answer. Reading them needs no JavaScript parser,
// only markdown's own rule (a line that starts with three backticks or
// tildes), so this file works on lines. It never moves a character of the
// code: every line outside the code block is blanked (its bytes become
// spaces, its line break kept), so that positions in the code block are the
// agent's own.

// fence is a fenced code block: the byte offsets of its opening and closing
// fence lines (the close is -1 when the block runs to the end of the text),
// and its info string ("js", "ts", "" …).
type fence struct {
	open, close int
	info        string
}

// codeInfos are the info strings of blocks that hold a script.
var codeInfos = map[string]bool{"": true, "js": true, "javascript": true, "ts": true, "typescript": true,
	"mjs": true, "mts": true, "jsx": true, "tsx": true, "node": true, "esm": true}

// findFence returns the first fenced block of src whose info string names
// JavaScript or TypeScript (or nothing), and whether the text before it is
// blank: a script that starts with its fence is surely fenced, one whose
// fence comes after prose only if it does not parse as it is.
func findFence(src string) (f fence, first, ok bool) {
	if !strings.Contains(src, "```") && !strings.Contains(src, "~~~") {
		return fence{}, false, false
	}
	blank := true
	for off := 0; off < len(src); {
		line, next := lineAt(src, off)
		trimmed := strings.TrimSpace(line)
		if marker := fenceMarker(trimmed); marker != "" {
			info := strings.ToLower(strings.TrimSpace(strings.TrimLeft(trimmed, marker[:1])))
			if i := strings.IndexAny(info, " \t{"); i >= 0 {
				info = info[:i]
			}
			f = fence{open: off, close: -1, info: info}
			for o := next; o < len(src); {
				l, n := lineAt(src, o)
				if t := strings.TrimSpace(l); strings.HasPrefix(t, marker) && strings.Trim(t, marker[:1]) == "" {
					f.close = o
					break
				}
				o = n
			}
			if codeInfos[info] {
				return f, blank, true
			}
			if f.close < 0 {
				return fence{}, false, false
			}
			next, _ = nextLine(src, f.close)
			blank = false
		} else if trimmed != "" {
			blank = false
		}
		off = next
	}
	return fence{}, false, false
}

// fenceMarker returns the run of backticks or tildes (at least three) that
// opens line, or "".
func fenceMarker(line string) string {
	for _, c := range []byte{'`', '~'} {
		n := 0
		for n < len(line) && line[n] == c {
			n++
		}
		if n >= 3 {
			return line[:n]
		}
	}
	return ""
}

// unfence blanks everything of src but the code inside f.
func unfence(src string, f fence) string {
	b := []byte(src)
	_, start := nextLine(src, f.open)
	end := len(src)
	if f.close >= 0 {
		end = f.close
	}
	blankBytes(b[:start])
	blankBytes(b[end:])
	return string(b)
}

// blankBytes turns every byte but line breaks into a space.
func blankBytes(b []byte) {
	for i, c := range b {
		if c != '\n' && c != '\r' {
			b[i] = ' '
		}
	}
}

// lineAt returns the line starting at off (without its line break) and the
// offset of the next line.
func lineAt(s string, off int) (string, int) {
	i := strings.IndexByte(s[off:], '\n')
	if i < 0 {
		return strings.TrimSuffix(s[off:], "\r"), len(s)
	}
	return strings.TrimSuffix(s[off:off+i], "\r"), off + i + 1
}

// nextLine returns the offset of the line after the one at off (also as
// the second result, for symmetry with lineAt's callers).
func nextLine(s string, off int) (int, int) {
	_, n := lineAt(s, off)
	return n, n
}
