package upstream

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/codemode-mcp/codemode/internal/config"
)

func TestStderrSink(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	s := newStderrSink(slog.New(slog.NewTextHandler(&logs, nil)).With("server", "x"), nil)
	for i := range 1000 {
		fmt.Fprintf(s, "line %d\r\n", i)
	}
	tail := s.Tail()
	if len(tail) > tailSize || len(tail) < tailSize-20 || !strings.HasSuffix(tail, "line 999\r\n") || !strings.HasPrefix(tail, "line ") {
		t.Errorf("tail after 1000 lines: %d bytes, starts %q", len(tail), tail[:min(len(tail), 20)])
	}
	s.Write([]byte("partial ")) // split across writes
	s.Write([]byte("end\n\n   \n"))
	s.Write([]byte(strings.Repeat("y", 3*maxLogLine) + "\n"))
	s.Write([]byte("no newline at exit"))
	// The window starts inside the long line, which is dropped whole.
	if tail := s.Tail(); tail != "no newline at exit" {
		t.Errorf("tail = %q", tail[:min(len(tail), 40)])
	}
	out := logs.String()
	for _, want := range []string{`line="line 0"`, `line="line 999"`, `line="partial end"`, "server=x"} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %s", want)
		}
	}
	if strings.Contains(out, "no newline") {
		t.Error("an incomplete line was logged before flush")
	}
	if n := strings.Count(out, `msg="upstream stderr"`); n != 1000+1+3 {
		t.Errorf("%d log records, want %d (blank lines skipped, long line split)", n, 1000+1+3)
	}
	s.flush()
	if !strings.Contains(logs.String(), "no newline at exit") {
		t.Error("flush did not log the last line")
	}

	// A short tail is returned whole; a multi-byte rune cut by the ring
	// start does not make invalid UTF-8.
	s2 := newStderrSink(slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	s2.Write([]byte("é" + strings.Repeat("é", tailSize/2)))
	if tail := s2.Tail(); !utf8.ValidString(tail) || len(tail) > tailSize {
		t.Errorf("tail of runes: valid %v, %d bytes", utf8.ValidString(tail), len(tail))
	}
}

// Nothing a child writes reaches the gateway's stdout, which is the MCP
// channel when the gateway is served over stdio. Not parallel: it swaps
// os.Stdout.
func TestStdoutHygiene(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdout
	os.Stdout = w
	var logs syncBuffer
	func() {
		defer func() { os.Stdout = saved }()
		m := New([]config.Server{helperServer(t, "h", "server"), helperServer(t, "f", "fail")},
			&Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		defer m.Close()
		call(t, m, "h", "spam", map[string]any{"lines": 200})
		m.Snapshot(t.Context(), "f")
	}()
	w.Close()
	leaked, _ := io.ReadAll(r)
	if len(leaked) > 0 {
		t.Errorf("%d bytes reached stdout: %q", len(leaked), leaked[:min(len(leaked), 200)])
	}
	for _, want := range []string{"spam line 199", "fatal: cannot open database", "server=h", "server=f"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the logger did not get %q", want)
		}
	}
}

// The package's code never prints: everything goes through slog.
func TestNoPrinting(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok {
					sel := x.Name + "." + n.Sel.Name
					if sel == "os.Stdout" || sel == "fmt.Print" || sel == "fmt.Println" || sel == "fmt.Printf" {
						t.Errorf("%s: uses %s", fset.Position(n.Pos()), sel)
					}
				}
			case *ast.Ident:
				if n.Name == "println" || n.Name == "print" {
					t.Errorf("%s: uses %s", fset.Position(n.Pos()), strconv.Quote(n.Name))
				}
			}
			return true
		})
	}
}
