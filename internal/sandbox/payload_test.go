package sandbox

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

// recordingBudget is a Budget that records what it holds, refusing beyond
// capacity.
type recordingBudget struct {
	mu             sync.Mutex
	capacity       int64
	held, peak     int64
	reserved, refs int
}

type budgetRefusal struct{}

func (budgetRefusal) Error() string { return "the shared budget is spent" }
func (budgetRefusal) LimitValue() (string, int64, string) {
	return "memoryBudget", 42, "retry when the gateway is less busy"
}

func (b *recordingBudget) Reserve(n int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held+n > b.capacity {
		b.refs++
		return budgetRefusal{}
	}
	b.held += n
	b.peak = max(b.peak, b.held)
	b.reserved++
	return nil
}

func (b *recordingBudget) Unreserve(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held -= n
}

// bigOptions runs with a host whose "ping" answers a string of size bytes.
func bigOptions(limit int64, size int, budget Budget) *Options {
	h := newTestHost()
	opts := h.options(Limits{MaxMemoryBytes: limit})
	big, _ := json.Marshal(strings.Repeat("v", size))
	opts.Handle = func(ctx context.Context, op string, p json.RawMessage) (json.RawMessage, error) {
		if op == "ping" {
			return big, nil
		}
		return h.handle(ctx, op, p)
	}
	opts.Budget = budget
	return opts
}

// The results of host operations count from the moment the handler returns
// them until they are settled into the VM, against the run's
// maxMemoryBytes and the shared budget: ten concurrent 1 MiB results under
// a 4 MiB limit never hold more than 4 MiB outside the VM, every call gets
// its value or a SandboxLimitError, and everything is given back. (The VM
// itself may run out of memory when several results are settled before the
// script gets to drop them: that is its own limit, not this one.)
func TestResultsInFlightAreCounted(t *testing.T) {
	for range 3 {
		b := &recordingBudget{capacity: 1 << 40}
		opts := bigOptions(4<<20, 1<<20, b)
		res := runJS(t, context.Background(), `import { ping } from "@codemode/servers/x";
const out = await Promise.allSettled(Array.from({ length: 10 }, () => ping(1).then((v) => v.length)));
globalThis.__codemode_result__ = out.map((r) => r.status === "fulfilled" ? r.value : r.reason.name + ":" + r.reason.limit);`, opts)
		if !res.OutOfMemory {
			wantOK(t, res)
			var got []any
			json.Unmarshal(res.Result, &got)
			if len(got) != 10 {
				t.Fatalf("result %s", res.Result)
			}
			for _, g := range got {
				if g != float64(1<<20) && g != "SandboxLimitError:maxMemoryBytes" {
					t.Errorf("a call ended with %v, neither its value nor SandboxLimitError (maxMemoryBytes)", g)
				}
			}
		}
		b.mu.Lock()
		if b.peak < 1<<20 || b.peak > 4<<20 {
			t.Errorf("the budget held at most %d bytes, want the results counted (≥ 1 MiB) and bounded by maxMemoryBytes (≤ 4 MiB)", b.peak)
		}
		if b.held != 0 {
			t.Errorf("%d bytes still held after the run", b.held)
		}
		b.mu.Unlock()
	}
}

// A result larger than maxMemoryBytes is refused before it reaches the VM.
func TestResultLargerThanTheLimit(t *testing.T) {
	opts := bigOptions(2<<20, 3<<20, nil)
	res := runJS(t, context.Background(), `import { ping } from "@codemode/servers/x";
let caught;
try { await ping(1); } catch (e) { caught = [e.name, e.limit, e.message]; }
globalThis.__codemode_result__ = caught;`, opts)
	var got []string
	json.Unmarshal(res.Result, &got)
	if len(got) != 3 || got[0] != "SandboxLimitError" || got[1] != "maxMemoryBytes" || !strings.Contains(got[2], "larger than maxMemoryBytes") {
		t.Errorf("result %s", res.Result)
	}
	res = runJS(t, context.Background(), `import { ping } from "@codemode/servers/x"; await ping(1);`, opts)
	wantLimit(t, res, "maxMemoryBytes")
}

// What the shared budget refuses fails the call with the budget's limit.
func TestBudgetRefusal(t *testing.T) {
	b := &recordingBudget{capacity: 1000}
	opts := bigOptions(64<<20, 5000, b)
	res := runJS(t, context.Background(), `import { ping } from "@codemode/servers/x";
let caught;
try { await ping(1); } catch (e) { caught = [e.name, e.limit, e.value, e.hint]; }
globalThis.__codemode_result__ = caught;`, opts)
	wantResult(t, res, `["SandboxLimitError", "memoryBudget", 42, "retry when the gateway is less busy"]`)
	// The input of a call is refused the same way.
	b.capacity = 10
	res = runJS(t, context.Background(), `import { tool } from "@codemode/servers/x";
let caught;
try { await tool({ text: "more than ten bytes" }); } catch (e) { caught = [e.name, e.limit]; }
globalThis.__codemode_result__ = caught;`, opts)
	wantResult(t, res, `["SandboxLimitError", "memoryBudget"]`)
	if b.held != 0 {
		t.Errorf("%d bytes still held", b.held)
	}
}
