package normalize

import (
	"os"
	"testing"

	"github.com/codemode-mcp/codemode/internal/reexec"
	"github.com/codemode-mcp/codemode/internal/transpile"
)

// TestMain lets this test binary serve as transpile's esbuild worker.
func TestMain(m *testing.M) {
	if reexec.Init() { // esbuild workers
		return
	}
	code := m.Run()
	transpile.StopWorkers()
	os.Exit(code)
}
