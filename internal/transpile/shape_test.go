package transpile

import (
	"strings"
	"testing"
)

// deep is code nested far beyond maxNesting.
var deep = strings.Repeat("(", 3*maxNesting/2) + "1" + strings.Repeat(")", 3*maxNesting/2)

// The nesting estimate must not be fooled by code that only a tokenizer
// sharing esbuild's view of strings, comments and regular expressions
// reads right: each source hides deep nesting behind such a construct,
// which esbuild reads as code (but in the second one, where the scanner
// cannot tell and follows both readings).
func TestMeasureSeesThroughTokenTricks(t *testing.T) {
	for _, src := range []string{
		// After a block, "/" starts a regular expression: /'/ is one.
		"if (1) {}\n/'/; " + deep + " //'",
		// After an object literal it divides, and a string follows.
		"x = {}\n/'/; " + deep + " //'",
		// yield, await and of are keywords or names.
		"function* g() { yield /'/; " + deep + " }",
		"for (const x of /'/g) ; " + deep,
		"async function f() { await /'/; " + deep + " }",
		// esbuild reads legacy HTML comments as line comments.
		"x = 1\n--> '\n" + deep,
		"x = 1 <!-- '\n" + deep,
		// U+2028 ends a line comment; U+00A0 is white space.
		"// comment\u2028" + deep,
		"function f() { return\u00a0/'/; " + deep + " }",
		// A "/" in a regular expression's class does not end it.
		"x = /[/]'/; " + deep,
		// Template substitutions nest, and a "}" in a string inside one
		// does not close it.
		"x = `${'}'}`; " + deep,
		"x = `${`${'`'}`}`; " + deep,
		// Escaped quotes and line continuations stay in strings.
		"x = 'a\\'b'; y = \"c\\\nd\"; " + deep,
		// Statement heads without braces nest, also across "; else".
		strings.Repeat("for (let x;;) if (1) ; else ", 2*maxNesting) + ";",
		strings.Repeat("L: ", 2*maxNesting) + ";",
		// Chains with no brackets nest in esbuild's recursion.
		strings.Repeat("x=>", 2*maxNesting) + "1",
		strings.Repeat("~", 2*maxNesting) + "1",
		strings.Repeat("a.", 2*maxNesting) + "a",
		strings.Repeat("a?b:", 2*maxNesting) + "c",
		"let x: " + strings.Repeat("A<", 2*maxNesting) + "B" + strings.Repeat(">", 2*maxNesting),
		// A mismatched bracket stops esbuild, not the scanner.
		"x = 1); " + deep,
		// An unterminated string ends at the line break.
		"x = 'abc\n" + deep,
	} {
		if sh := measure(src); sh.tooDeep < 0 {
			t.Errorf("nesting %d not refused: %.60q", sh.nesting, src)
		}
	}
}

// Brackets in strings, comments, regular expressions and template text are
// not nesting.
func TestMeasureIgnoresLiterals(t *testing.T) {
	open := strings.Repeat("({[", 2*maxNesting)
	for _, src := range []string{
		"x = '" + open + "';",
		`x = "` + open + `";`,
		"x = `" + open + "`;",
		"// " + open + "\nx = 1;",
		"/* " + open + " */ x = 1;",
		"x = /" + strings.ReplaceAll(open, "[", "\\[") + "/;",
		"x = a / b / c; y = '" + open + "';",
	} {
		if sh := measure(src); !sh.ok() || sh.nesting > 5 {
			t.Errorf("%+v: %.40q", sh, src)
		}
	}
}

// Ordinary code stays far from every limit, and keeps esbuild's renamer.
func TestMeasureOrdinaryCode(t *testing.T) {
	src := `import { search_issues } from "@codemode/servers/github";
type Issue = { title: string; labels: Array<{ name: string }> };
const pages: Record<string, Issue[]> = {};
for (const repo of ["a/b", "c/d"]) {
  const res = await search_issues({ q: "repo:" + repo + " is:open", per_page: 50 });
  pages[repo] = (res.items as Issue[]).filter((i) => i.labels.some((l) => l.name === "bug"));
}
const counts = Object.entries(pages).map(([repo, items]) => ({ repo, n: items.length }));
if (counts.length > 1) console.log(` + "`${counts[0].repo}: ${counts[0].n}`" + `);
else console.log("none");
globalThis.__codemode_result__ = counts.sort((a, b) => b.n - a.n || (a.repo < b.repo ? -1 : 1));
`
	sh := measure(src)
	if !sh.ok() || sh.nesting > 20 || sh.commaWork > 100 || sh.foldWork > 100 {
		t.Errorf("%+v", sh)
	}
	if c := renameCost(src, sh.nesting); c > renameBudget/10 {
		t.Errorf("rename cost %d", c)
	}
}

// Commas that separate arguments, elements, properties, parameters and
// declarations are not comma operators; a sequence continues into the
// groups that are its operands.
func TestMeasureCommas(t *testing.T) {
	many := func(unit string) string { return strings.Repeat(unit, 5000) + "a" }
	for _, src := range []string{
		"f(" + many("a,") + ")",
		"x = [" + many("a,") + "]",
		"x = {" + many("a: 1,") + "}",
		"let " + many("a1 = 1, a") + " = 2;",
		"function f(" + strings.ReplaceAll(many("a,"), "a", "p") + ") {}",
		"let x: Map<" + many("A,") + ">;",
	} {
		if sh := measure(src); sh.tooLong >= 0 {
			t.Errorf("%+v: %.40q", sh, src)
		}
	}
	for _, src := range []string{
		many("a,"),
		"x = (" + many("a,") + ")",
		"x = a[" + many("a,") + "]",
		"x = `${" + many("a,") + "}`",
		"{ case1: {" + many("a,") + "} }",
		"x = " + strings.Repeat("(a,a,a,a,a,a,a,a,", 500) + "a" + strings.Repeat(")", 500),
	} {
		if sh := measure(src); sh.tooLong < 0 && sh.tooDeep < 0 {
			t.Errorf("%+v: %.40q", sh, src)
		}
	}
}
