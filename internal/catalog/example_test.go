package catalog_test

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

func ExampleSearch() {
	srv := catalog.FromSnapshot(&upstream.Snapshot{ServerID: "everything", Tools: []*mcp.Tool{
		{Name: "get-sum", Description: "Returns the sum of two numbers"},
		{Name: "echo", Description: "Echoes back the input string"},
		{Name: "get-tiny-image", Description: "Returns a tiny MCP logo image."},
	}})
	for _, h := range catalog.Search([]*catalog.Server{srv}, "add two numbers", 3) {
		fmt.Println(h.Server.ID, h.Tool.Name, h.Tool.ExportName)
	}
	fmt.Println(srv.Lookup("get_sum").Name)
	// Output:
	// everything get-sum get_sum
	// get-sum
}
