package sandbox

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// A module's top-level variables die with the run's VM, whether the module
// was parsed or read as bytecode: a reference the module loader kept would
// keep them, and everything they hold, in the process forever (the engine's
// memory is outside the Go heap, so only the resident set shows it).
func TestModulesFreedWithTheirVM(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/status")
	}
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
	before := residentMiB(t)
	const runs = 40
	for range runs {
		run()
	}
	WarmPool() // the VMs of these runs are closed
	// Kept, the modules would hold 16 MB per run: 640 MB.
	if grew := residentMiB(t) - before; grew > 200 {
		t.Errorf("the resident set grew by %d MiB over %d runs", grew, runs)
	}
}

func residentMiB(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				t.Fatal(err)
			}
			return kb / 1024
		}
	}
	t.Fatal("no VmRSS")
	return 0
}
