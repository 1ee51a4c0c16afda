package upstream

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/testutil"
)

// The memory transport carries a whole session, and closing the client's
// end ends the server's session, as closing a pipe does.
func TestMemoryTransportsSession(t *testing.T) {
	ctx := context.Background()
	srv := mcp.NewServer(&mcp.Implementation{Name: "s"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "add"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct{ A, B int }) (*mcp.CallToolResult, struct{ Sum int }, error) {
		return nil, struct{ Sum int }{in.A + in.B}, nil
	})
	ct, st := NewMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"A": 2, "B": 3}})
	if err != nil || res.IsError {
		t.Fatalf("CallTool: %v %+v", err, res)
	}
	if got := res.StructuredContent.(map[string]any)["Sum"]; got != float64(5) {
		t.Fatalf("Sum = %v", got)
	}
	if _, err := ct.Connect(ctx); err == nil {
		t.Fatal("a second Connect of the same end succeeded")
	}
	cs.Close()
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	testutil.Wait(t, done, "the end of the server's session when the client closed")
}

// The Manager refuses a call of a tool the configuration denies, whoever
// asks: the upstream never sees it (the catalog is where the policy hides
// such tools; this is the last line).
func TestDeniedToolNeverSent(t *testing.T) {
	var calls int
	srv := mcp.NewServer(&mcp.Implementation{Name: "s"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "drop"}, func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, struct{}, error) {
		calls++
		return nil, struct{}{}, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "keep"}, func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, struct{}, error) {
		return nil, struct{}{}, nil
	})
	m, _ := newManager(t, []config.Server{{ID: "s", Name: "s", DenyTools: []string{"DROP"}}},
		&Options{Dial: DialInMemory(map[string]*mcp.Server{"s": srv})})
	for _, name := range []string{"drop", "Drop"} {
		_, err := m.CallTool(context.Background(), "s", name, nil)
		if e := asError(t, err, "s", Rejected); !errors.Is(e, ErrDeniedTool) {
			t.Errorf("CallTool(%q): %v, want ErrDeniedTool", name, err)
		}
	}
	if _, err := m.CallTool(context.Background(), "s", "keep", nil); err != nil {
		t.Fatal(err)
	}
	if calls != 0 {
		t.Errorf("the upstream saw %d calls of a denied tool", calls)
	}
}

// A policy pattern that matches none of the server's tools (here the
// script's export name instead of the tool's own) is logged once with the
// tool it probably meant, when the tool list arrives.
func TestUnmatchedPolicyPatternWarned(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "s"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "get-env"}, func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, struct{}, error) {
		return nil, struct{}{}, nil
	})
	m, logs := newManager(t, []config.Server{{ID: "s", Name: "s", DenyTools: []string{"get_env"}}},
		&Options{Dial: DialInMemory(map[string]*mcp.Server{"s": srv})})
	if _, err := m.Snapshot(testutil.Context(t), "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Snapshot(testutil.Context(t), "s"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(logs.String(), `denyTools \"get_env\" matches none of the tools of server \"s\": did you mean \"get-env\"?`); got != 1 {
		t.Errorf("the warning was logged %d times, want once; logs:\n%s", got, logs.String())
	}
}
