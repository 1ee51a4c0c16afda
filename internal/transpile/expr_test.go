package transpile

import (
	"context"
	"testing"
)

// TrailingCode finds where code that must be one expression goes on after
// one, and only then.
func TestTrailingCode(t *testing.T) {
	for _, c := range []struct {
		src       string
		line, col int
		ok        bool
	}{
		{"not a function", 1, 5, true},
		{"async (c) => c.servers; foo()", 1, 23, true},
		{"async (catalog) => catalog.servers\nconsole.log(1)", 2, 1, true},
		{`"😀" x`, 1, 6, true},
		{"async (c) => { c.x( }", 0, 0, false},
		{"async (c) => c.servers", 0, 0, false},
		{"return 5", 0, 0, false},
		{"const x = 1; x", 0, 0, false},
		{"(a", 0, 0, false},
		{"", 0, 0, false},
	} {
		line, col, ok := TrailingCode(context.Background(), c.src)
		if line != c.line || col != c.col || ok != c.ok {
			t.Errorf("TrailingCode(%q) = %d, %d, %v; want %d, %d, %v", c.src, line, col, ok, c.line, c.col, c.ok)
		}
	}
}
