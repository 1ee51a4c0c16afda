package transpile_test

import (
	"context"
	"fmt"

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
