package transpile

import (
	"maps"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file is a linear pre-pass over the agent's source that bounds the
// work esbuild will do with it. esbuild is linear on ordinary code, but a
// small script can drive parts of it far beyond that (times for 100 KB):
//
//   - every level of nesting is a level of recursion in its parser, visitor
//     and printer ("~~~…1": a second, and most of a gigabyte of stack), and
//     every name is resolved by walking up the enclosing scopes;
//   - its default renamer walks the enclosing scopes for every scope and
//     every candidate name: deep nesting is quadratic, and nested names
//     that shadow each other cubic ("x=>x=>…": 2.4 KB take two seconds);
//   - its printer simplifies a comma sequence once per operator in it
//     ("a,a,a,…": 30 s);
//   - it folds a sum of string or template literals one operand at a time,
//     copying what it folded so far ("`${x}`+`${x}`+…": 16 s);
//   - it gives many errors a note located elsewhere in the file, and
//     locating each rescans the file from the previous location
//     ("function f(a,a,a,…)": 38 s).
//
// measure estimates, for each reading of the source, the deepest nesting,
// the comma and folding work, and the errors of that last kind that are
// cheap to recognize; transform refuses scripts over the limits below, and
// switches to esbuild's linear identifier minifier where the renamer would
// be slow. (Errors and warnings of that last kind that are not recognized
// here, such as many assignments to a constant, are left to Module's time
// budget.)
//
// The estimates must never be low, whatever the input: the scanner counts
// whatever might nest (a bracket, a prefix operator, an assignment, a
// member access, a statement head…), forgets it only where the grammar
// guarantees it has ended (";", a statement boundary, a "," that ends an
// expression), and never stops early at what looks like a syntax error.
// Tokenizing JavaScript without parsing it is ambiguous in one place:
// whether "/" divides or starts a regular expression. The scanner decides
// it from the previous token where the grammar allows one answer, and
// otherwise follows both readings.

const (
	// maxNesting bounds the nesting estimate. QuickJS itself overflows its
	// stack between 2,000 and 5,000 levels, depending on the construct.
	maxNesting = 1000
	// maxCommaWork bounds the sum of the squares of the lengths of the
	// comma sequences (about 0.1 s of esbuild's printer).
	maxCommaWork = 10_000_000
	// maxFoldWork bounds the bytes esbuild copies folding sums of string
	// and template literals ("a" + "b" + …, about 0.1 s), a substitution
	// counting as foldSubstitution bytes.
	maxFoldWork      = 100_000_000
	foldSubstitution = 200
	// maxStrictErrors bounds the things ECMAScript modules forbid (legacy
	// octal literals and escapes, with, delete of a name, a parameter name
	// repeated): esbuild reports each with a note located elsewhere in the
	// file, and computing each location scans the file from the previous
	// one, so thousands of them are quadratic ("function f(a,a,a,…)" takes
	// 38 s).
	maxStrictErrors = 32
	// maxScopeWork bounds nesting × words: esbuild resolves every name by
	// walking up the enclosing scopes (0.2 s at most; the largest library
	// in a corpus of 12,000 real files reaches a fifth of it).
	maxScopeWork = 10_000_000
	// maxReadings bounds the readings followed at once.
	maxReadings = 8
	// renameBudget bounds the estimate of the default renamer's work above
	// which identifiers are minified instead (about 0.1 s at worst).
	renameBudget = 4_000_000
)

// shape is what measure found. An offset of -1 means "within limits".
type shape struct {
	nesting   int   // deepest nesting over all readings
	deepest   int   // offset of the deepest nesting
	words     int   // most words (names, keywords) over all readings
	tooDeep   int   // offset where nesting passed maxNesting
	commaWork int64 // largest comma work over all readings
	tooLong   int   // offset where comma work passed maxCommaWork
	foldWork  int64 // largest folding work over all readings
	tooFold   int   // offset where folding work passed maxFoldWork
	tooStrict int   // offset where strict-mode errors passed maxStrictErrors
	ambiguous int   // offset of a "/" beyond maxReadings readings
}

func (s shape) ok() bool {
	return s.tooDeep < 0 && s.tooLong < 0 && s.tooFold < 0 && s.tooStrict < 0 && s.ambiguous < 0 && !s.tooWide()
}

// tooWide reports whether esbuild's name resolution would be too slow.
func (s shape) tooWide() bool { return int64(s.nesting)*int64(s.words) > maxScopeWork }

// kind classifies the previous token for what may follow it.
type kind uint8

const (
	kStart kind = iota // start, or a punctuator after which an operand or a statement begins
	kEnd               // ends an operand: a name, a literal, ")" of a call or group, "]", a postfix operator
	kHead              // ")" closing the head of if, for, while or with
	kBrace             // "}": ends a block (a statement follows) or an expression (an operator follows)
	kAngle             // ">", ">>", ">>>": an operator, or the end of TypeScript type arguments
	kWord              // a keyword after which an operand or a declaration follows
	kMaybe             // of, yield, await: a keyword or a name
	kDot               // "." or "?.": a property name follows
)

type frame struct {
	open   byte // '(', '[', '{', '$' (template substitution), 0 (the script)
	base   int  // nesting outside the frame
	hard   int  // statement heads and labels: end at ";" or a statement boundary
	soft   int  // operators: end also at a "," that ends an expression
	angle  int  // "<" not matched by ">": a "," may separate type arguments
	commas int  // length of the current comma sequence
	seq    bool // a "," here may be the comma operator
	head   bool // "(" of if, for, while or with
	body   bool // "{" of a statement body: the statement may end with it
	class  bool // "{" of a class body: members end with "}" or ";"
	pend   bool // "class" was read here: the next "{" here opens its body
	decl   bool // in a var, let or const declaration list
	// Folding: lit is the weight of the sum of literals that ends here
	// (0 if the last operand is not a literal); pure reports whether a
	// group holds only such a sum, which then continues the sum around it
	// (plus, outerLit and outerPure: the state around it when it opened).
	lit       int64
	pure      bool
	plus      bool
	outerLit  int64
	outerPure bool
	// names holds the names that start an element of a "(" frame, and
	// dupes counts repeats: in a parameter list, strict-mode errors.
	names    map[string]bool
	dupes    int
	inSwitch bool // "(" of a switch
	fn       bool // "(" of a function or method: surely parameters
	// declared holds the names declared here by let, const or class.
	declared map[string]bool
}

type template struct {
	start, subs int
	plus, pure  bool
	prior       int64
}

type reader struct {
	src       string
	pos       int
	frames    []frame
	prev      kind
	punct     string // the previous token, when it is a punctuator
	word      string // the previous token, when it is a word
	nl        bool   // a line terminator before the current token
	stmt      bool   // the current token may start a statement
	wordStmt  bool   // the previous token was a word that started a statement
	head      bool   // the previous word was if, for, while or with
	binding   bool   // the previous word was let, const or class: a name follows
	fnName    bool   // the previous word named a function
	forced    byte   // 'r' or 'd': how to read the next "/"
	dead      bool   // a limit was hit
	nesting   int
	deepest   int
	words     int
	commaWork int64
	foldWork  int64
	tooDeep   int
	tooLong   int
	tooFold   int
	strict    int // strict-mode errors so far
	tooStrict int
	// templates holds the templates being read: where each started, its
	// substitutions so far, and the sum it may continue.
	templates []template
	// fork queues another reading starting at the current "/"; it reports
	// false when there are too many.
	fork func(*reader) bool
}

// measure scans src once per reading.
func measure(src string) shape {
	res := shape{tooDeep: -1, tooLong: -1, tooFold: -1, tooStrict: -1, ambiguous: -1}
	start := &reader{src: src, frames: []frame{{seq: true}}, stmt: true, tooDeep: -1, tooLong: -1, tooFold: -1, tooStrict: -1}
	queue := []*reader{start}
	readings := 1
	fork := func(r *reader) bool {
		if readings >= maxReadings {
			if res.ambiguous < 0 {
				res.ambiguous = r.pos
			}
			return false
		}
		readings++
		queue = append(queue, r)
		return true
	}
	for len(queue) > 0 {
		r := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		r.fork = fork
		r.run()
		if r.nesting > res.nesting {
			res.nesting, res.deepest = r.nesting, r.deepest
		}
		res.words = max(res.words, r.words)
		res.commaWork = max(res.commaWork, r.commaWork)
		res.foldWork = max(res.foldWork, r.foldWork)
		if r.tooDeep >= 0 && res.tooDeep < 0 {
			res.tooDeep = r.tooDeep
		}
		if r.tooLong >= 0 && res.tooLong < 0 {
			res.tooLong = r.tooLong
		}
		if r.tooFold >= 0 && res.tooFold < 0 {
			res.tooFold = r.tooFold
		}
		if r.tooStrict >= 0 && res.tooStrict < 0 {
			res.tooStrict = r.tooStrict
		}
		if !res.ok() {
			break
		}
	}
	return res
}

func (r *reader) clone() *reader {
	c := *r
	c.frames = append([]frame(nil), r.frames...)
	for i := range c.frames {
		c.frames[i].names = maps.Clone(c.frames[i].names)
		c.frames[i].declared = maps.Clone(c.frames[i].declared)
	}
	c.templates = append([]template(nil), r.templates...)
	return &c
}

func (r *reader) top() *frame { return &r.frames[len(r.frames)-1] }

func (r *reader) depth() int {
	f := r.top()
	return f.base + 1 + f.hard + f.soft
}

// note records the current nesting.
func (r *reader) note() {
	if d := r.depth(); d > r.nesting {
		r.nesting, r.deepest = d, r.pos
		if d > maxNesting && r.tooDeep < 0 {
			r.tooDeep = r.pos
			r.dead = true
		}
	}
}

// literal records a string or template literal (or a group holding a sum
// of them) of weight w, which continues the sum before it, of weight prior,
// if it follows a "+".
func (r *reader) literal(w int64, plus bool, prior int64, pure bool) {
	f := r.top()
	f.pure = pure
	if plus && prior > 0 {
		f.lit = prior + w
		r.foldWork += f.lit
		if r.foldWork > maxFoldWork && r.tooFold < 0 {
			r.tooFold = r.pos
			r.dead = true
		}
		return
	}
	f.lit = w
}

// strictError counts something an ECMAScript module forbids.
func (r *reader) strictError(n int) {
	r.strict += n
	if r.strict > maxStrictErrors && r.tooStrict < 0 {
		r.tooStrict = r.pos
		r.dead = true
	}
}

func (r *reader) soft() { r.top().soft++; r.note() }
func (r *reader) hard() { r.top().hard++; r.note() }

// reset ends whatever nested in the current frame: the statement ended.
func (r *reader) reset() {
	f := r.top()
	f.hard, f.soft, f.angle, f.commas, f.decl = 0, 0, 0, 0, false
}

// boundary resets at a line break that must end a statement: after an
// operand, before a token that cannot continue it.
func (r *reader) boundary() {
	if r.nl && (r.prev == kEnd && !typeWords[r.word] || r.prev == kBrace) {
		r.reset()
		r.stmt = true
	}
}

// push opens a frame. A comma sequence continues into a group that is one
// of its operands (esbuild's printer walks them as one), so the count
// carries over, and back at pop.
func (r *reader) push(open byte, seq bool) {
	outer := r.top()
	f := frame{open: open, base: r.depth(), seq: seq, pure: true,
		plus: r.prev == kStart && r.punct == "+", outerLit: outer.lit, outerPure: outer.pure}
	if seq && outer.seq && open != '{' {
		f.commas = outer.commas
	}
	r.frames = append(r.frames, f)
	r.note()
}

// pop closes the innermost frame with open. A mismatch is a syntax error,
// where esbuild stops; the scanner reads on, which can only overestimate.
func (r *reader) pop(open byte) (frame, bool) {
	if len(r.frames) == 1 || r.top().open != open {
		return frame{}, false
	}
	f := *r.top()
	r.frames = r.frames[:len(r.frames)-1]
	if outer := r.top(); f.seq && outer.seq && f.open != '{' {
		outer.commas = max(outer.commas, f.commas)
	}
	return f, true
}

// set records the kind of the token just read. Any token but "+" ends a
// sum of literals; literals then start or continue one (see literal).
func (r *reader) set(k kind, punct string) {
	switch punct {
	case "+", "(", "[", "{", "${":
		// A sum goes on; an opened frame starts pure (see push).
	default:
		f := r.top()
		f.lit, f.pure = 0, false
	}
	r.prev, r.punct, r.word = k, punct, ""
	r.wordStmt, r.head, r.stmt, r.nl, r.binding, r.fnName = false, false, false, false, false, false
}

func (r *reader) run() {
	src := r.src
	if r.pos == 0 && len(src) >= 2 && src[0] == '#' && src[1] == '!' {
		r.skipLine() // a hashbang line is a comment to esbuild
	}
	for !r.dead {
		r.space()
		if r.dead || r.pos >= len(src) {
			return
		}
		c := src[r.pos]
		switch {
		case c == '<' && strings.HasPrefix(src[r.pos:], "<!--") || c == '-' && r.nl && strings.HasPrefix(src[r.pos:], "-->"):
			r.skipLine() // esbuild reads legacy HTML comments as line comments
		case c == '"' || c == '\'':
			r.boundary()
			start, plus, prior, pure := r.pos, r.prev == kStart && r.punct == "+", r.top().lit, r.top().pure
			r.string(c)
			r.set(kEnd, "")
			r.literal(int64(r.pos-start), plus, prior, pure)
		case c == '`':
			if r.prev == kEnd { // a tagged template: a call
				r.soft()
			}
			r.templates = append(r.templates, template{start: r.pos, plus: r.prev == kStart && r.punct == "+",
				prior: r.top().lit, pure: r.top().pure})
			r.pos++
			r.template()
		case c >= '0' && c <= '9' || c == '.' && r.pos+1 < len(src) && src[r.pos+1] >= '0' && src[r.pos+1] <= '9':
			r.boundary()
			if c == '0' && r.pos+1 < len(src) && src[r.pos+1] >= '0' && src[r.pos+1] <= '9' {
				r.strictError(1) // 017, 08: a legacy octal literal
			}
			r.number()
			r.set(kEnd, "")
		case c == '/':
			r.slash()
		case isWordStart(src, r.pos):
			r.readWord()
		default:
			r.punctuator()
		}
	}
}

// space skips white space and comments, noting line terminators.
func (r *reader) space() {
	src := r.src
	for r.pos < len(src) {
		switch c := src[r.pos]; {
		case c == '\n' || c == '\r':
			r.nl = true
			r.pos++
		case c == ' ' || c == '\t' || c == '\v' || c == '\f':
			r.pos++
		case c == '/' && r.pos+1 < len(src) && src[r.pos+1] == '/':
			r.skipLine()
		case c == '/' && r.pos+1 < len(src) && src[r.pos+1] == '*':
			end := -1
			for i := r.pos + 2; i+1 < len(src); i++ {
				if src[i] == '*' && src[i+1] == '/' {
					end = i
					break
				}
				if lineTerminatorAt(src, i) > 0 {
					r.nl = true
				}
			}
			if end < 0 { // unterminated: esbuild stops here
				r.pos = len(src)
				return
			}
			r.pos = end + 2
		case c >= utf8.RuneSelf:
			ru, size := utf8.DecodeRuneInString(src[r.pos:])
			switch {
			case ru == '\u2028' || ru == '\u2029':
				r.nl = true
			case ru == '\uFEFF' || unicode.Is(unicode.Zs, ru):
			default:
				return
			}
			r.pos += size
		default:
			return
		}
	}
}

// skipLine skips to the next line terminator.
func (r *reader) skipLine() {
	for r.pos < len(r.src) && lineTerminatorAt(r.src, r.pos) == 0 {
		r.pos++
	}
}

// lineTerminatorAt returns the length of the line terminator at i, or 0.
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

func isWordStart(s string, i int) bool {
	c := s[i]
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$' || c == '\\' || c == '#' || c >= utf8.RuneSelf
}

// wordEnd returns the end of the word (identifier, keyword or private
// name) at i.
func wordEnd(s string, i int) int {
	if i < len(s) && s[i] == '#' {
		i++
	}
	for i < len(s) {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$':
			i++
		case c == '\\': // \uXXXX or \u{X…}
			i += 2
			if i < len(s) && s[i] == '{' {
				for i < len(s) && s[i] != '}' && lineTerminatorAt(s, i) == 0 {
					i++
				}
				i++
			}
		case c >= utf8.RuneSelf:
			ru, size := utf8.DecodeRuneInString(s[i:])
			if ru == '\u2028' || ru == '\u2029' || ru == '\uFEFF' || unicode.Is(unicode.Zs, ru) {
				return i
			}
			i += size
		default:
			return i
		}
	}
	return min(i, len(s))
}

func (r *reader) string(q byte) {
	src := r.src
	for i := r.pos + 1; i < len(src); i++ {
		switch src[i] {
		case q:
			r.pos = i + 1
			return
		case '\\':
			i++
			if i+1 < len(src) && src[i] == '\r' && src[i+1] == '\n' {
				i++
			}
			if i < len(src) && src[i] >= '0' && src[i] <= '9' &&
				(src[i] != '0' || i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9') {
				r.strictError(1) // "\01", "\8": a legacy octal escape
			}
		case '\n', '\r': // unterminated: esbuild stops here
			r.pos = i
			return
		}
	}
	r.pos = len(src)
}

func (r *reader) number() {
	src := r.src
	i := r.pos
	for i < len(src) {
		c := src[i]
		if c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '.' {
			i++
			continue
		}
		break
	}
	r.pos = i
}

// template reads template text from r.pos up to the closing backtick, or
// up to "${", where it opens a substitution frame.
func (r *reader) template() {
	src := r.src
	for i := r.pos; i < len(src); i++ {
		switch src[i] {
		case '\\':
			i++
		case '`':
			r.pos = i + 1
			t := r.templates[len(r.templates)-1]
			r.templates = r.templates[:len(r.templates)-1]
			r.set(kEnd, "")
			r.literal(int64(r.pos-t.start+t.subs*foldSubstitution), t.plus, t.prior, t.pure)
			return
		case '$':
			if i+1 < len(src) && src[i+1] == '{' {
				r.pos = i + 2
				r.templates[len(r.templates)-1].subs++
				r.push('$', true)
				r.set(kStart, "${")
				return
			}
		}
	}
	r.pos = len(src) // unterminated: esbuild stops here
}

// slash reads "/" as division or as a regular expression.
func (r *reader) slash() {
	mode := r.forced
	r.forced = 0
	if mode == 0 {
		switch r.prev {
		case kEnd, kDot:
			mode = 'd'
		case kBrace, kAngle, kMaybe:
			// Both readings are possible: follow the other one later.
			other := r.clone()
			other.forced = 'r'
			if !r.fork(other) {
				r.dead = true
				return
			}
			mode = 'd'
		default:
			mode = 'r'
		}
	}
	if mode == 'd' {
		if r.pos+1 < len(r.src) && r.src[r.pos+1] == '=' {
			r.pos += 2
			r.soft()
			r.set(kStart, "/=")
			return
		}
		r.pos++
		r.set(kStart, "/")
		return
	}
	src := r.src
	class := false
	for i := r.pos + 1; i < len(src); i++ {
		if lineTerminatorAt(src, i) > 0 {
			break
		}
		switch src[i] {
		case '\\':
			i++
		case '[':
			class = true
		case ']':
			class = false
		case '/':
			if !class {
				r.pos = wordEnd(src, i+1) // flags
				r.set(kEnd, "")
				return
			}
		}
	}
	// Unterminated: esbuild stops here if it reads a regular expression;
	// read a division.
	r.pos++
	r.set(kStart, "/")
}

var (
	// nestWords take an operand (or a type) that may nest again.
	nestWords = set("typeof", "void", "delete", "await", "yield", "new", "extends",
		"keyof", "readonly", "unique", "infer", "asserts", "is")
	// opWords are keywords (always, unlike let, of or as) after which an
	// operand, a declaration or a statement follows, never an operator:
	// "/" starts a regular expression after them, or is an error.
	opWords = set("break", "case", "catch", "class", "const", "continue", "debugger", "default",
		"delete", "do", "else", "enum", "export", "extends", "finally", "for", "function", "if",
		"import", "in", "instanceof", "new", "return", "switch", "throw", "try", "typeof",
		"var", "void", "while", "with")
	// maybeWords are keywords in some places and names in others.
	maybeWords = set("of", "yield", "await")
	// operandWords are followed by an operand: "{" after them opens an
	// object literal.
	operandWords = set("return", "typeof", "void", "delete", "await", "yield", "throw", "case",
		"in", "of", "instanceof", "new", "default", "extends")
	// continueWords may continue a statement on the next line.
	continueWords = set("in", "of", "instanceof", "as", "satisfies", "extends", "implements",
		"else", "while", "catch", "finally", "from", "with", "assert", "is")
	headWords = set("if", "for", "while", "with")
	// typeWords are names in JavaScript but may take an operand (a type)
	// in TypeScript, possibly on the next line.
	typeWords = set("as", "satisfies", "is", "asserts", "keyof", "infer", "readonly", "unique",
		"declare", "abstract", "type", "namespace", "module", "global", "async", "get", "set",
		"static", "accessor", "override", "public", "private", "protected", "out", "let")
)

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

func (r *reader) readWord() {
	start := r.pos
	r.pos = wordEnd(r.src, r.pos)
	if r.pos == start { // cannot happen: isWordStart held
		r.pos++
		return
	}
	w := r.src[start:r.pos]
	r.words++
	if r.prev == kDot { // a property name
		r.set(kEnd, "")
		return
	}
	if f := r.top(); f.open == '(' && r.prev == kStart && (r.punct == "(" || r.punct == "," && f.angle == 0) {
		if f.names[w] {
			f.dupes++
		} else {
			if f.names == nil {
				f.names = map[string]bool{}
			}
			f.names[w] = true
		}
	}
	if f := r.top(); (r.binding || f.decl && f.angle == 0 && r.prev == kStart && r.punct == ",") && !opWords[w] && !maybeWords[w] {
		if f.declared[w] {
			r.strictError(1) // declared twice in the same block
		} else {
			if f.declared == nil {
				f.declared = map[string]bool{}
			}
			f.declared[w] = true
		}
	}
	switch w {
	case "with":
		r.strictError(1)
	case "delete":
		if r.deletesName() {
			r.strictError(1)
		}
	}
	if !continueWords[w] {
		r.boundary()
	}
	atStmt, after, wasHead := r.stmt, r.word, r.head
	wasStar := r.prev == kStart && r.punct == "*" && after == "function"
	lexical := (w == "const" || w == "let" || w == "class") && (atStmt || after == "export" || after == "declare")
	if (w == "var" || w == "const" || w == "let") && (atStmt || after == "export" || after == "declare") {
		r.top().decl = true
	}
	switch {
	case w == "case" || w == "default" && r.colonFollows():
		r.reset() // a new clause of a switch
		r.set(kWord, "")
		r.word = w
		return
	case w == "else" || w == "do":
		r.hard()
		r.set(kWord, "")
		r.word = w
		r.stmt = true
		return
	}
	if w == "class" {
		r.top().pend = true
	}
	if nestWords[w] {
		r.soft()
	}
	switch {
	case maybeWords[w]:
		r.set(kMaybe, "")
	case opWords[w]:
		r.set(kWord, "")
	default:
		r.set(kEnd, "")
		r.wordStmt = atStmt
	}
	r.word = w
	r.head = headWords[w] || w == "await" && wasHead && after == "for"
	r.binding = lexical
	r.fnName = r.prev == kEnd && (after == "function" || wasStar)
}

// deletesName reports whether a name (not a property) follows "delete".
func (r *reader) deletesName() bool {
	p := *r
	p.space()
	if p.dead || p.pos >= len(p.src) || !isWordStart(p.src, p.pos) || p.src[p.pos] == '#' {
		return false
	}
	p.pos = wordEnd(p.src, p.pos)
	p.space()
	if p.pos >= len(p.src) {
		return true
	}
	switch p.src[p.pos] {
	case '.', '[', '(', '?', '!', '`':
		return false
	}
	return true
}

// colonFollows reports whether the next token is ":".
func (r *reader) colonFollows() bool {
	p := *r
	p.space()
	return !p.dead && p.pos < len(p.src) && p.src[p.pos] == ':'
}

// keyFollows reports whether a property key and ":" follow: then the
// preceding "," separates properties or parameters, not expressions.
func (r *reader) keyFollows() bool {
	p := *r
	p.space()
	if p.dead || p.pos >= len(p.src) {
		return false
	}
	switch c := p.src[p.pos]; {
	case c == '"' || c == '\'':
		p.string(c)
	case c >= '0' && c <= '9':
		p.number()
	case isWordStart(p.src, p.pos):
		p.pos = wordEnd(p.src, p.pos)
	default:
		return false
	}
	if p.dead {
		return false
	}
	p.space()
	if p.pos < len(p.src) && p.src[p.pos] == '?' {
		p.pos++
		p.space()
	}
	return !p.dead && p.pos < len(p.src) && p.src[p.pos] == ':' && (p.pos+1 >= len(p.src) || p.src[p.pos+1] != ':')
}

var puncts = []string{
	">>>=", "...", "===", "!==", "**=", "<<=", ">>=", ">>>", "&&=", "||=", "??=",
	"=>", "==", "!=", "<=", ">=", "&&", "||", "??", "?.", "++", "--", "+=", "-=", "*=", "%=",
	"&=", "|=", "^=", "<<", ">>", "**",
}

func (r *reader) punctuator() {
	src := r.src
	p := src[r.pos : r.pos+1]
	for _, q := range puncts {
		if len(q) <= len(src)-r.pos && src[r.pos:r.pos+len(q)] == q {
			p = q
			break
		}
	}
	if p == "?." && r.pos+2 < len(src) && src[r.pos+2] >= '0' && src[r.pos+2] <= '9' {
		p = "?" // a ? .5 : b
	}
	r.pos += len(p)
	switch p {
	case "(":
		call := r.prev == kEnd
		if call || r.prev == kBrace {
			r.soft()
		}
		head, sw := r.head, r.prev == kWord && r.word == "switch"
		fn := r.fnName || r.prev == kWord && r.word == "function" || r.top().class
		r.push('(', !call)
		r.top().head = head
		r.top().inSwitch = sw
		r.top().fn = fn
		r.set(kStart, p)
	case "[":
		index := r.prev == kEnd || r.prev == kBrace || r.prev == kMaybe || r.prev == kAngle
		if index {
			r.soft()
		}
		r.push('[', index)
		r.set(kStart, p)
	case "{":
		// An object literal (whose commas separate properties) follows
		// an operator or an operand keyword; anything else may be a block.
		// A line break after return ends the statement.
		object := r.prev == kStart && r.punct != "" && r.punct != ";" && r.punct != "{" && r.punct != ":" && r.punct != "=>" ||
			r.prev == kWord && operandWords[r.word] && !(r.nl && r.word == "return")
		body := r.prev == kHead || r.prev == kWord && (r.word == "else" || r.word == "do" || r.word == "try" || r.word == "finally")
		class := r.top().pend
		r.top().pend = false
		r.push('{', !object && !class)
		r.top().body = body
		r.top().class = class
		r.set(kStart, p)
		r.stmt = true
	case ")":
		f, ok := r.pop('(')
		if !ok {
			r.set(kEnd, "")
			return
		}
		if f.dupes > 0 && !f.head && !f.inSwitch && r.paramsEnd(f.fn) {
			r.strictError(f.dupes) // a parameter name repeated
		}
		if f.head {
			r.hard()
			r.set(kHead, "")
			r.stmt = true
		} else {
			r.set(kEnd, "")
			if f.pure && f.lit > 0 { // ("a" + "b"): a literal to fold
				r.literal(f.lit, f.plus, f.outerLit, f.outerPure)
			}
		}
	case "]":
		r.pop('[')
		r.set(kEnd, "")
	case "}":
		if r.top().open == '$' {
			r.pop('$')
			r.template()
			return
		}
		f, ok := r.pop('{')
		if !ok {
			r.set(kBrace, "")
			return
		}
		if f.body && !r.continues() || r.top().class {
			// The statement whose body this was has ended, or the class
			// member whose body this was.
			r.reset()
		}
		r.set(kBrace, "")
		r.stmt = true
	case ";":
		if r.continues() {
			// if (a) b; else …: the statement goes on, and so does
			// whatever encloses it (do b; while … likewise).
			f := r.top()
			f.soft, f.angle, f.commas, f.decl = 0, 0, 0, false
		} else {
			r.reset()
		}
		r.set(kStart, p)
		r.stmt = true
	case ",":
		f := r.top()
		if f.angle == 0 {
			f.soft = 0
		}
		if f.seq && !f.decl && !r.keyFollows() {
			f.commas++
			r.commaWork += int64(2*f.commas - 1)
			if r.commaWork > maxCommaWork && r.tooLong < 0 {
				r.tooLong = r.pos - 1
				r.dead = true
			}
		}
		r.set(kStart, p)
	case ":":
		if r.prev == kEnd && r.wordStmt { // a label
			r.hard()
			r.set(kStart, p)
			r.stmt = true
			return
		}
		r.soft()
		r.set(kStart, p)
	case "!":
		if r.prev == kEnd && !r.nl { // TypeScript's non-null assertion
			r.set(kEnd, "")
			return
		}
		r.soft()
		r.set(kStart, p)
	case "++", "--":
		if r.prev == kEnd && !r.nl {
			r.set(kEnd, "")
			return
		}
		r.boundary()
		r.soft()
		r.set(kStart, p)
	case "+", "-":
		if r.prev != kEnd {
			r.soft() // a prefix operator
		}
		r.set(kStart, p)
	case "<", "<<":
		r.top().angle += len(p)
		r.soft()
		r.set(kStart, p)
	case ">", ">>", ">>>":
		f := r.top()
		f.angle = max(f.angle-len(p), 0)
		r.set(kAngle, p)
	case ">=":
		f := r.top()
		f.angle = max(f.angle-1, 0)
		r.set(kStart, p)
	case "?.", ".":
		r.soft()
		r.set(kDot, p)
	case "~", "?", "**", "=", "=>", "+=", "-=", "*=", "%=", "&=", "|=", "^=", "**=", "<<=", ">>=", ">>>=", "&&=", "||=", "??=":
		r.soft()
		r.set(kStart, p)
	case "*":
		gen := r.prev == kWord && r.word == "function"
		r.set(kStart, p)
		if gen { // function*: remember the keyword for the name
			r.word = "function"
		}
	case "%", "&", "|", "^", "&&", "||", "??", "==", "!=", "===", "!==", "<=", "...", "@":
		r.set(kStart, p)
	default: // a character esbuild rejects
		r.set(kStart, p)
	}
}

// paramsEnd reports whether the ")" just read ends a parameter list: a
// function body or an arrow follows, or (after a function's name) a
// return type.
func (r *reader) paramsEnd(fn bool) bool {
	p := *r
	p.space()
	if p.dead || p.pos >= len(p.src) {
		return false
	}
	switch p.src[p.pos] {
	case '{':
		return true
	case ':':
		return fn
	case '=':
		return p.pos+1 < len(p.src) && p.src[p.pos+1] == '>'
	}
	return false
}

// continues reports whether the next word continues the statement whose
// body a "}" or ";" just ended (if … else, do … while, try … catch).
func (r *reader) continues() bool {
	p := *r
	p.space()
	if p.dead || p.pos >= len(p.src) || !isWordStart(p.src, p.pos) {
		return false
	}
	switch p.src[p.pos:wordEnd(p.src, p.pos)] {
	case "else", "while", "catch", "finally":
		return true
	}
	return false
}
