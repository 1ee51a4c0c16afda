package run

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Every run logs one audit record: what an operator needs to see what
// agents did, and nothing of the code, inputs or outputs themselves.
func TestAuditLine(t *testing.T) {
	var buf bytes.Buffer
	base := newTestRunner(t, map[string]*mcp.Server{"calc": calcServer()})
	r := New(base.cfg, base.cat, base.caller, &Options{Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	const secretInput = "s3cr3t-input"
	code := `import { add, fail } from "@codemode/servers/calc";
await add({ a: 1, b: 2 });
await fail({ note: "` + secretInput + `" });`
	ctx := WithLogAttrs(context.Background(), slog.String("session", "abc"))
	resp := r.Run(ctx, Request{Code: code})
	if !resp.Failed() {
		t.Fatalf("the script should fail: %s", dump(resp))
	}
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("want exactly one JSON record, got %q: %v", buf.String(), err)
	}
	want := map[string]any{"msg": "run", "level": "INFO", "session": "abc", "ok": false,
		"tool_calls": 2.0, "failed_calls": 1.0, "error": "UNCAUGHT_EXCEPTION", "code_bytes": float64(len(code))}
	for k, v := range want {
		if rec[k] != v {
			t.Errorf("%s = %v, want %v (record %s)", k, rec[k], v, buf.String())
		}
	}
	if h, _ := rec["code_sha256"].(string); len(h) != 16 {
		t.Errorf("code_sha256 = %q, want 16 hex digits", h)
	}
	if s, _ := rec["servers"].([]any); len(s) != 1 || s[0] != "calc" {
		t.Errorf("servers = %v, want [calc]", rec["servers"])
	}
	if strings.Contains(buf.String(), secretInput) || strings.Contains(buf.String(), "it broke") {
		t.Errorf("the audit line carries code or output: %s", buf.String())
	}

	// Below Info, nothing is logged (codemode run's default level is warn).
	buf.Reset()
	quiet := New(base.cfg, base.cat, base.caller, &Options{Logger: slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	quiet.Run(context.Background(), Request{Code: "globalThis.__codemode_result__ = 1"})
	if buf.Len() != 0 {
		t.Errorf("logged at warn level: %s", buf.String())
	}
}
