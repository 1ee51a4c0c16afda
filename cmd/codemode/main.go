// Command codemode is a gateway that puts MCP servers behind Code Mode: an
// agent writes one JavaScript or TypeScript script that calls the servers'
// tools as async functions in a sandbox, and gets back only the result.
//
//	codemode serve            serve MCP (stdio, or --http ADDR)
//	codemode run SCRIPT|-     run one script and print the response
//	codemode types [--out D]  write TypeScript declarations of every tool
//
// See the README for configuration.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/codemode-mcp/codemode/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
