// Package run executes one codemode.run request: it transpiles the agent's
// script, gives it the in-sandbox API of codemode-spec §4–§7 over the
// catalog and the upstream servers, runs it in a fresh sandbox and returns
// the §3.3 response.
//
// Start with [New] and [Runner.Run]. A Runner is safe for concurrent use;
// every Run gets its own sandbox and its own immutable catalog view.
//
// Tool calls go through the [Caller] given to [New] (usually the upstream
// manager): package replay passes its own to answer calls from a recorded
// log (or to suspend the run at the first call it has no answer for), and
// sets [Extra.Deterministic] so that reruns see the same Math.random, Date
// and timers.
package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/admit"
	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/normalize"
	"github.com/codemode-mcp/codemode/internal/redact"
	"github.com/codemode-mcp/codemode/internal/sandbox"
	"github.com/codemode-mcp/codemode/internal/transpile"
)

// SpecVersion is the codemode-spec version this host implements, exported
// to agent code as @codemode/discovery's specVersion.
const SpecVersion = "1.0.0"

// MaxScriptBytes is the largest script accepted.
const MaxScriptBytes = 100 * 1000

// Request is a codemode.run request (§3.2).
type Request struct {
	Code                  string        `json:"code"`
	Limits                config.Limits `json:"limits,omitzero"`
	RequestedCapabilities []string      `json:"requestedCapabilities,omitempty"`
	// DryRun sends only the calls that are read-only (readOnlyHint) or
	// auto-approved and need no approval; every other call returns null
	// to the script and is listed in Response.Plan.
	DryRun bool `json:"dryRun,omitempty"`
	// Args are a saved script's arguments, a JSON object: the default
	// export of @codemode/args and the global `args` (see ArgsModule).
	Args json.RawMessage `json:"args,omitempty"`
	// Script names the saved script the code comes from ("name@version"),
	// for the run's observers; "" for code sent as it is.
	Script string `json:"script,omitempty"`
}

// Response is a codemode.run response (§3.3). Every slice is non-nil so
// that it marshals as [] rather than null.
type Response struct {
	Logs        []sandbox.LogEntry `json:"logs"`
	Result      json.RawMessage    `json:"result"`
	Diagnostics []diag.Diagnostic  `json:"diagnostics"`
	ToolTrace   []TraceEntry       `json:"toolTrace"`
	// Plan lists, in a dry run (Request.DryRun), the calls that were not
	// sent; absent from other runs.
	Plan []PlannedCall `json:"plan,omitzero"`

	used      []string
	suspended bool
	awaiting  int           // calls whose approval the client answers with its next call
	runID     string        // see RunID
	limits    config.Limits // resolved, once they are
	recorded  func()        // Options.Record's done, once the response is final
	prep      *normalize.Prepared
}

// Calls lists the obj.member(...) calls of the script as it ran, with the
// line of the agent's source of each, or nil: surfaces use it to tell what
// an engine's "not a function" was.
func (r *Response) Calls(ctx context.Context) []normalize.MemberCall {
	if r.prep == nil {
		return nil
	}
	return r.prep.Calls(ctx)
}

// Suspended reports whether the run ended because its Caller suspended a
// call (sandbox.Suspend): it waits for results a later run will have.
func (r *Response) Suspended() bool { return r.suspended }

// AwaitingApproval is the number of calls put to the client in an
// input-required result (package outer): the run goes on when the client
// calls again with the answer.
func (r *Response) AwaitingApproval() int { return r.awaiting }

// ServersUsed lists the servers the run imported, called or asked for in
// requestedCapabilities, in configuration order. The serving layer sends
// their declarations with the first response that uses them (§4.4).
func (r *Response) ServersUsed() []string { return r.used }

// Failed reports whether any diagnostic is an error.
func (r *Response) Failed() bool {
	for _, d := range r.Diagnostics {
		if d.Severity == diag.SeverityError {
			return true
		}
	}
	return false
}

// TraceEntry is one tool call as §3.3.2 allows it to be reported: never its
// input or output.
type TraceEntry struct {
	ServerID   string `json:"serverId"`
	ToolName   string `json:"toolName"`
	DurationMs int64  `json:"durationMs"`
	OK         bool   `json:"ok"`
	Error      string `json:"error,omitempty"`
	// Approval is the policy's decision about the call (approval.go):
	// "auto", "granted", "denied" or "dry-run". Absent for a call refused
	// before the policy (an unknown tool, invalid input, a limit).
	Approval string `json:"approval,omitempty"`
}

// Caller performs tool calls. *upstream.Manager is one. An error that is a
// *diag.Error reaches the script as it is; a replaying Caller may also
// return sandbox.Suspend (no result yet: the run ends, Suspended) or a
// *sandbox.Abort (the run ends with its diagnostic).
type Caller interface {
	CallTool(ctx context.Context, serverID, tool string, args any) (*mcp.CallToolResult, error)
}

// Options configure a Runner. All fields are optional.
type Options struct {
	// Deterministic makes every run reproducible (seeded Math.random, a
	// virtual clock, timers in virtual time, host calls settled in the
	// script's order: see sandbox.Deterministic).
	Deterministic *sandbox.Deterministic
	Logger        *slog.Logger
	// Admission, if set, admits every run before it starts (waiting for a
	// slot at most the run's timeoutMs) and holds the run's memory limit
	// and the payloads of its host calls against the gateway's budget.
	// Runs it refuses end with a SANDBOX_LIMIT diagnostic (limit
	// "concurrency" or "memoryBudget"). Serve sets the MCP session with
	// admit.WithSession. nil admits every run at once.
	Admission *admit.Controller
	// Record, if set, sees every run just before its sandbox starts and
	// may change the sandbox's options (make the run deterministic, wrap
	// Resolve and Handle to capture what the host answers); the function
	// it returns, if not nil, gets the sandbox's result and the run's
	// response (redacted) once the run is over. Package replay writes
	// replay bundles this way. A run that never reaches the sandbox (a
	// syntax error) is not seen.
	Record func(*Recording) (done func(*sandbox.Result, *Response))
	// Observer, if set, sees every run, its tool calls and its response
	// (see Observer): metrics, traces and the run history.
	Observer Observer
}

// Recording is what Options.Record sees of a run.
type Recording struct {
	// ID is the run's id for its observers ("" when it is not observed).
	ID      string
	Request Request
	Extra   Extra
	// Code and Transpile are what was transpiled: Request.Code as the
	// normaliser shaped it for the surface (package normalize), and the
	// surface's wrapper. Transpiling them again gives the code that ran.
	Code      string
	Transpile *transpile.Options
	// Limits are the run's, resolved against the configuration.
	Limits  config.Limits
	Sandbox *sandbox.Options
}

// Runner runs scripts against a catalog.
type Runner struct {
	cfg    *config.Config
	cat    *catalog.Catalog
	caller Caller
	opts   Options
	redact *redact.Redactor
}

// New returns a Runner over cat whose tool calls go through caller
// (usually the *upstream.Manager behind cat; a replay, a test or the
// built-in servers wrap or replace it). caller is required.
func New(cfg *config.Config, cat *catalog.Catalog, caller Caller, opts *Options) *Runner {
	r := &Runner{cfg: cfg, cat: cat, caller: caller, redact: redact.ForServers(cfg.Servers)}
	if opts != nil {
		r.opts = *opts
	}
	if r.opts.Logger == nil {
		r.opts.Logger = slog.New(slog.DiscardHandler)
	}
	return r
}

// Catalog returns the runner's catalog.
func (r *Runner) Catalog() *catalog.Catalog { return r.cat }

// Config returns the runner's configuration.
func (r *Runner) Config() *config.Config { return r.cfg }

// Extra varies a run for the non-spec surfaces. The zero value is a
// codemode.run as the spec defines it.
type Extra struct {
	// Transpile shapes the code: nil runs it as a module (the spec's
	// codemode.run); transpile.Body() and transpile.Call() wrap it.
	Transpile *transpile.Options
	// Normalize, if set, has package normalize reshape the code into the
	// surface's form (and Transpile is ignored). A run with neither is a
	// codemode.run, normalised as a module.
	Normalize *normalize.Options
	// Prelude lists modules imported, for their side effects, before the
	// agent's code (e.g. one that defines per-server global objects).
	Prelude []string
	// Modules answers imports that the standard resolver does not know.
	Modules func(ctx context.Context, v *View, specifier string) (string, bool)
	// Ops handles host operations the standard handler does not know.
	Ops func(ctx context.Context, v *View, op string, payload json.RawMessage) (json.RawMessage, error, bool)
	// Deterministic overrides Options.Deterministic for this run.
	Deterministic *sandbox.Deterministic
	// ReadOnly refuses tool calls: the run may only read the catalog.
	ReadOnly bool
	// LimitParams names, per §3.2.4 limit key ("timeoutMs", ...), the
	// parameter through which the caller can raise that limit, for the hint
	// of a SANDBOX_LIMIT diagnostic. nil means the run tool's own
	// `limits.<key>`; a surface with fixed limits passes an empty map so
	// that no hint suggests a parameter it does not have.
	LimitParams map[string]string
}

// Run executes one request. It never returns nil, and a failure of the
// script is reported in the response's diagnostics, not as an error.
func (r *Runner) Run(ctx context.Context, req Request) *Response {
	return r.RunWith(ctx, req, Extra{})
}

// RunWith is Run with surface-specific variations.
func (r *Runner) RunWith(ctx context.Context, req Request, x Extra) *Response {
	start := time.Now()
	if sr, ok := ctx.Value(scriptKey{}).(scriptRun); ok && req.Script == "" {
		req.Script, req.Args = sr.ref, sr.args
	}
	ctx, obs := r.startObserving(ctx, start, req)
	var resp *Response
	if r.cfg.ApprovalPossible() && !req.DryRun && !x.ReadOnly {
		resp = r.runApproving(ctx, req, x, obs)
	} else {
		resp = r.runWith(ctx, req, x, nil, obs)
	}
	r.redactResponse(resp)
	if resp.recorded != nil {
		resp.recorded()
		resp.recorded = nil
	}
	took := time.Since(start)
	if obs != nil {
		resp.runID = obs.id
		obs.EndRun(ctx, &RunEnd{Duration: took, Limits: resp.limits, Response: resp, Outcome: Outcome(resp)})
	}
	r.audit(ctx, req, resp, took)
	return resp
}

// runWith runs the script once. led, if not nil, makes the run a leg of a
// run that may ask for approvals (approval.go); obs, if not nil, observes
// it.
func (r *Runner) runWith(ctx context.Context, req Request, x Extra, led *ledger, obs *observed) *Response {
	resp := &Response{Logs: []sandbox.LogEntry{}, Result: json.RawMessage("null"), Diagnostics: []diag.Diagnostic{}, ToolTrace: []TraceEntry{}}
	if strings.TrimSpace(req.Code) == "" {
		resp.Diagnostics = append(resp.Diagnostics, diag.Diagnostic{Severity: diag.SeverityError, Code: diag.InvalidRequest,
			Message: "the request has no code", Hint: "pass the script to run in `code` (or a saved script's name in `script`)"})
		return resp
	}
	if len(req.Code) > MaxScriptBytes {
		resp.Diagnostics = append(resp.Diagnostics, diag.Diagnostic{Severity: diag.SeverityError, Code: diag.SandboxLimit, ErrorClass: diag.SandboxLimitError, Limit: "maxScriptBytes",
			Message: fmt.Sprintf("the script is %d bytes; the limit is %d", len(req.Code), MaxScriptBytes),
			Hint:    "send a shorter script: keep data out of the code and let tool calls fetch it"})
		return resp
	}
	if bad := checkArgs(req.Args); bad != nil {
		resp.Diagnostics = append(resp.Diagnostics, *bad)
		return resp
	}
	limits := r.cfg.Resolve(req.Limits)
	resp.limits = limits
	resp.Diagnostics = append(resp.Diagnostics, clamped(req.Limits, limits, x.LimitParams)...)
	ticket, refused := r.admit(ctx, limits)
	if refused != nil {
		resp.Diagnostics = append(resp.Diagnostics, *refused)
		return resp
	}
	// The ticket is given back when the run is over, or, for a run the
	// sandbox answered while its JavaScript was still inside a built-in
	// that cannot be interrupted (sandbox.Result.Detached), once that
	// JavaScript has stopped: until then it holds its CPU and memory.
	release := ticket.Release
	defer func() { release() }()
	deadline := time.Now().Add(time.Duration(limits.TimeoutMs) * time.Millisecond)
	// Transpiling counts against the run's time; transpile bounds its own
	// (esbuild runs in a worker process killed at its time budget).
	out, prep, ran, diags := prepare(ctx, req.Code, x)
	if len(diags) > 0 {
		resp.Diagnostics = append(resp.Diagnostics, diags...)
		return resp
	}
	position := out.Position
	if prep != nil {
		position = prep.Position(out)
		resp.Diagnostics = append(resp.Diagnostics, prep.Info...)
		resp.prep = prep
	}
	v := newView(r, limits, x)
	v.ticket = ticket
	v.led, v.dryRun = led, req.DryRun
	v.obs = obs
	resp.Diagnostics = append(resp.Diagnostics, v.requestCapabilities(ctx, deadline, req.RequestedCapabilities)...)

	det := r.opts.Deterministic
	if x.Deterministic != nil {
		det = x.Deterministic
	}
	if det == nil && led != nil {
		// Every leg must see the same Math.random and Date; timers also
		// wait in real time, as live servers are called.
		det = &sandbox.Deterministic{Seed: led.Seed, Now: time.UnixMilli(led.NowMs).UTC(), WaitTimers: true}
	}
	v.args = req.Args
	prelude := x.Prelude
	if req.Args != nil {
		// The global `args` is there before the script's first line.
		prelude = append([]string{ArgsModule}, prelude...)
	}
	so := &sandbox.Options{
		Prelude: prelude,
		// The sandbox starts after transpiling and eager connects; it
		// gets what is left of the run's time.
		Deadline: deadline,
		Limits: sandbox.Limits{
			Timeout:        time.Duration(limits.TimeoutMs) * time.Millisecond,
			MaxMemoryBytes: limits.MaxMemoryBytes,
			MaxLogBytes:    limits.MaxLogBytes,
			MaxResultBytes: limits.MaxResultBytes,
		},
		Resolve:       v.resolve,
		Handle:        v.handle,
		Position:      position,
		Deterministic: det,
		Redact:        r.redact,
		Budget:        budgetOf(ticket),
		OnLog:         logProgress(ctx),
		KeepOversize:  spillFrom(ctx) != nil,
	}
	var done func(*sandbox.Result, *Response)
	if r.opts.Record != nil {
		rec := &Recording{Request: req, Extra: x, Code: ran.code, Transpile: ran.opts, Limits: limits, Sandbox: so}
		if obs != nil {
			rec.ID = obs.id
		}
		done = r.opts.Record(rec)
	}
	sres := sandbox.Run(ctx, out.Code, so)
	if sres.Detached {
		held, stopped := ticket, sres.Stopped
		release = func() {}
		go func() {
			<-stopped
			held.Release()
		}()
	}
	if done != nil {
		resp.recorded = func() { done(sres, resp) }
	}
	resp.Logs = append(resp.Logs, sres.Logs...)
	resp.Result = sres.Result
	r.spillOversize(ctx, resp, sres, limits)
	resp.suspended = sres.Suspended
	for _, d := range sres.Diagnostics {
		if sres.TimedOut {
			d = v.blameSlowStart(d)
		}
		if d.Code == diag.ImportFailure {
			d = v.missingExport(ctx, d)
		}
		if d.Code == diag.UncaughtException && strings.HasSuffix(d.Message, "ReferenceError: 'Intl' is not defined") {
			d.Hint = "the sandbox has no Intl: format by hand (toFixed(2), String(n).padStart, toISOString())"
		}
		d = v.betterHint(ctx, d, prep)
		resp.Diagnostics = append(resp.Diagnostics, r.widenHint(d, limits, sres, x.LimitParams))
	}
	resp.Diagnostics = append(resp.Diagnostics, v.finalDiagnostics(resp.Diagnostics)...)
	if prep != nil && !resp.suspended { // a suspended run has no result yet
		if d := prep.NoResult(ctx, resp.Result, resp.Diagnostics); d != nil {
			resp.Diagnostics = append(resp.Diagnostics, *d)
		}
	}
	resp.ToolTrace = v.trace()
	resp.used = v.usedServers()
	if req.DryRun {
		resp.Plan = v.planned()
	}
	return resp
}

// admit waits for the run's turn (see Options.Admission). A run it cannot
// admit gets the diagnostic to answer with instead of a ticket.
func (r *Runner) admit(ctx context.Context, limits config.Limits) (*admit.Ticket, *diag.Diagnostic) {
	if r.opts.Admission == nil {
		return nil, nil
	}
	t, err := r.opts.Admission.Admit(ctx, limits.MaxMemoryBytes, time.Duration(limits.TimeoutMs)*time.Millisecond)
	if err == nil {
		return t, nil
	}
	var ref *admit.Refusal
	if errors.As(err, &ref) {
		return nil, &diag.Diagnostic{Severity: diag.SeverityError, Code: diag.SandboxLimit, ErrorClass: diag.SandboxLimitError,
			Message: ref.Message, Hint: ref.Hint, Limit: ref.Limit}
	}
	return nil, &diag.Diagnostic{Severity: diag.SeverityError, Code: diag.Canceled,
		Message: "the run was cancelled while it waited for a slot, before it started",
		Hint:    "the client cancelled the call or went away; nothing ran"}
}

// budgetOf is t as the sandbox's Budget; nil (no admission) stays a nil
// interface.
func budgetOf(t *admit.Ticket) sandbox.Budget {
	if t == nil {
		return nil
	}
	return t
}

// moduleForm is codemode.run's form.
var moduleForm = &normalize.Options{Mode: normalize.Module}

// prepare turns the request's code into the module to run: through the
// normaliser unless the surface gave its own transpile options without it.
// When the normalised code does not transpile (which is the normaliser's
// fault, not the agent's), the code runs as the agent wrote it, or fails
// with diagnostics about what the agent wrote.
func prepare(ctx context.Context, code string, x Extra) (*transpile.Output, *normalize.Prepared, transpiled, []diag.Diagnostic) {
	if x.Normalize == nil && x.Transpile != nil {
		out, diags := transpile.Module(ctx, code, x.Transpile)
		return out, nil, transpiled{code, x.Transpile}, diags
	}
	o := x.Normalize
	if o == nil {
		o = moduleForm
	}
	p := normalize.Prepare(ctx, code, o)
	out, diags := transpile.Module(ctx, p.Code, p.Transpile)
	if len(diags) > 0 && p.Changed() {
		plain := p.Plain()
		out, diags = transpile.Module(ctx, plain.Code, plain.Transpile)
		p = plain
	}
	return out, p, transpiled{p.Code, p.Transpile}, diags
}

// transpiled is what a run transpiled: code and its options.
type transpiled struct {
	code string
	opts *transpile.Options
}

// missingExport turns the engine's link error for an import of a name a
// server module does not export into a ToolNotFoundError that suggests the
// nearest export (`getSum` → did you mean "get_sum"?).
func (v *View) missingExport(ctx context.Context, d diag.Diagnostic) diag.Diagnostic {
	// "Could not find export 'getSum' in module '@codemode/servers/everything'"
	rest, ok := strings.CutPrefix(d.Message, "Could not find export '")
	name, rest, ok2 := strings.Cut(rest, "' in module '"+ServerModulePrefix)
	id, ok3 := strings.CutSuffix(rest, "'")
	if !ok || !ok2 || !ok3 {
		return d
	}
	s, err := v.cat.Server(ctx, id)
	if err != nil {
		return d
	}
	exports := make([]string, 0, len(s.Tools)+1)
	for _, t := range s.Tools {
		exports = append(exports, t.ExportName)
	}
	exports = append(exports, "__meta__")
	d.Message = fmt.Sprintf("cannot import %q from %q: the server has no tool exported under that name", name, ServerModulePrefix+id)
	d.Hint = closestHint(name, exports, "exports") + ` (tool names with characters illegal in identifiers replaced by "_": get-sum → get_sum)`
	d.ErrorClass = diag.ToolNotFoundError
	return d
}

// clamped warns about each requested limit the host lowered to its
// maximum: the run goes on, but not with what the caller asked for. Limits
// a surface sets itself (no parameter in params) are not the caller's to
// hear about.
func clamped(req, got config.Limits, params map[string]string) []diag.Diagnostic {
	var out []diag.Diagnostic
	for _, l := range []struct {
		key      string
		req, got int64
	}{
		{"timeoutMs", req.TimeoutMs, got.TimeoutMs},
		{"maxMemoryBytes", req.MaxMemoryBytes, got.MaxMemoryBytes},
		{"maxLogBytes", req.MaxLogBytes, got.MaxLogBytes},
		{"maxToolCalls", req.MaxToolCalls, got.MaxToolCalls},
		{"maxResultBytes", req.MaxResultBytes, got.MaxResultBytes},
	} {
		param := limitParam(params, l.key)
		if l.req > l.got && param != "" {
			out = append(out, diag.Diagnostic{Severity: diag.SeverityWarning, Code: diag.SandboxLimit,
				Message: fmt.Sprintf("%s %d is above this host's maximum; the run uses %d", param, l.req, l.got),
				Hint:    fmt.Sprintf("ask for at most %d", l.got)})
		}
	}
	return out
}

// widenHint tells the agent how far a limit it hit can be raised, and
// through which parameter (params, see Extra.LimitParams).
func (r *Runner) widenHint(d diag.Diagnostic, l config.Limits, res *sandbox.Result, params map[string]string) diag.Diagnostic {
	if d.Code != diag.SandboxLimit {
		return d
	}
	m := r.cfg.MaxLimits
	var key string
	var cur, max int64
	switch {
	case res.TimedOut:
		key, cur, max = "timeoutMs", l.TimeoutMs, m.TimeoutMs
	case res.OutOfMemory:
		key, cur, max = "maxMemoryBytes", l.MaxMemoryBytes, m.MaxMemoryBytes
	case strings.Contains(d.Message, "maxResultBytes"):
		key, cur, max = "maxResultBytes", l.MaxResultBytes, m.MaxResultBytes
	default:
		return d
	}
	if d.Limit == "" {
		d.Limit = key
	}
	if param := limitParam(params, key); param != "" && cur < max {
		d.Hint += fmt.Sprintf(", or raise %s (up to %d)", param, max)
	}
	return d
}

// limitParam is the parameter through which the caller raises limit key,
// or "" if it cannot (see Extra.LimitParams).
func limitParam(params map[string]string, key string) string {
	if params == nil {
		return "limits." + key
	}
	return params[key]
}

// orRaise ends a hint with how to raise limit key, where the caller can.
func (v *View) orRaise(key string) string {
	if p := limitParam(v.x.LimitParams, key); p != "" {
		return ", or raise " + p
	}
	return ""
}

// blameSlowStart rewrites a timeout spent waiting for servers that never
// finished starting: the script was not slow, a server was, and doing less
// per run would not help.
func (v *View) blameSlowStart(d diag.Diagnostic) diag.Diagnostic {
	ids := v.cat.GivenUp()
	if len(ids) == 0 {
		return d
	}
	quoted := make([]string, len(ids))
	for i, id := range ids {
		quoted[i] = strconv.Quote(id)
	}
	d.Message += " while waiting for " + strings.Join(quoted, ", ") + " to start (no answer to initialize yet)"
	d.Hint = "check the server's command in the config and its stderr in the gateway's log; listServers() shows its status; retry once it is connected"
	return d
}

// View is the state one run shares between its host operations: the catalog
// view, the tool-call count and the trace.
type View struct {
	r      *Runner
	cat    *catalog.View
	limits config.Limits
	x      Extra
	// ticket is the run's admission (nil without Options.Admission): host
	// operations hold their upstream answers against it as they arrive.
	ticket *admit.Ticket
	obs    *observed // nil when the run is not observed
	args   json.RawMessage

	// led is set when the run is a leg of one that may ask for approvals.
	led    *ledger
	dryRun bool

	mu          sync.Mutex
	calls       int64
	refused     int64
	traceList   []*TraceEntry
	plan        []PlannedCall
	importFails map[string]bool // servers whose failure is already an import diagnostic
	died        map[string]error
	used        map[string]bool
	unchecked   []uncheckedTool // tools called without input validation
}

// use notes that the run used server id.
func (v *View) use(id string) {
	v.mu.Lock()
	v.used[id] = true
	v.mu.Unlock()
}

func (v *View) usedServers() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []string
	for _, id := range v.cat.IDs() {
		if v.used[id] {
			out = append(out, id)
		}
	}
	return out
}

func newView(r *Runner, l config.Limits, x Extra) *View {
	return &View{r: r, cat: r.cat.View(), limits: l, x: x, importFails: map[string]bool{}, died: map[string]error{}, used: map[string]bool{}}
}

// Catalog returns the run's catalog view.
func (v *View) Catalog() *catalog.View { return v.cat }

func (v *View) planned() []PlannedCall {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]PlannedCall{}, v.plan...)
}

func (v *View) trace() []TraceEntry {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]TraceEntry, len(v.traceList))
	for i, e := range v.traceList {
		out[i] = *e
	}
	return out
}

// requestCapabilities connects the requested servers in parallel, as hints
// (§3.2.3), and warns about the ones it cannot provide.
func (v *View) requestCapabilities(ctx context.Context, deadline time.Time, ids []string) []diag.Diagnostic {
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	if len(ids) == 0 {
		return nil
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	out := make([]diag.Diagnostic, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, known := v.cat.Config(id); known {
				v.use(id)
			}
			if _, err := v.connect(ctx, id); err != nil {
				de := serverError(id, err, v.cat.IDs(), v.r.cfg.Disabled)
				out[i] = diag.Diagnostic{Severity: diag.SeverityWarning, Code: diag.CapabilityUnavailable,
					Message: fmt.Sprintf("requested capability %q is unavailable: %s", id, de.Message), Hint: de.Hint}
			}
		}()
	}
	wg.Wait()
	var res []diag.Diagnostic
	for _, d := range out {
		if d.Code != "" {
			res = append(res, d)
		}
	}
	return res
}

// finalDiagnostics reports servers that failed during the run and that no
// diagnostic has named yet, and the tool-call limit if calls were refused.
func (v *View) finalDiagnostics(existing []diag.Diagnostic) []diag.Diagnostic {
	var out []diag.Diagnostic
	v.mu.Lock()
	refused := v.refused
	died := v.died
	unchecked := v.unchecked
	v.mu.Unlock()
	for _, u := range unchecked {
		out = append(out, diag.Diagnostic{Severity: diag.SeverityWarning, Code: diag.InputNotValidated,
			Message: fmt.Sprintf("calls to %s went to the server without input validation: %s", u.tool, strings.TrimPrefix(u.err.Error(), "schema: ")),
			Hint:    "the server's own checks still apply: if a call fails, its error says what is wrong; getTool shows the schema"})
	}
	if refused > 0 && !hasCode(existing, diag.SandboxLimit) {
		out = append(out, diag.Diagnostic{Severity: diag.SeverityWarning, Code: diag.SandboxLimit, ErrorClass: diag.SandboxLimitError, Limit: "maxToolCalls",
			Message: fmt.Sprintf("%d call(s) were refused: the run reached maxToolCalls (%d)", refused, v.limits.MaxToolCalls),
			Hint:    "batch work into fewer calls" + v.orRaise("maxToolCalls")})
	}
	failures := v.cat.Failures()
	for id, err := range died {
		failures[id] = err
	}
	for _, id := range v.cat.IDs() {
		err, ok := failures[id]
		if !ok || v.importFails[id] || mentioned(existing, id) {
			continue
		}
		de := serverError(id, err, v.cat.IDs(), v.r.cfg.Disabled)
		out = append(out, diag.Diagnostic{Severity: diag.SeverityWarning, Code: diag.UpstreamUnavailable, Message: de.Message, Hint: de.Hint})
	}
	return out
}

func hasCode(ds []diag.Diagnostic, c diag.Code) bool {
	for _, d := range ds {
		if d.Code == c {
			return true
		}
	}
	return false
}

func mentioned(ds []diag.Diagnostic, id string) bool {
	q := strconv.Quote(id)
	for _, d := range ds {
		named := d.Code == diag.ImportFailure || d.Code == diag.CapabilityUnavailable ||
			d.ErrorClass == diag.ServerNotFoundError || d.ErrorClass == diag.AuthenticationError
		if named && strings.Contains(d.Message, q) {
			return true
		}
	}
	return false
}
