package sandbox

import (
	"context"
	"strings"
	"testing"
	"time"
)

// The string searches the engine makes in quadratic time without checking
// the interrupt (engine.GuardStringMethods): each held a core for an hour
// or more (days at 64 MiB), past its run's answer. Now each ends at once,
// with the right answer.
func TestQuadraticStringSearches(t *testing.T) {
	t.Parallel()
	const setup = `const h = "a".repeat(2e6), n = "a".repeat(1e6) + "b", m = "b" + "a".repeat(1e6);
const hw = "\u0100".repeat(1e6), nw = "\u0100".repeat(5e5) + "\u0101";
const obj = { toString() { return n; } };
`
	for _, c := range []struct{ name, code, want string }{
		{"indexOf", `h.indexOf(n)`, `-1`},
		{"indexOf found at the end", `(h + "b").indexOf(n)`, `1000000`},
		{"indexOf from a position", `(n + h + n).indexOf(n, 5)`, `3000001`},
		{"lastIndexOf", `h.lastIndexOf(m)`, `-1`},
		{"lastIndexOf found", `(m + h).lastIndexOf(m)`, `0`},
		{"includes", `h.includes(n)`, `false`},
		{"two-byte strings", `[hw.indexOf(nw), hw.includes(nw), (hw + "\u0101").indexOf(nw)]`, `[-1,false,500000]`},
		{"split", `h.split(n).length`, `1`},
		{"split found", `(h + "b" + h).split(n).map((s) => s.length)`, `[1000000,2000000]`},
		{"replace", `h.replace(n, "x").length`, `2000000`},
		{"replaceAll", `(h + "b").replaceAll(n, "[$&]").length`, `2000003`},
		{"an object's toString gives the string to find", `[h.indexOf(obj), h.split(obj).length, h.replaceAll(obj, "").length]`, `[-1,1,2000000]`},
		{"a String object", `new String(h).indexOf(n)`, `-1`},
		{"a rope", `(h.slice(0, 1e6) + h.slice(1e6)).indexOf(n)`, `-1`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			res := Run(context.Background(), setup+`globalThis.__codemode_result__ = `+c.code+`;`, &Options{Limits: Limits{Timeout: time.Hour}})
			if res.TimedOut || res.Detached || res.Failed() {
				t.Fatalf("TimedOut %v, Detached %v: %s", res.TimedOut, res.Detached, diagString(res))
			}
			wantResult(t, res, c.want)
		})
	}
}

// stringSearchCases exercise every guarded search where the engine's own
// function and the guard's (the Go search, the bootstrap's split, replace
// and replaceAll) could differ: positions, empty strings, two-byte and
// unpaired surrogates, replacement patterns, replacer arguments, limits,
// conversions that run script code and in which order, errors.
const stringSearchCases = `
const out = [];
const log = [];
const t = (f) => { try { out.push(f()); } catch (e) { out.push("throws " + e.name); } };
const s = "abcabcab\u00e9c\u0100abc";
const w = "x\ud800y\udc00\ud83d\ude00abc";
for (const [hay, needles] of [[s, ["abc", "", "c", "zz", "ab\u00e9", "\u0100a", s, s + "x"]], [w, ["\ud800", "\udc00", "\ud83d\ude00", "abc", ""]], ["", ["", "a"]]]) {
  for (const r of needles) {
    for (const pos of [undefined, -5, 0, 1, 3, 7, 100, NaN, Infinity, -Infinity, 2.7, "4", null, true]) {
      t(() => hay.indexOf(r, pos));
      t(() => hay.lastIndexOf(r, pos));
      t(() => hay.includes(r, pos));
    }
    for (const lim of [undefined, 0, 1, 2, -1, 2 ** 32 + 1, 3.5, "2", NaN]) t(() => hay.split(r, lim));
    for (const rep of ["-", "", "$$", "$&", "$` + "`" + `", "$'", "$1", "$<x>", "$", "a$$b$&c$` + "`" + `d$'e$0$00$9$<", (...a) => JSON.stringify(a), () => ({ toString() { return "obj"; } })]) {
      t(() => hay.replace(r, rep));
      t(() => hay.replaceAll(r, rep));
    }
  }
}
// Conversions, and their order.
const spy = (name, v) => ({ toString() { log.push(name); return v; }, valueOf() { log.push(name + ".valueOf"); return v; } });
t(() => String.prototype.indexOf.call(spy("this", "abcabc"), spy("search", "c"), spy("pos", 3)));
t(() => String.prototype.lastIndexOf.call(spy("this", "abcabc"), spy("search", "c"), spy("pos", 3)));
t(() => String.prototype.includes.call(spy("this", "abcabc"), spy("search", "c"), spy("pos", 3)));
t(() => String.prototype.split.call(spy("this", "a,b,c"), spy("sep", ","), spy("lim", 2)));
t(() => String.prototype.replace.call(spy("this", "abcabc"), spy("search", "b"), spy("rep", "[$&]")));
t(() => String.prototype.replaceAll.call(spy("this", "abcabc"), spy("search", "b"), spy("rep", "[$&]")));
t(() => "abc".includes(/b/));
t(() => "abc".includes({ [Symbol.match]: false, toString() { return "b"; } }));
t(() => "abc".replaceAll(/b/, "x"));
t(() => "abcb".replaceAll(/b/g, "x"));
t(() => "abcb".replace(/(b)/, "[$1]"));
t(() => "a,b".split(/,/));
t(() => "abc".split({ [Symbol.split](s, l) { return ["custom", s, l]; } }, 7));
t(() => "abc".replace({ [Symbol.replace](s, r) { return "custom " + s + r; } }, "!"));
t(() => "abc".split({ [Symbol.split]: 5 }));
t(() => String.prototype.indexOf.call(null, "a"));
t(() => String.prototype.split.call(undefined, "a"));
t(() => "abc".indexOf(Symbol("x")));
t(() => "abc".indexOf("a", 1n));
t(() => String.prototype.indexOf.call(12345, 3));
t(() => String.prototype.split.call(10n ** 20n, "0"));
t(() => "a1b1c".split(1));
t(() => "true false".replace(true, "yes"));
t(() => "abc".indexOf());
t(() => "a-undefined-b".split(undefined));
t(() => "a-undefined-b".replace(undefined, "X"));
t(() => "abc".replace("b"));
out.push(log);
globalThis.__codemode_result__ = out;
`

// The guard's searches give what the engine's own give, on every case.
func TestStringSearchesMatchTheEngine(t *testing.T) {
	run := func() *Result {
		res := Run(context.Background(), stringSearchCases, &Options{Limits: Limits{Timeout: time.Minute}})
		if res.Failed() {
			t.Fatalf("%s", diagString(res))
		}
		return res
	}
	engine := run()
	old := naiveSearchCompares.Swap(0) // every search the guard's way
	guard := run()
	naiveSearchCompares.Store(old)
	if string(engine.Result) != string(guard.Result) {
		e, g := string(engine.Result), string(guard.Result)
		i := 0
		for i < len(e) && i < len(g) && e[i] == g[i] {
			i++
		}
		t.Fatalf("the guard's searches differ from the engine's at byte %d:\nengine …%s\nguard  …%s", i, e[max(i-200, 0):min(i+200, len(e))], g[max(i-200, 0):min(i+200, len(g))])
	}
	if !strings.Contains(string(engine.Result), `"this","search","pos.valueOf"`) {
		t.Errorf("conversions not logged: %.300s", engine.Result)
	}
}
