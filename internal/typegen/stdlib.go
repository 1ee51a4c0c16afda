package typegen

import _ "embed"

//go:embed codemode.d.ts
var stdlib string

// Stdlib returns codemode.d.ts: the @codemode/discovery and @codemode/errors
// modules (§4, §7.1), the CodeMode namespace shared by every server's
// declarations (CodeMode.ToolResult, CodeMode.ServerMeta), and the §3.5
// sandbox globals that lib.es2023 lacks. Nothing §3.5 forbids (fetch,
// setInterval, process, require) is declared, so a script that uses them
// fails to type-check with `--lib es2023 --types ""`.
func Stdlib() string { return stdlib }
