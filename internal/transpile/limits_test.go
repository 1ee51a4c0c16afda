package transpile

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/testutil"
)

// bounded checks that Module either transpiles src to output (code and
// source map) at most a small multiple of its size, or refuses it: a
// SYNTAX_ERROR located in it, or SANDBOX_LIMIT when esbuild would take too
// long or too much memory (its worker is then killed). Module's time is not
// asserted (tests must not depend on the machine's speed), but the output
// size is what made time and memory explode: esbuild indented every level
// of nesting.
func bounded(t *testing.T, name, src string, opts *Options) (*Output, []diag.Diagnostic) {
	t.Helper()
	out, diags := Module(context.Background(), src, opts)
	switch {
	case out != nil:
		if n := len(out.Code) + len(out.smap); n > 8*len(src)+4096 {
			t.Errorf("%s: %d bytes in, %d bytes of code and map out", name, len(src), n)
		}
	case len(diags) == 0:
		t.Errorf("%s: neither output nor diagnostics", name)
	default:
		d := diags[0]
		switch d.Code {
		case diag.SyntaxError:
			if !strings.HasPrefix(d.Path, "script.") {
				t.Errorf("%s: %+v", name, d)
			}
		case diag.SandboxLimit:
			if !strings.Contains(d.Message, "within") && !strings.Contains(d.Message, "memory") {
				t.Errorf("%s: %+v", name, d)
			}
		default:
			t.Errorf("%s: %+v", name, d)
		}
		if d.Message == "" || d.Hint == "" || len(d.Message) > 1000 {
			t.Errorf("%s: %+v", name, d)
		}
	}
	return out, diags
}

// shortBudget lowers the time budget for scripts esbuild may take long on:
// whether they compile or are refused, the test checks the outcome.
func shortBudget(t *testing.T) {
	old := transformTimeout
	transformTimeout = 500 * time.Millisecond
	t.Cleanup(func() { transformTimeout = old })
}

// Deeply nested small scripts: esbuild's output grew quadratically (20,000
// nested blocks, 40 KB, made 800 MB of code), and its time with it.
// Scripts are capped at 100 KB upstream; these are about half of that.
func TestNestingShapesAreBounded(t *testing.T) {
	shortBudget(t)
	const size = 49000
	shapes := map[string]func(n int) string{
		"blocks":  func(n int) string { return strings.Repeat("{", n) + strings.Repeat("}", n) },
		"if":      func(n int) string { return strings.Repeat("if (1) ", n) + ";" },
		"arrows":  func(n int) string { return strings.Repeat("()=>", n) + "1" },
		"arrowsx": func(n int) string { return strings.Repeat("x=>", n) + "x" },
	}
	for name, shape := range shapes {
		unit := len(shape(1)) - len(shape(0))
		for _, n := range []int{size / unit, 20000, 300} {
			bounded(t, fmt.Sprintf("%s×%d", name, n), shape(n), nil)
		}
	}
	// The same in a function body and in a function to call.
	bounded(t, "body", shapes["blocks"](size/2), Body())
	bounded(t, "call", "async () => "+shapes["arrows"](size/4), Call("", ""))
	stillCompiles(t)
}

// Other shapes that made esbuild super-linear, each about 100 KB.
func TestPathologicalShapesAreBounded(t *testing.T) {
	shortBudget(t)
	fill := func(pre, unit, post string) string {
		return pre + strings.Repeat(unit, (100000-len(pre)-len(post))/len(unit)) + post
	}
	for name, src := range map[string]string{
		"unary":            fill("", "~", "1"),
		"members":          fill("", "a.", "a"),
		"calls":            fill("a", "()", ""),
		"ternaries":        fill("", "a?b:", "c"),
		"assignments":      fill("", "a=", "1"),
		"comma sequence":   fill("", "a,", "a"),
		"comma groups":     fill("x=(", "a,(a,a),", "a)"),
		"string sum":       fill("x=", `"a"+`, `"a"`),
		"template sum":     fill("x=", "`${a}`+", "``"),
		"octal literals":   fill("await 0;", "010;", ""),
		"with statements":  fill("", "with(a);", ""),
		"repeated params":  fill("function f(", "a,", "a){}"),
		"repeated lets":    fill("", "let a;\n", ""),
		"repeated classes": fill("", "class A{}", ""),
		"wide and deep":    fill(strings.Repeat("{", 500), "a;", strings.Repeat("}", 500)),
		"shadowing names":  fill("let a", ",a1", ";") + fill("", "{let a}", ""),
		"many scopes":      fill(strings.Repeat("{", 200), "{}", strings.Repeat("}", 200)),
		"const reassigned": fill("const a = 1;\n", "a = 2;\n", ""),
		"duplicate cases":  fill("switch (x) {\n", "case 1: break;\n", "}"),
	} {
		bounded(t, name, src[:min(len(src), 100000)], nil)
	}
	stillCompiles(t)
}

// stillCompiles checks that an ordinary script compiles after attacks that
// cost workers their lives.
func stillCompiles(t *testing.T) {
	t.Helper()
	src := fmt.Sprintf("globalThis.__codemode_result__ = %d;", time.Now().UnixNano())
	if out, diags := Module(context.Background(), src, nil); out == nil {
		t.Fatalf("an ordinary script no longer compiles: %v", diags)
	}
}

// waitWorkers waits until at most n worker processes are alive: a killed
// worker is reaped in the background.
func waitWorkers(t *testing.T, n int32) {
	t.Helper()
	if !testutil.Poll(t, func() bool { return live.Load() <= n }) {
		t.Fatalf("%d workers alive, want at most %d", live.Load(), n)
	}
}

// slowScript takes esbuild seconds (every duplicate case gets a warning
// whose note is located by rescanning the file): far longer than the
// budgets the tests below set.
var slowScript = "switch (x) {\n" + strings.Repeat("case 1: break;\n", 7000) + "}"

// The time budget is an end, not a refusal while the work goes on: the
// worker is killed, and the next script gets a new one.
func TestTransformKilledAtBudget(t *testing.T) {
	old := transformTimeout
	transformTimeout = 100 * time.Millisecond
	defer func() { transformTimeout = old }()
	StopWorkers()
	waitWorkers(t, 0)
	_, diags := Module(context.Background(), slowScript, nil)
	if len(diags) != 1 || diags[0].Code != diag.SandboxLimit || !strings.Contains(diags[0].Message, "within") {
		t.Fatalf("got %+v", diags)
	}
	waitWorkers(t, 0) // killed, not left running in the background
	transformTimeout = old
	stillCompiles(t)
}

// A compilation that needs more memory than WorkerMemory kills only its
// worker: a TypeScript enum whose members double a string made esbuild fold
// constants into gigabytes, and took the gateway down with it.
func TestTransformMemoryCap(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the hard memory limit of workers is Linux's RLIMIT_DATA")
	}
	old := transformTimeout
	transformTimeout = 10 * time.Minute // a hang guard: memory must end it
	defer func() { transformTimeout = old }()
	var b strings.Builder
	b.WriteString("enum E { m0 = \"a\",\n")
	for i := 1; i < 40; i++ {
		fmt.Fprintf(&b, "  m%d = m%d + m%d,\n", i, i-1, i-1)
	}
	b.WriteString("}\nglobalThis.__codemode_result__ = E.m3;\n")
	for range 2 { // the second time from the cache
		_, diags := Module(context.Background(), b.String(), nil)
		if len(diags) != 1 || diags[0].Code != diag.SandboxLimit || !strings.Contains(diags[0].Message, "memory") {
			t.Fatalf("got %+v", diags)
		}
	}
	stillCompiles(t)
}

// Cancelling the run ends its compilation.
func TestTransformCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan []diag.Diagnostic)
	go func() {
		_, diags := Module(ctx, slowScript+"// cancelled\n", nil)
		done <- diags
	}()
	testutil.Poll(t, func() bool { return live.Load() > 0 && len(slots) > 0 }) // the call reached a worker
	cancel()
	diags := <-done
	if len(diags) != 1 || diags[0].Code != diag.Canceled {
		t.Fatalf("got %+v", diags)
	}
	stillCompiles(t)
}

// When every worker is busy past the budget, the script is refused with a
// "busy" diagnostic that is not cached.
func TestTransformBusy(t *testing.T) {
	old := transformTimeout
	transformTimeout = 10 * time.Millisecond
	defer func() { transformTimeout = old }()
	for range cap(slots) {
		slots <- struct{}{}
	}
	src := fmt.Sprintf("globalThis.busy = %d;", time.Now().UnixNano())
	_, diags := Module(context.Background(), src, nil)
	for range cap(slots) {
		<-slots
	}
	if len(diags) != 1 || diags[0].Code != diag.SandboxLimit || !strings.Contains(diags[0].Message, "busy") {
		t.Fatalf("got %+v", diags)
	}
	transformTimeout = old
	if out, diags := Module(context.Background(), src, nil); out == nil {
		t.Fatalf("after the wait: %+v", diags)
	}
}

// A worker that dies between calls is replaced.
func TestWorkerCrashIsReplaced(t *testing.T) {
	stillCompiles(t)
	workers.mu.Lock()
	idle := append([]*worker(nil), workers.idle...)
	workers.mu.Unlock()
	if len(idle) == 0 {
		t.Fatal("no idle worker after a compilation")
	}
	for _, w := range idle {
		w.kill()
		<-w.exited
	}
	stillCompiles(t)
}

// The cache charges what an entry holds: code and source map, not just the
// source.
func TestCacheChargesOutput(t *testing.T) {
	src := "// cache charge\n" + strings.Repeat("globalThis.x = [1, 2, 3].map((v) => v * 2);\n", 50)
	cache.Lock()
	before := cache.bytes
	cache.Unlock()
	out, diags := Module(context.Background(), src, nil)
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	cache.Lock()
	after := cache.bytes
	cache.Unlock()
	if after < len(src)+len(out.Code)+len(out.smap) && after-before < len(src)+len(out.Code)+len(out.smap) {
		t.Errorf("charged %d (from %d to %d) for %d bytes of source, %d of code, %d of map",
			after-before, before, after, len(src), len(out.Code), len(out.smap))
	}
}

// A small script that esbuild turns into tens of megabytes: an enum member
// holding a long string, inlined at each use, or hundreds of warnings each
// quoting a long line. The worker drops such a result (the gateway kept and
// cached it: 370 MB for a 40 KB script) and the warnings (556 MB of the
// gateway's memory for 80 MB of them).
func TestOutputAmplificationIsRefused(t *testing.T) {
	enum := "enum E { a = '" + strings.Repeat("x", 20000) + "' }\nglobalThis.__codemode_result__ = [" + strings.Repeat("E.a,", 2000) + "].length;\n"
	out, diags := Module(context.Background(), enum, &Options{Lang: "ts"})
	// Refused for its output, or (a race-detector build's worker needs
	// several times the memory) for the memory esbuild took to make it.
	if out != nil || len(diags) != 1 || diags[0].Code != diag.SandboxLimit ||
		!strings.Contains(diags[0].Message, "too much code") && !strings.Contains(diags[0].Message, "memory") {
		t.Fatalf("inlined enum: out %v, diagnostics %+v", out != nil, diags)
	}
	if _, again := Module(context.Background(), enum, &Options{Lang: "ts"}); len(again) != 1 || again[0].Message != diags[0].Message {
		t.Errorf("the refusal is not cached: %+v", again)
	}
	warnings := "const o = {" + strings.Repeat("a:1,", 800) + "};" + strings.Repeat(" ", 90000) + "\nglobalThis.__codemode_result__ = 1;\n"
	out, diags = Module(context.Background(), warnings, &Options{Lang: "js"})
	if out == nil || len(diags) != 0 || len(out.Code) > 1<<20+8*len(warnings) {
		t.Fatalf("duplicate keys: out %v, diagnostics %+v", out != nil, diags)
	}
}
