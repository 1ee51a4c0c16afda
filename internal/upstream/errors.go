package upstream

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/redact"
)

// Kind classifies an upstream failure so that callers can react without
// parsing messages: the run layer turns [Auth] into AuthenticationError,
// [Config] into a diagnostic about the configuration, and the rest into
// ToolCallError or an UPSTREAM_UNAVAILABLE diagnostic.
//
// A Kind is also an error value, so errors.Is(err, upstream.Auth) reports
// whether err is (or wraps) an [*Error] of that kind.
type Kind string

const (
	// Config: the configuration prevents the call: an unknown server id
	// ([ErrUnknownServer]) or unset ${VAR}s ([ErrUnresolvedEnv]). Retrying
	// does not help; fixing the config or the environment does.
	Config Kind = "config"
	// StartFailed: the server could not be started or initialized (command
	// not found, exited at once, initialize rejected).
	StartFailed Kind = "start-failed"
	// Died: the server was connected and its connection ended (the process
	// exited or was killed, the HTTP session vanished). It is restarted on
	// next use.
	Died Kind = "died"
	// Auth: an HTTP upstream answered 401 or 403.
	Auth Kind = "auth"
	// Timeout: the connect or the call exceeded its time limit. The upstream
	// was sent notifications/cancelled.
	Timeout Kind = "timeout"
	// Canceled: the caller's context ended first (a run finished early or
	// hit its own deadline). The upstream was sent notifications/cancelled.
	Canceled Kind = "canceled"
	// Rejected: the upstream answered with a JSON-RPC error (unknown tool,
	// invalid params, ...), or the request was refused before it was sent
	// ([ErrInvalidArguments], [ErrNotSupported]).
	Rejected Kind = "rejected"
	// Protocol: the upstream broke the protocol (bad response, unsupported
	// protocol version).
	Protocol Kind = "protocol"
	// Unavailable: a remote server could not be reached, or the Manager is
	// closed ([ErrClosed]).
	Unavailable Kind = "unavailable"
)

// Error implements error so that a Kind can be the target of errors.Is. It
// is the bare kind, so printing a Kind shows "auth", not a sentence.
func (k Kind) Error() string { return string(k) }

// Sentinel errors, wrapped by [*Error] values (errors.Is works through them).
var (
	ErrUnknownServer    = errors.New("no such server in the configuration")
	ErrUnresolvedEnv    = errors.New("the configuration references unset environment variables")
	ErrClosed           = errors.New("the upstream manager is closed")
	ErrNotSupported     = errors.New("the server does not offer this capability")
	ErrInvalidArguments = errors.New("tool arguments must be a JSON object")
	// ErrDeniedTool: the configuration's tool policy denies the tool; the
	// call was not sent.
	ErrDeniedTool = errors.New("no such tool")
	// ErrMessageTooLarge: a server sent one message (usually a tool
	// result) larger than the gateway reads (the MCP SDK's bound on a
	// stdio message, which the gateway applies to a remote server's JSON
	// answer too); the connection had to be dropped. The server is not at
	// fault and is restarted (reconnected) at once.
	ErrMessageTooLarge = fmt.Errorf("sent a message larger than %d MiB, the most the gateway reads in one message", mcp.DefaultMaxLineLength>>20)
	// ErrBackoff is wrapped by the fail-fast errors returned while a server
	// waits to be restarted; [Error.RetryIn] says for how long.
	ErrBackoff = errors.New("waiting before the next restart")
)

// Error is every error this package returns about a server. Err holds the
// cause; StderrTail and Hint are for humans. The message names the server and
// includes the end of the stderr tail; Hint is kept out of the message so
// that callers can render it separately (as diag.Error does).
type Error struct {
	ServerID string
	Kind     Kind
	// Op is what was being done: "connect", "tools/call get-sum",
	// "tools/list", ...
	Op  string
	Err error
	// StderrTail is the last ~4 KiB the (stdio) server wrote to stderr, if
	// any, cut at a line boundary, with the secrets redacted.
	StderrTail string
	// Hint is one corrective action.
	Hint string
	// RetryIn is non-zero when the server is in backoff: no attempt was made
	// and the next one will be made on the first use after RetryIn.
	RetryIn time.Duration
}

// maxTailInMessage bounds how much of the stderr tail Error() repeats; the
// whole tail stays in StderrTail.
const maxTailInMessage = 1024

// redacted clips text that was redacted when it was stored (StderrTail: the
// stderr sink hands out nothing else), keeping its markers whole.
var redacted *redact.Redactor

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "server %q", e.ServerID)
	switch e.Kind {
	case Config:
		b.WriteString(" cannot be used")
	case StartFailed:
		b.WriteString(" failed to start")
	case Died:
		b.WriteString(" died")
	case Auth:
		b.WriteString(" rejected the credentials")
	case Timeout:
		b.WriteString(" timed out")
	case Canceled:
		b.WriteString(": canceled")
	case Rejected:
		b.WriteString(" rejected the request")
	case Protocol:
		b.WriteString(" broke the protocol")
	case Unavailable:
		b.WriteString(" is unavailable")
	}
	if e.Op != "" {
		fmt.Fprintf(&b, " (%s)", e.Op)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.RetryIn > 0 {
		fmt.Fprintf(&b, "; restarting in %s", roundDuration(e.RetryIn))
	}
	if tail := redacted.Tail(e.StderrTail, maxTailInMessage); tail != "" {
		fmt.Fprintf(&b, "; stderr: %q", tail)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, upstream.Auth) (any Kind) and
// errors.Is(err, upstream.ErrBackoff) work.
func (e *Error) Is(target error) bool {
	if k, ok := target.(Kind); ok {
		return k == e.Kind
	}
	return target == ErrBackoff && e.RetryIn > 0
}

// roundDuration prints durations the way a human reads them in an error:
// "250ms", "1.5s", "30s".
func roundDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}

// HTTPStatusError is the cause of an [Auth] error: the upstream answered an
// HTTP request with 401 or 403. It is produced by the gateway's own
// http.RoundTripper, because the SDK reports HTTP failures as plain text
// ("Unauthorized") without the status code.
type HTTPStatusError struct {
	StatusCode int
	Method     string
	URL        string
	// WWWAuthenticate is the response's WWW-Authenticate header, if any.
	WWWAuthenticate string
	// Body is the start of the response body, for the message.
	Body string
}

func (e *HTTPStatusError) Error() string {
	msg := fmt.Sprintf("HTTP %d %s from %s %s", e.StatusCode, http.StatusText(e.StatusCode), e.Method, e.URL)
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}
