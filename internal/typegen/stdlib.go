package typegen

import _ "embed"

//go:embed codemode.d.ts
var stdlib string

// Stdlib returns codemode.d.ts: the @codemode/discovery and @codemode/errors
// modules (§4, §7.1), the CodeMode namespace shared by every server's
// declarations (CodeMode.CallToolResult, CodeMode.ServerMeta), the global
// ToolResult (what a tool without an outputSchema returns, §5.3.2) and the
// sandbox globals that lib.es2023 lacks (those of §3.5, and btoa, atob,
// structuredClone, queueMicrotask and DOMException). Its header prints the
// tsc command that checks a script as the sandbox runs it, with TypeScript
// 5.4 or later (TestPrintedTSCCommand runs it with 5.4 and 7): the `--lib`
// list is es2023 without SharedArrayBuffer, Atomics, WeakRef and
// FinalizationRegistry, which the sandbox deletes, and without the Intl
// libraries (the sandbox has no Intl; what TypeScript declares of it anyway
// is listed there). Nothing else §3.5 forbids (fetch, setInterval,
// process, require) is declared, so a script that uses it fails to
// type-check; eval and Function are in every ES lib and still do.
func Stdlib() string { return stdlib }
