package normalize_test

import (
	"context"
	"fmt"

	"github.com/codemode-mcp/codemode/internal/normalize"
)

// Cloudflare's README form, an arrow function and a semicolon, sent to a
// function-body surface: the normaliser returns the function (as the
// function expression its parser reads) for the surface to call, and says
// so.
func Example() {
	p := normalize.Prepare(context.Background(), "async () => {\n  const r = 40 + 2;\n  return r;\n};", &normalize.Options{Mode: normalize.Body})
	fmt.Print(p.Code)
	for _, d := range p.Info {
		fmt.Printf("%s %s at %s: %s\n", d.Severity, d.Code, d.Path, d.Message)
	}
	// Output:
	// return (async function() {
	//   const r = 40 + 2;
	//   return r;
	// });
	// info NORMALIZED at script.ts:1:1: the code is a function expression; it was called and its return value is the result
}

// A script with a top-level return sent to codemode_run runs as the body
// of an async function; imports become dynamic imports.
func ExamplePrepare_topLevelReturn() {
	p := normalize.Prepare(context.Background(), `import { get_sum } from "@codemode/servers/everything";
return await get_sum({ a: 1, b: 2 });`, nil)
	fmt.Print(p.Code)
	// Output:
	// const { get_sum } = await import("@codemode/servers/everything");
	// return await get_sum({ a: 1, b: 2 });
}
