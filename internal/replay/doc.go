// Package replay implements tool calls as code where the client owns the
// tools (seeds/tool-calls-as-code-replay.md): the model writes code, the
// server runs it, and every tool call goes to the client, while the server
// stays stateless. Each step reruns the code from the start with the tool
// results the conversation holds so far, until the code needs more calls
// (the next batch: all the calls it is waiting on together, so a
// Promise.all is one batch and sequential awaits are one step each) or
// finishes (the code result). It also records and replays bundles: whole
// runs against live servers, re-run offline.
//
// Start with [Step] (or a [Stepper] with configured limits), [Handler] to
// serve steps over HTTP, [Declarations] for what a model is shown, and
// [Recorder] and [Replay] for bundles.
//
// # The wire format
//
// A [Request] is {"messages", "tools", "limits"?}. messages begins with a
// code message {"role": "code", "id", "code", "now"?}, followed by pairs of
// an assistant message {"role": "assistant", "content": "", "tool_calls":
// [...]} and one tool message per call {"role": "tool", "tool_call_id",
// "content"}. Earlier messages are skipped (the last code message opens the
// block), and so is everything from a code_result on; toolCalls,
// toolCallId, isError and object-valued arguments are accepted as the
// seed's examples write them. tools are OpenAI function definitions. A
// [Response] is {"message", "logs", "diagnostics"}: message is the next
// assistant message, or {"role": "code_result", "id", "result":
// {"status": "success", "data"} | {"status": "error", "error": {"name",
// "message", "hint"?}}}.
//
// # How results are matched to calls
//
// Positions, not ids, are what a step trusts: the i-th tool call of the
// block (counting through its assistant messages in order) is the script's
// i-th call. Within one assistant message, a tool message whose
// tool_call_id is the id of one of its calls answers that call, in any
// order; the others answer the remaining calls in order. So a client may
// answer a batch in any order with the ids it was given, and a client with
// ids of its own (the seed's examples: their second tool message names an
// id no call has) is matched by position. Our ids are "<code id>_<position>"
// ([CallID]): a call id of ours found at another position, or a tool
// message with an id of ours naming a call of another batch, is a malformed
// request. Every call of a batch must be answered before the next step.
//
// A rerun whose call at a position has another tool or other arguments
// than the recorded one has diverged: the step answers a code result with
// status "error" (name ReplayDivergedError) and a REPLAY_DIVERGED
// diagnostic naming the position, the recorded call and the new one (its
// path is the recorded call's JSON Pointer in the request). So does a
// script that finishes without making every recorded call. Nothing is
// ever asked for twice: a batch holds only positions past the recorded
// ones. Tool names match when they differ only in case and separators
// (web_search and webSearch, as in the seed's parallel example), if no
// other tool folds alike; arguments match as JSON values.
//
// # Results and errors
//
// A tool message's content is parsed as JSON when it is JSON, else passed
// to the script as a string (content may also be an array of text parts,
// or any JSON value). A tool message with "is_error": true (or "isError":
// true, "status": "error", or an "error" field) is the tool's failure: the call throws a ToolCallError whose message is
// "<tool> failed: <content>" and whose result field is the parsed content.
//
// # The script
//
// Each client tool is an async function, a global under its export name
// (§6.1: characters illegal in identifiers become "_") and its camelCase
// form (web_search is also webSearch), and an export of @codemode/client,
// unless a standard global has the name. Inputs are validated against the
// tool's parameters before a call is emitted (SchemaValidationError).
// The script's value is: the value of a lone expression (a function, such
// as the seed's `async function main() {...}`, is called); else, for
// statements, their `return` value, or what they assign to
// globalThis.__codemode_result__; a script with static imports runs as a
// module and sets __codemode_result__.
//
// # Determinism
//
// Every step runs in the sandbox's deterministic mode: Math.random is
// seeded from the code id (FNV-1a), Date starts at the code message's now
// (milliseconds or RFC 3339; without it, an instant between 2020 and 2030
// derived from the id) and advances only as timers fire, in virtual time,
// without waiting; the calls of one turn are numbered in the script's
// order and settled together, in that order, before any timer. So a step
// is a pure function of its request, byte for byte (a step stopped by its
// timeoutMs aside). Logs are those of the whole run so far, with virtual
// times.
//
// # Limits
//
// timeoutMs, maxMemoryBytes, maxLogBytes and maxResultBytes bound each
// step's run; maxToolCalls bounds the calls of all steps together (every
// step counts from the start), so the call past it throws
// SandboxLimitError in the step that would have emitted it. Rerunning from
// the start makes a script of n sequential calls cost n+1 steps replaying
// 0, 1, …, n calls: quadratic in n (docs/BENCHMARKS.md has the figures).
package replay
