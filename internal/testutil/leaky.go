package testutil

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// LeakyServer is an in-process MCP server that puts secret in everything it
// sends: its instructions and serverInfo, every tool's title, description,
// schema and annotations, resources and resource templates and their
// contents, prompts and their messages, tool results (text and structured),
// an isError text and a JSON-RPC error. Redaction tests configure secret
// and look for it in what reaches the model.
//
// Tools: "leak" returns the secret; "binary" returns it inside image, audio
// and blob data; "fail" is an isError result quoting it;
// "reject" fails with a JSON-RPC error quoting it; "echo" returns its
// "text" argument.
func LeakyServer(secret string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "leaky", Title: "Leaky " + secret, Version: "1.0.0"},
		&mcp.ServerOptions{Instructions: "Authenticate with " + secret + " when asked."})
	schema := json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"defaults to ` + secret + `","default":"` + secret + `","examples":["` + secret + `"]}}}`)
	tool := func(name string, h mcp.ToolHandler) {
		srv.AddTool(&mcp.Tool{Name: name, Title: name + " " + secret, Description: "Uses the key " + secret + " for " + name + ".",
			InputSchema: schema, Annotations: &mcp.ToolAnnotations{Title: "annotated " + secret}}, h)
	}
	tool("leak", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "the key is " + secret}},
			StructuredContent: map[string]any{"key": secret, "nested": []any{secret}}}, nil
	})
	// The secret in binary data, which reaches a script base64-encoded.
	tool("binary", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.ImageContent{Data: []byte("PNG key=" + secret), MIMEType: "image/png"},
			&mcp.AudioContent{Data: []byte("WAV key=" + secret), MIMEType: "audio/wav"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "leak://blob", MIMEType: "application/octet-stream", Blob: []byte("key=" + secret)}},
		}}, nil
	})
	tool("fail", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "denied for key " + secret}}}, nil
	})
	tool("reject", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New("bad credentials " + secret)
	})
	tool("echo", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct{ Text string }
		json.Unmarshal(req.Params.Arguments, &in)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil
	})
	srv.AddResource(&mcp.Resource{URI: "leak://key", Name: "key " + secret, Description: "holds " + secret, MIMEType: "text/plain"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "leak://key", MIMEType: "text/plain", Text: "key=" + secret},
				{URI: "leak://key.bin", MIMEType: "application/octet-stream", Blob: []byte("key=" + secret)}}}, nil
		})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "leak://keys/{id}", Name: "keys", Description: "template " + secret},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "leak://keys/1", Text: secret}}}, nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "login", Description: "log in with " + secret, Arguments: []*mcp.PromptArgument{{Name: "user", Description: "user of " + secret}}},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Description: "prompt " + secret, Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "use " + secret}}}}, nil
		})
	return srv
}
