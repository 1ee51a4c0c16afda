package transpile

import (
	"context"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/codemode-mcp/codemode/internal/diag"
)

// exprOptions parse the code as one parenthesised expression.
var exprOptions = Options{Prefix: "0,(", Suffix: "\n);"}

// TrailingCode is for code that must be one expression (a surface that calls
// the function the code evaluates to) and does not parse as one. When the
// code begins with a complete expression that more code follows ("not a
// function", "async (c) => c; foo()"), it returns the 1-based line and
// column, as diagnostics count them, where that further code starts, and
// true. It is false for code that is broken before its first expression
// ends, which esbuild's own error describes.
func TrailingCode(ctx context.Context, src string) (line, col int, ok bool) {
	_, diags := Module(ctx, src, &exprOptions)
	if len(diags) == 0 || diags[0].Code != diag.SyntaxError {
		return 0, 0, false
	}
	line, col, ok = pathPosition(diags[0].Path)
	if !ok {
		return 0, 0, false
	}
	off := offsetOf(src, line, col)
	head := src[:off]
	if strings.TrimSpace(head) == "" || off >= len(strings.TrimRightFunc(src, unicode.IsSpace)) {
		return 0, 0, false
	}
	if _, d := Module(ctx, head, &exprOptions); len(d) > 0 {
		return 0, 0, false
	}
	return line, col, true
}

// pathPosition reads the line and column of a diagnostic's "file:line:col".
func pathPosition(path string) (line, col int, ok bool) {
	rest, c, ok1 := cutLast(path)
	_, l, ok2 := cutLast(rest)
	line, err1 := strconv.Atoi(l)
	col, err2 := strconv.Atoi(c)
	return line, col, ok1 && ok2 && err1 == nil && err2 == nil
}

func cutLast(s string) (before, after string, ok bool) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+1:], true
}

// offsetOf is the byte offset of a 1-based line and column (in UTF-16 code
// units, see lineCol) in src.
func offsetOf(src string, line, col int) int {
	off := 0
	for l := 1; l < line && off < len(src); {
		if n := lineBreak(src, off); n > 0 {
			off += n
			l++
			continue
		}
		off++
	}
	for units := 1; units < col && off < len(src); {
		if lineBreak(src, off) > 0 {
			break
		}
		r, size := utf8.DecodeRuneInString(src[off:])
		off += size
		units++
		if r >= 0x10000 {
			units++
		}
	}
	return off
}
