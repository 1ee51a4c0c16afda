package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	vcs := []debug.BuildSetting{
		{Key: "-buildmode", Value: "exe"},
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "51d97a7d18f1c8731b920fca11cd381d6245feff"},
		{Key: "vcs.time", Value: "2026-11-25T10:41:45Z"},
		{Key: "vcs.modified", Value: "true"},
	}
	for _, c := range []struct {
		name     string
		bi       *debug.BuildInfo
		override string
		version  string
		describe string
	}{
		{"go install @version", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}}, "",
			"v1.2.3", "v1.2.3 (go1.26.8 linux/amd64)"},
		{"a checkout: the toolchain's pseudo-version", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261125104145-51d97a7d18f1+dirty"}, Settings: vcs}, "",
			"v0.0.0-20261125104145-51d97a7d18f1+dirty", "v0.0.0-20261125104145-51d97a7d18f1+dirty (revision 51d97a7d18f1c8731b920fca11cd381d6245feff of 2026-11-25T10:41:45Z, with uncommitted changes; go1.26.8 linux/amd64)"},
		{"a checkout, no module version", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs}, "",
			"dev+51d97a7d18f1-dirty", "dev+51d97a7d18f1-dirty (revision 51d97a7d18f1c8731b920fca11cd381d6245feff of 2026-11-25T10:41:45Z, with uncommitted changes; go1.26.8 linux/amd64)"},
		{"-buildvcs=false", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, "",
			"dev", "dev (go1.26.8 linux/amd64)"},
		{"-ldflags -X", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs[:3]}, "v2.0.0",
			"v2.0.0", "v2.0.0 (revision 51d97a7d18f1c8731b920fca11cd381d6245feff; go1.26.8 linux/amd64)"},
		{"no build information", nil, "", "dev", "dev (linux/amd64)"},
	} {
		i := fromBuildInfo(c.bi, c.override)
		if i.Version != c.version {
			t.Errorf("%s: version %q, want %q", c.name, i.Version, c.version)
		}
		if got := i.describe("linux/amd64"); got != c.describe {
			t.Errorf("%s: describe\n%q, want\n%q", c.name, got, c.describe)
		}
	}
}

// The test binary has build information, without VCS stamping.
func TestVersionOfThisBinary(t *testing.T) {
	if v := Version(); v == "" {
		t.Errorf("Version() = %q", v)
	}
	if Read().Go == "" {
		t.Error("no toolchain version")
	}
}
