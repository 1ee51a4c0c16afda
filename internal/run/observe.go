package run

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/sandbox"
)

// Observing runs: metrics, traces and the run history are [Observer]s of a
// Runner (Options.Observer), so that every surface that runs code through
// a Runner is observed without doing anything. An observer sees a run
// start, each tool call start and end, and the run end with its final,
// redacted response. It must never slow the run down or change it: what it
// keeps, it copies, and what it writes, it writes off the run's path.

// Observer sees every run of a Runner. Combine several with [Observers].
type Observer interface {
	// StartRun is called as a run starts, before anything else. It returns
	// the context the run goes on with (a tracer puts its span there, so
	// that the tool calls' spans are its children) and what observes the
	// rest of the run; nil observes nothing more.
	StartRun(ctx context.Context, s *RunStart) (context.Context, RunObserver)
}

// RunObserver observes one run.
type RunObserver interface {
	// StartCall is called as a tool call goes to its server, once its
	// input is valid; a call refused by the input schema is seen as one
	// that ended at once (outcome CallInvalid). It returns the call's
	// context (the caller sees it: a tracer passes the trace context on
	// to the upstream in _meta through upstream.WithCallMeta) and the
	// function to
	// call once when the call ends.
	StartCall(ctx context.Context, c *CallStart) (context.Context, func(*CallEnd))
	// EndRun is called once the response is final (redacted), just before
	// the run returns it. The response is the caller's from then on: an
	// observer that keeps it past EndRun copies what it keeps.
	EndRun(ctx context.Context, e *RunEnd)
}

// Origin is where a run comes from. The serving layer says it with
// WithOrigin; a run without one is of surface "" (a Runner used directly).
type Origin struct {
	// Surface is the surface that made the run: "run", "search-execute",
	// "files", "emceepee", ... for the MCP surfaces, "cli" for codemode
	// run, "step" for a replay step.
	Surface string
	// Tool is the MCP tool that was called, if any.
	Tool string
	// Session is the MCP session id, if any.
	Session string
	// Client names the client: its clientInfo ("name/version") and, when
	// it authenticated as a named client, that name.
	Client string
	// Auth is the named client (codemode.clients) whose token
	// authenticated the request, if any.
	Auth string
	// Meta is the request's _meta, where a client puts its W3C trace
	// context (traceparent, tracestate, baggage). Read only.
	Meta map[string]any
}

type originKey struct{}

// WithOrigin returns a ctx whose runs are from o.
func WithOrigin(ctx context.Context, o Origin) context.Context {
	return context.WithValue(ctx, originKey{}, o)
}

// OriginOf returns the origin WithOrigin put in ctx.
func OriginOf(ctx context.Context) Origin {
	o, _ := ctx.Value(originKey{}).(Origin)
	return o
}

// RunStart is what an observer sees of a run as it starts.
type RunStart struct {
	// ID identifies the run: a UUIDv7, so that IDs sort by start time.
	ID      string
	Start   time.Time
	Origin  Origin
	Request Request
}

// CallStart is a tool call as it starts.
type CallStart struct {
	ServerID string
	Tool     string
	// Start is when the call went out; Offset is the time since the run
	// started.
	Start  time.Time
	Offset time.Duration
	// Input is the call's input as the script passed it (JSON, may be
	// nil). It is not redacted: an observer that keeps it redacts it.
	Input json.RawMessage
	// Leg is 0, or, in a run that asks for approvals, the leg the call
	// belongs to (from 1): each leg runs the script again from the start,
	// the calls made by earlier legs answered from what they got, so the
	// last leg's calls are the run's.
	Leg int
}

// Call outcomes, the CallEnd.Outcome values: a small fixed set, fit for
// metric labels.
const (
	CallOK        = "ok"
	CallToolError = "tool_error"    // the tool answered with isError
	CallInvalid   = "invalid_input" // the input schema refused the input; nothing was sent
	CallFailed    = "failed"        // the call did not complete: transport, timeout, server down, credentials
	CallSuspended = "suspended"     // a replaying Caller has no answer yet, or the call waits for the user's approval (the run ends, suspended)
	CallDenied    = "denied"        // the user declined the call; it was not sent
	CallDryRun    = "dry_run"       // a dry run planned the call and did not send it
)

// CallEnd is a tool call as it ended.
type CallEnd struct {
	Duration time.Duration
	Outcome  string
	// Class is the error class the script saw, "" on success.
	Class diag.Class
	// Error is the trace's summary of the failure (never the output).
	Error string
	// Result is the tool's result when it answered (also with isError);
	// nil otherwise. Not redacted beyond what the upstream layer does.
	Result *mcp.CallToolResult
}

// RunEnd is a run as it ended.
type RunEnd struct {
	Duration time.Duration
	// Limits are the run's, resolved against the configuration (zero for
	// a request refused before they were).
	Limits   config.Limits
	Response *Response
	// Outcome is "ok", or the code of the first error diagnostic
	// ("SANDBOX_LIMIT", "UNCAUGHT_EXCEPTION", ...): one of a fixed set.
	Outcome string
}

// Outcome is "ok" for a response without an error diagnostic, else the
// first error's code.
func Outcome(resp *Response) string {
	for _, d := range resp.Diagnostics {
		if d.Severity == diag.SeverityError {
			return string(d.Code)
		}
	}
	return "ok"
}

// Observers combines observers into one that calls each in order. nil
// entries are skipped; with none left it returns nil.
func Observers(obs ...Observer) Observer {
	var out multiObserver
	for _, o := range obs {
		if o != nil {
			out = append(out, o)
		}
	}
	switch len(out) {
	case 0:
		return nil
	case 1:
		return out[0]
	}
	return out
}

type multiObserver []Observer

func (m multiObserver) StartRun(ctx context.Context, s *RunStart) (context.Context, RunObserver) {
	var runs multiRun
	for _, o := range m {
		var r RunObserver
		ctx, r = o.StartRun(ctx, s)
		if r != nil {
			runs = append(runs, r)
		}
	}
	if len(runs) == 0 {
		return ctx, nil
	}
	return ctx, runs
}

type multiRun []RunObserver

func (m multiRun) StartCall(ctx context.Context, c *CallStart) (context.Context, func(*CallEnd)) {
	ends := make([]func(*CallEnd), 0, len(m))
	for _, r := range m {
		var end func(*CallEnd)
		ctx, end = r.StartCall(ctx, c)
		if end != nil {
			ends = append(ends, end)
		}
	}
	return ctx, func(e *CallEnd) {
		for _, end := range ends {
			end(e)
		}
	}
}

func (m multiRun) EndRun(ctx context.Context, e *RunEnd) {
	for _, r := range m {
		r.EndRun(ctx, e)
	}
}

// startObserving starts observing a run, if the Runner has an observer.
func (r *Runner) startObserving(ctx context.Context, start time.Time, req Request) (context.Context, *observed) {
	if r.opts.Observer == nil {
		return ctx, nil
	}
	id, err := uuid.NewV7()
	if err != nil {
		id = uuid.New()
	}
	s := &RunStart{ID: id.String(), Start: start, Origin: OriginOf(ctx), Request: req}
	ctx, ro := r.opts.Observer.StartRun(ctx, s)
	if ro == nil {
		return ctx, nil
	}
	return ctx, &observed{RunObserver: ro, id: s.ID, start: start}
}

// observed is a run being observed.
type observed struct {
	RunObserver
	id    string
	start time.Time
	// leg counts the legs of a run that asks for approvals: each runs the
	// script again from the start (approval.go).
	leg int
}

// nextLeg starts the next leg of the run (nil-safe). Legs run one after
// the other.
func (o *observed) nextLeg() {
	if o != nil {
		o.leg++
	}
}

// startCall starts observing a tool call of the run, which started at now;
// the function it returns ends it, with the duration since the same now
// (an offset and a duration measured from two instants would let a
// waterfall draw calls that overlapped, on a loaded machine, as if one
// followed the other). Without an observer it does nothing.
func (v *View) startCall(ctx context.Context, now time.Time, serverID, tool string, input json.RawMessage) (context.Context, func(d time.Duration, outcome string, err *diag.Error, res *mcp.CallToolResult)) {
	o := v.obs
	if o == nil {
		return ctx, func(time.Duration, string, *diag.Error, *mcp.CallToolResult) {}
	}
	ctx, end := o.StartCall(ctx, &CallStart{ServerID: serverID, Tool: tool, Start: now, Offset: now.Sub(o.start), Input: input, Leg: o.leg})
	return ctx, func(d time.Duration, outcome string, err *diag.Error, res *mcp.CallToolResult) {
		if end == nil {
			return
		}
		e := &CallEnd{Duration: d, Outcome: outcome, Result: res}
		if err != nil {
			e.Class = err.Class
			e.Error = v.r.redact.Clip(string(err.Class)+": "+traceSummary(err), 300)
		}
		end(e)
	}
}

// RunID returns the id observers know the run by ("" when the Runner has
// no observer).
func (r *Response) RunID() string { return r.runID }

// observeOutcome ends a call's observation with what View.invoke
// returned: res nil without an error is a dry run's planned call.
func observeOutcome(end func(time.Duration, string, *diag.Error, *mcp.CallToolResult), d time.Duration, res *mcp.CallToolResult, err error, v *View, serverID string, t *catalog.Tool) {
	if v.obs == nil {
		return
	}
	var abort *sandbox.Abort
	switch {
	case err == nil && res == nil:
		end(d, CallDryRun, nil, nil)
	case errors.Is(err, sandbox.Suspend) || errors.As(err, &abort):
		end(d, CallSuspended, nil, nil)
	case err != nil:
		de, _ := err.(*diag.Error)
		outcome := CallFailed
		if de != nil && de.Class == diag.ApprovalDeniedError {
			outcome = CallDenied
		}
		end(d, outcome, de, nil)
	case res.IsError:
		end(d, CallToolError, v.toolFailed(serverID, t, res), res)
	default:
		end(d, CallOK, nil, res)
	}
}

type scriptKey struct{}

type scriptRun struct {
	ref  string
	args json.RawMessage
}

// WithScript returns a ctx whose runs are of the saved script ref
// ("name@version") with args: a run whose Request has no Script of its own
// takes them (Request.Script and Request.Args). The serving layer resolves
// a request's {"script": NAME} once, for every surface, this way.
func WithScript(ctx context.Context, ref string, args json.RawMessage) context.Context {
	return context.WithValue(ctx, scriptKey{}, scriptRun{ref, args})
}
