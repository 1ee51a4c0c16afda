package progress_test

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/progress"
)

func Example() {
	send := func(p *mcp.ProgressNotificationParams) error {
		fmt.Printf("%v %s\n", p.Progress, p.Message)
		return nil
	}
	r := progress.New("token-1", send, nil)
	r.Log("log", "fetching issues")
	call := r.CallStarted("github", "list_issues")
	call.Upstream(1, 2, "page 1")
	call.End(true)
	r.Close() // sends what is queued
	// Output:
	// 1 console.log: fetching issues
	// 2 github/list_issues started
	// 2.495 github: page 1 (1/2)
	// 3 github/list_issues done
}
