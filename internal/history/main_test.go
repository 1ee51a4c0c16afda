package history_test

import (
	"os"
	"testing"

	"github.com/codemode-mcp/codemode/internal/reexec"
)

// TestMain serves esbuild workers (package reexec) before running the
// tests, which transpile scripts.
func TestMain(m *testing.M) {
	if reexec.Init() {
		return
	}
	os.Exit(m.Run())
}
