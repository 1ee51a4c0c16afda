// Package upstream connects the gateway to its upstream MCP servers, over the
// official Go SDK: stdio children (mcp.CommandTransport), Streamable HTTP and
// the older HTTP+SSE transport.
//
// Start with [New], which takes the configured servers and starts nothing,
// then [Manager.Snapshot] (a server's identity and complete, sorted tool
// list, connecting it on first use) and [Manager.CallTool]. A run takes one
// [Snapshot] per server and keeps it: snapshots are immutable, and a
// notifications/tools/list_changed only makes the next Snapshot call refetch
// (with a higher [Snapshot.Generation]).
//
// Every failure is an [*Error] naming the server, with a [Kind] for the
// caller to act on (errors.Is(err, upstream.Auth)), the tail of a stdio
// server's stderr and a hint. A server that fails to start or dies is put in
// backoff and restarted on a later use; the other servers are unaffected.
//
// Concurrency: a Manager is safe for concurrent use. Callers that need the
// same server share one connection attempt and one tool-list fetch, which run
// on the Manager's context so that one caller giving up does not fail the
// others. Cancelling a call's context cancels the request through the SDK,
// which sends notifications/cancelled to the upstream.
//
// In-process servers: [NewMemoryTransports] connects a go-sdk client and
// server in one process without encoding messages (the built-in servers use
// it), and [DialInMemory], an [Options.Dial], puts such servers behind a
// Manager by id, as tests, benchmarks and embedders do. Both are production
// code (inmemory.go), not test helpers.
//
// Nothing here writes to stdout: a stdio server's stderr goes to the slog
// logger, line by line.
package upstream
