package run

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

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
