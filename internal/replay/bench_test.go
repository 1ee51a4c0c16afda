package replay

import (
	"context"
	"fmt"
	"testing"

	"github.com/codemode-mcp/codemode/internal/sandbox"
)

// Benchmarks of steps. Each step reruns the script from the start, so a
// script of n sequential calls costs n+1 steps whose k-th replays k
// calls: the total grows with n². docs/BENCHMARKS.md has the figures.

// benchSteps times the steps of reqs, each from a full pool of prepared
// VMs (as between a client's round trips; see sandbox.WarmPool), and
// reports the time of all of them together per iteration.
func benchSteps(b *testing.B, reqs []Request) {
	b.Helper()
	ctx := context.Background()
	for _, r := range reqs {
		if _, err := Step(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, r := range reqs {
			b.StopTimer()
			sandbox.WarmPool()
			b.StartTimer()
			Step(ctx, r)
		}
	}
	if len(reqs) > 1 {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(reqs))/1e3, "µs/step")
	}
}

// BenchmarkStepParallelFirst: the seed's parallel example, first step (the
// script runs until both searches are asked for, in one batch).
func BenchmarkStepParallelFirst(b *testing.B) {
	msgs := seedMessages(b, "seed-parallel.json")
	benchSteps(b, []Request{{Messages: msgs[1:2], Tools: []Tool{searchTool("web_search")}}})
}

// BenchmarkStepParallelLast: the seed's parallel example, last step (both
// results replayed, the code result).
func BenchmarkStepParallelLast(b *testing.B) {
	msgs := seedMessages(b, "seed-parallel.json")
	benchSteps(b, []Request{{Messages: msgs[1:5], Tools: []Tool{searchTool("web_search")}}})
}

// sequential returns the requests of every step of a script making n
// sequential calls, its conversation answered as a client would.
func sequential(b testing.TB, n int) []Request {
	src := fmt.Sprintf(`let acc = "";
for (let i = 0; i < %d; i++) acc += (await web_search({ query: "q" + i })).slice(0, 1);
return acc;`, n)
	req := Request{Messages: []Message{code("seq", src)}, Tools: []Tool{searchTool("web_search")}}
	var reqs []Request
	for range n + 1 {
		reqs = append(reqs, Request{Messages: append([]Message(nil), req.Messages...), Tools: req.Tools})
		resp, err := Step(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		if resp.Message.Role != RoleAssistant {
			break
		}
		req.Messages = append(req.Messages, resp.Message, toolMsg(resp.Message.ToolCalls[0].ID, `"result"`))
	}
	if len(reqs) != n+1 {
		b.Fatalf("%d steps for %d calls", len(reqs), n)
	}
	return reqs
}

// BenchmarkSequential10Total: all 11 steps of a script of 10 sequential
// calls (each step replays the calls before it).
func BenchmarkSequential10Total(b *testing.B) { benchSteps(b, sequential(b, 10)) }

// BenchmarkStepReplaying10 and 20: the last step of a script of 10 (20)
// sequential calls alone: the most a step of such a script replays.
func BenchmarkStepReplaying10(b *testing.B) { benchSteps(b, sequential(b, 10)[10:]) }
func BenchmarkStepReplaying20(b *testing.B) { benchSteps(b, sequential(b, 20)[20:]) }

// TestSequentialStepsQuadratic documents the cost model the benchmarks
// measure: step k of a sequential script replays k calls, so the calls
// replayed over all steps of n calls are n(n+1)/2.
func TestSequentialStepsQuadratic(t *testing.T) {
	reqs := sequential(t, 10)
	replayed := 0
	for _, r := range reqs {
		p, err := parse(&r)
		if err != nil {
			t.Fatal(err)
		}
		replayed += len(p.calls)
	}
	if replayed != 10*11/2 {
		t.Errorf("replayed %d calls over all steps, want 55", replayed)
	}
}
