//go:build !(386 || arm)

package engine

import (
	"runtime"
	"testing"
	"unsafe"

	lib "modernc.org/libquickjs"
	"modernc.org/quickjs"

	"github.com/codemode-mcp/codemode/internal/testutil"
)

// A VM made by NewVM is an ordinary quickjs.VM: it evaluates, interrupts,
// enforces its memory limit (and reports exhaustion to WrapAllocator's
// callback), and every block of engine memory it takes is noted, so that
// Drop hands all of them back.
func TestNewVMAndDrop(t *testing.T) {
	m, e, err := NewVM()
	if err != nil {
		t.Fatal(err)
	}
	exhausted := false
	if err := e.WrapAllocator(func() { exhausted = true }); err != nil {
		t.Fatal(err)
	}
	if got := eval(t, m, `[1, 2, 3].map((x) => x * 2).join()`); got != "2,4,6" {
		t.Errorf("eval = %v", got)
	}
	if len(e.heap.blocks) == 0 {
		t.Fatal("no block was noted")
	}
	m.SetMemoryLimit(8 << 20)
	if _, err := m.Eval(`let a = []; for (;;) a.push("x".repeat(1000) + a.length);`, quickjs.EvalGlobal); err == nil || !exhausted {
		t.Errorf("memory limit: err %v, exhausted %v", err, exhausted)
	}
	used, _ := e.Memory()
	if used <= 0 {
		t.Errorf("accounting: %d bytes in use", used)
	}
	e.Drop()
	if e.heap != nil {
		t.Error("the heap was not released")
	}
}

// Dropping frees what the VM held: making and dropping VMs that each hold
// 4 MB does not grow the process.
func TestDropFreesEverything(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/status")
	}
	cycle := func() {
		m, e, err := NewVM()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Eval(`globalThis.keep = "y".repeat(4_000_000); globalThis.cyc = {}; cyc.self = cyc; 0`, quickjs.EvalGlobal); err != nil {
			t.Fatal(err)
		}
		e.Drop()
	}
	for range 5 {
		cycle()
	}
	before := testutil.ResidentMiB(t)
	for range 100 {
		cycle()
	}
	// Kept, they would hold 400 MB.
	if grew := testutil.ResidentMiB(t) - before; grew > 100 {
		t.Errorf("the resident set grew by %d MiB over 100 VMs", grew)
	}
}

// Math.random is seeded per VM from the process's random source, not from
// the clock quickjs reads (two VMs made in the same microsecond drew the
// same numbers): the state seedRandom writes is the one Math.random reads.
func TestMathRandomSeededPerVM(t *testing.T) {
	state := func(e *Engine) *uint64 {
		return (*uint64)(cMemory(e.ctx + unsafe.Offsetof(lib.TJSContext{}.Frandom_state)))
	}
	var ms [2]*quickjs.VM
	var es [2]*Engine
	for i := range ms {
		m, e, err := NewVM()
		if err != nil {
			t.Fatal(err)
		}
		defer e.Drop()
		ms[i], es[i] = m, e
	}
	// The clock's seed, the same in both: the same numbers.
	*state(es[0]), *state(es[1]) = 1764072000000000, 1764072000000000
	if a, b := eval(t, ms[0], `String(Math.random())`), eval(t, ms[1], `String(Math.random())`); a != b {
		t.Fatalf("Math.random does not read the state: %v, %v", a, b)
	}
	es[0].seedRandom()
	es[1].seedRandom()
	if *state(es[0]) == 0 || *state(es[0]) == *state(es[1]) {
		t.Fatalf("seeds %d, %d", *state(es[0]), *state(es[1]))
	}
	if a, b := eval(t, ms[0], `String(Math.random())`), eval(t, ms[1], `String(Math.random())`); a == b {
		t.Errorf("two VMs drew %v", a)
	}
}
