// Package transpile turns an agent's script, TypeScript or JavaScript, into
// the ES module the sandbox runs, using esbuild's Go API; and maps positions
// in that module back to the agent's own source, so that every diagnostic
// points at a line the agent wrote.
//
// Start with [Module]. Results are cached by source text: agents and
// benchmarks resubmit the same script, and esbuild's work is then free.
// esbuild itself runs in worker processes that are killed at the time
// budget and capped in memory ([Transform]); a program that transpiles must
// call reexec.Init first (see package reexec).
package transpile

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/evanw/esbuild/pkg/api"
	"github.com/go-sourcemap/sourcemap"

	"github.com/codemode-mcp/codemode/internal/diag"
)

// Output is a transpiled module.
type Output struct {
	// Code is the ES module to run. It is whitespace-minified: deeply nested
	// code would otherwise be indented once per level, which makes the
	// output quadratic in the nesting depth. Positions in it are mapped back
	// to the agent's source by Position.
	Code string
	// Lang is "ts" or "js": the loader that accepted the source.
	Lang string
	// File is the name positions are reported against: "script.ts" or
	// "script.js".
	File string

	// smap is the source map, parsed on demand: positions are needed only
	// for errors, and the parsed form is several times larger than this.
	smap []byte
	// shift is the length of the wrapper's prefix on the first line, in
	// UTF-16 code units (the map's unit).
	shift int
	// lines is the number of lines of the agent's source; end is the
	// position just past its last character, where positions in the
	// wrapper's suffix are reported.
	lines int
	end   string
}

// Position maps a 1-based line and column of Code, as the engine reports
// them (columns in code points), to "file:line:col" in the agent's source,
// whose columns count UTF-16 code units, as editors, V8 and source maps do,
// and as syntax errors from Module do. Positions without a mapping are
// reported as they are; positions in the wrapper's code (see Options) are
// reported at the end of the agent's source.
func (o *Output) Position(line, col int) string {
	if o.smap != nil {
		if m, err := sourcemap.Parse("", o.smap); err == nil {
			// The map's columns are 0-based UTF-16 code units; the
			// engine's are 1-based code points, which differ after a
			// character outside the BMP (an emoji) on the line.
			if _, _, l, c, ok := m.Source(line, utf16Col(lineOf(o.Code, line), col-1)); ok {
				if l > o.lines || l == 1 && c < o.shift {
					return o.File + ":" + o.end
				}
				if l == 1 {
					c -= o.shift
				}
				return o.File + ":" + strconv.Itoa(l) + ":" + strconv.Itoa(c+1)
			}
		}
	}
	return o.File + ":" + strconv.Itoa(line) + ":" + strconv.Itoa(col)
}

// Options tune Module. The zero value is what the run tool uses.
type Options struct {
	// Lang is "ts" or "js" to parse the source as that language only, and
	// report positions in "script.ts" or "script.js"; empty tries
	// TypeScript first and falls back to JavaScript. TypeScript is almost
	// a superset, but not quite: `f < T > (x)` is a comparison in
	// JavaScript and a generic call in TypeScript, so a caller that knows
	// the language (a file's extension: see LangOf) must say so. Any other
	// value is a programming error, and Module panics.
	Lang string
	// Prefix and Suffix surround the agent's code, for surfaces whose
	// scripts are not modules: a function body that `return`s its result
	// (see Body), or an arrow function to call (see Call). Prefix must not
	// contain a newline, so that the agent's lines keep their numbers;
	// positions on the first line are shifted back by its length.
	Prefix, Suffix string
	// Readable asks for JavaScript to read rather than to run (see
	// package normalize): not minified, one statement per line, types
	// stripped, and what the normaliser's parser lacks or reads badly
	// lowered: async iteration (async generators, for await), and arrow
	// functions (function expressions instead, `this` and `arguments`
	// kept), whose parameter lists that parser reads again for each arrow
	// nested in them, exponentially.
	Readable bool
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

// LangOf returns the Lang for a script in a file named name: "js" for .js,
// .mjs and .cjs, "ts" for .ts, .mts and .cts, and "" (TypeScript, then
// JavaScript) for anything else, such as standard input.
func LangOf(name string) string {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".js", ".mjs", ".cjs":
		return "js"
	case ".ts", ".mts", ".cts":
		return "ts"
	}
	return ""
}

type cacheKey struct {
	src  string
	opts Options
}

type cacheEntry struct {
	out   *Output
	diags []diag.Diagnostic
}

// cache holds recent results. It is bounded by entry count and by the bytes
// its entries hold (source, code, source map, diagnostics); when full it is
// simply cleared, which is cheap and keeps the hot case (the same script
// again) fast.
var cache struct {
	sync.Mutex
	m     map[cacheKey]cacheEntry
	bytes int
}

const (
	cacheMaxEntries = 256
	cacheMaxBytes   = 4 << 20
	// cacheMaxEntry keeps one huge result from evicting everything else.
	cacheMaxEntry = cacheMaxBytes / 8
)

// Module transpiles src. On failure it returns nil and SYNTAX_ERROR
// diagnostics located in src, a SANDBOX_LIMIT diagnostic if compiling took
// too long (see transformTimeout) or too much memory (WorkerMemory), or
// CANCELLED if ctx was cancelled first. esbuild runs in a worker process
// (see Transform); results are cached in this one.
func Module(ctx context.Context, src string, opts *Options) (*Output, []diag.Diagnostic) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Lang != "" && o.Lang != "ts" && o.Lang != "js" {
		panic(fmt.Sprintf(`transpile: Options.Lang is %q; want "", "ts" or "js"`, o.Lang))
	}
	key := cacheKey{src, o}
	cache.Lock()
	e, ok := cache.m[key]
	cache.Unlock()
	if ok {
		return e.out, e.diags
	}
	return transformWithin(ctx, key)
}

// store caches a result, charging what it holds.
func store(key cacheKey, out *Output, diags []diag.Diagnostic) {
	size := len(key.src) + len(key.opts.Prefix) + len(key.opts.Suffix) + len(key.opts.Lang)
	if out != nil {
		size += len(out.Code) + len(out.smap) + len(out.end)
	}
	for _, d := range diags {
		size += len(d.Message) + len(d.Hint) + len(d.Path)
	}
	if size > cacheMaxEntry {
		return
	}
	cache.Lock()
	defer cache.Unlock()
	if cache.m == nil || len(cache.m) >= cacheMaxEntries || cache.bytes+size > cacheMaxBytes {
		cache.m = map[cacheKey]cacheEntry{}
		cache.bytes = 0
	}
	cache.m[key] = cacheEntry{out, diags}
	cache.bytes += size
}

// transformTimeout bounds the time Module spends on one script, waiting
// for a worker included: past it the worker is killed (see worker.go).
// transformFunc is transform; tests replace it.
var (
	transformTimeout = 3 * time.Second
	transformFunc    = transform
)

// transformWithin runs transform within transformTimeout and caches its
// result, unless the compiler failed for reasons that may not hold next
// time (the load, a cancelled run, a worker that could not start).
func transformWithin(ctx context.Context, key cacheKey) (*Output, []diag.Diagnostic) {
	ctx, cancel := context.WithTimeout(ctx, transformTimeout)
	defer cancel()
	out, diags, err := transformFunc(ctx, key.src, key.opts)
	switch {
	case err == nil:
		store(key, out, diags)
		return out, diags
	case errors.Is(err, ErrBusy):
		return nil, []diag.Diagnostic{{Severity: diag.SeverityError, Code: diag.SandboxLimit, ErrorClass: diag.SandboxLimitError,
			Message: "the server is busy compiling other scripts",
			Hint:    "run the script again in a moment"}}
	case errors.Is(err, ErrTimeout):
		// Not cached: on a loaded machine an ordinary script may take this
		// long once.
		return nil, []diag.Diagnostic{{Severity: diag.SeverityError, Code: diag.SandboxLimit, ErrorClass: diag.SandboxLimitError,
			Message: fmt.Sprintf("the script could not be compiled within %v", transformTimeout),
			Hint:    "simplify the script (less deeply nested code, fewer repetitions of the same declaration, assignment or case; shorter expressions)"}}
	case errors.Is(err, ErrMemory):
		// Cached: memory does not depend on the load, and the script would
		// cost a worker again.
		d := []diag.Diagnostic{{Severity: diag.SeverityError, Code: diag.SandboxLimit, ErrorClass: diag.SandboxLimitError,
			Message: fmt.Sprintf("compiling the script needed more than %d MiB of memory", WorkerMemory>>20),
			Hint:    "simplify the script: constant expressions that build huge strings (an enum whose members repeat each other, say) cannot be compiled"}}
		store(key, nil, d)
		return nil, d
	case errors.Is(err, ErrTooLarge):
		// Cached, as memory is: the same script would come out as large.
		d := []diag.Diagnostic{{Severity: diag.SeverityError, Code: diag.SandboxLimit, ErrorClass: diag.SandboxLimitError,
			Message: "compiling the script made too much code: " + strings.TrimPrefix(err.Error(), ErrTooLarge.Error()+": "),
			Hint:    "do not use enum members or constants that hold long strings many times (esbuild writes their value at every use); build long strings at run time instead"}}
		store(key, nil, d)
		return nil, d
	case errors.Is(err, context.Canceled):
		return nil, []diag.Diagnostic{{Severity: diag.SeverityError, Code: diag.Canceled,
			Message: "the run was cancelled while its script was being compiled",
			Hint:    "run the script again if its result is still needed"}}
	default:
		return nil, []diag.Diagnostic{{Severity: diag.SeverityError, Code: diag.SandboxLimit, ErrorClass: diag.SandboxLimitError,
			Message: "the script could not be compiled: " + err.Error(),
			Hint:    "run the script again in a moment; if it keeps failing, the gateway is short of memory or processes"}}
	}
}

// transform compiles src; err is a failure of the compiler, not of the
// script (ErrTimeout, ErrMemory, a cancelled ctx, a worker that failed).
func transform(ctx context.Context, src string, o Options) (*Output, []diag.Diagnostic, error) {
	langs := []string{"ts", "js"}
	if o.Lang != "" {
		langs = []string{o.Lang}
	}
	var best []api.Message
	bestLang := ""
	for _, lang := range langs {
		out, errs, err := try(ctx, src, lang, o)
		if err != nil {
			return nil, nil, err
		}
		if out != nil {
			return out, nil, nil
		}
		// Report the errors of the parse that got furthest: a JavaScript
		// file fails late as TypeScript only if it really is broken.
		if best == nil || furthest(errs) > furthest(best) {
			best, bestLang = errs, lang
		}
	}
	return nil, syntaxDiagnostics(best, "script."+bestLang, src, o), nil
}

// supported lists the syntax QuickJS lacks (as of modernc.org/quickjs
// v0.27), for esbuild to lower or refuse; everything else in ESNext, which
// the sandbox does run, is passed through as written.
//   - Decorators (and auto-accessors) and `using` / `await using`
//     declarations are lowered to plain classes and try/finally.
//   - Deferred and source phase imports cannot be lowered: esbuild refuses
//     them with an error that hintFor explains, where QuickJS would say
//     only "from clause expected".
var supported = map[string]bool{"decorators": false, "using": false, "import-defer": false, "import-source": false}

// readableSupported is supported for Options.Readable: async generators,
// for await and arrow functions are lowered too.
var readableSupported = map[string]bool{"decorators": false, "using": false, "import-defer": false, "import-source": false,
	"async-generator": false, "for-await": false, "arrow": false}

// wellKnown are the well-known symbols that lowered decorators and `using`
// declarations look up but QuickJS does not define. esbuild's helpers fall
// back to Symbol.for("Symbol.<name>") for them (its __knownSymbol); the
// agent's own code names them as Symbol.<name>, which must be the same
// symbol, or an object with a [Symbol.dispose]() method is "not
// disposable".
var wellKnown = []string{"dispose", "asyncDispose", "metadata"}

// symbolShim returns the statements that define the well-known symbols
// src names that the engine lacks, or "". It is empty for scripts that do
// not name them, whose code stays the agent's own; with `??=` it does
// nothing on an engine that has them. It is esbuild's banner: a line of
// its own before the code (after a hashbang), which the source map
// accounts for, so that it moves no position in the agent's source.
func symbolShim(src string) string {
	var b strings.Builder
	for _, name := range wellKnown {
		if strings.Contains(src, "Symbol."+name) {
			fmt.Fprintf(&b, "Symbol.%s??=Symbol.for(\"Symbol.%s\");", name, name)
		}
	}
	return b.String()
}

func furthest(msgs []api.Message) int {
	if len(msgs) == 0 || msgs[0].Location == nil {
		return -1
	}
	return msgs[0].Location.Line<<20 + msgs[0].Location.Column
}

func try(ctx context.Context, src, lang string, o Options) (*Output, []api.Message, error) {
	r, err := Transform(ctx, o.Prefix+src+o.Suffix, esbuildOptions(src, lang, o.Readable))
	if err != nil {
		return nil, nil, err
	}
	if len(r.Errors) > 0 {
		return nil, r.Errors, nil
	}
	line, col := endOf(src)
	lines, _ := lineStart(src, len(src))
	return &Output{Code: string(r.Code), Lang: lang, File: "script." + lang, smap: r.Map, shift: utf16Len(o.Prefix),
		lines: lines, end: strconv.Itoa(line) + ":" + strconv.Itoa(col)}, nil, nil
}

// esbuildOptions are the options of the transform of src as lang.
func esbuildOptions(src, lang string, readable bool) api.TransformOptions {
	loader := api.LoaderTS
	if lang == "js" {
		loader = api.LoaderJS
	}
	sup, banner := supported, symbolShim(src)
	if readable {
		sup, banner = readableSupported, ""
	}
	return api.TransformOptions{
		Loader:    loader,
		Format:    api.FormatESModule,
		Target:    api.ESNext,
		Supported: sup,
		Banner:    banner,
		Sourcemap: api.SourceMapExternal,
		// The file is named as an ES module (.mts, .mjs), as the sandbox
		// runs it: without import, export or top-level await esbuild would
		// otherwise treat it as a script, and accept a top-level return.
		// (Appending "export {}" does that too, but then every strict-mode
		// error carries a note pointing at it, at the end of the file,
		// which makes many of them quadratic.)
		Sourcefile: "script.m" + lang,
		Charset:    api.CharsetUTF8,
		LogLevel:   api.LogLevelSilent,
		// Keep the agent's code as written, except for white space (see
		// Output.Code); no syntax minification, no tree shaking that
		// could drop a side-effect import. Readable output keeps its
		// white space (one statement a line, for the normaliser).
		MinifyWhitespace: !readable,
		TreeShaking:      api.TreeShakingFalse,
		// An import whose names are all unused (or all types) stays as
		// `import "x"`: importing a server that does not exist is then
		// still an IMPORT_FAILURE, and importing one still connects it.
		TsconfigRaw: `{"compilerOptions":{"importsNotUsedAsValues":"preserve"}}`,
	}
}

// endOf returns the 1-based line and column just past the last character
// of src that is not white space: where a script that was cut off ends.
func endOf(src string) (line, col int) {
	return lineCol(src, len(strings.TrimRightFunc(src, func(r rune) bool { return unicode.IsSpace(r) || r == '\uFEFF' })))
}

// lineCol returns the 1-based line and column of byte offset off in src,
// counting line breaks as esbuild does and columns in UTF-16 code units,
// as Output.Position does.
func lineCol(src string, off int) (line, col int) {
	off = min(max(off, 0), len(src))
	line, start := lineStart(src, off)
	return line, utf16Len(src[start:off]) + 1
}

// lineStart returns the 1-based line of byte offset off in src, counting
// line breaks as esbuild does, and the offset at which that line starts.
func lineStart(src string, off int) (line, start int) {
	off = min(max(off, 0), len(src))
	line = 1
	for i := 0; i < off; {
		if n := lineBreak(src, i); n > 0 {
			i += n
			line, start = line+1, i
			continue
		}
		i++
	}
	return line, start
}

// utf16Len returns the length of s in UTF-16 code units: the unit of
// columns in diagnostics, whatever unit the position came in (esbuild's
// bytes, the engine's code points). A byte that is not valid UTF-8
// counts as one.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// utf16Col converts n, a count of code points from the start of text, to
// a count of UTF-16 code units. Code points past the end of text count as
// one unit each.
func utf16Col(text string, n int) int {
	col := 0
	for _, r := range text {
		if n <= 0 {
			break
		}
		col += utf16.RuneLen(r)
		n--
	}
	return col + max(n, 0)
}

// lineOf returns the 1-based line n of code as the engine counts lines
// (at line feeds), or "".
func lineOf(code string, n int) string {
	for ; n > 1; n-- {
		i := strings.IndexByte(code, '\n')
		if i < 0 {
			return ""
		}
		code = code[i+1:]
	}
	if i := strings.IndexByte(code, '\n'); i >= 0 {
		code = code[:i]
	}
	return code
}

// codeFrameWidth is the most characters of a source line a diagnostic quotes:
// a one-line script (a big literal, minified code) would otherwise be
// quoted whole, tens of kilobytes of message for one error.
const codeFrameWidth = 120

// codeFrame returns the code frame line "\n  n | text" for line n of the
// agent's source, text, whose error is at byte offset at. A line longer
// than codeFrameWidth characters is cut to codeFrameWidth around the error, a
// third of them before it, and each cut is marked with "…".
func codeFrame(n int, text string, at int) string {
	text = strings.TrimRight(text, " \t")
	at = min(max(at, 0), len(text))
	total := utf8.RuneCountInString(text)
	if total > codeFrameWidth {
		first := min(max(utf8.RuneCountInString(text[:at])-codeFrameWidth/3, 0), total-codeFrameWidth)
		from, to := runeOffset(text, first), runeOffset(text, first+codeFrameWidth)
		cut := text[from:to]
		if from > 0 {
			cut = "…" + cut
		}
		if to < len(text) {
			cut += "…"
		}
		text = cut
	}
	return fmt.Sprintf("\n  %d | %s", n, text)
}

// runeOffset returns the byte offset of the n-th code point of s (0-based),
// or len(s).
func runeOffset(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}

// maxQuoted bounds, in characters, a text from esbuild that may quote the
// agent's code (a message's token, a suggestion, a note).
const maxQuoted = 200

// clip cuts s to at most maxQuoted characters, keeping its start and its
// end (which says what is wrong with what it quotes: "… has already been
// declared") around a "…".
func clip(s string) string {
	total := utf8.RuneCountInString(s)
	if total <= maxQuoted {
		return s
	}
	head := maxQuoted * 3 / 4
	return s[:runeOffset(s, head)] + "…" + s[runeOffset(s, total-(maxQuoted-head-1)):]
}

// lineBreak returns the length of the line break at s[i], or 0.
func lineBreak(s string, i int) int {
	if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
		return 2
	}
	return lineTerminatorAt(s, i)
}

// lineTerminatorAt returns the length of the line terminator at s[i] that
// is not part of a CRLF pair (LF, CR, U+2028, U+2029), or 0.
func lineTerminatorAt(s string, i int) int {
	switch s[i] {
	case '\n', '\r':
		return 1
	case 0xE2:
		if i+2 < len(s) && s[i+1] == 0x80 && (s[i+2] == 0xA8 || s[i+2] == 0xA9) {
			return 3
		}
	}
	return 0
}

// lineAt returns the 1-based line n of src, without trailing white space.
func lineAt(src string, n int) string {
	start := 0
	for i := 0; i < len(src); {
		b := lineBreak(src, i)
		if b == 0 {
			i++
			continue
		}
		if n == 1 {
			return strings.TrimRight(src[start:i], " \t")
		}
		n--
		i += b
		start = i
	}
	if n == 1 {
		return strings.TrimRight(src[start:], " \t")
	}
	return ""
}

// syntaxDiagnostics turns esbuild's errors into SYNTAX_ERROR diagnostics with
// the position in the agent's source and a hint.
//
// esbuild's columns are bytes; the diagnostics' count UTF-16 code units,
// as positions from the engine do once Output.Position has mapped them.
func syntaxDiagnostics(msgs []api.Message, file, src string, o Options) []diag.Diagnostic {
	shift := len(o.Prefix)
	var out []diag.Diagnostic
	atEnd := false
	for _, m := range msgs {
		if len(out) == 5 {
			break // the first few errors are what matters; later ones cascade
		}
		m.Text = clip(targetEnv.ReplaceAllString(m.Text, "in this sandbox"))
		d := diag.Diagnostic{Severity: diag.SeverityError, Code: diag.SyntaxError, Message: m.Text, Hint: hintFor(m.Text)}
		if loc := m.Location; loc != nil && inWrapper(loc, src, o) {
			// The error is in code the agent did not write: the agent's
			// code ended too early (an unclosed bracket, a missing
			// operand) or has an extra closing bracket.
			if atEnd {
				continue // one is enough: the others cascade from it
			}
			atEnd = true
			line, col := endOf(src)
			d.Path = fmt.Sprintf("%s:%d:%d", file, line, col)
			d.Message = endMessage(m.Text)
			if text := lineAt(src, line); text != "" {
				d.Message += codeFrame(line, text, len(text))
			}
			d.Hint = "the code ends too early: close every (, [, { and string, and complete the last statement; or remove an extra closing bracket"
			out = append(out, d)
			continue
		}
		if loc := m.Location; loc != nil {
			text, at := loc.LineText, min(max(loc.Column, 0), len(loc.LineText))
			if loc.Line == 1 && shift <= at {
				// The wrapper is ours, not the agent's.
				text, at = text[shift:], at-shift
			}
			d.Path = fmt.Sprintf("%s:%d:%d", file, loc.Line, utf16Len(text[:at])+1)
			if strings.TrimSpace(text) != "" {
				d.Message = m.Text + codeFrame(loc.Line, text, at)
				if shift > 0 && startsWithWord(strings.TrimSpace(text), "import") {
					d.Hint = `this tool runs the code inside a function, where import declarations are not allowed: use the server's global object, or await import("@codemode/servers/<serverId>")`
				}
			}
			if loc.Suggestion != "" {
				d.Hint = fmt.Sprintf("replace it with %q", clip(loc.Suggestion))
			}
		}
		for _, n := range m.Notes {
			if n.Text != "" && d.Hint == "" {
				d.Hint = clip(n.Text)
			}
		}
		out = append(out, d)
	}
	return out
}

// targetEnv is how esbuild names the target in errors about syntax it will
// not lower ("… not available in the configured target environment
// ("esnext" + 4 overrides)"): its options mean nothing to the agent.
var targetEnv = regexp.MustCompile(`(in|to) the configured target environment \([^)]*\)`)

// inWrapper reports whether an esbuild location in the transpiled input
// (the wrapper's prefix, src, the wrapper's suffix) lies outside src, or at
// its very end. Lines are the agent's (the prefix has no line break);
// columns are bytes.
func inWrapper(loc *api.Location, src string, o Options) bool {
	if loc.Line == 1 && loc.Column < len(o.Prefix) {
		return true
	}
	lines, start := lineStart(src, len(src))
	if loc.Line != lines {
		return loc.Line > lines
	}
	last := len(src) - start // the length of the last line
	if lines == 1 {
		last += len(o.Prefix)
	}
	return loc.Column >= last
}

// endMessage rewords esbuild's message for an error past the end of the
// agent's code: what esbuild found there is the wrapper's, but what it
// expected, or what is unterminated, says what is missing.
func endMessage(text string) string {
	const m = "Unexpected end of script"
	if exp, ok := expected(text); ok {
		return m + ": expected " + exp
	}
	if strings.HasPrefix(text, "Unexpected ") || text == "" {
		return m
	}
	if c := text[0]; c >= 'A' && c <= 'Z' && len(text) > 1 && text[1] >= 'a' && text[1] <= 'z' {
		text = string(c+'a'-'A') + text[1:]
	}
	return m + ": " + text
}

// expected extracts X from esbuild's `Expected X but found Y`.
func expected(text string) (string, bool) {
	rest, ok := strings.CutPrefix(text, "Expected ")
	if !ok {
		return "", false
	}
	exp, _, ok := strings.Cut(rest, " but found ")
	return exp, ok && exp != ""
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
	case strings.Contains(text, "Parameter decorators"):
		return "decorate the class, a method or a field instead (standard decorators); parameter decorators need TypeScript's experimentalDecorators, which the sandbox does not use"
	case strings.Contains(text, "Deferred imports"), strings.Contains(text, "Source phase imports"):
		return `use a plain import declaration, or await import("…") where the module is needed`
	}
	return "fix the syntax at this position"
}
