package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/codemode-mcp/codemode/internal/serve"
	"github.com/codemode-mcp/codemode/internal/typegen"
)

// stdlibFile is the name of the standard library's declarations.
const stdlibFile = "codemode.d.ts"

func (e *env) types(args []string) int {
	fs := newFlagSet("types", e.stderr, "types [--config FILE] [--out DIR]")
	var c common
	c.register(fs, "warn")
	var out string
	var timeout time.Duration
	fs.StringVar(&out, "out", "", "write <serverId>.d.ts per server and "+stdlibFile+" into DIR instead of printing them")
	fs.DurationVar(&timeout, "timeout", 60*time.Second, "how long to wait for the servers to connect")
	pos, err := parse(fs, args)
	if err != nil {
		return e.usageErr(err)
	}
	if len(pos) > 0 {
		return e.usageErr(fmt.Errorf("types takes no arguments, got %q", pos))
	}
	g, status := e.open(c, nil)
	if g == nil {
		return status
	}
	defer g.close()

	ctx, cancel := context.WithTimeout(e.ctx, timeout)
	defer cancel()
	servers, failed := g.cat.View().All(ctx)
	type file struct{ name, text string }
	files := []file{{stdlibFile, typegen.Stdlib()}}
	for _, s := range servers {
		text, warns := typegen.ServerModule(serve.Declarations(s), nil)
		for _, w := range warns {
			g.log.Warn("declaration fell back to unknown", "server", s.ID, "tool", w.Tool, "path", w.Path, "reason", w.Message)
		}
		files = append(files, file{s.ID + ".d.ts", text})
	}
	code := ExitOK
	for _, id := range g.cat.View().IDs() {
		if err, ok := failed[id]; ok {
			fmt.Fprintf(e.stderr, "codemode: no declarations for %q: %v\n", id, err)
			code = ExitFailed
		}
	}
	if out == "" {
		for _, f := range files {
			fmt.Fprintf(e.stdout, "// ==== %s ====\n%s\n", f.name, f.text)
		}
		return code
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return e.usageErr(err)
	}
	for _, f := range files {
		p := filepath.Join(out, f.name)
		if err := os.WriteFile(p, []byte(f.text), 0o644); err != nil {
			fmt.Fprintln(e.stderr, "codemode:", err)
			return ExitFailed
		}
		fmt.Fprintln(e.stderr, "wrote", p)
	}
	return code
}
