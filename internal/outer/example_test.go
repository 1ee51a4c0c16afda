package outer_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/outer"
)

// A tool handler makes the channel of its call and hands it down through
// the context; code deep inside the run asks the client through it, without
// knowing which protocol the client speaks. Here the client is on the
// 2026-07-28 protocol: the first call is answered with the question, and
// the retry, carrying the answer and the sealed state, goes on.
func Example() {
	sealer := outer.NewSealer()
	srv := mcp.NewServer(&mcp.Implementation{Name: "gateway", Version: "1"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	srv.AddTool(&mcp.Tool{Name: "work", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ch := outer.New(req, &outer.Options{Sealer: sealer})
		ctx = outer.With(ctx, ch)
		// ... deep inside the work:
		c := outer.From(ctx)
		step, _ := c.State()
		res, err := c.Elicit(ctx, "confirm", &mcp.ElicitParams{Message: "Go on?", RequestedSchema: map[string]any{"type": "object"}})
		if errors.Is(err, outer.ErrInputRequired) {
			c.SetState([]byte("asked once"))
			ir, _ := c.InputRequired()
			return ir, nil
		}
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s after %q", res.Action, step)}}}, nil
	})
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	srv.Connect(ctx, st, nil)
	client := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		}})
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: outer.ProtocolInputRequired})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cs.Close()
	// The client's own middleware fulfils the input request and retries.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "work", Arguments: map[string]any{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output: accept after "asked once"
}
