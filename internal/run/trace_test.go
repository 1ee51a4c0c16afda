package run

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// §3.3.2: the trace of a call refused by input validation says where the
// input is wrong and what was expected, never what was received. The
// exception the script catches still says it.
func TestTraceOmitsRejectedInput(t *testing.T) {
	r := newTestRunner(t, map[string]*mcp.Server{"calc": calcServer()})
	res := mustRun(t, r, `import { add } from "@codemode/servers/calc";
try { await add({ a: "sk-live-SECRETVALUE", b: 1 }) } catch (e) { globalThis.__codemode_result__ = e.message }`)
	if len(res.ToolTrace) != 1 {
		t.Fatalf("%s", dump(res))
	}
	e := res.ToolTrace[0]
	if e.OK || e.ServerID != "calc" || e.ToolName != "add" {
		t.Fatalf("trace = %+v", e)
	}
	if want := "SchemaValidationError: invalid input at /a: expected number"; e.Error != want {
		t.Errorf("trace error %q, want %q", e.Error, want)
	}
	trace, _ := json.Marshal(res.ToolTrace)
	if strings.Contains(string(trace), "SECRETVALUE") {
		t.Fatalf("toolTrace leaks the input: %s", trace)
	}
	if msg := result[string](t, res); !strings.Contains(msg, "SECRETVALUE") {
		t.Errorf("the exception lost what was received: %q", msg)
	}
}

// A wrong input as a whole is reported at "the top level", again without
// the value received.
func TestTraceSchemaErrorAtTheTopLevel(t *testing.T) {
	r := newTestRunner(t, map[string]*mcp.Server{"calc": calcServer()})
	res := mustRun(t, r, `import { add } from "@codemode/servers/calc";
try { await add("sk-live-SECRETVALUE") } catch {}`)
	if len(res.ToolTrace) != 1 {
		t.Fatalf("%s", dump(res))
	}
	if got := res.ToolTrace[0].Error; !strings.HasPrefix(got, "SchemaValidationError: invalid input at the top level: expected ") || strings.Contains(got, "SECRETVALUE") {
		t.Errorf("trace error %q", got)
	}
}

// An isError result is the tool's output: its text (which here echoes the
// input, as many tools' errors do) stays out of the trace. The exception
// carries it.
func TestTraceOmitsToolErrorText(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "strict"}, nil)
	s.AddTool(&mcp.Tool{Name: "open", InputSchema: objectSchema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "access denied: " + string(req.Params.Arguments)}}}, nil
	})
	r := newTestRunner(t, map[string]*mcp.Server{"strict": s})
	res := mustRun(t, r, `import { open } from "@codemode/servers/strict";
try { await open({ path: "/home/me/private-7f3a.txt" }) } catch (e) { globalThis.__codemode_result__ = e.message }`)
	if len(res.ToolTrace) != 1 {
		t.Fatalf("%s", dump(res))
	}
	if want := "ToolCallError: open (strict/open) failed"; res.ToolTrace[0].Error != want {
		t.Errorf("trace error %q, want %q", res.ToolTrace[0].Error, want)
	}
	if msg := result[string](t, res); !strings.Contains(msg, "private-7f3a") {
		t.Errorf("the exception lost the tool's message: %q", msg)
	}
}

// Secrets are removed before the trace error is cut to length: a secret
// straddling the cut must not leave its first half behind.
func TestTraceRedactsSecretBeforeTruncating(t *testing.T) {
	const secret = "sk-live-0123456789abcdef"
	base := newTestRunner(t, map[string]*mcp.Server{"calc": calcServer()})
	base.cfg.Servers[0].Secrets = []string{secret}
	// "ToolCallError: " is 15 bytes: the secret starts 10 bytes before the
	// 300-byte cut.
	msg := strings.Repeat("x", 300-10-len("ToolCallError: ")) + secret + " and more"
	fail := callerFunc(func(context.Context, string, string, any) (*mcp.CallToolResult, error) {
		return nil, errors.New(msg)
	})
	r := New(base.cfg, base.cat, fail, nil)
	res := r.Run(context.Background(), Request{Code: `import { echo } from "@codemode/servers/calc";
try { await echo({ message: "hi" }) } catch {}`})
	if len(res.ToolTrace) != 1 || res.ToolTrace[0].OK {
		t.Fatalf("%s", dump(res))
	}
	got := res.ToolTrace[0].Error
	if strings.Contains(got, secret[:8]) || !strings.Contains(got, "more bytes]") {
		t.Fatalf("trace error leaks part of the secret or is not cut: %q", got)
	}
}

// The trace keeps the gateway's words about a failure and drops what the
// message quotes: the upstream's error text, a stderr tail, the input.
func TestTraceSummaryDropsQuotedText(t *testing.T) {
	live, cancelled := context.Background(), canceledContext()
	up := func(k upstream.Kind, err error, tail string) error {
		return &upstream.Error{ServerID: "calc", Kind: k, Op: "tools/call echo", Err: err, StderrTail: tail}
	}
	for _, tc := range []struct {
		err  *diag.Error
		want string
	}{
		{callError(live, "calc", "echo", up(upstream.Rejected, errors.New(`invalid params: "sk-input-7f3a" is not a number`), "")),
			`ToolCallError: server "calc" rejected the request (tools/call echo)`},
		{callError(live, "calc", "echo", up(upstream.Timeout, errors.New("no answer within 30s"), "got sk-input-7f3a\n")),
			`ToolCallError: server "calc" timed out (tools/call echo)`},
		{callError(live, "calc", "echo", up(upstream.Died, nil, "panic: sk-input-7f3a\n")),
			`ToolCallError: server "calc" died (tools/call echo)`},
		{callError(live, "calc", "echo", up(upstream.Auth, errors.New("401: sk-input-7f3a"), "")),
			`AuthenticationError: server "calc" rejected the credentials (tools/call echo)`},
		{callError(cancelled, "calc", "echo", up(upstream.Canceled, context.Canceled, "")),
			`ToolCallError: call to calc/echo was cancelled`},
		{&diag.Error{Class: diag.SchemaValidationError, Message: "the input is not JSON data: invalid character 's' in sk-input-7f3a"},
			`SchemaValidationError: the input is not JSON data`},
		{&diag.Error{Class: diag.SchemaValidationError, Message: `invalid input: received "sk-input-7f3a"`,
			Fields: map[string]any{"path": "/user/age", "expected": "integer", "received": `string "sk-input-7f3a"`}},
			`SchemaValidationError: invalid input at /user/age: expected integer`},
	} {
		if got := string(tc.err.Class) + ": " + traceSummary(tc.err); got != tc.want {
			t.Errorf("message %q\n got %q\nwant %q", tc.err.Message, got, tc.want)
		}
	}
}

func canceledContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
