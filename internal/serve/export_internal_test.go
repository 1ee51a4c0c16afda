package serve

// StructuredLimit exposes structuredLimit to the external tests.
const StructuredLimit = structuredLimit
