package reexec_test

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/codemode-mcp/codemode/internal/reexec"
)

// A mode is registered by the package that owns it, from an init function.
func init() {
	reexec.Register("example-upper", func() {
		b, _ := io.ReadAll(os.Stdin)
		fmt.Print(strings.ToUpper(string(b)))
	})
}

// The test binary is a program like any other: Init first.
func TestMain(m *testing.M) {
	if reexec.Init() {
		return
	}
	os.Exit(m.Run())
}

// Command starts this executable again in a mode; here the helper reads its
// standard input and writes it in capitals.
func ExampleCommand() {
	cmd, err := reexec.Command("example-upper")
	if err != nil {
		fmt.Println(err)
		return
	}
	cmd.Stdin = strings.NewReader("hello from the helper\n")
	out, err := cmd.Output()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(string(out))
	// Output: HELLO FROM THE HELPER
}
