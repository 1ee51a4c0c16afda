package sandbox

import (
	"context"
	"testing"
)

// A run's VM comes from the pool, prepared on the filler's goroutine while
// the previous run's VM is being closed on the run's. Closing used to free
// the runtime's memory before telling quickjs the VM was gone, which drops
// the VM's module loader by the runtime's address: when the new VM's
// runtime got that address, its loader was dropped instead, and its run
// failed at the first import with an empty exception. Each run here takes a
// prepared VM and imports a module; with the old order about one run in a
// few hundred failed (it cannot fail with the right order).
func TestPooledVMsKeepTheirLoader(t *testing.T) {
	if testing.Short() {
		t.Skip("a thousand runs")
	}
	opts := &Options{Resolve: func(ctx context.Context, s string) (string, error) {
		return `export const one = 1;`, nil
	}}
	for i := range 1000 {
		WarmPool()
		res := Run(context.Background(), `import { one } from "@codemode/servers/x"; globalThis.__codemode_result__ = one;`, opts)
		if string(res.Result) != "1" {
			t.Fatalf("run %d: result %s %v", i, res.Result, res.Diagnostics)
		}
	}
}
