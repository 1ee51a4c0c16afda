package builtin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/codemode-mcp/codemode/internal/builtin"
	"github.com/codemode-mcp/codemode/internal/builtin/builtintest"
	"github.com/codemode-mcp/codemode/internal/sandbox"
	"github.com/codemode-mcp/codemode/internal/store"
)

// Benchmarks of the built-ins from a script, over the in-process path
// (builtin.Set.Caller): each runs a script of 100 sequential calls; the
// cost of one call is (Script100X − Script100NoCalls) / 100, the method of
// docs/BENCHMARKS.md. Data on SQLite in a temporary directory.

var bencher = builtin.Caller{Client: "bench", Session: "bench"}

func benchScript(b *testing.B, g *builtintest.Gateway, code string) {
	b.Helper()
	ctx := context.Background()
	if resp := g.Run(ctx, bencher, code); resp.Failed() {
		b.Fatalf("%v", resp.Diagnostics)
	}
	sandbox.WarmPool()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		sandbox.WarmPool()
		b.StartTimer()
		if resp := g.Run(ctx, bencher, code); resp.Failed() {
			b.Fatalf("%v", resp.Diagnostics)
		}
	}
}

func newBenchGateway(b *testing.B) *builtintest.Gateway {
	st := store.New(&store.Options{Dir: b.TempDir()})
	b.Cleanup(func() { st.Close() })
	g := builtintest.New(b, st, nil)
	if _, err := st.KV().Set(context.Background(), "bench", "k", json.RawMessage(`{"n":1,"name":"value"}`), 0, store.KVLimits{}); err != nil {
		b.Fatal(err)
	}
	return g
}

func BenchmarkScript100NoCalls(b *testing.B) {
	benchScript(b, newBenchGateway(b), `import { get } from "@codemode/servers/store";
const r = Promise.resolve({ key: "k", found: true, value: { n: 1, name: "value" } });
for (let i = 0; i < 100; i++) await r;`)
}

func BenchmarkScript100StoreGet(b *testing.B) {
	benchScript(b, newBenchGateway(b), `import { get } from "@codemode/servers/store";
for (let i = 0; i < 100; i++) await get({ key: "k" });`)
}

func BenchmarkScript100StoreSet(b *testing.B) {
	benchScript(b, newBenchGateway(b), `import { set } from "@codemode/servers/store";
for (let i = 0; i < 100; i++) await set({ key: "k" + i, value: { n: i, name: "value" } });`)
}

func BenchmarkScript100Thought(b *testing.B) {
	benchScript(b, newBenchGateway(b), `for (let i = 0; i < 100; i++) await tb.thought({ thought: "step " + i + ": the backoff multiplier resets on partial success", thoughtType: "reasoning", nextThoughtNeeded: true });`)
}

var words = strings.Fields(`retry backoff multiplier cache redis memory session token bucket window latency queue
worker deploy rollback schema index query plan lock timeout budget error signal trace span metric alert
disk network packet proxy gateway client server thread pool batch stream buffer parser compiler sandbox`)

// fillThoughts records n thoughts in sessions of 100, sentences of random
// words (seeded, so every run searches the same data).
func fillThoughts(b *testing.B, st *store.Store, ns string, n int) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	var ses store.Session
	for i := range n {
		if i%100 == 0 {
			var err error
			if ses, err = st.Thoughts().CreateSession(ctx, ns, fmt.Sprint("session ", i/100), nil); err != nil {
				b.Fatal(err)
			}
		}
		ws := make([]string, 12)
		for j := range ws {
			ws[j] = words[r.IntN(len(words))]
		}
		if _, _, err := st.Thoughts().AppendThought(ctx, ns, ses.ID, store.Append{Thought: store.Thought{Thought: strings.Join(ws, " "), Type: "reasoning", NextThoughtNeeded: true}}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScriptSessionSearch10k is one tb.session.search over 10,000
// thoughts in 100 sessions, from a script (the whole run).
func BenchmarkScriptSessionSearch10k(b *testing.B) {
	g := newBenchGateway(b)
	fillThoughts(b, g.Store, "bench", 10_000)
	benchScript(b, g, `globalThis.__codemode_result__ = (await tb.session.search("backoff multiplier", 10)).results.length;`)
}

// BenchmarkStoreSearch10k is the store's search alone, same data.
func BenchmarkStoreSearch10k(b *testing.B) {
	st := store.New(&store.Options{Dir: b.TempDir()})
	defer st.Close()
	fillThoughts(b, st, "bench", 10_000)
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		if _, err := st.Thoughts().Search(ctx, "bench", "backoff multiplier", 50); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStoreKVGet and BenchmarkStoreKVSet are the store's accessors
// alone, without a script.
func BenchmarkStoreKVGet(b *testing.B) {
	st := store.New(&store.Options{Dir: b.TempDir()})
	defer st.Close()
	ctx := context.Background()
	st.KV().Set(ctx, "ns", "k", json.RawMessage(`{"n":1}`), 0, store.KVLimits{})
	b.ResetTimer()
	for range b.N {
		if _, _, err := st.KV().Get(ctx, "ns", "k"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStoreKVSet(b *testing.B) {
	st := store.New(&store.Options{Dir: b.TempDir()})
	defer st.Close()
	ctx := context.Background()
	st.Ready(ctx)
	b.ResetTimer()
	for i := range b.N {
		if _, err := st.KV().Set(ctx, "ns", fmt.Sprint("k", i%1000), json.RawMessage(`{"n":1}`), 0, store.KVLimits{MaxNamespaceBytes: 64 << 20}); err != nil {
			b.Fatal(err)
		}
	}
}
