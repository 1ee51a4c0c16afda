package sandbox

import (
	"fmt"
	"sync"

	_ "embed"

	"modernc.org/quickjs"

	"github.com/codemode-mcp/codemode/internal/engine"
)

// Chunks are globals that most runs never use, compiled apart from the
// bootstrap and read into a VM by __cm_chunk only when a script first uses
// one of them (see "Globals made on first use" in bootstrap.js): reading
// bytecode costs the engine in proportion to its size, and these are half of
// the sandbox's JavaScript (docs/BENCHMARKS.md).

var (
	//go:embed js/text.js
	textJS string
	//go:embed js/url.js
	urlJS string
	//go:embed js/web.js
	webJS string
)

var chunkSources = map[string]string{"text": textJS, "url": urlJS, "web": webJS}

// chunkCode is each chunk compiled once per process, as the bootstrap is.
var chunkCode = func() map[string]func() ([]byte, error) {
	m := map[string]func() ([]byte, error){}
	for name, src := range chunkSources {
		m[name] = sync.OnceValues(func() ([]byte, error) { return compileStripped(src) })
	}
	return m
}()

// loadChunk answers __cm_chunk.
func loadChunk(name string) ([]byte, error) {
	code := chunkCode[name]
	if code == nil {
		return nil, fmt.Errorf("there is no chunk %q", name)
	}
	return code()
}

// compileStripped compiles a global script of the sandbox's own without its
// functions' source text: the bytecode is a quarter of the size, and its
// functions print as "[native code]", as built-ins do.
func compileStripped(src string) ([]byte, error) {
	m, err := quickjs.NewVM()
	if err != nil {
		return nil, err
	}
	defer m.Close()
	if e, err := engine.Attach(m); err == nil {
		e.StripSource()
		defer e.Detach()
	}
	return m.Compile(src, quickjs.EvalGlobal)
}
