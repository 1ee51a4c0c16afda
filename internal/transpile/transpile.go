// Package transpile turns an agent's script, TypeScript or JavaScript, into
// the ES module the sandbox runs, using esbuild's Go API; and maps positions
// in that module back to the agent's own source, so that every diagnostic
// points at a line the agent wrote.
//
// Start with [Module]. Results are cached by source text: agents and
// benchmarks resubmit the same script, and esbuild's work is then free.
package transpile

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/evanw/esbuild/pkg/api"
	"github.com/go-sourcemap/sourcemap"

	"github.com/codemode-mcp/codemode/internal/diag"
)

// Output is a transpiled module.
type Output struct {
	// Code is the ES module to run.
	Code string
	// Lang is "ts" or "js": the loader that accepted the source.
	Lang string
	// File is the name positions are reported against: "script.ts" or
	// "script.js".
	File string

	smap *sourcemap.Consumer
	// shift is the length of the wrapper's prefix on the first line.
	shift int
}

// Position maps a 1-based line and column of Code to "file:line:col" in the
// agent's source. Positions without a mapping are reported as they are.
func (o *Output) Position(line, col int) string {
	if o.smap != nil {
		// The map's columns are 0-based; the engine's are 1-based.
		if _, _, l, c, ok := o.smap.Source(line, max(col-1, 0)); ok {
			if l == 1 {
				c = max(c-o.shift, 0)
			}
			return o.File + ":" + strconv.Itoa(l) + ":" + strconv.Itoa(c+1)
		}
	}
	return o.File + ":" + strconv.Itoa(line) + ":" + strconv.Itoa(col)
}

// Options tune Module. The zero value is what the run tool uses.
type Options struct {
	// Lang forces "ts" or "js"; empty tries TypeScript first and falls back
	// to JavaScript (TypeScript is almost a superset; the exceptions are
	// rare constructs like `<T>x` casts read as JSX-free generics).
	Lang string
	// Prefix and Suffix surround the agent's code, for surfaces whose
	// scripts are not modules: a function body that `return`s its result
	// (see Body), or an arrow function to call (see Call). Prefix must not
	// contain a newline, so that the agent's lines keep their numbers;
	// positions on the first line are shifted back by its length.
	Prefix, Suffix string
}

// Body returns options that run the code as the body of an async function
// whose return value becomes the result.
func Body() *Options {
	return &Options{Prefix: "globalThis.__codemode_result__ = await (async () => {", Suffix: "\n})();\n"}
}

// Call returns options that run the code as an expression: a function (an
// async arrow function, as Cloudflare's and Thoughtbox's surfaces take) is
// called with args and its value becomes the result; any other value is the
// result itself. imports are import declarations put before it, on the same
// line.
func Call(imports, args string) *Options {
	return &Options{
		Prefix: imports + `globalThis.__codemode_result__ = await (async (f) => typeof f === "function" ? await f(` + args + `) : await f)(`,
		Suffix: "\n);\n",
	}
}

type cacheKey struct {
	src  string
	opts Options
}

type cacheEntry struct {
	out   *Output
	diags []diag.Diagnostic
}

// cache holds recent results. It is bounded by entry count and by the size
// of the sources it keeps; when full it is simply cleared, which is cheap
// and keeps the hot case (the same script again) fast.
var cache struct {
	sync.Mutex
	m     map[cacheKey]cacheEntry
	bytes int
}

const (
	cacheMaxEntries = 256
	cacheMaxBytes   = 4 << 20
)

// Module transpiles src. On failure it returns nil and SYNTAX_ERROR
// diagnostics located in src.
func Module(src string, opts *Options) (*Output, []diag.Diagnostic) {
	var o Options
	if opts != nil {
		o = *opts
	}
	key := cacheKey{src, o}
	cache.Lock()
	e, ok := cache.m[key]
	cache.Unlock()
	if ok {
		return e.out, e.diags
	}
	out, diags := transform(src, o)
	cache.Lock()
	if cache.m == nil || len(cache.m) >= cacheMaxEntries || cache.bytes+len(src) > cacheMaxBytes {
		cache.m = map[cacheKey]cacheEntry{}
		cache.bytes = 0
	}
	cache.m[key] = cacheEntry{out, diags}
	cache.bytes += len(src)
	cache.Unlock()
	return out, diags
}

func transform(src string, o Options) (*Output, []diag.Diagnostic) {
	langs := []string{"ts", "js"}
	if o.Lang != "" {
		langs = []string{o.Lang}
	}
	var best []api.Message
	bestLang := ""
	for _, lang := range langs {
		out, errs := try(src, lang, o)
		if out != nil {
			return out, nil
		}
		// Report the errors of the parse that got furthest: a JavaScript
		// file fails late as TypeScript only if it really is broken.
		if best == nil || furthest(errs) > furthest(best) {
			best, bestLang = errs, lang
		}
	}
	return nil, syntaxDiagnostics(best, "script."+bestLang, len(o.Prefix))
}

func furthest(msgs []api.Message) int {
	if len(msgs) == 0 || msgs[0].Location == nil {
		return -1
	}
	return msgs[0].Location.Line<<20 + msgs[0].Location.Column
}

// esmSuffix makes every input a module: esbuild treats a file without
// import, export or top-level await as a script, and then accepts a
// top-level return, which the sandbox would refuse.
const esmSuffix = "\nexport {};\n"

func try(src, lang string, o Options) (*Output, []api.Message) {
	file := "script." + lang
	input := o.Prefix + src + o.Suffix + esmSuffix
	loader := api.LoaderTS
	if lang == "js" {
		loader = api.LoaderJS
	}
	r := api.Transform(input, api.TransformOptions{
		Loader:     loader,
		Format:     api.FormatESModule,
		Target:     api.ESNext,
		Sourcemap:  api.SourceMapExternal,
		Sourcefile: file,
		Charset:    api.CharsetUTF8,
		LogLevel:   api.LogLevelSilent,
		// Keep the agent's code as written: no minification, no
		// tree shaking that could drop a side-effect import.
		TreeShaking: api.TreeShakingFalse,
		// An import whose names are all unused (or all types) stays as
		// `import "x"`: importing a server that does not exist is then
		// still an IMPORT_FAILURE, and importing one still connects it.
		TsconfigRaw: `{"compilerOptions":{"importsNotUsedAsValues":"preserve"}}`,
	})
	if len(r.Errors) > 0 {
		return nil, r.Errors
	}
	out := &Output{Code: string(r.Code), Lang: lang, File: file}
	if m, err := sourcemap.Parse("", r.Map); err == nil {
		out.smap = m
	}
	out.shift = len(o.Prefix)
	return out, nil
}

// syntaxDiagnostics turns esbuild's errors into SYNTAX_ERROR diagnostics with
// the position in the agent's source and a hint.
func syntaxDiagnostics(msgs []api.Message, file string, shift int) []diag.Diagnostic {
	var out []diag.Diagnostic
	for i, m := range msgs {
		if i == 5 {
			break // the first few errors are what matters; later ones cascade
		}
		d := diag.Diagnostic{Severity: diag.SeverityError, Code: diag.SyntaxError, Message: m.Text, Hint: hintFor(m.Text)}
		if loc := m.Location; loc != nil {
			col := loc.Column + 1
			if loc.Line == 1 {
				col -= shift
			}
			d.Path = fmt.Sprintf("%s:%d:%d", file, loc.Line, max(col, 1))
			if text := loc.LineText; text != "" {
				if loc.Line == 1 && shift <= len(text) {
					text = text[shift:] // the wrapper is ours, not the agent's
				}
				d.Message = fmt.Sprintf("%s\n  %d | %s", m.Text, loc.Line, strings.TrimRight(text, " \t"))
				if shift > 0 && startsWithWord(strings.TrimSpace(text), "import") {
					d.Hint = `this tool runs the code inside a function, where import declarations are not allowed: use the server's global object, or await import("@codemode/servers/<serverId>")`
				}
			}
			if loc.Suggestion != "" {
				d.Hint = fmt.Sprintf("replace it with %q", loc.Suggestion)
			}
		}
		for _, n := range m.Notes {
			if n.Text != "" && d.Hint == "" {
				d.Hint = n.Text
			}
		}
		out = append(out, d)
	}
	return out
}

// startsWithWord reports whether s begins with the word w followed by a
// non-identifier character (an error line that starts a declaration).
func startsWithWord(s, w string) bool {
	if !strings.HasPrefix(s, w) {
		return false
	}
	if len(s) == len(w) {
		return true
	}
	c := s[len(w)]
	return !(c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9')
}

func hintFor(text string) string {
	switch {
	case strings.Contains(text, "Top-level return"):
		return "assign the value to globalThis.__codemode_result__ instead of returning it"
	case strings.Contains(text, "require"):
		return "use `import ... from \"@codemode/...\"`; require is not available"
	case strings.Contains(text, "JSX"):
		return "JSX is not supported; build strings or objects instead"
	}
	return "fix the syntax at this position"
}
