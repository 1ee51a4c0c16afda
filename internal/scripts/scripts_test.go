package scripts

import (
	"context"
	"strings"
	"testing"

	"github.com/codemode-mcp/codemode/internal/store"
)

func TestNames(t *testing.T) {
	for _, ok := range []string{"a", "weekly-report", "v1.2_x", strings.Repeat("a", 64)} {
		if err := ValidName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-x", ".x", "a b", "a/b", "a@b", "é", strings.Repeat("a", 65), "../x"} {
		if err := ValidName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	for ref, want := range map[string][2]any{"x": {"x", 0}, "x@3": {"x", 3}} {
		n, v, err := ParseRef(ref)
		if err != nil || n != want[0] || v != want[1] {
			t.Errorf("%s: %s %d %v", ref, n, v, err)
		}
	}
	for _, bad := range []string{"x@", "x@0", "x@-1", "x@a", "@1", "x@1@2"} {
		if _, _, err := ParseRef(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestScripts(t *testing.T) {
	st := store.New(&store.Options{Dir: t.TempDir()})
	defer st.Close()
	s := New(st)
	ctx := context.Background()
	if _, _, err := s.Save(ctx, "bad name", "1", ""); err == nil {
		t.Error("a bad name was saved")
	}
	if _, _, err := s.Save(ctx, "empty", " \n", ""); err == nil {
		t.Error("an empty script was saved")
	}
	s.Save(ctx, "x", "return 1", "")
	s.Save(ctx, "x", "return 2", "")
	if code, full, d := s.Resolve(ctx, "x"); d != nil || code != "return 2" || full != "x@2" {
		t.Errorf("x: %q %q %v", code, full, d)
	}
	if code, full, d := s.Resolve(ctx, "x@1"); d != nil || code != "return 1" || full != "x@1" {
		t.Errorf("x@1: %q %q %v", code, full, d)
	}
	if _, _, d := s.Resolve(ctx, "y"); d == nil || !strings.Contains(d.Hint, "available saved scripts: x") {
		t.Errorf("y: %+v", d)
	}
	if _, err := s.Delete(ctx, "x@5"); err == nil {
		t.Error("deleting a missing version")
	}
	if n, err := s.Delete(ctx, "x"); err != nil || n != 2 {
		t.Errorf("delete: %d %v", n, err)
	}
}
