package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codemode-mcp/codemode/internal/admit"
)

func env(vars map[string]string) LookupEnv {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func mustParse(t *testing.T, src string, vars map[string]string) *Config {
	t.Helper()
	c, err := Parse("codemode.json", []byte(src), env(vars))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return c
}

func TestParseServersInOrderWithIDs(t *testing.T) {
	c := mustParse(t, `{"mcpServers": {
		"Memory_Graph": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]},
		"memory graph": {"command": "mem2"},
		"remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
		"legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
		"claude-code-style": {"type": "stdio", "command": "x"},
		"off": {"command": "y", "disabled": true}
	}}`, map[string]string{"TOKEN": "tok-1234567890"})
	var got []string
	for _, s := range c.Servers {
		got = append(got, s.ID+"="+string(s.Transport))
	}
	want := "memory-graph=stdio memory-graph--2=stdio remote=http legacy=sse claude-code-style=stdio"
	if strings.Join(got, " ") != want {
		t.Fatalf("servers = %v, want %v", got, want)
	}
	if c.Servers[2].Headers["Authorization"] != "Bearer tok-1234567890" {
		t.Fatalf("header not expanded: %v", c.Servers[2].Headers)
	}
	if c.Servers[0].Name != "Memory_Graph" {
		t.Fatalf("name = %q", c.Servers[0].Name)
	}
	if !slices.Equal(c.Disabled, []string{"off"}) {
		t.Fatalf("disabled = %v, want [off]", c.Disabled)
	}
}

func TestExpansion(t *testing.T) {
	c := mustParse(t, `{"mcpServers": {"s": {"command": "run", "args": ["--dir=${HOME_DIR}", "${MISSING:-fallback}", "$NOT_EXPANDED", "a${EMPTY:-b}c"],
		"env": {"API_KEY": "${KEY}", "MODE": "fixed", "ALSO": "${UNSET}"}}}}`,
		map[string]string{"HOME_DIR": "/home/x", "KEY": "k-secret-value", "EMPTY": ""})
	s := c.Servers[0]
	if got := strings.Join(s.Args, " "); got != "--dir=/home/x fallback $NOT_EXPANDED abc" {
		t.Fatalf("args = %q", got)
	}
	if s.Env["API_KEY"] != "k-secret-value" || s.Env["MODE"] != "fixed" {
		t.Fatalf("env = %v", s.Env)
	}
	if len(s.Unresolved) != 1 || s.Unresolved[0] != "UNSET" {
		t.Fatalf("unresolved = %v", s.Unresolved)
	}
	if !slices.Contains(s.Secrets, "k-secret-value") || slices.Contains(s.Secrets, "fixed") {
		t.Fatalf("secrets = %v", s.Secrets)
	}
}

func TestSecretsFromHeadersAndNames(t *testing.T) {
	c := mustParse(t, `{"mcpServers": {
		"r": {"url": "https://x.example/mcp", "headers": {"Authorization": "Bearer literal-token-123", "X-Team": "team-abcdefgh"}},
		"s": {"command": "c", "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_1234567890", "LOG_LEVEL": "debug-verbose"}}}}`, nil)
	r, s := c.Servers[0].Secrets, c.Servers[1].Secrets
	for _, want := range []string{"Bearer literal-token-123", "literal-token-123", "team-abcdefgh"} {
		if !slices.Contains(r, want) {
			t.Errorf("remote secrets %v lack %q", r, want)
		}
	}
	if !slices.Contains(s, "ghp_1234567890") || slices.Contains(s, "debug-verbose") {
		t.Errorf("stdio secrets = %v", s)
	}
	// Credentials written into a URL: its password (or a user that is a
	// token alone) and the query values named like secrets, as written and
	// decoded; not other query values.
	c = mustParse(t, `{"mcpServers": {
		"q": {"url": "https://bot:pass%2Dword-99@x.example/mcp?api_key=AbC%2BdEf%2FGh%3D%3D&version=2025-06-18"},
		"u": {"url": "https://ghp_tokenonly123@x.example/mcp"}}}`, nil)
	q, u := c.Servers[0].Secrets, c.Servers[1].Secrets
	for _, want := range []string{"AbC%2BdEf%2FGh%3D%3D", "AbC+dEf/Gh==", "pass%2Dword-99", "pass-word-99"} {
		if !slices.Contains(q, want) {
			t.Errorf("url secrets %v lack %q", q, want)
		}
	}
	if slices.Contains(q, "2025-06-18") || !slices.Contains(u, "ghp_tokenonly123") {
		t.Errorf("url secrets = %v and %v", q, u)
	}
}

// Every mistake names the file, the key and the fix.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string // substrings of the error text
	}{
		{"bad json", "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",}\n  }\n}", []string{"codemode.json:3:", "invalid JSON", "fix:"}},
		{"empty file", "", []string{"empty", "mcpServers"}},
		{"unknown top key", `{"mcpServer": {}}`, []string{"mcpServer", `did you mean "mcpServers"`}},
		{"unknown server key", `{"mcpServers": {"a": {"comand": "x"}}}`, []string{"mcpServers.a.comand", `did you mean "command"`}},
		{"missing command", `{"mcpServers": {"a": {"args": ["x"]}}}`, []string{"mcpServers.a", `needs "command" or "url"`}},
		{"stdio type without command", `{"mcpServers": {"a": {"type": "stdio"}}}`, []string{"mcpServers.a", `needs "command"`}},
		{"both command and url", `{"mcpServers": {"a": {"command": "x", "url": "http://y"}}}`, []string{"both"}},
		{"bad url", `{"mcpServers": {"a": {"url": "ftp://x"}}}`, []string{"mcpServers.a.url", "http"}},
		{"bad type", `{"mcpServers": {"a": {"type": "websocket", "url": "http://x"}}}`, []string{"mcpServers.a.type", "websocket"}},
		{"run tool name taken", `{"mcpServers": {}, "codemode": {"runToolName": "search", "surfaces": ["run", "search-execute"]}}`, []string{"codemode.runToolName", `"search-execute" surface`, "choose another name"}},
		{"args not array", `{"mcpServers": {"a": {"command": "x", "args": "--flag"}}}`, []string{"mcpServers.a.args", "array of strings"}},
		{"env not strings", `{"mcpServers": {"a": {"command": "x", "env": {"A": 1}}}}`, []string{"mcpServers.a.env.A:", "must be a string, got a number", `use a string: "1"`}},
		{"servers not object", `{"mcpServers": []}`, []string{"mcpServers", "must be an object"}},
		{"duplicate key", `{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}`, []string{"mcpServers.a", "twice"}},
		{"unknown surface", `{"codemode": {"surfaces": ["run", "grpc"]}}`, []string{"codemode.surfaces", "grpc"}},
		{"bad tool name", `{"codemode": {"runToolName": "run code!"}}`, []string{"codemode.runToolName"}},
		{"bad limit", `{"codemode": {"maxLimits": {"timeoutMs": -1}}}`, []string{"codemode.maxLimits.timeoutMs", "positive"}},
		{"unknown limit", `{"codemode": {"defaultLimits": {"timeout": 5}}}`, []string{"codemode.defaultLimits.timeout", `did you mean "timeoutMs"`}},
		{"remote with command fields", `{"mcpServers": {"a": {"type": "http", "url": "http://x", "env": {"A": "b"}}}}`, []string{"remote server cannot have"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("codemode.json", []byte(tc.src), env(nil))
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v (%T), want *Error", err, err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "codemode.json") {
				t.Errorf("error does not start with the file: %q", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
			if ce.Fix == "" {
				t.Errorf("no fix in %q", msg)
			}
		})
	}
}

func TestGatewaySettings(t *testing.T) {
	c := mustParse(t, `{"codemode": {"surfaces": ["files", "run"], "runToolName": "codemode.run", "bindingLevel": "tool",
		"typesBudgetTokens": 100, "callTimeoutMs": 1500, "defaultLimits": {"timeoutMs": 5000}, "maxLimits": {"timeoutMs": 10000, "maxToolCalls": 5}}}`, nil)
	if strings.Join(c.Serve.Surfaces, ",") != "files,run" || c.Serve.RunToolName != "codemode.run" || c.Serve.BindingLevel != "tool" || c.Serve.TypesBudgetTokens != 100 {
		t.Fatalf("serve = %+v", c.Serve)
	}
	if c.CallTimeout != 1500*time.Millisecond {
		t.Fatalf("call timeout = %v", c.CallTimeout)
	}
	// Defaults are capped by the maxima: maxToolCalls 100 → 5.
	if c.DefaultLimits.TimeoutMs != 5000 || c.DefaultLimits.MaxToolCalls != 5 || c.DefaultLimits.MaxMemoryBytes != BuiltinDefaultLimits.MaxMemoryBytes {
		t.Fatalf("defaults = %+v", c.DefaultLimits)
	}
}

func TestAdmissionSettings(t *testing.T) {
	c := Default()
	if got := c.Admission.Options(); *got != admit.Defaults {
		t.Errorf("defaults = %+v, want admit.Defaults %+v", *got, admit.Defaults)
	}
	c = mustParse(t, `{"codemode": {"maxConcurrentRuns": 4, "maxConcurrentRunsPerSession": 2, "maxQueuedRuns": 10, "memoryBudgetBytes": 268435456}}`, nil)
	want := Admission{MaxConcurrentRuns: 4, MaxConcurrentRunsPerSession: 2, MaxQueuedRuns: 10, MemoryBudgetBytes: 256 << 20}
	if c.Admission != want {
		t.Errorf("admission = %+v, want %+v", c.Admission, want)
	}
	// The built-in maximum (512 MiB) is lowered to a smaller budget: a run
	// asking for more could never start.
	if c.MaxLimits.MaxMemoryBytes != 256<<20 || c.Resolve(Limits{MaxMemoryBytes: 1 << 40}).MaxMemoryBytes != 256<<20 {
		t.Errorf("max memory = %d, want the budget", c.MaxLimits.MaxMemoryBytes)
	}
	if c, err := Parse("codemode.json", []byte(`{"codemode": {"defaultLimits": {"timeoutMs": 600000}, "maxLimits": {"timeoutMs": 900000}}}`), env(nil)); err != nil || c.DefaultLimits.TimeoutMs != 600000 {
		t.Errorf("a default under a raised maximum: %v, %+v", err, c)
	}
	for _, tc := range []struct{ src, key string }{
		{`{"codemode": {"memoryBudgetBytes": 1000000, "maxLimits": {"maxMemoryBytes": 2000000}}}`, "codemode.maxLimits.maxMemoryBytes"},
		{`{"codemode": {"memoryBudgetBytes": 1000000, "defaultLimits": {"maxMemoryBytes": 2000000}}}`, "codemode.defaultLimits.maxMemoryBytes"},
		{`{"codemode": {"maxQueuedRuns": 0}}`, "codemode.maxQueuedRuns"},
		{`{"codemode": {"maxConcurrentRuns": 2.5}}`, "codemode.maxConcurrentRuns"},
		{`{"codemode": {"memoryBudgetBytes": "4GiB"}}`, "codemode.memoryBudgetBytes"},
		{`{"codemode": {"maxConcurentRuns": 2}}`, "codemode.maxConcurentRuns"},
		// A default above its maximum would be lowered without a word.
		{`{"codemode": {"defaultLimits": {"timeoutMs": 600000}}}`, "codemode.defaultLimits.timeoutMs"},
		{`{"codemode": {"defaultLimits": {"maxToolCalls": 50}, "maxLimits": {"maxToolCalls": 20}}}`, "codemode.defaultLimits.maxToolCalls"},
	} {
		_, err := Parse("codemode.json", []byte(tc.src), env(nil))
		if err == nil || !strings.Contains(err.Error(), tc.key) || !strings.Contains(err.Error(), "fix:") {
			t.Errorf("%s: err = %v, want one naming %s with a fix", tc.src, err, tc.key)
		}
	}
}

// A request can lower a limit, and raise it only up to the maximum.
func TestResolveLimits(t *testing.T) {
	c := Default()
	l := c.Resolve(Limits{TimeoutMs: 1000, MaxToolCalls: 1 << 40, MaxMemoryBytes: -5})
	if l.TimeoutMs != 1000 || l.MaxToolCalls != BuiltinMaxLimits.MaxToolCalls || l.MaxMemoryBytes != BuiltinDefaultLimits.MaxMemoryBytes {
		t.Fatalf("resolved = %+v", l)
	}
	if d := c.Resolve(Limits{}); d != c.DefaultLimits {
		t.Fatalf("empty request = %+v, want defaults %+v", d, c.DefaultLimits)
	}
}

func TestFind(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv(EnvVar, "")
	if p, err := Find(""); p != "" || err != nil {
		t.Fatalf("no file: %q %v", p, err)
	}
	c, err := Load("")
	if err != nil || c.File != "" || len(c.Servers) != 0 || c.Serve.RunToolName != "codemode_run" {
		t.Fatalf("embedded default = %+v, %v", c, err)
	}
	os.WriteFile(DefaultFile, []byte(`{"mcpServers": {"cwd": {"command": "x"}}}`), 0o644)
	other := filepath.Join(dir, "other.json")
	os.WriteFile(other, []byte(`{"mcpServers": {"env": {"command": "x"}}}`), 0o644)
	flag := filepath.Join(dir, "flag.json")
	os.WriteFile(flag, []byte(`{"mcpServers": {"flag": {"command": "x"}}}`), 0o644)
	id := func(flagPath string) string {
		c, err := Load(flagPath)
		if err != nil {
			t.Fatal(err)
		}
		return c.Servers[0].ID
	}
	if got := id(""); got != "cwd" {
		t.Errorf("./codemode.json: got %q", got)
	}
	t.Setenv(EnvVar, other)
	if got := id(""); got != "env" {
		t.Errorf("$CODEMODE_CONFIG: got %q", got)
	}
	if got := id(flag); got != "flag" {
		t.Errorf("--config: got %q", got)
	}
	if _, err := Load(filepath.Join(dir, "missing.json")); err == nil || !strings.Contains(err.Error(), "--config") {
		t.Errorf("missing --config file: %v", err)
	}
}
