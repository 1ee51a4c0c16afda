package cli

import (
	"os"
	"testing"

	"github.com/codemode-mcp/codemode/internal/reexec"
)

// TestMain runs esbuild workers (reexec), and points the built-in servers'
// data at a temporary $XDG_STATE_HOME, never the developer's.
func TestMain(m *testing.M) {
	if reexec.Init() { // esbuild workers
		return
	}
	state, err := os.MkdirTemp("", "codemode-cli-state-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_STATE_HOME", state)
	os.Unsetenv("CODEMODE_DATA_DIR")
	os.Unsetenv("CODEMODE_STORE")
	code := m.Run()
	os.RemoveAll(state)
	os.Exit(code)
}
