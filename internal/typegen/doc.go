// Package typegen turns MCP tool schemas into the TypeScript declarations an
// agent reads and `tsc` checks (codemode-spec §4.4, §6.2, §6.3).
//
// Start with [ServerModule]: given a [Server] and its [Tool]s it renders the
// ambient module `declare module "@codemode/servers/<id>"` with one function
// per tool, `export const __meta__` and the named types its tools share. The
// other renderings of the same conversion:
//
//   - [ServerGlobal]: the server as the global object [GlobalName](id), for
//     surfaces where servers are globals (`declare const memory: {…}`);
//   - [ToolDecl] and [ToolDecls]: one tool in that global form, for
//     tool-level files servers/<id>/<tool>.d.ts;
//   - [Index]: server ids and tool names with one-line summaries, for when
//     the full declarations exceed a token budget;
//   - [Stdlib]: codemode.d.ts, which every rendering relies on:
//     @codemode/discovery, @codemode/errors, the CodeMode namespace, the
//     global ToolResult (what a tool without an outputSchema returns,
//     §5.3.2) and the §3.5 sandbox globals.
//
// [CountTokens] measures text in o200k_base tokens, offline, from a compact
// table (tiktoken-go's counts, at a fraction of its cost).
//
// Schemas may be draft-07, 2019-09 or 2020-12: type (and type arrays), enum,
// const, oneOf/anyOf (unions), allOf (intersections, merged when objects),
// nullable in all three spellings, $ref within the document (pointers,
// anchors, $id-relative URIs), recursion (named types), additionalProperties
// and patternProperties (index signatures, widened so that tsc accepts
// them), tuples, required, and description, default, format, examples and
// constraints as JSDoc. What cannot be represented becomes `unknown` with a
// `@warning` in the doc comment and a [Warning]; the output never uses
// `any`.
//
// The output is compact: repetition within a server is stated once. Property
// groups several tools share verbatim, and large type literals that recur,
// become named types; the sentence every tool description starts with moves
// to the server's header. docs/BENCHMARKS.md has the token figures.
//
// Invariants: generation is total (no input makes it panic or fail), output is
// deterministic (raw JSON keeps its property order, Go maps are sorted; the
// same input gives byte-identical text), and everything emitted type-checks
// with the tsc command in Stdlib's header (TypeScript 5.4 and later: strict,
// no @types, es2023 without what the sandbox lacks) next to Stdlib. Export names
// follow §6.1 through internal/naming; one that cannot be a local binding
// (`enum`) is declared under an alias and exported with
// `export { enum$ as enum }`.
//
// The code, in the order data flows: typegen.go builds a server, tools.go
// each tool, names.go holds the naming rules; json.go decodes schemas keeping
// key order, resolve.go indexes a document for `$ref`, targets.go decides
// what each reference becomes, convert.go and structure.go build the type
// tree (ir.go); cycles.go, shared.go and subtree.go rewrite it per server;
// annotate.go and jsdoc.go make doc comments; print.go and render.go print.
package typegen
