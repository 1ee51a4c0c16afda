package builtin_test

import (
	"os"
	"testing"

	"github.com/codemode-mcp/codemode/internal/builtin"
	"github.com/codemode-mcp/codemode/internal/builtin/state"
	"github.com/codemode-mcp/codemode/internal/builtin/thoughtbox"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/store"
)

// codemode.approval covers the built-in servers as it covers configured
// ones: a built-in is not a way around the policy.
func TestBuiltinsTakeTheGatewayApproval(t *testing.T) {
	dir := t.TempDir()
	st := store.New(&store.Options{Dir: dir})
	defer st.Close()
	cfg, err := config.Parse("codemode.json", []byte(`{"codemode": {"approval": "writes"}}`), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	builtin.NewSet(thoughtbox.New(st, nil), state.New(st, nil)).Configure(cfg, nil)
	if len(cfg.Servers) != 2 {
		t.Fatalf("servers: %+v", cfg.Servers)
	}
	for _, s := range cfg.Servers {
		if s.Approval != config.ApprovalWrites {
			t.Errorf("%s: approval %q, want %q", s.ID, s.Approval, config.ApprovalWrites)
		}
	}
	if !cfg.ApprovalPossible() {
		t.Error("ApprovalPossible is false")
	}
}
