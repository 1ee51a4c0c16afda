package buildinfo_test

import (
	"fmt"
	"strings"

	"github.com/codemode-mcp/codemode/internal/buildinfo"
)

func Example() {
	// A test binary is built from a working tree without VCS stamping, so
	// its version is "dev"; `go install ...@v1.2.3` would say "v1.2.3".
	fmt.Println(buildinfo.Version() != "")
	fmt.Println(strings.HasPrefix(buildinfo.Describe(), buildinfo.Version()+" ("))
	// Output:
	// true
	// true
}
