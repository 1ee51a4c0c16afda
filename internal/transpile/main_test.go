package transpile

import (
	"os"
	"testing"

	"github.com/codemode-mcp/codemode/internal/reexec"
)

func TestMain(m *testing.M) {
	if reexec.Init() {
		return
	}
	code := m.Run()
	StopWorkers()
	os.Exit(code)
}
