//go:build !(386 || arm)

package engine

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
	"modernc.org/quickjs"
)

// TestPinnedVersions fails when go.mod selects other versions of the
// engine's modules than this package was written for: everything in
// layout.go, and how ccgo calls a function pointer (funcPtr), must be
// checked against the new ones before the pins move.
func TestPinnedVersions(t *testing.T) {
	gomod := filepath.Join("..", "..", "go.mod")
	data, err := os.ReadFile(gomod)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.ParseLax(gomod, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range f.Require {
		got[r.Mod.Path] = r.Mod.Version
	}
	for _, r := range f.Replace {
		if strings.HasPrefix(r.Old.Path, "modernc.org/") {
			got[r.Old.Path] = "replaced by " + r.New.Path + " " + r.New.Version
		}
	}
	for path, want := range map[string]string{
		"modernc.org/quickjs":    PinnedQuickJS,
		"modernc.org/libquickjs": PinnedLibQuickJS,
		"modernc.org/libc":       PinnedLibc,
	} {
		if got[path] != want {
			t.Errorf(`go.mod has %s %s; internal/engine was written for %s.
Before moving the pin (engine.Pinned* in layout.go): check every field of the
layout table in internal/engine/layout.go against the new sources (the C
structures in libquickjs's ccgo_linux_amd64.go, quickjs.VM, quickjs.Value),
check that ccgo still calls a C function pointer through a Go funcval
(funcPtr), and run go test ./internal/engine ./internal/sandbox.
Remember that modernc packages must share one libc (docs/DEPENDENCIES.md).`,
				path, orNone(got[path]), want)
		}
	}
}

func orNone(v string) string {
	if v == "" {
		return "(not required)"
	}
	return v
}

// TestLayout fails when a field this package reads has moved, changed size
// or type, or disappeared; Attach refuses every VM then.
func TestLayout(t *testing.T) {
	if p := layoutProblems(layout); len(p) > 0 {
		t.Errorf("the engine's layout is not the one internal/engine was written for; Attach refuses every VM until layout.go and the code reading each field are brought up to date:\n  %s",
			strings.Join(p, "\n  "))
	}
	if err := checkLayout(); err != nil {
		t.Error(err)
	}
}

// The layout check is not vacuous: a field written for another offset,
// size or type, or one that does not exist, is reported by name.
func TestLayoutReportsChanges(t *testing.T) {
	for _, tc := range []struct {
		change func(*field)
		want   string
	}{
		{func(f *field) { f.offset += 4 }, "written for offset 428"},
		{func(f *field) { f.size = 8 }, "8 bytes"},
		{func(f *field) { f.typ = "int64" }, "int32; written for offset 424, 4 bytes, int64"},
		{func(f *field) { f.path = "Finterrupt_count" }, "JSContext.Finterrupt_count: no field Finterrupt_count"},
	} {
		i := slices.IndexFunc(layout, func(f field) bool { return f.path == "Finterrupt_counter" })
		if i < 0 {
			t.Fatal("the interrupt counter is not in layout")
		}
		f := layout[i]
		tc.change(&f)
		p := layoutProblems([]field{f})
		if len(p) != 1 || !strings.Contains(p[0], tc.want) {
			t.Errorf("layoutProblems = %q, want one problem containing %q", p, tc.want)
		}
	}
}

func newVM(t *testing.T) (*quickjs.VM, *Engine) {
	t.Helper()
	m, err := quickjs.NewVM()
	if err != nil {
		t.Fatal(err)
	}
	e, err := Attach(m)
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.Detach()
		m.Close()
	})
	return m, e
}

func eval(t *testing.T, m *quickjs.VM, js string) any {
	t.Helper()
	r, err := m.Eval(js, quickjs.EvalGlobal)
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	if _, err := m.ExecutePendingJobs(); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestHostCall(t *testing.T) {
	m, e := newVM(t)
	var calls []string
	var promises []*Promise
	err := e.DefineHostCall("__call", "<eval>", func(op, payload string, p *Promise) error {
		if op == "refuse" {
			return errors.New("no")
		}
		calls = append(calls, op+" "+payload)
		promises = append(promises, p)
		return nil
	}, func(err error) string { return "refused: " + err.Error() })
	if err != nil {
		t.Fatal(err)
	}
	eval(t, m, `globalThis.out = [];
__call("ok", "1").then((v) => out.push(["ok", v]));

  __call("bad", "\uD800x").catch((e) => out.push(["bad", e.message]));
__call("big", "").then((v) => out.push(["big", v]), (e) => out.push(["big failed", String(e)]));
globalThis.refused = __call("refuse", "");`)
	if want := []string{"ok 1", "bad \uFFFDx", "big "}; strings.Join(calls, "|") != strings.Join(want, "|") {
		t.Fatalf("calls %q, want %q", calls, want)
	}
	if got := eval(t, m, "refused"); got != "refused: no" {
		t.Errorf("a refused call returned %v", got)
	}
	if line, col, ok := promises[1].Site(); !ok || line != 4 || col != 9 {
		t.Errorf("the second call's site is %d:%d (found %v), want 4:9", line, col, ok)
	}
	if err := promises[0].Resolve(`{"a":[1,2]}`); err != nil {
		t.Fatal(err)
	}
	fail, err := m.EvalValue(`(reject, msg, at) => reject(new Error(msg + " at " + at))`, quickjs.EvalGlobal)
	if err != nil {
		t.Fatal(err)
	}
	defer fail.Free()
	if err := promises[1].Fail(fail, "it broke", "<eval>:4:9"); err != nil {
		t.Fatal(err)
	}
	// A value beyond the memory limit rejects the promise with what the
	// engine threw.
	m.SetMemoryLimit(8 << 20)
	if err := promises[2].Resolve(`"` + strings.Repeat("x", 16<<20) + `"`); err != nil {
		t.Fatal(err)
	}
	m.SetMemoryLimit(1 << 30)
	for _, p := range promises {
		p.Free()
		p.Free() // twice is harmless
	}
	if _, err := m.ExecutePendingJobs(); err != nil {
		t.Fatal(err)
	}
	got := eval(t, m, "JSON.stringify(out)")
	want := `[["ok",{"a":[1,2]}],["bad","it broke at <eval>:4:9"],["big failed","InternalError: out of memory"]]`
	if got != want {
		t.Errorf("settled: %v\nwant      %s", got, want)
	}
}

func TestRejections(t *testing.T) {
	m, e := newVM(t)
	var notes []bool
	e.TrackRejections(func(null bool) bool { notes = append(notes, null); return null })
	eval(t, m, `Promise.reject(new Error("lost")); Promise.reject(null); Promise.reject(2).catch(() => {});`)
	str, err := m.EvalValue(`(v) => String(v)`, quickjs.EvalGlobal)
	if err != nil {
		t.Fatal(err)
	}
	defer str.Free()
	if !e.Unhandled() {
		t.Fatal("no unhandled rejection tracked")
	}
	var got []string
	err = e.TakeRejections(func(reason quickjs.Value, noted bool) error {
		r, err := str.Call(quickjs.UndefinedValue, reason)
		if err != nil {
			return err
		}
		s := r.(string)
		got = append(got, s)
		if noted != (s == "null") {
			t.Errorf("%s: noted %v", s, noted)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "|") != "Error: lost|null" || e.Unhandled() {
		t.Errorf("took %q (unhandled left: %v), want the two rejections without a handler", got, e.Unhandled())
	}
	if len(notes) != 3 {
		t.Errorf("note called %d times, want 3 (every rejection without a handler when it happens)", len(notes))
	}
}

func TestInterruptCounterAndMemory(t *testing.T) {
	m, e := newVM(t)
	// The counter starts at 0: the first tick consults the handler and
	// sets it to its period.
	eval(t, m, "for (let i = 0; i < 100; i++);")
	if n := e.InterruptCounter(); n <= 0 {
		t.Errorf("the interrupt counter after a short script is %d", n)
	}
	e.Kick()
	if n := e.InterruptCounter(); n != 0 {
		t.Errorf("after Kick the interrupt counter is %d, want 0", n)
	}
	exhausted := 0
	if err := e.WrapAllocator(func() { exhausted++ }); err != nil {
		t.Fatal(err)
	}
	m.SetMemoryLimit(4 << 20)
	if used, limit := e.Memory(); used <= 0 || limit != 4<<20 {
		t.Errorf("Memory() = %d used, limit %d; want some used and the limit set", used, limit)
	}
	if _, err := m.Eval(`let a = []; for (;;) a.push("x".repeat(1 << 16) + a.length);`, quickjs.EvalGlobal); err == nil {
		t.Fatal("allocating without end did not fail")
	}
	if exhausted == 0 {
		t.Error("the allocator wrapper did not report the failed allocation")
	}
}

func TestDetach(t *testing.T) {
	m, err := quickjs.NewVM()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	e, err := Attach(m)
	if err != nil {
		t.Fatal(err)
	}
	if engineOf(e.ctx) != e {
		t.Fatal("an attached engine is not registered")
	}
	e.Detach()
	e.Detach()
	if engineOf(e.ctx) != nil {
		t.Error("a detached engine is still registered")
	}
}

// The engine consults its interrupt handler only when its interrupt
// counter runs out, every 10,000 ticks; a loop whose body is one slow
// built-in call then runs thousands of iterations after an interrupt. Kick
// makes the next tick consult it: at most one more iteration. Counted in
// iterations, not time.
func TestKickStopsSlowBuiltinLoops(t *testing.T) {
	m, e := newVM(t)
	// The probe is a native function, as the engine calls them (a Go
	// function registered through quickjs checks the interrupt itself when
	// it returns, which would hide what is tested).
	kick := false
	var probes []*Promise
	defer func() {
		for _, p := range probes {
			p.Free()
		}
	}()
	if err := e.DefineHostCall("probe", "<eval>", func(_, _ string, p *Promise) error {
		probes = append(probes, p)
		m.Interrupt()
		if kick {
			e.Kick()
		}
		return nil
	}, func(err error) string { return err.Error() }); err != nil {
		t.Fatal(err)
	}
	after := func() float64 {
		t.Helper()
		if _, err := m.Eval(`globalThis.n = 0; globalThis.big = new Array(100).fill("abc");
for (;;) { big.join(","); if (++n === 100) probe("", ""); }`, quickjs.EvalGlobal); err == nil {
			t.Fatal("the loop was not interrupted")
		}
		n, err := m.Eval("n", quickjs.EvalGlobal)
		if err != nil {
			t.Fatal(err)
		}
		return toFloat(n) - 100
	}
	without := after()
	kick = true
	with := after()
	t.Logf("iterations after the interrupt: %v without a kick, %v with one", without, with)
	if with > 1 {
		t.Errorf("%v iterations ran after an interrupt and a kick, want at most 1", with)
	}
	if without < 10 {
		t.Errorf("only %v iterations ran after an interrupt without a kick: the test no longer shows what Kick is for", without)
	}
}

func toFloat(v any) float64 {
	switch n := v.(type) {
	case int:
		return float64(n)
	case int64:
		return float64(n)
	case float64:
		return n
	}
	return -1
}
