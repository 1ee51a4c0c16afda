package transpile

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/evanw/esbuild/pkg/api"
)

// ordinaryScript is the size and shape of a script an agent writes: a few
// imports, a few awaited calls, some data shaping (about 1 KB).
const ordinaryScript = `import { search_repositories, get_file_contents } from "@codemode/servers/github";
import { ToolCallError } from "@codemode/errors";

interface Repo { name: string; owner: { login: string }; stargazers_count: number }

const found = await search_repositories({ query: "language:go stars:>1000", perPage: 20 });
const repos: Repo[] = (found.items ?? []).filter((r: Repo) => r.stargazers_count > 1000);
const top = repos.sort((a, b) => b.stargazers_count - a.stargazers_count).slice(0, 5);

const readmes = await Promise.all(top.map(async (r) => {
  try {
    const f = await get_file_contents({ owner: r.owner.login, repo: r.name, path: "README.md" });
    return { repo: r.name, size: String(f.content ?? "").length };
  } catch (e) {
    if (e instanceof ToolCallError) return { repo: r.name, error: e.message };
    throw e;
  }
}));

console.log("read", readmes.length, "readmes");
globalThis.__codemode_result__ = {
  count: repos.length,
  top: readmes,
  total: readmes.reduce((s, r) => s + ("size" in r ? r.size : 0), 0),
};
`

// largeScript is about 20 KB: a script that carries a table of data.
var largeScript = ordinaryScript + strings.Repeat("globalThis.rows = [...(globalThis.rows ?? []), { id: 1, name: \"a row of data\", tags: [\"x\", \"y\"] }];\n", 200)

// BenchmarkEsbuildInProcess is esbuild's transform of a script as Module
// asks for it, in this process: what a transform cost before workers.
func BenchmarkEsbuildInProcess(b *testing.B) {
	for _, c := range []struct{ name, src string }{{"ordinary", ordinaryScript}, {"20KB", largeScript}} {
		b.Run(c.name, func(b *testing.B) {
			opts := esbuildOptions(c.src, "ts", false)
			for b.Loop() {
				if r := api.Transform(c.src, opts); len(r.Errors) > 0 {
					b.Fatal(r.Errors)
				}
			}
		})
	}
}

// BenchmarkEsbuildWorker is the same transform in a worker process
// (Transform): the difference to BenchmarkEsbuildInProcess is the cost of
// the worker's round trip.
func BenchmarkEsbuildWorker(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct{ name, src string }{{"ordinary", ordinaryScript}, {"20KB", largeScript}} {
		b.Run(c.name, func(b *testing.B) {
			opts := esbuildOptions(c.src, "ts", false)
			if _, err := Transform(ctx, c.src, opts); err != nil { // start a worker
				b.Fatal(err)
			}
			for b.Loop() {
				r, err := Transform(ctx, c.src, opts)
				if err != nil || len(r.Errors) > 0 {
					b.Fatal(err, r.Errors)
				}
			}
		})
	}
}

// BenchmarkEmptyTransform is esbuild's transform of an empty input, in
// this process and in a worker: esbuild's fixed cost per call, and the
// worker's round trip on top of it.
func BenchmarkEmptyTransform(b *testing.B) {
	opts := api.TransformOptions{Loader: api.LoaderJS}
	b.Run("in-process", func(b *testing.B) {
		for b.Loop() {
			api.Transform("", opts)
		}
	})
	b.Run("worker", func(b *testing.B) {
		ctx := context.Background()
		if _, err := Transform(ctx, "", opts); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := Transform(ctx, "", opts); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkModuleCached is Module on a script it has transpiled before:
// what a repeated script pays.
func BenchmarkModuleCached(b *testing.B) {
	ctx := context.Background()
	if out, diags := Module(ctx, ordinaryScript, nil); out == nil {
		b.Fatal(diags)
	}
	for b.Loop() {
		Module(ctx, ordinaryScript, nil)
	}
}

// BenchmarkModuleUncached is Module on a script it has not seen: what a
// new script pays for compiling (a comment with a counter makes every
// script new).
func BenchmarkModuleUncached(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct{ name, src string }{{"ordinary", ordinaryScript}, {"20KB", largeScript}} {
		b.Run(c.name, func(b *testing.B) {
			Module(ctx, c.src, nil) // start a worker
			i := 0
			for b.Loop() {
				i++
				if out, diags := Module(ctx, c.src+"// "+strconv.Itoa(i)+"\n", nil); out == nil {
					b.Fatal(diags)
				}
			}
		})
	}
}
