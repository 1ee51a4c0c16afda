package naming

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

func TestIdentifier(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"get-sum", "get_sum"},
		{"read_file", "read_file"},
		{"123tool", "_123tool"},
		{"export", "export_"},
		{"await", "await_"},
		{"enum", "enum"}, // not in the §6.1 list: stays as it is
		{"a.b c", "a_b_c"},
		{"$x", "$x"},
		{"ünï", "_n_"},
		{"", "_"},
		{"9", "_9"},
	} {
		if got := Identifier(tc.in); got != tc.want {
			t.Errorf("Identifier(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestExportNamesCollisionsAlphabetical(t *testing.T) {
	// Given in reverse order: assignment must follow canonical (sorted) order.
	got := ExportNames([]string{"get_sum", "get.sum", "get-sum"})
	want := map[string]string{"get-sum": "get_sum", "get.sum": "get_sum__2", "get_sum": "get_sum__3"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("ExportNames[%q] = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
}

func TestExportNamesLiteralSuffixKeepsCleanName(t *testing.T) {
	got := ExportNames([]string{"x_y", "x-y", "x_y__2"})
	// "x-y" and "x_y" both sanitise to "x_y"; "x_y__2" is a clean name of its
	// own and keeps it, so the second "x_y" moves on to "x_y__3".
	if got["x-y"] != "x_y" || got["x_y__2"] != "x_y__2" || got["x_y"] != "x_y__3" {
		t.Fatalf("got %v", got)
	}
}

func TestExportNamesMetaIsTaken(t *testing.T) {
	// A tool literally named "__meta__" must not shadow the module's
	// description export: it collides and takes the first suffix.
	got := ExportNames([]string{"__meta__", "ok"})
	if got["__meta__"] != "__meta____2" || got["ok"] != "ok" {
		t.Fatalf("got %v", got)
	}
}

func TestServerIDs(t *testing.T) {
	got := ServerIDs([]string{"Memory_Graph", "memory graph", "GitHub", "--x--", "___", "memory-graph"})
	want := []string{"memory-graph", "memory-graph--2", "github", "x", "server", "memory-graph--3"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ServerIDs = %v, want %v", got, want)
	}
}

var (
	identRE    = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)
	serverIDRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*(--[0-9]+)?$`)
)

func FuzzExportNames(f *testing.F) {
	for _, s := range []string{"get-sum\nget_sum", "export\nexport_", "1a\n_1a", "a\na-\na__2", "ü\n_"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, joined string) {
		names := strings.Split(joined, "\n")
		got := ExportNames(names)
		seen := map[string]string{}
		for _, n := range names {
			id, ok := got[n]
			if !ok {
				t.Fatalf("no export name for %q", n)
			}
			if !identRE.MatchString(id) || reserved[id] {
				t.Fatalf("ExportNames(%q) = %q: not a valid identifier", n, id)
			}
			if id == MetaExport {
				t.Fatalf("ExportNames(%q) = %q: collides with the module's own export", n, id)
			}
			if other, dup := seen[id]; dup && other != n {
				t.Fatalf("%q and %q both map to %q", other, n, id)
			}
			seen[id] = n
		}
		// Order independence.
		rev := append([]string(nil), names...)
		for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
			rev[i], rev[j] = rev[j], rev[i]
		}
		again := ExportNames(rev)
		for k, v := range got {
			if again[k] != v {
				t.Fatalf("order dependence: %q -> %q vs %q", k, v, again[k])
			}
		}
	})
}

func FuzzServerIDs(f *testing.F) {
	for _, s := range []string{"Memory_Graph\nmemory graph", "a\nA\na--2", "___\n---", "ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, joined string) {
		names := strings.Split(joined, "\n")
		ids := ServerIDs(names)
		seen := map[string]bool{}
		for i, id := range ids {
			if !serverIDRE.MatchString(id) {
				t.Fatalf("ServerIDs(%q)[%d] = %q: not a valid path segment", names, i, id)
			}
			if seen[id] {
				t.Fatalf("collision on %q in %q", id, ids)
			}
			seen[id] = true
		}
	})
}
