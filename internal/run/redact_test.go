package run

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/redact"
)

// A secret with a quote and an HTML character, logged inside an object:
// the log line is JavaScript's JSON.stringify, which escapes the quote but
// not the "&" (Go's encoder escapes both), so neither the raw nor Go's form
// of the secret occurs in it.
func TestRedactSecretAsJavaScriptQuotesIt(t *testing.T) {
	const secret = `pa&ss"word<long>`
	r := newTestRunner(t, nil)
	r.redact = redact.New([]string{secret})
	res := mustRun(t, r, `const s = "pa&ss" + '"' + "word<long>";
console.log({ s }); console.log([s]);
globalThis.__codemode_result__ = { s, nested: [{ s }] };`)
	b, _ := json.Marshal(res)
	if strings.Contains(string(b), "word<long>") || strings.Contains(string(b), `word<long`) {
		t.Errorf("the secret reached the response: %s", b)
	}
	if !strings.Contains(res.Logs[0].Message, Redacted) {
		t.Errorf("log %q", res.Logs[0].Message)
	}
}

func dumpAny(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// End to end: a configured secret that is a number in the result leaves a
// response that still encodes, with the number redacted.
func TestSecretInNumericResult(t *testing.T) {
	base := newTestRunner(t, map[string]*mcp.Server{"calc": calcServer()})
	base.cfg.Servers[0].Secrets = []string{"123456789012"}
	r := New(base.cfg, base.cat, base.caller, nil)
	res := r.Run(context.Background(), Request{Code: `console.log(123456789012);
globalThis.__codemode_result__ = { account: 123456789012, n: 91234567890123, s: "id 123456789012", [123456789012]: true };`})
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatalf("the response does not encode: %v\nresult: %s", err, res.Result)
	}
	if !json.Valid(res.Result) || strings.Contains(string(b), "123456789012") {
		t.Fatalf("response %s", b)
	}
	want := `{"account":"[REDACTED]","n":"[REDACTED]","s":"id [REDACTED]","[REDACTED]":true}`
	var got, w any
	json.Unmarshal(res.Result, &got)
	json.Unmarshal([]byte(want), &w)
	if dumpAny(got) != dumpAny(w) {
		t.Fatalf("result %s, want %s", res.Result, want)
	}
}

// clipSecret is made of characters the filler never uses.
const clipSecret = "QWZ#%@^&*+=JKVG~|Y"

// pieces reports the pieces of clipSecret (4 bytes or longer) found in out.
func pieces(out string) []string {
	var found []string
	for i := 0; i+4 <= len(clipSecret); i++ {
		if p := clipSecret[i : i+4]; strings.Contains(out, p) {
			found = append(found, p)
		}
	}
	return found
}

// A secret straddling every clip point of a run is fully redacted: the
// isError text a ToolCallError quotes (2,000 bytes), the message of a
// diagnostic (4,096), the console output kept (maxLogBytes). Here only the
// run layer knows the secret (the upstream manager does not), so it is the
// clips themselves that must redact before they cut.
func TestSecretStraddlingEveryClipIsRedacted(t *testing.T) {
	t.Parallel()
	s := mcp.NewServer(&mcp.Implementation{Name: "clip"}, nil)
	s.AddTool(&mcp.Tool{Name: "leak", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult(clipSecret), nil
	})
	s.AddTool(&mcp.Tool{Name: "fail", InputSchema: json.RawMessage(`{"type":"object","properties":{"at":{"type":"number"}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ At int }
			json.Unmarshal(req.Params.Arguments, &in)
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", in.At) + clipSecret + strings.Repeat("x", 3000)}}}, nil
		})
	base := newTestRunner(t, map[string]*mcp.Server{"clip": s})
	base.cfg.Servers[0].Secrets = []string{clipSecret}
	r := New(base.cfg, base.cat, base.caller, nil)
	const logLimit = 1000
	for d := 1; d < len(clipSecret); d++ {
		for what, code := range map[string]string{
			"log and isError text": fmt.Sprintf(`import { leak, fail } from "@codemode/servers/clip";
console.log("x".repeat(%d) + await leak());
try { await fail({ at: %d }); } catch (e) { globalThis.__codemode_result__ = e.message; }`, logLimit-d, 2000-d),
			"uncaught isError text": fmt.Sprintf(`import { fail } from "@codemode/servers/clip";
await fail({ at: %d });`, 2000-d),
			"diagnostic": fmt.Sprintf(`import { leak } from "@codemode/servers/clip";
throw new Error("y".repeat(%d) + await leak() + "y".repeat(5000));`, 4096-len("Uncaught Error: ")-d),
		} {
			res := r.Run(context.Background(), Request{Code: code, Limits: config.Limits{MaxLogBytes: logLimit}})
			out := dump(res)
			if p := pieces(out); len(p) > 0 {
				t.Fatalf("%s, secret cut %d bytes in: pieces %q in\n%s", what, d, p, out)
			}
			if !strings.Contains(out, "more bytes]") {
				t.Fatalf("%s: nothing was clipped:\n%s", what, out)
			}
		}
	}
}
