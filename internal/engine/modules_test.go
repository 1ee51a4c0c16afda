//go:build !(386 || arm)

package engine

import (
	"errors"
	"strings"
	"testing"

	"modernc.org/quickjs"
)

// A module loaded from source is handed back as bytecode, and loading that
// bytecode in another VM makes the same module: same exports, same
// behaviour, errors at the same lines.
func TestModuleLoaderBytecode(t *testing.T) {
	const lib = `export const greeting = "hello";
export function shout(s) { return s.toUpperCase() + "!"; }
export function fails() { throw new Error("from lib"); }
`
	const entry = `import { greeting, shout, fails } from "lib";
let line = 0;
try { fails(); } catch (e) { line = e.stack; }
globalThis.out = shout(greeting) + " " + line;`
	var code []byte
	loads := 0
	run := func(answer func() Module) string {
		m, e := newVM(t)
		m.SetModuleLoader(func(*quickjs.VM, string) (string, error) { return "", errors.New("unused") }, nil)
		e.SetModuleLoader(func(name string) (Module, error) {
			loads++
			if name != "lib" {
				return Module{}, errors.New("no module " + name)
			}
			return answer(), nil
		})
		if _, err := m.Eval(entry, quickjs.EvalModule); err != nil {
			t.Fatal(err)
		}
		if _, err := m.ExecutePendingJobs(); err != nil {
			t.Fatal(err)
		}
		out, err := m.Eval("globalThis.out", quickjs.EvalGlobal)
		if err != nil {
			t.Fatal(err)
		}
		return out.(string)
	}
	fromSource := run(func() Module { return Module{Source: lib, Compiled: func(b []byte) { code = b }} })
	if len(code) == 0 {
		t.Fatal("no bytecode was handed back")
	}
	fromCode := run(func() Module { return Module{Code: code} })
	if fromSource != fromCode || !strings.HasPrefix(fromSource, "HELLO! ") || !strings.Contains(fromSource, "lib:3") {
		t.Errorf("from source %q, from bytecode %q", fromSource, fromCode)
	}
	if loads != 2 {
		t.Errorf("%d loads", loads)
	}
}

// A loader's error, bytecode that is not a module and a syntax error fail
// the import with a TypeError or SyntaxError the script can catch.
func TestModuleLoaderErrors(t *testing.T) {
	m, e := newVM(t)
	m.SetModuleLoader(func(*quickjs.VM, string) (string, error) { return "", errors.New("unused") }, nil)
	var notModule []byte
	e.SetModuleLoader(func(name string) (Module, error) {
		switch name {
		case "refused":
			return Module{}, errors.New("not here")
		case "garbage":
			return Module{Code: []byte{1, 2, 3}}, nil
		case "syntax":
			return Module{Source: "export const = 1;", Compiled: func(b []byte) { notModule = b }}, nil
		}
		return Module{Source: "export const ok = 1;"}, nil
	})
	eval(t, m, `globalThis.res = {};`)
	if _, err := m.Eval(`for (const n of ["refused", "garbage", "syntax", "fine"]) {
  try { await import(n); res[n] = "loaded"; } catch (e) { res[n] = String(e); }
}`, quickjs.EvalModule); err != nil {
		t.Fatal(err)
	}
	if _, err := m.ExecutePendingJobs(); err != nil {
		t.Fatal(err)
	}
	got := eval(t, m, `JSON.stringify(res)`).(string)
	for _, want := range []string{`"refused":"TypeError: module load failed: not here"`, `"garbage":"`, `"syntax":"SyntaxError`, `"fine":"loaded"`} {
		if !strings.Contains(got, want) {
			t.Errorf("imports: %s, want %s", got, want)
		}
	}
	if strings.Contains(got, `"garbage":"loaded"`) {
		t.Errorf("garbage bytecode loaded: %s", got)
	}
	if notModule != nil {
		t.Error("a module that does not compile was handed back as bytecode")
	}
}

// A chunk is bytecode of a global script, read and run when JavaScript asks
// for it; what it evaluates to is the call's value.
func TestChunkLoader(t *testing.T) {
	compiler, err := quickjs.NewVM()
	if err != nil {
		t.Fatal(err)
	}
	code, err := compiler.Compile(`(function (x) { return x * 2; })`, quickjs.EvalGlobal)
	compiler.Close()
	if err != nil {
		t.Fatal(err)
	}
	m, e := newVM(t)
	if err := e.DefineChunkLoader("chunk", func(name string) ([]byte, error) {
		if name != "double" {
			return nil, errors.New("no such chunk")
		}
		return code, nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := eval(t, m, `chunk("double")(21)`); got != 42 {
		t.Errorf("chunk(double)(21) = %v", got)
	}
	if got := eval(t, m, `try { chunk("other"); "loaded" } catch (e) { String(e) }`); got != "TypeError: loading other: no such chunk" {
		t.Errorf("unknown chunk: %v", got)
	}
}
