package proxy_test

import (
	"log"
	"net/http"

	"github.com/codemode-mcp/codemode/internal/proxy"
)

// Serving the proxy in front of an OpenAI-compatible API, as `codemode
// proxy --upstream https://api.openai.com/v1` does. Clients point their
// base URL at it and keep each assistant message, code_message included,
// in their history.
func ExampleNew() {
	p, err := proxy.New(&proxy.Options{Upstream: "https://api.openai.com/v1", Model: "gpt-4.1"})
	if err != nil {
		log.Fatal(err)
	}
	http.Handle("/v1/chat/completions", p.Handler())
}
