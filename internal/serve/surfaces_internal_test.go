package serve

import (
	"slices"
	"testing"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// config.SurfaceTools is what the config checks the run tool's name
// against; it must list exactly the tools each surface registers.
func TestSurfaceToolsMatchConfig(t *testing.T) {
	for surface, want := range config.SurfaceTools {
		m := upstream.New(nil, nil)
		cfg := config.Default()
		cfg.Serve.Surfaces = []string{surface}
		s := New(run.New(cfg, catalog.New(m), m, nil), m, nil)
		s.register(nil)
		var got []string
		for name := range s.tools {
			got = append(got, name)
		}
		slices.Sort(got)
		if !slices.Equal(got, slices.Sorted(slices.Values(want))) {
			t.Errorf("surface %q registers %q; config.SurfaceTools says %q", surface, got, want)
		}
		m.Close()
	}
}
