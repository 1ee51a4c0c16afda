// Command codemode is a gateway that puts MCP servers behind Code Mode: an
// agent writes one JavaScript or TypeScript script that calls the servers'
// tools as async functions in a sandbox, and gets back only the result.
//
//	codemode serve            serve MCP (stdio, or --http ADDR)
//	codemode run SCRIPT|-     run one script and print the response
//	codemode types [--out D]  write TypeScript declarations of every tool
//
// and replay, proxy, history, scripts, ui and version: "codemode help" lists
// them all. Start with internal/cli (cli.Main), where every command lives;
// this package only sets up the process. See the README for configuration.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/codemode-mcp/codemode/internal/cli"
	"github.com/codemode-mcp/codemode/internal/reexec"
)

// gcPercent replaces Go's default GOGC of 100 unless GOGC is set. The MCP
// SDK allocates a fresh 32 KiB decode buffer for every JSON-RPC message
// while the gateway's live Go heap stays small (sandbox memory is allocated
// outside it), so at 100 the collector runs after every few tool calls;
// 400 trades a little heap for faster calls (measured in docs/BENCHMARKS.md,
// "GOGC").
const gcPercent = 400

func main() {
	// A worker process (esbuild, see internal/transpile) is this program
	// started again in a mode of its own.
	if reexec.Init() {
		return
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
