package serve

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A list_changed notification reaches a session only once its client has
// initialized it.
func TestNoListChangedBeforeInitialize(t *testing.T) {
	ctx := context.Background()
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	var sent []string
	h := notInitializedYet(func(_ context.Context, method string, _ mcp.Request) (mcp.Result, error) {
		sent = append(sent, method)
		return nil, nil
	})
	notify := func() {
		req := &mcp.ServerRequest[*mcp.ToolListChangedParams]{Session: ss, Params: &mcp.ToolListChangedParams{}}
		if _, err := h(ctx, "notifications/tools/list_changed", req); err != nil {
			t.Fatal(err)
		}
	}
	notify()
	if len(sent) != 0 {
		t.Fatalf("sent before initialize: %v", sent)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	notify()
	if len(sent) != 1 {
		t.Fatalf("after initialize: %v", sent)
	}
}
