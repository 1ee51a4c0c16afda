package catalog

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

type fixedSource struct {
	cfg   []config.Server
	snaps map[string]*upstream.Snapshot
}

func (f fixedSource) Servers() []config.Server { return f.cfg }
func (f fixedSource) Snapshot(_ context.Context, id string) (*upstream.Snapshot, error) {
	if s := f.snaps[id]; s != nil {
		return s, nil
	}
	return nil, ErrUnknownServer
}

func ann(readOnly bool, destructive *bool) *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{ReadOnlyHint: readOnly, DestructiveHint: destructive}
}

// A tool the policy denies is not in the Server at all: not in Tools, not
// found by Lookup under any spelling, and it leaves no trace in the export
// names of the others.
func TestPolicyFiltersTools(t *testing.T) {
	f, tr := false, true
	snap := &upstream.Snapshot{ServerID: "memory", Name: "memory", Tools: []*mcp.Tool{
		{Name: "read_graph", Annotations: ann(true, nil)},
		{Name: "create_entities", Annotations: ann(false, &f)},
		{Name: "delete_entities", Annotations: ann(false, &tr)},
		{Name: "delete-entities", Annotations: ann(false, &tr)}, // would take the export name delete_entities_2
		{Name: "Delete_Relations"},
		{Name: "secret_admin"},
	}}
	cfg := config.Server{ID: "memory", Name: "memory", AllowTools: []string{"*_*", "*-*"}, DenyTools: []string{"delete*", "SECRET_*"},
		AutoApprove: []string{"create_entities"}, Approval: config.ApprovalWrites}
	c := New(fixedSource{cfg: []config.Server{cfg}, snaps: map[string]*upstream.Snapshot{"memory": snap}})
	s, err := c.View().Server(context.Background(), "memory")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range s.Tools {
		names = append(names, tool.Name+"="+tool.ExportName)
	}
	if len(names) != 2 || names[0] != "create_entities=create_entities" || names[1] != "read_graph=read_graph" {
		t.Fatalf("tools = %q", names)
	}
	for _, name := range []string{"delete_entities", "delete-entities", "delete_entities_2", "Delete_Relations", "delete_relations", "secret_admin"} {
		if s.Lookup(name) != nil {
			t.Errorf("Lookup(%q) found a denied tool", name)
		}
	}
	for _, h := range Search([]*Server{s}, "delete entities relations secret", 10) {
		if h.Tool.Name != "create_entities" && h.Tool.Name != "read_graph" {
			t.Errorf("search finds denied tool %q", h.Tool.Name)
		}
	}
	create, read := s.Lookup("create_entities"), s.Lookup("read_graph")
	if create.NeedsApproval || !create.AutoApproved {
		t.Errorf("create_entities: needs %v, auto %v (it is in autoApprove)", create.NeedsApproval, create.AutoApproved)
	}
	if read.NeedsApproval || !read.ReadOnly() {
		t.Errorf("read_graph: needs %v, read-only %v", read.NeedsApproval, read.ReadOnly())
	}
}

func TestPolicyMarksApproval(t *testing.T) {
	f := false
	snap := &upstream.Snapshot{ServerID: "fs", Name: "fs", Tools: []*mcp.Tool{
		{Name: "read_file", Annotations: ann(true, nil)},
		{Name: "create_directory", Annotations: ann(false, &f)},
		{Name: "write_file"}, // no annotations: MCP's defaults (destructive)
	}}
	for _, tc := range []struct {
		mode config.Approval
		want map[string]bool
	}{
		{config.ApprovalNone, map[string]bool{"read_file": false, "create_directory": false, "write_file": false}},
		{config.ApprovalDestructive, map[string]bool{"read_file": false, "create_directory": false, "write_file": true}},
		{config.ApprovalWrites, map[string]bool{"read_file": false, "create_directory": true, "write_file": true}},
		{config.ApprovalAll, map[string]bool{"read_file": true, "create_directory": true, "write_file": true}},
	} {
		cfg := config.Server{ID: "fs", Name: "fs", Approval: tc.mode}
		c := New(fixedSource{cfg: []config.Server{cfg}, snaps: map[string]*upstream.Snapshot{"fs": snap}})
		s, err := c.View().Server(context.Background(), "fs")
		if err != nil {
			t.Fatal(err)
		}
		for name, want := range tc.want {
			if got := s.Lookup(name).NeedsApproval; got != want {
				t.Errorf("%s: %s needs approval = %v, want %v", tc.mode, name, got, want)
			}
		}
	}
}
