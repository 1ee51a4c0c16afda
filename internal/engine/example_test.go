//go:build !(386 || arm)

package engine_test

import (
	"fmt"

	"modernc.org/quickjs"

	"github.com/codemode-mcp/codemode/internal/engine"
)

// A host call: the script calls a native function that returns a promise,
// and Go settles it later, on the VM's goroutine.
func Example() {
	m, _ := quickjs.NewVM()
	defer m.Close()
	e, err := engine.Attach(m)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Detach()

	var pending []*engine.Promise
	e.DefineHostCall("__call", "<eval>", func(op, payload string, p *engine.Promise) error {
		fmt.Printf("host call %s(%s)\n", op, payload)
		pending = append(pending, p)
		return nil
	}, func(err error) string { return err.Error() })

	m.Eval(`globalThis.answer = "none"; __call("double", "21").then((v) => { answer = v.result; });`, quickjs.EvalGlobal)
	p := pending[0]
	line, col, _ := p.Site()
	fmt.Printf("called at line %d, column %d\n", line, col)
	p.Resolve(`{"result": 42}`)
	p.Free()
	m.ExecutePendingJobs()
	answer, _ := m.Eval("answer", quickjs.EvalGlobal)
	fmt.Println("answer:", answer)
	// Output:
	// host call double(21)
	// called at line 1, column 35
	// answer: 42
}
