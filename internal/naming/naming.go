// Package naming maps MCP names onto the names agent code uses: server ids
// become module path segments (codemode-spec §5.0.1) and tool names become
// JavaScript export identifiers (§6.1).
//
// Both mappings are total, deterministic and collision-free over the set they
// are given: start with [ServerIDs] and [ExportNames]. The single-name helpers
// [NormalizeServerID] and [Identifier] apply the rules without collision
// handling, for callers that only need to know what a name would become.
package naming

import (
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// reserved is the §6.1 list of words that get a trailing underscore, exactly.
// It is not every word strict-mode code reserves (`enum`, `implements`,
// `eval`, …): those stay valid export names, because an export name may be
// any IdentifierName (`export { f as enum }`, `ns.enum()`), and adding words
// would make our names differ from other conforming hosts. Code generators
// must therefore never use an export name as a local binding; see
// [IsStrictReserved].
var reserved = map[string]bool{
	"break": true, "case": true, "class": true, "const": true, "continue": true,
	"debugger": true, "default": true, "delete": true, "do": true, "else": true,
	"export": true, "extends": true, "false": true, "finally": true, "for": true,
	"function": true, "if": true, "import": true, "in": true, "instanceof": true,
	"new": true, "null": true, "return": true, "super": true, "switch": true,
	"this": true, "throw": true, "true": true, "try": true, "typeof": true,
	"var": true, "void": true, "while": true, "with": true, "yield": true,
	"let": true, "static": true, "await": true,
}

// IsReserved reports whether s gets a trailing underscore under §6.1.
func IsReserved(s string) bool { return reserved[s] }

// strictOnly are the words that cannot name a local binding in strict-mode
// (module) code although §6.1 lets them through as export names.
var strictOnly = map[string]bool{
	"enum": true, "implements": true, "interface": true, "package": true,
	"private": true, "protected": true, "public": true, "arguments": true,
	"eval": true,
}

// IsStrictReserved reports whether s cannot be declared as a local binding in
// module code: a §6.1 reserved word or one of the strict-mode-only words
// above. Generators that need a local name for such an export use an alias.
func IsStrictReserved(s string) bool { return reserved[s] || strictOnly[s] }

// Identifier applies the §6.1 rules to one tool name, without collision
// handling: characters that cannot appear in an identifier become `_`, a
// leading digit gets a `_` prefix, a reserved word gets a `_` suffix.
//
// "Illegal identifier characters" is read as: anything outside ASCII letters,
// digits, `_` and `$`. Non-ASCII letters are legal in JavaScript but are
// replaced too, because identifiers end up in TypeScript declarations, shell
// snippets and LLM prompts where ASCII is the only safe common ground.
// Replacement is per Unicode code point, so "ä" becomes one `_`, not two.
func Identifier(toolName string) string {
	var b strings.Builder
	b.Grow(len(toolName) + 1)
	for _, r := range toolName {
		switch {
		case r == '_' || r == '$' || r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	id := b.String()
	if id == "" {
		id = "_"
	}
	if id[0] >= '0' && id[0] <= '9' {
		id = "_" + id
	}
	if reserved[id] {
		id += "_"
	}
	return id
}

// MetaExport is the export of every server module that describes the server
// (§5.2); no tool may take its name.
const MetaExport = "__meta__"

// ExportNames maps every tool name to its export identifier (§6.1). Tools are
// ordered by canonical name (byte order) before names are assigned, so the
// first in that order keeps the clean name and later ones get `__2`, `__3`, …
// The result is the same whatever the order of toolNames. Duplicate tool
// names map to the same identifier.
//
// A suffixed name can itself collide with a clean one (tools "a__2", "a" and
// "a-"): the suffix counter then moves on until the name is free, so the
// mapping is always injective.
//
// [MetaExport] is taken before any tool: every server module exports it, so
// a tool named "__meta__" collides with it and becomes "__meta____2".
func ExportNames(toolNames []string) map[string]string {
	sorted := append([]string(nil), toolNames...)
	sort.Strings(sorted)
	out := make(map[string]string, len(sorted))
	taken := make(map[string]bool, len(sorted)+1)
	taken[MetaExport] = true
	// Clean names are claimed first, in canonical order, so that a tool whose
	// clean name is literally "x__2" keeps it rather than losing it to the
	// second tool that sanitises to "x".
	clean := make([]string, len(sorted))
	for i, name := range sorted {
		clean[i] = Identifier(name)
	}
	var pending []int
	for i, name := range sorted {
		if _, dup := out[name]; dup {
			continue
		}
		if taken[clean[i]] {
			pending = append(pending, i)
			continue
		}
		taken[clean[i]] = true
		out[name] = clean[i]
	}
	next := map[string]int{}
	for _, i := range pending {
		name := sorted[i]
		if _, dup := out[name]; dup {
			continue
		}
		base := clean[i]
		n := next[base]
		if n == 0 {
			n = 2
		}
		for taken[base+"__"+strconv.Itoa(n)] {
			n++
		}
		id := base + "__" + strconv.Itoa(n)
		next[base] = n + 1
		taken[id] = true
		out[name] = id
	}
	return out
}

// NormalizeServerID applies the §5.0.1 rules to one server name, without
// collision handling: lowercase, anything outside [a-z0-9-] becomes `-`, runs
// of `-` collapse, and leading and trailing `-` go. A name with nothing left
// (say "___") becomes "server", so that every configured server still gets a
// usable module path.
func NormalizeServerID(name string) string {
	var b strings.Builder
	b.Grow(len(name))
	dash := false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
			continue
		}
		if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	id := strings.Trim(b.String(), "-")
	if id == "" {
		id = "server"
	}
	return id
}

// ServerIDs maps configured server names to module path segments (§5.0.1).
// names must be in the order the servers are declared: the first occurrence
// of a normalised path keeps it and later ones get `--2`, `--3`, … which is
// the spec's rule. A suffixed id that would equal another server's clean id
// moves on to the next free number.
func ServerIDs(names []string) []string {
	ids := make([]string, len(names))
	taken := make(map[string]bool, len(names))
	for i, name := range names {
		ids[i] = NormalizeServerID(name)
	}
	// Clean ids first, in declaration order, for the same reason as in
	// ExportNames.
	claimed := make([]bool, len(names))
	for i, id := range ids {
		if !taken[id] {
			taken[id] = true
			claimed[i] = true
		}
	}
	next := map[string]int{}
	for i, id := range ids {
		if claimed[i] {
			continue
		}
		n := next[id]
		if n == 0 {
			n = 2
		}
		for taken[id+"--"+strconv.Itoa(n)] {
			n++
		}
		ids[i] = id + "--" + strconv.Itoa(n)
		next[id] = n + 1
		taken[ids[i]] = true
	}
	return ids
}
