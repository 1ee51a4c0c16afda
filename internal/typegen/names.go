package typegen

import (
	"strconv"
	"strings"

	"github.com/codemode-mcp/codemode/internal/naming"
)

// This file holds every naming rule: export names (§6.1, through
// internal/naming), module-local aliases for export names that cannot be
// bindings, server globals, module paths, and named types.

// exportNames returns the export name of every tool, in order.
func exportNames(tools []Tool) []string {
	out := make([]string, len(tools))
	var all []string
	missing := false
	for i, t := range tools {
		out[i] = t.ExportName
		all = append(all, t.Name)
		missing = missing || t.ExportName == ""
	}
	if missing {
		m := naming.ExportNames(all)
		for i := range out {
			if out[i] == "" {
				out[i] = m[tools[i].Name]
			}
		}
	}
	return out
}

// localName picks a module-local binding for an export name that cannot be
// one (`enum`, `eval`, …), exported under its real name with
// `export { local as name }`.
func localName(export string, used map[string]bool) string {
	base := naming.Identifier(export) + "$"
	name := base
	for i := 2; used[name]; i++ {
		name = base + strconv.Itoa(i)
	}
	used[name] = true
	return name
}

// reservedTypeNames are global types the declarations use or an agent would
// expect to mean the built-in; a schema name never shadows them.
var reservedTypeNames = map[string]bool{
	"CodeMode": true, "ToolResult": true, "Promise": true, "Record": true, "Array": true, "ReadonlyArray": true,
	"Partial": true, "Required": true, "Readonly": true, "Pick": true, "Omit": true,
	"Exclude": true, "Extract": true, "NonNullable": true, "Awaited": true, "ReturnType": true,
	"Object": true, "String": true, "Number": true, "Boolean": true, "Symbol": true,
	"BigInt": true, "Function": true, "Date": true, "RegExp": true, "Error": true,
	"Map": true, "Set": true, "WeakMap": true, "WeakSet": true, "JSON": true, "Math": true,
	"URL": true, "URLSearchParams": true, "TextEncoder": true, "TextDecoder": true,
	"ArrayBuffer": true, "DataView": true, "Uint8Array": true, "Iterable": true,
	"Uppercase": true, "Lowercase": true, "Capitalize": true, "Uncapitalize": true,
}

func (g *gen) addNamed(base, fp string) *named {
	if base == "" {
		base = "Type"
	}
	if reservedTypeNames[base] {
		base += "Type"
	}
	name := base
	for i := 2; g.taken[name]; i++ {
		name = base + strconv.Itoa(i)
	}
	g.taken[name] = true
	n := &named{name: name}
	g.named = append(g.named, n)
	g.byFP[fp] = n
	return n
}

// sandboxGlobals are global value names of the sandbox (§3.5 and
// lib.es2023) that a server's global must not shadow.
var sandboxGlobals = map[string]bool{}

func init() {
	for _, n := range strings.Fields(`console undefined eval arguments globalThis NaN Infinity
		escape unescape setTimeout clearTimeout parseInt parseFloat isNaN isFinite decodeURI
		decodeURIComponent encodeURI encodeURIComponent __codemode_result__ CodeMode
		Array ArrayBuffer Atomics BigInt BigInt64Array BigUint64Array Boolean DataView Date
		Error EvalError FinalizationRegistry Float32Array Float64Array Function Int16Array
		Int32Array Int8Array Intl JSON Map Math Number Object Promise Proxy RangeError
		ReferenceError Reflect RegExp Set SharedArrayBuffer String Symbol SyntaxError
		TypeError URIError Uint16Array Uint32Array Uint8Array Uint8ClampedArray WeakMap
		WeakRef WeakSet AggregateError TextEncoder TextDecoder URL URLSearchParams`) {
		sandboxGlobals[n] = true
	}
}

// GlobalName is the global variable that holds server serverID in the
// "files" surface: naming.Identifier(serverID) ("sequential-thinking" →
// "sequential_thinking"), plus a trailing `_` when that is a word strict code
// cannot bind (`enum`) or a sandbox global (`console`). The serving layer
// must use this function so that declarations and runtime agree.
func GlobalName(serverID string) string {
	id := naming.Identifier(serverID)
	for naming.IsStrictReserved(id) || sandboxGlobals[id] {
		id += "_"
	}
	return id
}

// ModulePath is the import path of a server's module (§5.0.1).
func ModulePath(serverID string) string { return "@codemode/servers/" + serverID }
