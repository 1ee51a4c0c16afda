package normalize

import (
	"context"
	"strconv"
	"testing"
)

// Benchmarks of the normaliser alone; docs/BENCHMARKS.md has the figures.

// BenchmarkPrepareSpecModule: codemode_run's spec form, which the normaliser
// hands back at the cost of a fence check and a cached transpile.
func BenchmarkPrepareSpecModule(b *testing.B) {
	src := "globalThis.__codemode_result__ = 1"
	o := &Options{Mode: Module}
	for b.Loop() {
		Prepare(context.Background(), src, o)
	}
}

// benchCold prepares a new script every iteration (a comment makes it
// unique), so that neither transpile's cache nor the analysis cache helps:
// what an agent's first submission of a script costs.
func benchCold(b *testing.B, mode Mode, src string) {
	o := &Options{Mode: mode}
	i := 0
	for b.Loop() {
		i++
		p := Prepare(context.Background(), src+"\n// "+strconv.Itoa(i), o)
		if !p.Changed() {
			b.Fatal("not reshaped")
		}
	}
}

// BenchmarkPrepareBodyCold: a ten-line function body whose last expression
// is returned.
func BenchmarkPrepareBodyCold(b *testing.B) {
	benchCold(b, Body, `const a = await everything.get_sum({ a: 1, b: 2 });
const b = await everything.get_sum({ a: 3, b: 4 });
const items = [a, b].map((x, i) => ({ i, x }));
for (const it of items) {
  if (it.i > 0) console.log(it.x);
}
const total = items.length;
({ items, total })`)
}

// BenchmarkPrepareModuleReturnCold: a module with imports and a top-level
// return, run as a function body.
func BenchmarkPrepareModuleReturnCold(b *testing.B) {
	benchCold(b, Module, `import { get_sum } from "@codemode/servers/everything";
const a = await get_sum({ a: 1, b: 2 });
if (!a) return null;
return { a };`)
}
