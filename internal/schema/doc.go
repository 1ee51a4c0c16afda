// Package schema validates tool inputs against a tool's MCP inputSchema
// before the upstream server is called (§7.2), and turns failures into
// violations a model can act on in one try: a JSON Pointer to the failing
// value, what was expected, what was received and one sentence saying so.
// It also synthesises minimal valid example payloads for those errors.
//
// Start with [Compile], once per tool per catalog version (cache the
// result), then call [Validator.Validate] for every call:
//
//	v, err := schema.Compile(tool.InputSchema)
//	if err != nil { /* log; call the tool unvalidated */ }
//	if viol := v.Validate(args); viol != nil { /* SchemaValidationError */ }
//
// [Validator.Example] (or [Example] for an uncompiled schema) gives the
// example payload for SchemaValidationError.example.
//
// Validation is standards-complete (github.com/santhosh-tekuri/jsonschema/v6):
// draft-04 to 2020-12 chosen by $schema, 2020-12 when absent as MCP
// specifies, then draft-07 and draft-04 for a schema that the first draft
// refuses (servers write older drafts without saying so; see Compile). Nothing is ever fetched: $refs must stay within the document.
// Two deliberate deviations from a bare validator, both to avoid rejecting
// calls the upstream would accept:
//
//   - format is asserted only for a few unambiguous formats (see
//     assertedFormats), whatever the draft says.
//   - pattern uses Go's RE2 syntax and falls back to an ECMAScript engine
//     for the lookarounds and backreferences that schemas written for
//     JavaScript servers use.
package schema
