package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const stepJSON = `{"messages": [{"role": "code", "id": "k", "code": "const r = await lookup({ key: 'a' }); return r.value * 2;"}],
 "tools": [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}}}]}`

type stepOut struct {
	Message struct {
		Role      string
		ToolCalls []struct {
			ID       string
			Function struct{ Name, Arguments string }
		} `json:"tool_calls"`
		Result *struct {
			Status string
			Data   any
			Error  *struct{ Name, Message string }
		}
	}
	Error *struct{ Code, Message, Hint string }
}

func decodeStep(t *testing.T, stdout string) stepOut {
	t.Helper()
	var o stepOut
	if err := json.Unmarshal([]byte(stdout), &o); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	return o
}

// TestReplayStep: `codemode replay step` reads a step request from stdin
// or a file and prints the response; a malformed request exits 2 with its
// error as JSON.
func TestReplayStep(t *testing.T) {
	t.Setenv("CODEMODE_CONFIG", "")
	t.Chdir(t.TempDir())
	code, stdout, stderr := invoke(t, stepJSON, "replay", "step")
	o := decodeStep(t, stdout)
	if code != ExitOK || o.Message.Role != "assistant" || len(o.Message.ToolCalls) != 1 || o.Message.ToolCalls[0].ID != "k_0" ||
		o.Message.ToolCalls[0].Function.Arguments != `{"key":"a"}` {
		t.Fatalf("exit %d: %s\n%s", code, stdout, stderr)
	}
	var req map[string]any
	json.Unmarshal([]byte(stepJSON), &req)
	var msg any
	json.Unmarshal([]byte(stdout), &struct{ Message *any }{&msg})
	req["messages"] = append(req["messages"].([]any), msg, map[string]any{"role": "tool", "tool_call_id": "k_0", "content": `{"value": 21}`})
	b, _ := json.Marshal(req)
	file := writeFile(t, t.TempDir(), "step.json", string(b))
	code, stdout, _ = invoke(t, "", "replay", "step", file)
	if o := decodeStep(t, stdout); code != ExitOK || o.Message.Role != "code_result" || o.Message.Result.Data != 42.0 {
		t.Fatalf("exit %d: %s", code, stdout)
	}
	// The code fails: exit 1, the error in the code result.
	req["messages"].([]any)[2].(map[string]any)["is_error"] = true
	b, _ = json.Marshal(req)
	code, stdout, _ = invoke(t, string(b), "replay", "step", "-")
	if o := decodeStep(t, stdout); code != ExitFailed || o.Message.Result.Status != "error" || o.Message.Result.Error.Name != "ToolCallError" {
		t.Fatalf("exit %d: %s", code, stdout)
	}
	// Malformed: exit 2, {"error": ...} on stdout, the message on stderr.
	for _, bad := range []string{`{"messages": []}`, `not json`, `{"messages": [{"role": "code", "id": "k", "code": "1"}, {"role": "tool", "content": "x"}]}`} {
		code, stdout, stderr = invoke(t, bad, "replay", "step")
		if o := decodeStep(t, stdout); code != ExitUsage || o.Error == nil || o.Error.Code != "INVALID_REQUEST" || o.Error.Hint == "" || stderr == "" {
			t.Errorf("%s: exit %d: %s %s", bad, code, stdout, stderr)
		}
	}
}

// TestRecordAndReplayRun: `codemode run --record FILE` against the real
// server-everything writes a bundle; `codemode replay run FILE` re-runs it
// with no upstream (no configuration at all) and reports it reproduced;
// an edited bundle diverges (exit 1).
func TestRecordAndReplayRun(t *testing.T) {
	dir := t.TempDir()
	cfg := everythingConfig(t, dir)
	bundle := filepath.Join(dir, "run.json")
	script := writeFile(t, dir, "s.ts", `import { get_sum, echo } from "@codemode/servers/everything";
const [s, e] = await Promise.all([get_sum({ a: 20, b: 22 }), echo({ message: "r=" + Math.random() })]);
await new Promise((r) => setTimeout(r, 10));
console.log("sum", s, e, Date.now());
globalThis.__codemode_result__ = { s, e };`)
	code, stdout, stderr := invoke(t, "", "run", "--config", cfg, "--record", bundle, script)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	info, err := os.Stat(bundle)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("bundle: %v %v", info, err)
	}

	t.Setenv("CODEMODE_CONFIG", "")
	t.Chdir(t.TempDir())
	code, stdout, stderr = invoke(t, "", "replay", "run", bundle)
	var rep struct {
		Reproduced bool
		Diverged   *struct{ What, Message string }
		Outcome    struct{ Result map[string]any }
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != ExitOK || !rep.Reproduced || !strings.Contains(rep.Outcome.Result["s"].(string), "42") {
		t.Fatalf("exit %d: %s\n%s", code, stdout, stderr)
	}

	data, _ := os.ReadFile(bundle)
	edited := strings.Replace(string(data), "b: 22", "b: 23", 1)
	os.WriteFile(bundle, []byte(edited), 0o600)
	code, stdout, stderr = invoke(t, "", "replay", "run", bundle)
	json.Unmarshal([]byte(stdout), &rep)
	if code != ExitFailed || rep.Reproduced || rep.Diverged.What != "call" || !strings.Contains(stderr, "diverged") {
		t.Fatalf("edited bundle: exit %d: %s\n%s", code, stdout, stderr)
	}
	if code, _, stderr := invoke(t, "", "replay", "run", filepath.Join(dir, "missing.json")); code != ExitUsage || stderr == "" {
		t.Errorf("missing bundle: exit %d", code)
	}
}

func TestProxyUsage(t *testing.T) {
	for _, args := range [][]string{{"proxy"}, {"proxy", "--upstream", "nope"}, {"proxy", "--upstream", "http://x/v1", "--listen", "0.0.0.0:0"}} {
		code, _, stderr := invoke(t, "", args...)
		if code != ExitUsage || stderr == "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
	if code, _, stderr := invoke(t, "", "replay"); code != ExitUsage || !strings.Contains(stderr, "replay step") {
		t.Errorf("replay without a command: exit %d %s", code, stderr)
	}
}
