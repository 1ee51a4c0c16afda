package sandbox

import (
	"context"
	"runtime"
	"testing"

	"github.com/codemode-mcp/codemode/internal/testutil"
)

// A module's top-level variables die with the run's VM, whether the module
// was parsed or read as bytecode: a reference the module loader kept would
// keep them, and everything they hold, in the process forever (the engine's
// memory is outside the Go heap, so only the resident set shows it).
func TestModulesFreedWithTheirVM(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/status")
	}
	// 43 runs building 16 MB of strings each: nearly two minutes under
	// the race detector, and resident sizes it distorts.
	engineStress(t)
	opts := &Options{Resolve: func(ctx context.Context, s string) (string, error) {
		return `export const big = "y".repeat(8_000_000);`, nil
	}}
	// The agent's module holds 8 MB too, and runs often enough to be read
	// back as bytecode.
	const code = `import { big } from "@codemode/servers/x"; const mine = "x".repeat(8_000_000); globalThis.__codemode_result__ = big.length + mine.length;`
	run := func() {
		if r := Run(context.Background(), code, opts); string(r.Result) != "16000000" {
			t.Fatalf("result %s %v", r.Result, r.Diagnostics)
		}
	}
	for range 3 {
		run()
	}
	before := testutil.ResidentMiB(t)
	const runs = 40
	for range runs {
		run()
	}
	WarmPool() // the VMs of these runs are closed
	// Kept, the modules would hold 16 MB per run: 640 MB.
	if grew := testutil.ResidentMiB(t) - before; grew > 200 {
		t.Errorf("the resident set grew by %d MiB over %d runs", grew, runs)
	}
}

// §1.4 through what runs now share: a server module, an internal module, the
// agent's own module (each read back as bytecode once cached) and the
// chunks (read on first use). The script looks for the marks an earlier run
// of it left on everything those gave it, then leaves them; no run sees
// another's. A bytecode cache that handed out objects rather than code, or
// a chunk kept across VMs, would show a mark.
func TestNothingCrossesRunsThroughTheCaches(t *testing.T) {
	opts := &Options{Resolve: func(ctx context.Context, s string) (string, error) {
		return `export const config = { mode: "clean" }; export const list = [1]; export function tool() { return "tool"; }
export const __meta__ = Object.freeze({ serverId: "x", get tools() { return [{ toolName: "t" }]; } });`, nil
	}}
	const code = `import { config, list, tool, __meta__ } from "@codemode/servers/x";
import { ToolCallError } from "@codemode/errors";
const seen = [];
if (config.mode !== "clean") seen.push("module object");
if (list.length !== 1) seen.push("module array");
if (tool.mark) seen.push("module function");
if (ToolCallError.prototype.mark || ToolCallError.mark) seen.push("errors class");
if (TextEncoder.prototype.mark || TextEncoder.mark) seen.push("text chunk");
if (URL.prototype.mark) seen.push("url chunk");
if (Object.prototype.mark) seen.push("Object.prototype");
if (Symbol.for("mark").description !== "mark" || globalThis[Symbol.for("mark")]) seen.push("symbol registry");
if (globalThis.mark) seen.push("global");
// Some of these are frozen: a mutation that throws is skipped.
const mark = (o, k = "mark") => { try { o[k] = 1; } catch {} };
config.mode = "dirty"; list.push(2); mark(tool);
mark(ToolCallError.prototype); mark(ToolCallError);
mark(TextEncoder.prototype); mark(TextEncoder); mark(URL.prototype);
mark(Object.prototype); mark(globalThis, Symbol.for("mark")); mark(globalThis);
// The marks that took are visible in this run: the checks above would see them.
const took = config.mode === "dirty" && list.length === 2 && tool.mark === 1 && TextEncoder.prototype.mark === 1 &&
  URL.prototype.mark === 1 && ({}).mark === 1 && globalThis[Symbol.for("mark")] === 1 && globalThis.mark === 1;
globalThis.__codemode_result__ = { seen, took };`
	for i := range 4 {
		res := Run(context.Background(), code, opts)
		if string(res.Result) != `{"seen":[],"took":true}` {
			t.Fatalf("run %d saw what an earlier run left: %s %v", i+1, res.Result, res.Diagnostics)
		}
	}
}
