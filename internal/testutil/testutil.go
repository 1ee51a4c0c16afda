// Package testutil holds helpers shared by tests that drive real MCP
// servers and clients: where the pinned npm packages are installed and how
// to configure them (testutil.go), and how to wait without depending on the
// clock: for a channel or a state, bounded only by the test binary's own
// deadline (wait.go). Only _test.go files import it.
package testutil

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/naming"
)

// Root returns the repository root.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// NPMBin returns the path of an executable installed by `npm ci` in
// testdata/npm, failing the test with the fix if it is missing.
func NPMBin(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(Root(), "testdata", "npm", "node_modules", ".bin", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is not installed: run `make test`, or `npm ci --prefix testdata/npm` once, before `go test` (%v)", name, err)
	}
	return p
}

// Node returns the pinned Node 22 binary.
func Node(t testing.TB) string { return NPMBin(t, "node") }

// Everything is the config of @modelcontextprotocol/server-everything over
// stdio.
func Everything(t testing.TB, name string) config.Server {
	return config.Server{Name: name, Transport: config.Stdio, Command: NPMBin(t, "mcp-server-everything"), Args: []string{"stdio"}}
}

// Memory is the config of @modelcontextprotocol/server-memory with its
// graph in a fresh temporary file.
func Memory(t testing.TB, name string) config.Server {
	return config.Server{Name: name, Transport: config.Stdio, Command: NPMBin(t, "mcp-server-memory"),
		Env: map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}}
}

// Filesystem is the config of @modelcontextprotocol/server-filesystem
// allowed to work in dir.
func Filesystem(t testing.TB, name, dir string) config.Server {
	return config.Server{Name: name, Transport: config.Stdio, Command: NPMBin(t, "mcp-server-filesystem"), Args: []string{dir}}
}

// SequentialThinking is the config of
// @modelcontextprotocol/server-sequential-thinking.
func SequentialThinking(t testing.TB, name string) config.Server {
	return config.Server{Name: name, Transport: config.Stdio, Command: NPMBin(t, "mcp-server-sequential-thinking"),
		Env: map[string]string{"DISABLE_THOUGHT_LOGGING": "true"}}
}

// Config returns a configuration of servers with their ids assigned as
// config.Load would (§5.0.1) and the built-in settings.
func Config(servers ...config.Server) *config.Config {
	c := config.Default()
	names := make([]string, len(servers))
	for i, s := range servers {
		names[i] = s.Name
	}
	for i, id := range naming.ServerIDs(names) {
		servers[i].ID = id
	}
	c.Servers = servers
	return c
}
