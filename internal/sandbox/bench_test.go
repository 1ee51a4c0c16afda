package sandbox

import (
	"context"
	"encoding/json"
	"testing"
)

// BenchmarkEmptyRun is a run of `return 1` (codemode style: assign the
// result) from a fresh sandbox that the pool prepared beforehand, which is
// what a request sees unless requests arrive faster than VMs are prepared
// (see BenchmarkEmptyRunSustained).
func BenchmarkEmptyRun(b *testing.B) {
	ctx := context.Background()
	Run(ctx, "globalThis.__codemode_result__ = 1", nil) // start the pool
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		WarmPool()
		b.StartTimer()
		res := Run(ctx, "globalThis.__codemode_result__ = 1", nil)
		if string(res.Result) != "1" {
			b.Fatalf("result %s %v", res.Result, res.Diagnostics)
		}
	}
}

// BenchmarkEmptyRunSustained runs back to back, so the pool runs dry and
// every run also pays for preparing a VM: the throughput bound.
func BenchmarkEmptyRunSustained(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		Run(ctx, "globalThis.__codemode_result__ = 1", nil)
	}
}

// BenchmarkHostCall is the cost of one async host operation and its promise.
func BenchmarkHostCall(b *testing.B) {
	ctx := context.Background()
	opts := &Options{
		Resolve: func(ctx context.Context, s string) (string, error) {
			return `import { call } from "@codemode/internal"; export const ping = (x) => call("ping", x);`, nil
		},
		Handle: func(ctx context.Context, op string, p json.RawMessage) (json.RawMessage, error) { return p, nil },
	}
	const n = 1000
	src := `import { ping } from "@codemode/servers/x"; let s = 0; for (let i = 0; i < 1000; i++) s += await ping(i); globalThis.__codemode_result__ = s;`
	b.ResetTimer()
	for b.Loop() {
		res := Run(ctx, src, opts)
		if string(res.Result) != "499500" {
			b.Fatalf("result %s %v", res.Result, res.Diagnostics)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/call")
}

func BenchmarkNewVM(b *testing.B) {
	for b.Loop() {
		v, err := newQJSVM()
		if err != nil {
			b.Fatal(err)
		}
		v.close()
	}
}

// BenchmarkArrayMethods is the cost of calling Array.prototype methods that
// guard.go guards (indexOf, join, forEach) on a small array, per call:
// what the guard adds to every call.
func BenchmarkArrayMethods(b *testing.B) {
	ctx := context.Background()
	const n = 100000
	src := `const a = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]; let s = 0;
for (let i = 0; i < 100000; i++) { s += a.indexOf(i % 12); s += a.join().length; a.forEach(() => {}); }
globalThis.__codemode_result__ = s;`
	for b.Loop() {
		res := Run(ctx, src, nil)
		if len(res.Diagnostics) > 0 {
			b.Fatal(res.Diagnostics)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n*3), "ns/call")
}
