package run

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/diag"
)

// draftServer has "plot", whose inputSchema is a draft-07 tuple without
// $schema (§6.2's own example), and "broken", whose inputSchema no draft
// accepts. Both count their calls.
func draftServer(calls *atomic.Int64) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "drafts"}, nil)
	for name, sch := range map[string]string{
		"plot":   `{"type":"object","properties":{"point":{"type":"array","items":[{"type":"number"},{"type":"number"}],"additionalItems":false}},"required":["point"]}`,
		"broken": `{"type":"object","properties":{"a":{"type":"strang"}}}`,
	} {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(sch)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			calls.Add(1)
			return textResult("called " + name), nil
		})
	}
	return s
}

// §7.2: a draft-07 tuple schema (items as an array, no $schema) does not
// compile as 2020-12; it is detected as draft-07 and calls are validated,
// where they used to go to the server unchecked.
func TestDraft07TupleIsValidated(t *testing.T) {
	var calls atomic.Int64
	r := newTestRunner(t, map[string]*mcp.Server{"drafts": draftServer(&calls)})
	res := r.Run(context.Background(), Request{Code: `import { plot } from "@codemode/servers/drafts";
import { SchemaValidationError } from "@codemode/errors";
const out = [await plot({ point: [1, 2] })];
try { await plot({ point: ["1", 2] }); } catch (e) { out.push([e instanceof SchemaValidationError, e.path, e.expected]); }
try { await plot({ point: [1, 2, 3] }); } catch (e) { out.push([e instanceof SchemaValidationError, e.path]); }
globalThis.__codemode_result__ = out;`})
	if got := string(res.Result); got != `["called plot",[true,"/point/0","number"],[true,"/point"]]` || len(res.Diagnostics) != 0 {
		t.Errorf("result %s\n%s", got, dump(res))
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d upstream calls, want 1: invalid inputs reached the server", n)
	}
}

// A schema that no draft accepts: the call goes through unvalidated (the
// server decides), and the run that made it gets one warning per tool
// saying so.
func TestUnusableSchemaWarns(t *testing.T) {
	var calls atomic.Int64
	r := newTestRunner(t, map[string]*mcp.Server{"drafts": draftServer(&calls)})
	res := r.Run(context.Background(), Request{Code: `import { broken } from "@codemode/servers/drafts";
globalThis.__codemode_result__ = [await broken({ a: 1 }), await broken({ a: 2 })];`})
	if string(res.Result) != `["called broken","called broken"]` || calls.Load() != 2 {
		t.Fatalf("%s", dump(res))
	}
	if len(res.Diagnostics) != 1 {
		t.Fatalf("want one warning: %s", dump(res))
	}
	d := res.Diagnostics[0]
	if d.Severity != diag.SeverityWarning || d.Code != diag.InputNotValidated || !strings.Contains(d.Message, "drafts/broken") ||
		!strings.Contains(d.Message, "2020-12, draft-07, draft-04") || d.Hint == "" {
		t.Errorf("%+v", d)
	}
	// A run that does not call it hears nothing about it.
	res = r.Run(context.Background(), Request{Code: `import { plot } from "@codemode/servers/drafts"; globalThis.__codemode_result__ = await plot({ point: [1, 2] });`})
	if len(res.Diagnostics) != 0 {
		t.Errorf("%s", dump(res))
	}
}
