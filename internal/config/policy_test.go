package config

import (
	"testing"
	"time"
)

// An entry pasted from Cline's cline_mcp_settings.json loads: autoApprove,
// "timeout" in seconds, the legacy transportType, "disabled": false.
func TestClineConfigLoads(t *testing.T) {
	src := `{"mcpServers": {
	  "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"],
	    "env": {}, "disabled": false, "autoApprove": ["read_graph", "search_nodes"], "timeout": 60, "transportType": "stdio"},
	  "remote": {"url": "https://example.com/mcp", "type": "streamableHttp", "autoApprove": [], "timeout": 30}
	}}`
	c, err := Parse("cline_mcp_settings.json", []byte(src), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	m := c.Servers[0]
	if m.Transport != Stdio || m.CallTimeout != 60*time.Second {
		t.Errorf("memory: transport %q, timeout %v", m.Transport, m.CallTimeout)
	}
	if !m.AutoApproved("read_graph") || !m.AutoApproved("search_nodes") || m.AutoApproved("create_entities") {
		t.Errorf("memory.autoApprove = %q", m.AutoApprove)
	}
	if r := c.Servers[1]; r.Transport != Streamable || r.CallTimeout != 30*time.Second || r.AutoApprove != nil {
		t.Errorf("remote = %+v", r)
	}
	// Without codemode.approval nothing needs approval: autoApprove only
	// matters once an approval mode asks for something.
	if m.Approval != ApprovalNone || c.ApprovalPossible() {
		t.Errorf("approval = %q, possible %v", m.Approval, c.ApprovalPossible())
	}
}

// An entry pasted from Roo Code's mcp_settings.json loads: alwaysAllow (the
// alias of autoApprove), disabledTools (denied), watchPaths (ignored),
// "type": "streamable-http".
func TestRooConfigLoads(t *testing.T) {
	src := `{"mcpServers": {
	  "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
	    "alwaysAllow": ["read_file", "list_*"], "disabledTools": ["move_file"], "watchPaths": ["/tmp/x"], "disabled": false, "timeout": 120},
	  "remote": {"type": "streamable-http", "url": "https://example.com/mcp", "alwaysAllow": []}
	}, "codemode": {"approval": "writes"}}`
	c, err := Parse("mcp_settings.json", []byte(src), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	fs := c.Servers[0]
	if !fs.AutoApproved("read_file") || !fs.AutoApproved("list_directory") || fs.AutoApproved("write_file") {
		t.Errorf("alwaysAllow = %q", fs.AutoApprove)
	}
	if fs.ToolAllowed("move_file") || !fs.ToolAllowed("write_file") {
		t.Errorf("disabledTools = %q", fs.DenyTools)
	}
	if fs.Approval != ApprovalWrites || c.Servers[1].Approval != ApprovalWrites || !c.ApprovalPossible() {
		t.Errorf("approval: %q, %q", fs.Approval, c.Servers[1].Approval)
	}
	if fs.CallTimeout != 120*time.Second {
		t.Errorf("timeout = %v", fs.CallTimeout)
	}
}

func TestPolicyKeys(t *testing.T) {
	src := `{"mcpServers": {
	  "a": {"command": "x", "allowTools": ["read_*", "search?"], "denyTools": ["read_secret*"], "autoApprove": ["read_*"], "approval": "all"},
	  "b": {"command": "x", "denyTools": ["delete_*"]},
	  "c": {"command": "x", "autoApprove": ["create_*"], "alwaysAllow": ["add_*"]}
	}, "codemode": {"approval": "destructive"}}`
	c, err := Parse("codemode.json", []byte(src), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	a, b, cc := c.Servers[0], c.Servers[1], c.Servers[2]
	for name, want := range map[string]bool{"read_graph": true, "searchX": true, "search": false, "search_xy": false,
		"read_secret_key": false, "READ_SECRET": false, "write": false, "Read_graph": false} {
		if got := a.ToolAllowed(name); got != want {
			t.Errorf("a.ToolAllowed(%q) = %v, want %v", name, got, want)
		}
	}
	// denyTools ignores case; allowTools does not (both err on the safe side).
	for name, want := range map[string]bool{"delete_entities": false, "Delete_Entities": false, "DELETE_X": false, "create": true} {
		if got := b.ToolAllowed(name); got != want {
			t.Errorf("b.ToolAllowed(%q) = %v, want %v", name, got, want)
		}
	}
	if a.Approval != ApprovalAll || b.Approval != ApprovalDestructive || c.Approval != ApprovalDestructive {
		t.Errorf("approval: a %q, b %q, gateway %q", a.Approval, b.Approval, c.Approval)
	}
	// autoApprove and alwaysAllow together: both lists apply.
	if !cc.AutoApproved("create_x") || !cc.AutoApproved("add_y") || cc.AutoApproved("Create_x") {
		t.Errorf("c.autoApprove = %q", cc.AutoApprove)
	}
	f, tr := false, true
	for _, tc := range []struct {
		s           Server
		name        string
		readOnly    bool
		destructive *bool
		want        bool
	}{
		{a, "read_graph", true, nil, false}, // autoApprove wins over "all"
		{a, "search1", true, nil, true},     // "all": even read-only tools
		{b, "create", false, &f, false},     // destructive: only destructive ones
		{b, "remove", false, &tr, true},
		{b, "unannotated", false, nil, true}, // MCP's default: destructive
		{b, "read", true, nil, false},
	} {
		if got := tc.s.NeedsApproval(tc.name, tc.readOnly, tc.destructive); got != tc.want {
			t.Errorf("%s.NeedsApproval(%q, ro=%v, d=%v) = %v, want %v", tc.s.Name, tc.name, tc.readOnly, tc.destructive, got, tc.want)
		}
	}
}

func TestApprovalModes(t *testing.T) {
	f, tr := false, true
	for _, tc := range []struct {
		mode        Approval
		readOnly    bool
		destructive *bool
		want        bool
	}{
		{ApprovalNone, false, &tr, false},
		{"", false, &tr, false},
		{ApprovalDestructive, false, &tr, true},
		{ApprovalDestructive, false, &f, false},
		{ApprovalDestructive, false, nil, true},
		{ApprovalDestructive, true, &tr, false}, // destructiveHint means nothing on a read-only tool
		{ApprovalWrites, false, &f, true},
		{ApprovalWrites, true, nil, false},
		{ApprovalAll, true, nil, true},
	} {
		if got := tc.mode.Requires(tc.readOnly, tc.destructive); got != tc.want {
			t.Errorf("%q.Requires(%v, %v) = %v, want %v", tc.mode, tc.readOnly, tc.destructive, got, tc.want)
		}
	}
}

func TestPolicyErrors(t *testing.T) {
	const srv = `{"mcpServers": {"a": {"command": "x", `
	for _, tc := range []struct {
		name, src, key string
		problem, fix   []string
	}{
		{"approval unknown", srv + `"approval": "write"}}}`, "mcpServers.a.approval", []string{`"write"`}, []string{`did you mean "writes"`}},
		{"approval number", srv + `"approval": 1}}}`, "mcpServers.a.approval", []string{"must be a string"}, []string{`"destructive"`}},
		{"gateway approval", `{"codemode": {"approval": "always"}}`, "codemode.approval", []string{`"always"`}, []string{`"all"`}},
		{"allowTools empty", srv + `"allowTools": []}}}`, "mcpServers.a.allowTools", []string{"no tool"}, []string{"remove the key", `"disabled": true`}},
		{"allowTools string", srv + `"allowTools": "read_*"}}}`, "mcpServers.a.allowTools", []string{"must be an array of strings"}, []string{`["read_*"]`}},
		{"denyTools number", srv + `"denyTools": [1]}}}`, "mcpServers.a.denyTools[0]", []string{"must be a string"}, nil},
		{"denyTools empty element", srv + `"denyTools": ["x", " "]}}}`, "mcpServers.a.denyTools[1]", []string{"empty"}, nil},
		{"autoApprove object", srv + `"autoApprove": {"read": true}}}}`, "mcpServers.a.autoApprove", []string{"must be an array of strings"}, nil},
		{"alwaysAllow bool", srv + `"alwaysAllow": true}}}`, "mcpServers.a.alwaysAllow", []string{"must be an array of strings"}, nil},
		{"both timeouts", srv + `"timeoutMs": 1000, "timeout": 5}}}`, "mcpServers.a.timeout", []string{`"timeoutMs"`}, []string{"seconds"}},
		{"timeout string", srv + `"timeout": "60"}}}`, "mcpServers.a.timeout", []string{"seconds"}, []string{"without quotes"}},
		{"transportType conflict", `{"mcpServers": {"a": {"url": "http://x/mcp", "type": "sse", "transportType": "stdio"}}}`, "mcpServers.a.transportType", []string{`"stdio"`, `"sse"`}, []string{`"type"`}},
		{"misspelt alias", srv + `"alwaysAlow": []}}}`, "mcpServers.a.alwaysAlow", []string{"unknown key"}, []string{`did you mean "alwaysAllow"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkError(t, configError(t, tc.src, nil), tc.key, tc.problem, tc.fix)
		})
	}
}

func TestGlob(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"*", "", true},
		{"*", "anything/at.all", true},
		{"read_*", "read_", true},
		{"read_*", "read", false},
		{"*_file", "write_file", true},
		{"*_file", "write_files", false},
		{"a*b*c", "aXbYbZc", true},
		{"a*b*c", "aXbYbZ", false},
		{"?", "é", true},
		{"??", "é", false},
		{"get-?um", "get-sum", true},
		{"exact", "exact", true},
		{"exact", "exactly", false},
		{"**", "x", true},
		{"[a]", "[a]", true}, // brackets are literal
	} {
		if got := Glob(tc.pattern, tc.name); got != tc.want {
			t.Errorf("Glob(%q, %q) = %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
}

// A policy pattern that matches no tool is reported, with the tool it
// probably meant when it was written with the script's export name.
func TestUnmatchedPatterns(t *testing.T) {
	s := Server{ID: "everything", AllowTools: []string{"get-*", "echo", "nope*"}, DenyTools: []string{"get_env", "GET-SUM"}, AutoApprove: []string{"Echo"}}
	got := s.UnmatchedPatterns([]string{"echo", "get-env", "get-sum"})
	want := []string{
		`allowTools "nope*" matches none of the tools of server "everything"`,
		`denyTools "get_env" matches none of the tools of server "everything": did you mean "get-env"? (patterns match the server's own tool names, not the names scripts import)`,
		`autoApprove "Echo" matches none of the tools of server "everything": did you mean "echo"? (patterns match the server's own tool names, not the names scripts import)`,
	}
	if len(got) != len(want) {
		t.Fatalf("got %d: %q", len(got), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("[%d]\n got %s\nwant %s", i, got[i], want[i])
		}
	}
	if got := (Server{ID: "x"}).UnmatchedPatterns([]string{"a"}); got != nil {
		t.Errorf("no patterns: %q", got)
	}
}
