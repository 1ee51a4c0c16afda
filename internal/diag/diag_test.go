package diag

import (
	"testing"
	"unicode/utf8"
)

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"abcdef", 3, "abc"},
		// "é" is two bytes: cutting inside it backs off to the start.
		{"aéb", 2, "a"},
	} {
		got := Cut(tc.in, tc.n)
		if got != tc.want || !utf8.ValidString(got) {
			t.Errorf("Cut(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
