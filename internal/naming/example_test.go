package naming_test

import (
	"fmt"

	"github.com/codemode-mcp/codemode/internal/naming"
)

func ExampleExportNames() {
	names := naming.ExportNames([]string{"get-sum", "get_sum", "export", "2fa"})
	fmt.Println(names["get-sum"], names["get_sum"], names["export"], names["2fa"])
	// Output: get_sum get_sum__2 export_ _2fa
}

func ExampleServerIDs() {
	fmt.Println(naming.ServerIDs([]string{"Memory_Graph", "memory graph"}))
	// Output: [memory-graph memory-graph--2]
}
