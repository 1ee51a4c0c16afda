package transpile_test

import (
	"context"
	"fmt"

	"github.com/evanw/esbuild/pkg/api"

	"github.com/codemode-mcp/codemode/internal/transpile"
)

func ExampleModule() {
	out, diags := transpile.Module(context.Background(), "const n: number = 40 + 2;\nglobalThis.__codemode_result__ = n;\n", nil)
	fmt.Println(out.Lang, len(diags))
	fmt.Print(out.Code)

	_, diags = transpile.Module(context.Background(), "const x = ;", nil)
	fmt.Println(diags[0].Code, diags[0].Path)
	// Output:
	// ts 0
	// const n=40+2;globalThis.__codemode_result__=n;
	// SYNTAX_ERROR script.ts:1:11
}

// Transform is esbuild's api.Transform in a worker process: any use of
// esbuild goes through it, so that a script esbuild would never finish, or
// that would take all memory, costs one worker and not the gateway.
func ExampleTransform() {
	r, err := transpile.Transform(context.Background(), "let x: number = 1", api.TransformOptions{Loader: api.LoaderTS})
	fmt.Printf("%s%v\n", r.Code, err)
	// Output:
	// let x = 1;
	// <nil>
}
