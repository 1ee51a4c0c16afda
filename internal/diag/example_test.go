package diag_test

import (
	"encoding/json"
	"fmt"

	"github.com/codemode-mcp/codemode/internal/diag"
)

func ExampleErrorf() {
	err := diag.Errorf(diag.ToolNotFoundError, "server %q has no tool %q", "everything", "get_summ").
		WithHint(`did you mean "get_sum"?`).
		WithFields(map[string]any{"serverId": "everything"})
	fmt.Println(err)
	d := diag.Diagnostic{Severity: diag.SeverityError, Code: diag.UncaughtException, Message: "Uncaught " + err.Message,
		Hint: err.Hint, Path: "script.ts:3:7", ErrorClass: err.Class}
	b, _ := json.Marshal(d)
	fmt.Println(string(b))
	fmt.Println(diag.Distance("get_summ", "get_sum"))
	// Output:
	// ToolNotFoundError: server "everything" has no tool "get_summ" (hint: did you mean "get_sum"?)
	// {"severity":"error","code":"UNCAUGHT_EXCEPTION","message":"Uncaught server \"everything\" has no tool \"get_summ\"","hint":"did you mean \"get_sum\"?","path":"script.ts:3:7","errorClass":"ToolNotFoundError"}
	// 1
}
