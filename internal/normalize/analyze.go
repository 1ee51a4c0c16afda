package normalize

import (
	"context"
	"fmt"
	"reflect"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"

	"github.com/grafana/sobek/ast"
	"github.com/grafana/sobek/parser"

	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/transpile"
)

// The analysis reads the agent's code as a syntax tree. esbuild (through
// package transpile) first turns the code, TypeScript or JavaScript, into
// readable JavaScript: types stripped, one statement per line, nothing else
// changed, with a source map back to the agent's source. sobek's parser then
// reads that JavaScript into a tree with positions. Every edit the
// normaliser makes is made to that JavaScript, at positions the tree gives,
// and every position in it maps back to the agent's source through the
// source map.
//
// A script with a top-level `return` is no module, and esbuild refuses it as
// one: each such `return` (esbuild reports where) is first replaced by a
// placeholder of the same length, `$cmr$=` before a value or `$cmq$;`
// without one, which the tree then shows as an assignment or a name.

const (
	retValue = "$cmr$" // `return x` read as `$cmr$= x`
	retEmpty = "$cmq$" // `return;` read as `$cmq$;`
)

// analysis is what the tree says about a script.
type analysis struct {
	js   string            // the readable JavaScript
	out  *transpile.Output // js, with the map back to the source
	prog *ast.Program      //
	top  []stmt            // the top-level statements
	ret  bool              // a top-level return (outside any function)
	tail []int             // offsets in js of expression statements whose value a body would end with
	refs map[string]int    // how often each name appears (a function named once is never called)
	call []call            // obj.member(...) calls anywhere
	read map[int][]string  // the properties read with a dot (x.name), by line of the agent's source
	decl []callDecl        // const x = f(...) / o.m(...) without await: candidates for unawaitedCalls
	fns  []fnRange         // every function's extent, and whether it is async
	lang string            // "ts" or "js"
	errs []string          //
	sets bool              // the code names __codemode_result__
	rets []placeholder     // the returns replaced, as they appear in js
	src  string            // the (unfenced) source analysed
	// transient is set when the analysis failed for a reason that is not
	// the code's (esbuild's worker out of time or busy): not cached.
	transient bool
}

// placeholder is a replaced return as it appears in js: [at, at+n) is the
// placeholder's text ("$cmr$ = " or "$cmq$").
type placeholder struct{ at, n int }

type kind uint8

const (
	kOther   kind = iota
	kExpr         // an expression statement
	kFunc         // a function declaration
	kClass        // a class declaration
	kVar          // var, let or const
	kImport       // an import declaration
	kExport       // an export of a declaration or a list
	kDefault      // export default
	kReturn       // a top-level return (a placeholder)
	kEmpty        // ;
)

// stmt is one top-level statement of the readable JavaScript.
type stmt struct {
	kind       kind
	start, end int      // [start, end) in js: whole lines, up to the next statement
	at         int      // where the statement's own text starts in js (after the line's indentation, before parentheses)
	node       ast.Node //
	fn         bool     // kExpr: the expression is a function; kFunc; kVar: it binds one name to a function
	console    bool     // kExpr: a console.* call
	name       string   // kFunc, kClass, kDefault with a named declaration: the name; kVar: the last name declared
	decl       int      // kExport, kDefault: offset in js where the declaration or expression starts
	params     int      // kFunc, kVar with fn: number of parameters
}

// call is a call obj.member(...) in the code (obj a name, or a dotted path
// of names: a.b.member(...)).
type call struct {
	Object, Member string
	Line           int // in the agent's source, 0 if unknown
}

var cache struct {
	sync.Mutex
	m map[cacheKey]*analysis
}

type cacheKey struct{ src, lang string }

// analyze reads src (already unfenced), or returns nil with the reason.
// Results are cached: a surface analyses the code before the run and, for
// NO_RESULT, after it.
//
// known, if not nil, are diagnostics transpile already gave for src as a
// module: the top-level returns they report are replaced before esbuild
// reads the code, which saves a pass.
//
// ctx bounds esbuild's pass (transpile runs it in a worker process); a
// failure that is not the code's (cancelled, out of time) is not cached.
func analyze(ctx context.Context, src, lang string, known ...diag.Diagnostic) (*analysis, string) {
	key := cacheKey{src, lang}
	cache.Lock()
	a, ok := cache.m[key]
	cache.Unlock()
	if ok {
		if a.js == "" {
			return nil, strings.Join(a.errs, "; ")
		}
		return a, ""
	}
	a = read(ctx, src, lang, known)
	if a.js == "" && (ctx.Err() != nil || a.transient) {
		return nil, strings.Join(a.errs, "; ")
	}
	cache.Lock()
	if cache.m == nil || len(cache.m) >= 256 {
		cache.m = map[cacheKey]*analysis{}
	}
	cache.m[key] = a
	cache.Unlock()
	if a.js == "" {
		return nil, strings.Join(a.errs, "; ")
	}
	return a, ""
}

func read(ctx context.Context, src, lang string, known []diag.Diagnostic) (a *analysis) {
	a = &analysis{src: src, refs: map[string]int{}, sets: strings.Contains(src, "__codemode_result__")}
	defer func() {
		if p := recover(); p != nil { // the parser is not ours: never let it take a run down
			*a = analysis{errs: []string{fmt.Sprint("the parser failed: ", p, string(debug.Stack()))}}
		}
	}()
	// Replace top-level returns until esbuild accepts the code as a module.
	text := src
	var replaced []int
	var out *transpile.Output
	for i := range 32 {
		var o *transpile.Output
		diags := known
		if i > 0 || len(diags) == 0 {
			o, diags = transpile.Module(ctx, text, &transpile.Options{Lang: lang, Readable: true})
		}
		if o != nil {
			out = o
			break
		}
		progress := false
		for _, d := range diags {
			if !strings.Contains(d.Message, "Top-level return") {
				a.errs = append(a.errs, d.Message)
				a.transient = d.Code != diag.SyntaxError // a limit or a busy worker, not the code
				return a
			}
			off, ok := offsetOf(text, d.Path)
			if !ok || !strings.HasPrefix(text[off:], "return") {
				a.errs = append(a.errs, "unexpected position "+d.Path)
				return a
			}
			text = text[:off] + returnPlaceholder(text, off+len("return")) + text[off+len("return"):]
			replaced = append(replaced, off)
			progress = true
		}
		if !progress {
			a.errs = append(a.errs, "esbuild refused the code without saying why")
			return a
		}
	}
	if out == nil {
		a.errs = append(a.errs, "too many top-level returns")
		return a
	}
	a.out, a.js, a.lang = out, out.Code, out.Lang
	a.ret = len(replaced) > 0
	prog, err := parser.ParseFile(nil, "", a.js, parser.IgnoreRegExpErrors, parser.IsModule, parser.WithDisableSourceMaps)
	if err != nil {
		*a = analysis{errs: []string{"parsing: " + err.Error()}}
		return a
	}
	a.prog = prog
	a.walk()
	return a
}

// returnPlaceholder returns what replaces the `return` whose keyword ends at
// off: `$cmr$=` if a value follows on the same line, else `$cmq$;` (a line
// break ends a return statement, and so does a comment holding one).
func returnPlaceholder(s string, off int) string {
	for i := off; i < len(s); {
		switch c := s[i]; {
		case c == ' ' || c == '\t' || c == '\v' || c == '\f':
			i++
		case strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return retEmpty + ";"
			}
			if strings.ContainsAny(s[i:i+2+end], "\n\r\u2028\u2029") {
				return retEmpty + ";"
			}
			i += 2 + end + 2
		case strings.HasPrefix(s[i:], "//"), c == '\n', c == '\r', c == ';', c == '}',
			strings.HasPrefix(s[i:], "\u2028"), strings.HasPrefix(s[i:], "\u2029"):
			return retEmpty + ";"
		default:
			return retValue + "="
		}
	}
	return retEmpty + ";"
}

// offsetOf returns the byte offset in src of a diagnostic path
// "file:line:col" (col in UTF-16 code units, 1-based).
func offsetOf(src, path string) (int, bool) {
	i := strings.LastIndexByte(path, ':')
	if i < 0 {
		return 0, false
	}
	j := strings.LastIndexByte(path[:i], ':')
	if j < 0 {
		return 0, false
	}
	line, err1 := strconv.Atoi(path[j+1 : i])
	col, err2 := strconv.Atoi(path[i+1:])
	if err1 != nil || err2 != nil || line < 1 || col < 1 {
		return 0, false
	}
	return offsetAt(src, line, col)
}

// offsetAt returns the byte offset of 1-based line and UTF-16 column in src,
// counting line breaks as esbuild does.
func offsetAt(src string, line, col int) (int, bool) {
	off := 0
	for l := 1; l < line; l++ {
		n := nextBreak(src, off)
		if n < 0 {
			return 0, false
		}
		off = n
	}
	units := col - 1
	for i, r := range src[off:] {
		if units <= 0 {
			return off + i, true
		}
		if r == '\n' || r == '\r' || r == '\u2028' || r == '\u2029' {
			return off + i, true
		}
		if r >= 0x10000 {
			units -= 2
		} else {
			units--
		}
	}
	return len(src), true
}

// nextBreak returns the offset after the first line break at or after off,
// or -1.
func nextBreak(s string, off int) int {
	for i := off; i < len(s); i++ {
		switch s[i] {
		case '\n':
			return i + 1
		case '\r':
			if i+1 < len(s) && s[i+1] == '\n' {
				return i + 2
			}
			return i + 1
		case 0xE2:
			if strings.HasPrefix(s[i:], "\u2028") || strings.HasPrefix(s[i:], "\u2029") {
				return i + 3
			}
		}
	}
	return -1
}

// lineCol returns the 1-based line and column (in code points) of byte
// offset off in s, as the engine and Output.Position count them (lines end
// at line feeds).
func lineCol(s string, off int) (int, int) {
	off = min(max(off, 0), len(s))
	line := 1 + strings.Count(s[:off], "\n")
	start := strings.LastIndexByte(s[:off], '\n') + 1
	return line, 1 + len([]rune(s[start:off]))
}

// origin returns the agent-source path ("script.ts:3:7") of offset off in
// the readable JavaScript.
func (a *analysis) origin(off int) string {
	l, c := lineCol(a.js, off)
	return a.out.Position(l, c)
}

// originLine returns the agent-source line of offset off in the readable
// JavaScript, or 0.
func (a *analysis) originLine(off int) int {
	p := a.origin(off)
	i := strings.LastIndexByte(p, ':')
	j := strings.LastIndexByte(p[:max(i, 0)], ':')
	if i < 0 || j < 0 {
		return 0
	}
	n, _ := strconv.Atoi(p[j+1 : i])
	return n
}

// startOf returns where the statement whose first token the parser puts
// at idx (0-based) starts: parentheses around an expression statement's
// expression are not in its node, so they are walked back over (esbuild's
// output has no comments between them).
func (a *analysis) startOf(idx int) int {
	q := idx
	for {
		r := q
		for r > 0 && (a.js[r-1] == ' ' || a.js[r-1] == '\t') {
			r--
		}
		if r > 0 && a.js[r-1] == '(' {
			q = r - 1
			continue
		}
		return q
	}
}

// lineStart returns the offset of the start of the line holding off.
func (a *analysis) lineStart(off int) int {
	return strings.LastIndexByte(a.js[:off], '\n') + 1
}

func (a *analysis) walk() {
	body := a.prog.Body
	prevEnd := 0
	for _, s := range body {
		if _, ok := s.(*ast.EmptyStatement); ok {
			continue // the parser reads `import … from "m";` as an import and an empty statement
		}
		idx := int(s.Idx0()) - 1
		if idx < prevEnd || idx >= len(a.js) {
			// Some nodes lack their start (an if statement's is 0): top-level
			// statements start lines in esbuild's output, so take the first
			// line after the previous statement that is not blank.
			idx = prevEnd
			for idx < len(a.js) && (a.js[idx] == '\n' || a.js[idx] == ' ' || a.js[idx] == ';') {
				idx++
			}
		}
		prevEnd = min(max(int(s.Idx1())-1, idx), len(a.js))
		at := a.startOf(idx)
		st := stmt{node: s, start: a.lineStart(at), at: at}
		switch n := s.(type) {
		case *ast.ExpressionStatement:
			st.kind = kExpr
			if a.isPlaceholder(n.Expression) {
				st.kind = kReturn
			}
			st.fn = isFunction(n.Expression)
			st.console = isConsoleCall(n.Expression)
		case *ast.FunctionDeclaration:
			st.kind, st.fn = kFunc, true
			if n.Function.Name != nil {
				st.name = string(n.Function.Name.Name)
			}
			if n.Function.ParameterList != nil {
				st.params = len(n.Function.ParameterList.List)
			}
		case *ast.ClassDeclaration:
			st.kind = kClass
			if n.Class.Name != nil {
				st.name = string(n.Class.Name.Name)
			}
		case *ast.VariableStatement:
			st.kind, st.name = kVar, lastName(n.List)
			st.fn, st.params = functionBinding(n.List)
		case *ast.LexicalDeclaration:
			st.kind, st.name = kVar, lastName(n.List)
			st.fn, st.params = functionBinding(n.List)
		case *ast.ImportDeclaration:
			st.kind = kImport
		case *ast.ExportDeclaration:
			st.kind = kExport
			if n.IsDefault {
				st.kind = kDefault
			}
			st.decl = a.declStart(n)
			if h := n.HoistableDeclaration; h != nil && h.FunctionDeclaration != nil && h.FunctionDeclaration.Function.Name != nil {
				st.name = string(h.FunctionDeclaration.Function.Name.Name)
			}
			if c := n.ClassDeclaration; c != nil && c.Class.Name != nil {
				st.name = string(c.Class.Name.Name)
			}
			// esbuild writes `export default <expression>` as a variable
			// and `export { name as default }`.
			if n.NamedExports != nil && n.FromClause == nil && n.ExportFromClause == nil {
				for _, e := range n.NamedExports.ExportsList {
					if e.Alias == "default" {
						st.kind, st.name = kDefault, string(e.IdentifierName)
					}
				}
			}
		case *ast.EmptyStatement:
			st.kind = kEmpty
		}
		if n := len(a.top); n > 0 {
			a.top[n-1].end = st.start
		}
		a.top = append(a.top, st)
	}
	if len(a.top) > 0 {
		a.top[len(a.top)-1].end = len(a.js)
	}
	a.findReturns()
	a.tail = a.tails(body, nil)
	a.findCalls()
}

// declStart returns where the declaration or expression of an export starts.
func (a *analysis) declStart(n *ast.ExportDeclaration) int {
	var node ast.Node
	switch {
	case n.Variable != nil:
		node = n.Variable
	case n.LexicalDeclaration != nil:
		node = n.LexicalDeclaration
	case n.HoistableDeclaration != nil && n.HoistableDeclaration.FunctionDeclaration != nil:
		node = n.HoistableDeclaration.FunctionDeclaration
	case n.ClassDeclaration != nil:
		node = n.ClassDeclaration
	case n.AssignExpression != nil:
		return a.startOf(int(n.AssignExpression.Idx0()) - 1)
	default:
		return -1
	}
	return int(node.Idx0()) - 1
}

// functionBinding reports whether a declaration binds one name to a
// function (const run = async () => { ... }), and its parameter count.
func functionBinding(list []*ast.Binding) (bool, int) {
	if len(list) != 1 {
		return false, 0
	}
	if _, ok := list[0].Target.(*ast.Identifier); !ok {
		return false, 0
	}
	switch f := list[0].Initializer.(type) {
	case *ast.ArrowFunctionLiteral:
		if f.ParameterList != nil {
			return true, len(f.ParameterList.List)
		}
		return true, 0
	case *ast.FunctionLiteral:
		if f.ParameterList != nil {
			return true, len(f.ParameterList.List)
		}
		return true, 0
	}
	return false, 0
}

func lastName(list []*ast.Binding) string {
	for i := len(list) - 1; i >= 0; i-- {
		if id, ok := list[i].Target.(*ast.Identifier); ok {
			return string(id.Name)
		}
	}
	return ""
}

// isPlaceholder reports whether e is a replaced return.
func (a *analysis) isPlaceholder(e ast.Expression) bool {
	switch n := e.(type) {
	case *ast.AssignExpression:
		id, ok := n.Left.(*ast.Identifier)
		return ok && id.Name == retValue
	case *ast.Identifier:
		return n.Name == retEmpty
	}
	return false
}

// findReturns records every placeholder in js (outside functions: esbuild
// refused exactly those returns).
func (a *analysis) findReturns() {
	inspect(a.prog, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FunctionLiteral, *ast.ArrowFunctionLiteral, *ast.ClassLiteral:
			return false
		case *ast.ExpressionStatement:
			if a.isPlaceholder(n.Expression) {
				at := int(n.Idx0()) - 1
				if strings.HasPrefix(a.js[at:], retValue+" = ") {
					a.rets = append(a.rets, placeholder{at, len(retValue + " = ")})
				} else if strings.HasPrefix(a.js[at:], retValue+"=") {
					a.rets = append(a.rets, placeholder{at, len(retValue + "=")})
				} else if strings.HasPrefix(a.js[at:], retEmpty) {
					a.rets = append(a.rets, placeholder{at, len(retEmpty)})
				}
			}
		}
		return true
	})
}

// tails returns the offsets of the expression statements a function body
// made of list would end with: the last statement if it is one, and the
// last ones of the branches of a final if, try or block. Function and class
// declarations and empty statements at the end are skipped: they have no
// value.
func (a *analysis) tails(list []ast.Statement, acc []int) []int {
	for i := len(list) - 1; i >= 0; i-- {
		switch n := list[i].(type) {
		case *ast.EmptyStatement, *ast.FunctionDeclaration, *ast.ClassDeclaration, *ast.ImportDeclaration:
			continue
		case *ast.ExportDeclaration:
			if n.NamedExports != nil || n.ExportFromClause != nil {
				continue // export { … }: esbuild moves exports there
			}
		case *ast.ExpressionStatement:
			// A console call's value is undefined: returning it would change
			// nothing but the diagnostics.
			if !a.isPlaceholder(n.Expression) && !isConsoleCall(n.Expression) && !setsResult(n.Expression) {
				acc = append(acc, a.startOf(int(n.Idx0())-1))
			}
		case *ast.BlockStatement:
			acc = a.tails(n.List, acc)
		case *ast.IfStatement:
			acc = a.tails([]ast.Statement{n.Consequent}, acc)
			if n.Alternate != nil {
				acc = a.tails([]ast.Statement{n.Alternate}, acc)
			}
		case *ast.TryStatement:
			if n.Finally == nil {
				acc = a.tails(n.Body.List, acc)
				if n.Catch != nil {
					acc = a.tails(n.Catch.Body.List, acc)
				}
			}
		}
		return acc
	}
	return acc
}

// findCalls records the obj.member(...) calls of the code and the names it
// uses.
func (a *analysis) findCalls() {
	inspect(a.prog, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpression:
			callee := n.Callee
			if o, ok := callee.(*ast.Optional); ok {
				callee = o.Expression
			}
			if d, ok := callee.(*ast.DotExpression); ok {
				left := d.Left
				if o, ok := left.(*ast.Optional); ok {
					left = o.Expression
				}
				if obj := objectPath(left); obj != "" {
					a.call = append(a.call, call{Object: obj, Member: string(d.Identifier.Name),
						Line: a.originLine(int(d.Identifier.Idx) - 1)})
				}
			}
			// server["tool-name"](...): the MCP tool's own name, as some
			// agents are told to write names that are no identifiers.
			if b, ok := callee.(*ast.BracketExpression); ok {
				left := b.Left
				if o, ok := left.(*ast.Optional); ok {
					left = o.Expression
				}
				id, ok1 := left.(*ast.Identifier)
				lit, ok2 := b.Member.(*ast.StringLiteral)
				if ok1 && ok2 {
					a.call = append(a.call, call{Object: string(id.Name), Member: string(lit.Value), Line: a.originLine(int(lit.Idx) - 1)})
				}
			}
		case *ast.Binding:
			id, ok := n.Target.(*ast.Identifier)
			c, isCall := n.Initializer.(*ast.CallExpression)
			if !ok || !isCall {
				break
			}
			d := callDecl{name: string(id.Name), at: a.startOf(int(c.Idx0()) - 1)}
			switch f := c.Callee.(type) {
			case *ast.DotExpression:
				if obj := objectPath(f.Left); obj != "" {
					d.object, d.member = obj, string(f.Identifier.Name)
				}
			case *ast.Identifier:
				d.member = string(f.Name)
			}
			if d.member != "" {
				a.decl = append(a.decl, d)
			}
		case *ast.FunctionLiteral:
			a.fns = append(a.fns, fnRange{int(n.Idx0()) - 1, int(n.Idx1()) - 1, n.Async})
		case *ast.ArrowFunctionLiteral:
			a.fns = append(a.fns, fnRange{int(n.Idx0()) - 1, int(n.Idx1()) - 1, n.Async})
		case *ast.DotExpression:
			line := a.originLine(int(n.Identifier.Idx) - 1)
			if a.read == nil {
				a.read = map[int][]string{}
			}
			a.read[line] = append(a.read[line], string(n.Identifier.Name))
		case *ast.Identifier:
			a.refs[string(n.Name)]++
		}
		return true
	})
}

// usesImport reports whether the code names anything the import binds
// (outside import declarations).
func (a *analysis) usesImport(n *ast.ImportDeclaration) bool {
	c := n.ImportClause
	if c == nil {
		return false
	}
	names := map[string]bool{}
	if c.ImportedDefaultBinding != nil {
		names[string(c.ImportedDefaultBinding.Name)] = true
	}
	if c.NameSpaceImport != nil {
		names[string(c.NameSpaceImport.ImportedBinding)] = true
	}
	if c.NamedImports != nil {
		for _, s := range c.NamedImports.ImportsList {
			if s.Alias != "" {
				names[string(s.Alias)] = true
			} else {
				names[string(s.IdentifierName)] = true
			}
		}
	}
	used := false
	inspect(a.prog, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ImportDeclaration:
			return false
		case *ast.Identifier:
			used = used || names[string(n.Name)]
		}
		return !used
	})
	return used
}

// objectPath is the dotted path of a name or of a chain of member
// accesses on one ("tb.session"), or "".
func objectPath(e ast.Expression) string {
	switch n := e.(type) {
	case *ast.Identifier:
		return string(n.Name)
	case *ast.DotExpression:
		if p := objectPath(n.Left); p != "" {
			return p + "." + string(n.Identifier.Name)
		}
	case *ast.Optional:
		return objectPath(n.Expression)
	}
	return ""
}

func isFunction(e ast.Expression) bool {
	switch e.(type) {
	case *ast.ArrowFunctionLiteral, *ast.FunctionLiteral:
		return true
	}
	return false
}

func isConsoleCall(e ast.Expression) bool {
	if aw, ok := e.(*ast.AwaitExpression); ok {
		e = aw.Argument
	}
	c, ok := e.(*ast.CallExpression)
	if !ok {
		return false
	}
	d, ok := c.Callee.(*ast.DotExpression)
	if !ok {
		return false
	}
	id, ok := d.Left.(*ast.Identifier)
	return ok && id.Name == "console"
}

var nodeType = reflect.TypeOf((*ast.Node)(nil)).Elem()

// inspect walks the tree depth first, calling f for every node; f returns
// false to skip a node's children. The parser's nodes have no walker of
// their own: their fields are read by reflection, which follows every
// field that holds nodes (a node, a slice of them, a struct of them).
func inspect(n ast.Node, f func(ast.Node) bool) { visit(n, f, 0) }

// maxDepth bounds the walk: esbuild has refused code nested deeper (see
// transpile's shape checks), so this is only a guard.
const maxDepth = 20000

func visit(n ast.Node, f func(ast.Node) bool, depth int) {
	if n == nil || depth > maxDepth {
		return
	}
	if v := reflect.ValueOf(n); v.Kind() == reflect.Pointer && v.IsNil() {
		return
	}
	if !f(n) {
		return
	}
	walkValue(reflect.ValueOf(n), f, depth+1)
}

func walkValue(v reflect.Value, f func(ast.Node) bool, depth int) {
	if depth > maxDepth {
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return
		}
		walkValue(v.Elem(), f, depth+1)
	case reflect.Struct:
		for i := range v.NumField() {
			fv := v.Field(i)
			if ft := v.Type().Field(i); !ft.IsExported() || ft.Name == "DeclarationList" || ft.Name == "File" {
				continue // DeclarationList repeats declarations found in the body
			}
			if node, ok := asNode(fv); ok {
				visit(node, f, depth+1)
				continue
			}
			walkValue(fv, f, depth+1)
		}
	case reflect.Slice:
		for i := range v.Len() {
			e := v.Index(i)
			if node, ok := asNode(e); ok {
				visit(node, f, depth+1)
				continue
			}
			walkValue(e, f, depth+1)
		}
	}
}

// asNode returns the node v holds, if it is a non-nil pointer or interface
// holding one.
func asNode(v reflect.Value) (ast.Node, bool) {
	if (v.Kind() != reflect.Pointer && v.Kind() != reflect.Interface) || v.IsNil() {
		return nil, false
	}
	if v.Kind() == reflect.Pointer && !v.Type().Implements(nodeType) {
		return nil, false
	}
	node, ok := v.Interface().(ast.Node)
	return node, ok
}

// setsResult reports whether e assigns __codemode_result__: such a last
// statement already says what the result is.
func setsResult(e ast.Expression) bool {
	as, ok := e.(*ast.AssignExpression)
	if !ok {
		return false
	}
	switch l := as.Left.(type) {
	case *ast.Identifier:
		return l.Name == "__codemode_result__"
	case *ast.DotExpression:
		return l.Identifier.Name == "__codemode_result__"
	}
	return false
}

// unawaited is a tool call whose value the code declares without await and
// then uses as a value: x.field, x[i], `${x}`, x + 1, { k: x }. A promise
// has no such use (its fields are undefined, its text "[object Promise]",
// its JSON {}), so the code meant the call's result, as UTCP's synchronous
// calls give it.
type unawaited struct {
	name  string // the variable
	call  string // the call's callee, e.g. everything.get_sum
	at    int    // where to put `await ` in js
	use   int    // offset in js of the first use as a value
	fixed bool   // an await may go there (the top level, or an async function)
}

// callDecl is a declaration `const name = object.member(...)` (object
// empty for `member(...)`), the call not awaited; at is where the call
// starts in js.
type callDecl struct {
	name, object, member string
	at                   int
}

// fnRange is a function's extent in js.
type fnRange struct {
	start, end int
	async      bool
}

// promiseMethods are a promise's own uses.
var promiseMethods = map[string]bool{"then": true, "catch": true, "finally": true}

// valueFunctions are the functions whose arguments are used as values: a
// promise passed to one is logged as {}, stringified as {}, or has no keys
// (UTCP's README logs a call's value before it returns it). Promise.all and
// other functions that take promises are not among them.
var valueFunctions = map[string]bool{"JSON.stringify": true, "String": true, "Number": true,
	"Object.keys": true, "Object.values": true, "Object.entries": true, "Array.isArray": true}

// valueCallee reports whether a call of callee uses its arguments as
// values: console's methods and valueFunctions.
func valueCallee(callee ast.Expression) bool {
	switch c := callee.(type) {
	case *ast.Identifier:
		return valueFunctions[string(c.Name)]
	case *ast.DotExpression:
		obj, ok := c.Left.(*ast.Identifier)
		if !ok {
			return false
		}
		return obj.Name == "console" || valueFunctions[string(obj.Name)+"."+string(c.Identifier.Name)]
	}
	return false
}

// unawaitedCalls finds the declarations of tool calls' values made
// without await whose values the code then uses as values, and whether an
// await may be put there (at the top level, or in an async function: not
// in a plain callback). isAsync reports
// whether a name or dotted path holds the tools (a server object, tb,
// mcp); names imported from @codemode/servers/* modules count too.
func (a *analysis) unawaitedCalls(isAsync func(string) bool) []unawaited {
	objects, funcs := map[string]bool{}, map[string]bool{}
	for _, st := range a.top {
		n, ok := st.node.(*ast.ImportDeclaration)
		if !ok || !strings.HasPrefix(importSpecifier(n), "@codemode/servers/") || n.ImportClause == nil {
			continue
		}
		if ns := n.ImportClause.NameSpaceImport; ns != nil {
			objects[string(ns.ImportedBinding)] = true
		}
		if ni := n.ImportClause.NamedImports; ni != nil {
			for _, s := range ni.ImportsList {
				name := string(s.Alias)
				if name == "" {
					name = string(s.IdentifierName)
				}
				funcs[name] = true
			}
		}
	}
	var found []unawaited
	byName := map[string]int{}
	for _, d := range a.decl {
		root, _, _ := strings.Cut(d.object, ".")
		callee := d.member
		switch {
		case d.object == "" && (funcs[d.member] || isAsync != nil && isAsync(d.member)):
		case d.object != "" && (objects[d.object] || isAsync != nil && (isAsync(d.object) || isAsync(root))):
			callee = d.object + "." + d.member
		default:
			continue
		}
		byName[d.name] = len(found)
		found = append(found, unawaited{name: d.name, call: callee, at: d.at, use: -1})
	}
	if len(found) == 0 {
		return nil
	}
	used := func(e ast.Expression, at int) {
		if id, ok := e.(*ast.Identifier); ok {
			if i, ok := byName[string(id.Name)]; ok && found[i].use < 0 {
				found[i].use = at
			}
		}
	}
	inspect(a.prog, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.DotExpression:
			if !promiseMethods[string(n.Identifier.Name)] {
				used(n.Left, int(n.Idx0())-1)
			}
		case *ast.BracketExpression:
			used(n.Left, int(n.Idx0())-1)
		case *ast.TemplateLiteral:
			if n.Tag == nil {
				for _, e := range n.Expressions {
					used(e, int(e.Idx0())-1)
				}
			}
		case *ast.BinaryExpression:
			used(n.Left, int(n.Idx0())-1)
			used(n.Right, int(n.Idx0())-1)
		case *ast.CallExpression:
			if valueCallee(n.Callee) {
				for _, e := range n.ArgumentList {
					used(e, int(e.Idx0())-1)
				}
			}
		case *ast.PropertyKeyed:
			used(n.Value, int(n.Value.Idx0())-1)
		case *ast.PropertyShort:
			if n.Initializer == nil {
				used(&n.Name, int(n.Name.Idx)-1)
			}
		}
		return true
	})
	var out []unawaited
	for _, u := range found {
		if u.use < 0 {
			continue
		}
		// The innermost function around the call must be async (the top
		// level is: the code runs in an async function or a module).
		in := fnRange{-1, -1, true}
		for _, f := range a.fns {
			if f.start <= u.at && u.at < f.end && (in.start < 0 || f.end-f.start < in.end-in.start) {
				in = f
			}
		}
		u.fixed = in.async
		out = append(out, u)
	}
	return out
}
