package transpile

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/codemode-mcp/codemode/internal/diag"
)

// linear checks that Module either transpiles src to output (code and
// source map) at most a small multiple of its size, or refuses it with a
// diagnostic located in it. Module's time is not asserted (tests must not
// depend on the machine's speed), but the output size is what made time
// and memory explode: esbuild indented every level of nesting.
func linear(t *testing.T, name, src string, opts *Options) (*Output, []diag.Diagnostic) {
	t.Helper()
	out, diags := Module(src, opts)
	switch {
	case out != nil:
		if n := len(out.Code) + len(out.smap); n > 8*len(src)+4096 {
			t.Errorf("%s: %d bytes in, %d bytes of code and map out", name, len(src), n)
		}
	case len(diags) == 0:
		t.Errorf("%s: neither output nor diagnostics", name)
	default:
		d := diags[0]
		if d.Code != diag.SyntaxError || !strings.HasPrefix(d.Path, "script.") || d.Message == "" || d.Hint == "" {
			t.Errorf("%s: %+v", name, d)
		}
		if len(d.Message) > 1000 {
			t.Errorf("%s: message of %d bytes", name, len(d.Message))
		}
	}
	return out, diags
}

// Deeply nested small scripts: esbuild's output grew quadratically (20,000
// nested blocks, 40 KB, made 800 MB of code). Scripts are capped at 100 KB
// upstream; these are about half of that, and also just within the
// nesting limit.
func TestNestingShapesStayLinear(t *testing.T) {
	const size = 49000
	shapes := map[string]func(n int) string{
		"blocks":  func(n int) string { return strings.Repeat("{", n) + strings.Repeat("}", n) },
		"if":      func(n int) string { return strings.Repeat("if (1) ", n) + ";" },
		"arrows":  func(n int) string { return strings.Repeat("()=>", n) + "1" },
		"arrowsx": func(n int) string { return strings.Repeat("x=>", n) + "x" },
	}
	for name, shape := range shapes {
		unit := len(shape(1)) - len(shape(0))
		for _, n := range []int{size / unit, 20000, maxNesting / 3, maxNesting - 10} {
			src := shape(n)
			out, diags := linear(t, fmt.Sprintf("%s×%d", name, n), src, nil)
			if n >= maxNesting && (out != nil || !strings.Contains(diags[0].Message, "nests more than")) {
				t.Errorf("%s×%d: not refused: %v", name, n, diags)
			}
			if n < maxNesting/2 && out == nil {
				t.Errorf("%s×%d: refused: %v", name, n, diags)
			}
		}
	}
	// The same in a function body and in a function to call.
	linear(t, "body", shapes["blocks"](size/2), Body())
	linear(t, "call", "async () => "+shapes["arrows"](size/4), Call("", ""))
}

// Other shapes that made esbuild super-linear, each about 100 KB.
func TestPathologicalShapesAreBounded(t *testing.T) {
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
	} {
		linear(t, name, src[:min(len(src), 100000)], nil)
	}
}

// Scripts whose default renaming would be slow get minified local names,
// but functions and classes keep their names.
func TestMinifiedNamesKeepFunctionNames(t *testing.T) {
	src := "function outer() {}\nclass Thing {}\nconst f = () => 1;\n" +
		strings.Repeat("x=>", 200) + "x;\n" +
		"globalThis.__codemode_result__ = [outer.name, Thing.name, f.name];\n"
	sh := measure(src)
	if !sh.ok() || renameCost(src, sh.nesting) <= renameBudget {
		t.Fatalf("not a minified-names script: %+v, cost %d", sh, renameCost(src, sh.nesting))
	}
	out, diags := Module(src, nil)
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	for _, want := range []string{`"outer"`, `"Thing"`, `"f"`} {
		if !strings.Contains(out.Code, want) {
			t.Errorf("%s is lost:\n%.300s", want, out.Code)
		}
	}
}

// The cache charges what an entry holds: code and source map, not just the
// source.
func TestCacheChargesOutput(t *testing.T) {
	src := "// cache charge\n" + strings.Repeat("globalThis.x = [1, 2, 3].map((v) => v * 2);\n", 50)
	cache.Lock()
	before := cache.bytes
	cache.Unlock()
	out, diags := Module(src, nil)
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

// stallTransforms makes transform block until the returned function is
// called, and Module give up on it after a moment.
func stallTransforms(t *testing.T) (release func()) {
	t.Helper()
	stop := make(chan struct{})
	timeout, f := transformTimeout, transformFunc
	transformTimeout = 50 * time.Millisecond
	transformFunc = func(src string, o Options) (*Output, []diag.Diagnostic) {
		<-stop
		return transform(src, o)
	}
	return func() {
		close(stop)
		transformTimeout, transformFunc = timeout, f
	}
}

// A script esbuild takes too long on gets a SANDBOX_LIMIT diagnostic instead
// of holding up the run, and at most cap(slots) compilations run at once.
// (The stalled transforms stand for scripts esbuild is slow on.)
func TestTransformTimeBudget(t *testing.T) {
	release := stallTransforms(t)
	defer func() { release() }()
	run := time.Now().UnixNano() // the cache must not know these scripts
	_, diags := Module(fmt.Sprintf("globalThis.stalled = [%d, 1];", run), nil)
	if len(diags) != 1 || diags[0].Code != diag.SandboxLimit || !strings.Contains(diags[0].Message, "within") {
		t.Fatalf("got %+v", diags)
	}
	// The stalled compilation keeps its slot; fill the others.
	for i := 1; i < cap(slots); i++ {
		Module(fmt.Sprintf("globalThis.stalled = [%d, %d];", run, i+1), nil)
	}
	waiting := fmt.Sprintf("globalThis.waiting = %d;", run)
	_, diags = Module(waiting, nil)
	if len(diags) != 1 || diags[0].Code != diag.SandboxLimit || !strings.Contains(diags[0].Message, "busy") {
		t.Fatalf("got %+v", diags)
	}
	// Neither is cached: once the compiler is free, the scripts compile.
	release()
	release = func() {}
	if out, diags := Module(waiting, nil); out == nil {
		t.Fatalf("after release: %+v", diags)
	}
	if out, diags := Module(fmt.Sprintf("globalThis.stalled = [%d, 1];", run), nil); out == nil {
		t.Fatalf("after release: %+v", diags)
	}
}
