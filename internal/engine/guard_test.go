//go:build !(386 || arm)

package engine

import (
	"strings"
	"testing"

	"modernc.org/quickjs"
)

// The guards let the engine's functions run up to the maximum, report
// and refuse a call over it, and refuse a length only script code could
// tell; the functions stay the engine's own objects.
func TestGuardArrayMethods(t *testing.T) {
	m, e := newVM(t)
	type report struct {
		method      string
		length, max uint64
	}
	var got []report
	if err := e.GuardArrayMethods(func() uint64 { return 1000 }, func(method string, length, max uint64) {
		got = append(got, report{method, length, max})
	}); err != nil {
		t.Fatal(err)
	}
	if r := eval(t, m, `[1, 2, 3].indexOf(2) + new Array(1000).join("x").length + Array.prototype.includes.call("abc", "c")`); r != 1001 {
		t.Errorf("within the maximum: %v", r)
	}
	if r := eval(t, m, `Array.prototype.indexOf.toString().includes("[native code]") && [].indexOf.name === "indexOf" && [].splice.length === 2`); r != true {
		t.Errorf("the guarded functions are not the engine's own objects")
	}
	for _, c := range []struct{ js, method string }{
		{`Array.prototype.indexOf.call({length: 2 ** 53 - 1}, 1)`, "indexOf"},
		{`new Array(1001).join("")`, "join"},
		{`[].concat(new Array(600), new Array(600))`, "concat"},
		{`Array.prototype.every.call(Object.create({length: 5000}), () => true)`, "every"},
	} {
		got = nil
		_, err := m.Eval(c.js, quickjs.EvalGlobal)
		if err == nil || !strings.Contains(err.Error(), "RangeError") || len(got) != 1 || got[0].method != c.method || got[0].max != 1000 {
			t.Errorf("%s: err %v, reports %+v", c.js, err, got)
		}
	}
	got = nil
	for _, js := range []string{
		`Array.prototype.indexOf.call({get length() { return 1; }}, 1)`,
		`Array.prototype.indexOf.call(new Proxy([], {}), 1)`,
		`Array.prototype.indexOf.call({length: {valueOf() { return 1; }}}, 1)`,
		`[].concat({get [Symbol.isConcatSpreadable]() { return true; }, length: 1})`,
	} {
		_, err := m.Eval(js, quickjs.EvalGlobal)
		if err == nil || !strings.Contains(err.Error(), "TypeError") || !strings.Contains(err.Error(), "Array.from") {
			t.Errorf("%s: err %v", js, err)
		}
	}
	if len(got) != 0 {
		t.Errorf("refusals reported as too long: %+v", got)
	}
}

// Describe reads what ended a run without running anything the script
// can reach.
func TestDescribe(t *testing.T) {
	m, e := newVM(t)
	eval(t, m, `globalThis.ran = 0;
class Mine extends Error {}
globalThis.Mine = Mine;
Object.defineProperty(Array.prototype, 0, { set(v) { ran++; } });
Object.prototype.toJSON = function () { ran++; return "forged"; };`)
	proto, err := m.EvalValue(`Mine.prototype`, quickjs.EvalGlobal)
	if err != nil {
		t.Fatal(err)
	}
	defer proto.Free()
	for _, c := range []struct {
		js   string
		want Description
	}{
		{`new TypeError("x")`, Description{IsError: true, Class: -1, Name: "TypeError", Message: "x"}},
		{`new Mine("m")`, Description{IsError: true, Class: 0, Name: "Error", Message: "m"}},
		{`(() => { const e = new Error("x"); Object.defineProperty(e, "name", { get() { ran++; return "Forged"; } }); return e; })()`,
			Description{IsError: true, Class: -1, Name: "Error", Message: "x"}},
		{`(() => { const e = new Error(); Object.defineProperty(e, "message", { get() { ran++; return "forged"; } }); return e; })()`,
			Description{IsError: true, Class: -1, Name: "Error", Message: NotRun}},
		{`new Proxy(new Mine("p"), { getPrototypeOf() { ran++; return Mine.prototype; } })`,
			Description{Class: -1, Message: "[Unserializable Object]"}},
		{`({ a: 1, b: [1, "two", null, undefined, () => 1], get c() { ran++; return 3; }, d: new Date(0), e: { f: true } })`,
			Description{Class: -1, Message: `{"a":1,"b":[1,"two",null,null,null],"d":"1970-01-01T00:00:00.000Z","e":{"f":true}}`}},
		{`(() => { const o = {}; o.o = o; return o; })()`, Description{Class: -1, Message: "[Unserializable Object]"}},
		{`"plain"`, Description{Class: -1, Message: "plain"}},
		{`1.5`, Description{Class: -1, Message: "1.5"}},
		{`10n`, Description{Class: -1, Message: "10"}},
		{`null`, Description{Class: -1, Message: "null"}},
	} {
		v, err := m.EvalValue(c.js, quickjs.EvalGlobal)
		if err != nil {
			t.Fatalf("%s: %v", c.js, err)
		}
		before := eval(t, m, `ran`)
		d := e.Describe(v, []quickjs.Value{proto})
		v.Free()
		if after := eval(t, m, `ran`); after != before {
			t.Errorf("%s: Describe ran script code", c.js)
		}
		d.Stack = ""
		if d != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.js, d, c.want)
		}
	}
}
