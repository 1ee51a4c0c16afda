// Package buildinfo says which build of codemode is running: the version
// that `codemode version` prints, that the gateway reports as its
// serverInfo and sends upstream as its clientInfo.
//
// Start with [Version]. It comes from the Go toolchain's build information
// (runtime/debug.ReadBuildInfo): the module version of a `go install
// ...@v1.2.3`, or the version the toolchain derives from the VCS state of a
// checkout (a pseudo-version, "+dirty" when there were uncommitted
// changes), else the VCS revision, else "dev"; a release build can also set it with
// -ldflags "-X github.com/codemode-mcp/codemode/internal/buildinfo.version=v1.2.3".
// [Describe] adds the revision, its time and the Go toolchain.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
)

// version, when set at link time (-X), is the version, whatever the build
// information says.
var version string

// Info is what is known about this build.
type Info struct {
	// Version is a module version ("v1.2.3", a pseudo-version), "dev+"
	// and the abbreviated VCS revision, or "dev" when nothing is known (a
	// test binary, go build -buildvcs=false). It is short: the gateway's
	// serverInfo, with it, rides on every response.
	Version string
	// Revision is the full VCS revision, Time its commit time (RFC 3339),
	// Modified whether the working tree had uncommitted changes; empty
	// (false) for a build without VCS information (go build -buildvcs=false,
	// a source tree that is not a checkout).
	Revision, Time string
	Modified       bool
	// Go is the toolchain that built the binary ("go1.26.8").
	Go string
}

var read = sync.OnceValue(func() Info {
	bi, _ := debug.ReadBuildInfo()
	return fromBuildInfo(bi, version)
})

// Read returns this binary's Info.
func Read() Info { return read() }

// Version returns this binary's version (see Info.Version).
func Version() string { return read().Version }

// Describe returns one line for humans: the version, then the revision,
// its time and whether it was modified, and the toolchain and platform.
func Describe() string { return read().describe(runtime.GOOS + "/" + runtime.GOARCH) }

func (i Info) describe(platform string) string {
	var parts []string
	if i.Revision != "" {
		rev := "revision " + i.Revision
		if i.Time != "" {
			rev += " of " + i.Time
		}
		if i.Modified {
			rev += ", with uncommitted changes"
		}
		parts = append(parts, rev)
	}
	parts = append(parts, strings.TrimSpace(i.Go+" "+platform))
	return fmt.Sprintf("%s (%s)", i.Version, strings.Join(parts, "; "))
}

// fromBuildInfo reads bi (nil when the binary has none); override is the
// link-time version.
func fromBuildInfo(bi *debug.BuildInfo, override string) Info {
	var i Info
	if bi != nil {
		i.Go = bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				i.Revision = s.Value
			case "vcs.time":
				i.Time = s.Value
			case "vcs.modified":
				i.Modified = s.Value == "true"
			}
		}
	}
	switch {
	case override != "":
		i.Version = override
	case bi != nil && bi.Main.Version != "" && bi.Main.Version != "(devel)":
		i.Version = bi.Main.Version
	case i.Revision != "":
		i.Version = "dev+" + i.Revision[:min(len(i.Revision), 12)]
		if i.Modified {
			i.Version += "-dirty"
		}
	default:
		i.Version = "dev"
	}
	return i
}
