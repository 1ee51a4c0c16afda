package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/codemode-mcp/codemode/internal/diag"
)

// detModule is the module of the determinism tests' host (detHost).
const detModule = `import { call, freeze } from "@codemode/internal";
export const reversed = freeze(function reversed(i) { return call("reversed", i); });
export const echo = freeze(function echo(x) { return call("echo", x); });
export const later = freeze(function later(x) { return call("later", x); });
export const diverge = freeze(function diverge() { return call("diverge", null); });
`

// detHost answers detModule. "reversed" calls of one round finish in the
// reverse of the order they started (each waits for the next one), so
// that only the sandbox's ordering can make the script see them in order;
// "later" is suspended; "diverge" aborts the run.
type detHost struct {
	n int // calls of "reversed" per round

	mu      sync.Mutex
	started []int
	done    map[int]chan struct{}
}

func newDetHost(n int) *detHost {
	h := &detHost{n: n, done: map[int]chan struct{}{}}
	for i := range n {
		h.done[i] = make(chan struct{})
	}
	return h
}

func (h *detHost) options() *Options {
	return &Options{
		Deterministic: &Deterministic{Seed: 7, Now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)},
		Resolve: func(_ context.Context, spec string) (string, error) {
			if spec == "@codemode/servers/det" {
				return detModule, nil
			}
			return "", fmt.Errorf("no module %q", spec)
		},
		Handle: h.handle,
	}
}

func (h *detHost) handle(ctx context.Context, op string, payload json.RawMessage) (json.RawMessage, error) {
	switch op {
	case "reversed":
		i, _ := strconv.Atoi(string(payload))
		h.mu.Lock()
		h.started = append(h.started, i)
		h.mu.Unlock()
		Release(ctx) // the next call may start: this one waits for it
		if i+1 < h.n {
			select {
			case <-h.done[i+1]:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		close(h.done[i])
		return payload, nil
	case "echo":
		return payload, nil
	case "later":
		return nil, Suspend
	case "diverge":
		return nil, &Abort{Diagnostic: diag.Diagnostic{Severity: diag.SeverityError, Code: "TEST_ABORT", Message: "aborted by the host"}}
	}
	return nil, fmt.Errorf("unknown op %q", op)
}

// TestDeterministicRoundOrder: the calls of a Promise.all start in the
// order the script made them and their promises settle in that order, even
// though the host finishes them in the reverse order.
func TestDeterministicRoundOrder(t *testing.T) {
	h := newDetHost(4)
	res := runJS(t, context.Background(), `import { reversed } from "@codemode/servers/det";
const order = [];
await Promise.all([0, 1, 2, 3].map((i) => reversed(i).then(() => order.push(i))));
globalThis.__codemode_result__ = order;`, h.options())
	wantOK(t, res)
	if string(res.Result) != "[0,1,2,3]" {
		t.Errorf("settled in the order %s, want [0,1,2,3]", res.Result)
	}
	if !reflect.DeepEqual(h.started, []int{0, 1, 2, 3}) {
		t.Errorf("handlers started in the order %v", h.started)
	}
}

// TestDeterministicTimersAreVirtual: a one-hour timer fires without waiting
// (the run's timeout is 30 s), the clock moves by the delays, timers with
// equal times fire in the order they were scheduled, tool calls take no
// virtual time and win a race against any timer, and log times are
// virtual.
func TestDeterministicTimersAreVirtual(t *testing.T) {
	h := newDetHost(0)
	res := runJS(t, context.Background(), `import { echo } from "@codemode/servers/det";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const t0 = Date.now();
const fired = [];
setTimeout(() => fired.push("b"), 50);
setTimeout(() => fired.push("a"), 10);
setTimeout(() => fired.push("c"), 50);
console.log("start");
await sleep(3_600_000);
console.log("an hour later");
const raced = await Promise.race([echo("tool"), sleep(0).then(() => "timer")]);
globalThis.__codemode_result__ = { elapsed: Date.now() - t0, fired, raced, iso: new Date().toISOString() };`, h.options())
	wantOK(t, res)
	want := `{"elapsed":3600000,"fired":["a","b","c"],"raced":"tool","iso":"2030-01-02T04:04:05.000Z"}`
	if !jsonEqual(res.Result, []byte(want)) {
		t.Errorf("result %s, want %s", res.Result, want)
	}
	if len(res.Logs) != 2 || res.Logs[0].TimeMs != 0 || res.Logs[1].TimeMs != 3_600_000 {
		t.Errorf("logs %+v, want times 0 and 3600000", res.Logs)
	}
}

// TestDeterministicSameOutput: the same script gives the same Result, logs
// and diagnostics included, run after run.
func TestDeterministicSameOutput(t *testing.T) {
	code := `import { echo } from "@codemode/servers/det";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const out = [];
for (let i = 0; i < 5; i++) {
  const [a, b] = await Promise.all([echo(Math.random()), echo(i)]);
  await sleep(Math.floor(a * 1000));
  console.log(i, a, Date.now());
  out.push([a, b, Date.now()]);
}
globalThis.__codemode_result__ = out;`
	var first []byte
	for i := range 4 {
		res := runJS(t, context.Background(), code, newDetHost(0).options())
		res.Duration = 0
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = b
			wantOK(t, res)
			continue
		}
		if string(b) != string(first) {
			t.Fatalf("run %d differs:\n%s\nfirst:\n%s", i, b, first)
		}
	}
}

// TestSuspend: a run whose script waits on a suspended operation ends,
// suspended, without a result or a diagnostic; timers pending then do not
// fire, and a rejection not handled yet is not reported.
func TestSuspend(t *testing.T) {
	for _, tc := range []struct{ name, code string }{
		{"awaited", `import { later } from "@codemode/servers/det"; globalThis.__codemode_result__ = await later(1);`},
		{"in a round", `import { later, echo } from "@codemode/servers/det";
const [a, b] = await Promise.all([echo(1), later(2)]);
globalThis.__codemode_result__ = a + b;`},
		{"timer pending", `import { later } from "@codemode/servers/det";
setTimeout(() => console.log("fired"), 0);
setTimeout(() => console.log("fired"), 100);
globalThis.__codemode_result__ = await later(1);`},
		{"not awaited", `import { later } from "@codemode/servers/det";
later(1);
globalThis.__codemode_result__ = 1;`},
		{"unhandled rejection", `import { later } from "@codemode/servers/det";
const p = Promise.reject(new Error("handled later"));
await later(1);
await p.catch(() => {});`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runJS(t, context.Background(), tc.code, newDetHost(0).options())
			if !res.Suspended || len(res.Diagnostics) > 0 || string(res.Result) != "null" || len(res.Logs) > 0 {
				t.Errorf("suspended %v, result %s, logs %+v, diagnostics %s", res.Suspended, res.Result, res.Logs, diagString(res))
			}
		})
	}
	t.Run("not deterministic", func(t *testing.T) {
		o := newDetHost(0).options()
		o.Deterministic = nil
		res := runJS(t, context.Background(), `import { later } from "@codemode/servers/det"; await later(1);`, o)
		if !res.Suspended || len(res.Diagnostics) > 0 {
			t.Errorf("suspended %v, diagnostics %s", res.Suspended, diagString(res))
		}
	})
	t.Run("failure wins", func(t *testing.T) {
		res := runJS(t, context.Background(), `import { later } from "@codemode/servers/det"; later(1); throw new Error("boom");`, newDetHost(0).options())
		if res.Suspended || !res.Failed() {
			t.Errorf("suspended %v, diagnostics %s", res.Suspended, diagString(res))
		}
	})
}

// TestAbort: an *Abort ends the run with its diagnostic, which the script
// cannot catch, also when another call of its round is suspended.
func TestAbort(t *testing.T) {
	for _, code := range []string{
		`import { diverge } from "@codemode/servers/det";
try { await diverge(); } catch (e) { globalThis.__codemode_result__ = "caught"; }`,
		`import { diverge, later } from "@codemode/servers/det";
try { await Promise.all([diverge(), later(1)]); } catch (e) { globalThis.__codemode_result__ = "caught"; }`,
	} {
		res := runJS(t, context.Background(), code, newDetHost(0).options())
		if res.Suspended || len(res.Diagnostics) != 1 || res.Diagnostics[0].Code != "TEST_ABORT" || string(res.Result) != "null" {
			t.Errorf("suspended %v, result %s, diagnostics %s", res.Suspended, res.Result, diagString(res))
		}
	}
}

// TestDeterministicWaitTimers: with WaitTimers the run also waits the
// delays in real time; what the script sees is the same virtual clock.
func TestDeterministicWaitTimers(t *testing.T) {
	o := newDetHost(0).options()
	o.Deterministic.WaitTimers = true
	res := runJS(t, context.Background(), `const t0 = Date.now();
await new Promise((r) => setTimeout(r, 30));
globalThis.__codemode_result__ = Date.now() - t0;`, o)
	wantOK(t, res)
	if string(res.Result) != "30" {
		t.Errorf("the virtual clock moved %s ms, want 30", res.Result)
	}
}
