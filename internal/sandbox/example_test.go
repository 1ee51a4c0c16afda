package sandbox_test

import (
	"context"
	"fmt"

	"github.com/codemode-mcp/codemode/internal/sandbox"
)

// A run returns what the script logged and the value it assigned to
// globalThis.__codemode_result__, as JSON.
func ExampleRun() {
	res := sandbox.Run(context.Background(), `
const words = ["sandbox", "says", "hello"];
console.log("counting", words.length, "words");
globalThis.__codemode_result__ = { longest: words.reduce((a, b) => (b.length > a.length ? b : a)) };
`, nil)
	for _, l := range res.Logs {
		fmt.Printf("%s: %s\n", l.Level, l.Message)
	}
	fmt.Println("result:", string(res.Result))
	fmt.Println("diagnostics:", len(res.Diagnostics))
	// Output:
	// log: counting 3 words
	// result: {"longest":"sandbox"}
	// diagnostics: 0
}
