package builtintest

// Example is one of the Thoughtbox seed's examples
// (shared/seeds/thoughtbox-code-mode.md), verbatim.
type Example struct {
	Name string
	// Tool is the thoughtbox surface's tool that runs it.
	Tool string
	Code string
	// Want is a string the result (or, if Fails, the error) contains.
	Want  string
	Fails bool
}

// SearchExamples run on thoughtbox_search.
var SearchExamples = []Example{
	{Name: "session module", Tool: "thoughtbox_search", Code: `async (catalog) => catalog.operations.session`, Want: `"list"`},
	{Name: "find export operations", Tool: "thoughtbox_search", Code: `async (catalog) => {
const out = {};
for (const [mod, ops] of Object.entries(catalog.operations)) {
for (const [name, op] of Object.entries(ops)) {
if (name.includes("export") || op.description.includes("export")) {
out[` + "`${mod}.${name}`" + `] = op;
}
}
}
return out;
}`, Want: `"session.export"`},
}

// SeedExamples run on thoughtbox_execute (and, as arrow functions called
// by a module, against the built-in directly).
var SeedExamples = []Example{
	{Name: "record a thought", Tool: "thoughtbox_execute", Code: `async () => {
return await tb.thought({
thought: "Retry logic fails because the backoff multiplier resets on partial success.",
thoughtType: "reasoning",
nextThoughtNeeded: true,
confidence: "medium"
});
}`, Want: `"thoughtNumber"`},
	{Name: "record a decision", Tool: "thoughtbox_execute", Code: `async () => tb.thought({
thought: "Choosing between Redis and in-memory caching for session state.",
thoughtType: "decision_frame",
nextThoughtNeeded: true,
options: [
{ label: "Redis — durable, shared across instances", selected: false },
{ label: "In-memory — zero dependencies", selected: false }
]
})`, Want: `"decision_frame"`},
	{Name: "list recent sessions", Tool: "thoughtbox_execute", Code: `async () => tb.session.list({ limit: 5 })`, Want: `"sessions"`},
	{Name: "export a session as markdown", Tool: "thoughtbox_execute", Code: `async () => tb.session.export("session-uuid", "markdown")`,
		Want: `no session with id`, Fails: true},
	{Name: "build a knowledge graph entry", Tool: "thoughtbox_execute", Code: `async () => {
const entity = await tb.knowledge.createEntity({
name: "rate-limiting-strategy",
type: "Decision",
label: "Chose token bucket over sliding window"
});
await tb.knowledge.addObservation({
entity_id: entity.id,
content: "Token bucket chosen for burst tolerance and simpler implementation."
});
return entity;
}`, Want: `"rate-limiting-strategy"`},
}
