package typegen

import _ "embed"

//go:embed codemode.d.ts
var stdlib string

// Stdlib returns codemode.d.ts: the @codemode/discovery and @codemode/errors
// modules (§4, §7.1), the CodeMode namespace shared by every server's
// declarations (CodeMode.CallToolResult, CodeMode.ServerMeta), the global
// ToolResult (what a tool without an outputSchema returns, §5.3.2) and the
// §3.5 sandbox globals that lib.es2023 lacks. Its header gives the `--lib`
// list to check scripts with: es2023 without SharedArrayBuffer, Atomics,
// WeakRef and FinalizationRegistry, which the sandbox deletes. Nothing else
// §3.5 forbids (fetch, setInterval, process, require) is declared, so a
// script that uses it fails to type-check; eval and Function are in every ES
// lib and still do.
func Stdlib() string { return stdlib }
