package preview_test

import (
	"fmt"

	"github.com/codemode-mcp/codemode/internal/preview"
)

func ExampleJSON() {
	data := []byte(`{"count":12,"items":["alpha","beta","gamma","delta","epsilon","zeta","eta","theta","iota","kappa","lambda","mu"]}`)
	out, cut := preview.JSON(data, 100, "codemode://results/1")
	fmt.Println(cut)
	fmt.Println(string(out))
	// Output:
	// true
	// {"count":12,"items":["alpha","beta","gamma","… 9 more item(s) not shown; codemode://results/1"]}
}
