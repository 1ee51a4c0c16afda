package serve

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

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

// Every surface the config accepts has a constructor, and every
// constructor a name the config accepts.
func TestSurfaceKindsMatchConfig(t *testing.T) {
	if got, want := slices.Sorted(maps.Keys(surfaceKinds)), slices.Sorted(slices.Values(config.KnownSurfaces)); !slices.Equal(got, want) {
		t.Errorf("serve.surfaceKinds has %q; config.KnownSurfaces has %q: add the surface to both", got, want)
	}
}

// The run tool's limits are config.Limits, key for key: a limit added to
// one and not the other would be silently ignored, or missing from the
// schema.
func TestRunLimitsMatchConfig(t *testing.T) {
	keys := func(t reflect.Type) []string {
		var out []string
		for f := range t.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			out = append(out, name)
		}
		return slices.Sorted(slices.Values(out))
	}
	if got, want := keys(reflect.TypeFor[runLimits]()), keys(reflect.TypeFor[config.Limits]()); !slices.Equal(got, want) {
		t.Errorf("runLimits has %q; config.Limits has %q", got, want)
	}
	in := `{"code": "x", "limits": {"timeoutMs": 1, "maxMemoryBytes": 2, "maxLogBytes": 3, "maxToolCalls": 4, "maxResultBytes": 5.9, "other": "ignored"}}`
	req, bad := decodeRequest([]byte(in))
	if bad != nil {
		t.Fatal(bad.Message)
	}
	if want := (config.Limits{TimeoutMs: 1, MaxMemoryBytes: 2, MaxLogBytes: 3, MaxToolCalls: 4, MaxResultBytes: 5}); req.Limits != want {
		t.Errorf("limits decoded as %+v, want %+v", req.Limits, want)
	}
}

// A run request without code says so, and names the argument sent
// instead, so that a misspelt key is fixed at once.
func TestDecodeRequestWithoutCode(t *testing.T) {
	for in, want := range map[string][]string{
		`{"cod": "x", "limits": {}}`: {`"code" must be a string, and the arguments have none`, `"cod" is not an argument of this tool (it takes code, limits, requestedCapabilities, dryRun, script, args)`},
		`{}`:                         {`"code" must be a string, and the arguments have none`, `call with {"code": "..."}`},
		`{"code": null}`:             {`"code" must be a string, and the arguments have none`, `call with {"code": "..."}`},
		`{"code": 5}`:                {`"code" must be a string`, "pass the script's source text as a string"},
	} {
		_, bad := decodeRequest([]byte(in))
		if bad == nil || bad.Message != want[0] || !strings.Contains(bad.Hint, want[1]) {
			t.Errorf("%s: got %+v, want message %q and a hint with %q", in, bad, want[0], want[1])
		}
	}
}

// An amendment of a property the type does not have fails at once.
func TestPropOfAMissingPropertyPanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), `"nope"`) {
			t.Errorf("prop of a missing property: recovered %v, want a panic naming it", r)
		}
	}()
	inputSchema[codeArgs](func(s *jsonschema.Schema) { prop(s, "nope") })
}
