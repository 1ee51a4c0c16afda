package run

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/outer"
	"github.com/codemode-mcp/codemode/internal/sandbox"
)

// This file is the tool policy at the moment of a call: every tool call of
// every surface, whatever path the script took to the function, ends in
// View.invoke, which decides before anything reaches the upstream.
//
//   - A tool the configuration denies does not get here: the catalog has
//     no such tool (ToolNotFoundError).
//   - A call that needs no approval runs ("auto").
//   - In a dry run (Request.DryRun), a call that is neither read-only nor
//     auto-approved is not sent: it returns null and joins the response's
//     plan ("dry-run").
//   - A call that needs approval is put to the user ("granted" or
//     "denied"; a denied call throws ApprovalDeniedError).
//
// Asking is done between runs, never inside one, so that a person taking
// their time does not eat the script's timeout, and so that the calls one
// turn of the script issues together (a Promise.all) are put to the user
// together. A run that may need approval is deterministic (sandbox
// Deterministic); a call needing approval suspends (sandbox.Suspend), and
// once the script can go no further the run (a leg) ends. RunWith then asks
// the run's outer client (package outer) about the suspended calls, all in
// one elicitation, and runs the script again from the start: the ledger
// answers every call the earlier legs made with its recorded outcome (the
// upstream never sees a call twice) and the decided ones with the user's
// decision, until the script finishes or the next batch needs asking. With
// a client on the 2026-07-28 protocol the question goes back in an
// input-required result and the ledger travels in its requestState, sealed;
// the client's retry carries it back, so this also works statelessly.

// Approval decisions, as toolTrace entries and the audit line report them.
const (
	ApprovalAuto    = "auto"    // the call needed no approval
	ApprovalGranted = "granted" // the user approved it
	ApprovalDenied  = "denied"  // the user declined it; the upstream never saw it
	ApprovalDryRun  = "dry-run" // a dry run: not sent, listed in the plan
)

// PlannedCall is a call a dry run did not send (Response.Plan).
type PlannedCall struct {
	ServerID  string `json:"serverId"`
	ToolName  string `json:"toolName"`
	Arguments any    `json:"arguments"` // redacted; a clipped string if large
}

// maxPlanArgBytes bounds the arguments a plan entry or an approval request
// shows as JSON; larger ones are shown as clipped text.
const maxPlanArgBytes = 16 << 10

// argumentsView is a call's arguments as a person reviews them: JSON with
// the configured secrets redacted, or clipped text when large.
func (r *Runner) argumentsView(args any, max int) any {
	var raw json.RawMessage
	switch a := args.(type) {
	case json.RawMessage:
		raw = a
	case nil:
		return map[string]any{}
	default:
		b, err := json.Marshal(a)
		if err != nil {
			return fmt.Sprint(a)
		}
		raw = b
	}
	var c bytes.Buffer
	if json.Compact(&c, raw) == nil {
		raw = c.Bytes()
	}
	raw = r.redact.JSON(raw)
	if len(raw) <= max {
		return raw
	}
	return r.redact.Clip(string(raw), max)
}

// argumentsText is argumentsView as one line of text.
func (r *Runner) argumentsText(args any, max int) string {
	switch v := r.argumentsView(args, max).(type) {
	case json.RawMessage:
		return string(v)
	case string:
		return v
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}

// callKey identifies a call in the ledger: server, tool and a hash of the
// canonical arguments. A replayed script must make the same call at the
// same position; an approval applies to exactly the call the user saw.
func callKey(serverID, tool string, args any) string {
	var raw []byte
	if a, ok := args.(json.RawMessage); ok {
		raw = a
	} else {
		raw, _ = json.Marshal(args)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) == nil {
		if b, err := json.Marshal(v); err == nil {
			raw = b
		}
	}
	h := sha256.New()
	h.Write([]byte(serverID))
	h.Write([]byte{0})
	h.Write([]byte(tool))
	h.Write([]byte{0})
	h.Write(raw)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// ledger is what the legs of one run share: the deterministic run's seed
// and start time, and, by position (the order in which the script made its
// tool calls, which a deterministic run keeps), each call's outcome or the
// user's decision. It is JSON, so that it can travel in a requestState.
type ledger struct {
	Seed       uint32                 `json:"seed"`
	NowMs      int64                  `json:"now"`
	Calls      map[string]*ledgerCall `json:"calls,omitempty"` // by position, in decimal
	ApproveAll bool                   `json:"approveAll,omitempty"`
	// Batches counts the batches the user answered; the next one is asked
	// under the key "approval-<Batches>".
	Batches int `json:"batches,omitempty"`
	// Asked is the batch put to the client in an input-required result and
	// not answered yet: its answer must be for these very calls.
	Asked *askedBatch `json:"asked,omitempty"`

	mu      sync.Mutex
	next    int            // the next position in this leg
	pending []*pendingCall // this leg's calls waiting for approval
}

type ledgerCall struct {
	Key      string          `json:"k"`
	Approval string          `json:"ap"`
	Done     bool            `json:"d,omitempty"`
	Result   json.RawMessage `json:"r,omitempty"` // the *mcp.CallToolResult
	Err      *diag.Error     `json:"e,omitempty"`
	Ms       int64           `json:"ms,omitempty"`
}

type askedBatch struct {
	Key   string   `json:"key"`
	Calls []string `json:"calls"` // "<position>:<callKey>"
}

// pendingCall is a call of this leg that waits for the user.
type pendingCall struct {
	pos        int
	key        string
	serverID   string
	tool       *catalog.Tool
	args       any
	annotation *mcp.ToolAnnotations
}

func newLedger() *ledger {
	return &ledger{Seed: rand.Uint32(), NowMs: time.Now().UnixMilli(), Calls: map[string]*ledgerCall{}}
}

func decodeLedger(b []byte) (*ledger, error) {
	l := &ledger{}
	if err := json.Unmarshal(b, l); err != nil {
		return nil, err
	}
	if l.Calls == nil {
		l.Calls = map[string]*ledgerCall{}
	}
	return l, nil
}

func (l *ledger) encode() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, _ := json.Marshal(l)
	return b
}

// startLeg readies the ledger for a run of the script from the start.
func (l *ledger) startLeg() {
	l.mu.Lock()
	l.next, l.pending = 0, nil
	l.mu.Unlock()
}

// number gives the call its position: the sandbox starts a deterministic
// run's calls in the script's order, one after the other until each has
// released its turn (invoke numbers before it releases).
func (l *ledger) number() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.next
	l.next++
	return n
}

func pos(n int) string { return fmt.Sprint(n) }

func (l *ledger) get(n int) *ledgerCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.Calls[pos(n)]
}

// done records the outcome of the call at position n.
func (l *ledger) done(n int, key, approval string, res *mcp.CallToolResult, err *diag.Error, d time.Duration) {
	c := &ledgerCall{Key: key, Approval: approval, Done: true, Err: err, Ms: d.Milliseconds()}
	if res != nil {
		c.Result, _ = json.Marshal(res)
	}
	l.mu.Lock()
	l.Calls[pos(n)] = c
	l.mu.Unlock()
}

// approveAll reports whether the user approved every remaining call.
func (l *ledger) approveAll() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ApproveAll
}

func (l *ledger) suspend(p *pendingCall) {
	l.mu.Lock()
	l.pending = append(l.pending, p)
	l.mu.Unlock()
}

// takePending returns this leg's calls waiting for approval, in the
// script's order.
func (l *ledger) takePending() []*pendingCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.pending
	l.pending = nil
	slices.SortFunc(out, func(a, b *pendingCall) int { return a.pos - b.pos })
	return out
}

// decide records the user's answer about a batch.
func (l *ledger) decide(batch []*pendingCall, granted, all bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	approval := ApprovalDenied
	if granted {
		approval = ApprovalGranted
	}
	for _, p := range batch {
		l.Calls[pos(p.pos)] = &ledgerCall{Key: p.key, Approval: approval}
	}
	l.ApproveAll = l.ApproveAll || granted && all
	l.Batches++
	l.Asked = nil
}

func batchCalls(batch []*pendingCall) []string {
	out := make([]string, len(batch))
	for i, p := range batch {
		out[i] = pos(p.pos) + ":" + p.key
	}
	return out
}

// invoke is the policy gate and the upstream call of CallRaw, once the tool
// is found and its input valid; it records the trace entry. A nil result
// with a nil error is a dry run's unsent call: the script gets null.
func (v *View) invoke(ctx context.Context, s *catalog.Server, t *catalog.Tool, args any) (*mcp.CallToolResult, error) {
	approval := ApprovalAuto
	led := v.led
	n, key := -1, ""
	if led != nil {
		n, key = led.number(), callKey(s.ID, t.Name, args)
		if rec := led.get(n); rec != nil {
			if rec.Key != key {
				return nil, v.diverged(n, s.ID, t.Name)
			}
			if rec.Done {
				// Made by an earlier leg: its outcome, never a second call.
				sandbox.Release(ctx)
				var res *mcp.CallToolResult
				if rec.Result != nil {
					res = &mcp.CallToolResult{}
					if err := json.Unmarshal(rec.Result, res); err != nil {
						res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "codemode could not read back this call's recorded result: " + err.Error()}}}
					}
				}
				return v.outcome(s.ID, t, rec.Approval, res, rec.Err, time.Duration(rec.Ms)*time.Millisecond)
			}
			approval = rec.Approval // the user's decision
		}
	}
	switch {
	case approval != ApprovalAuto:
	case v.dryRun && !(t.AutoApproved || t.ReadOnly() && !t.NeedsApproval):
		v.mu.Lock()
		v.plan = append(v.plan, PlannedCall{ServerID: s.ID, ToolName: t.Name, Arguments: v.r.argumentsView(args, maxPlanArgBytes)})
		v.mu.Unlock()
		v.record(s.ID, t.Name, 0, nil, ApprovalDryRun)
		return nil, nil
	case t.NeedsApproval:
		if led == nil {
			// Not a run that can ask (RunWith makes every run that may
			// need approval one with a ledger); refuse rather than call.
			return nil, &sandbox.Abort{Diagnostic: approvalRequired([]string{s.ID + "/" + t.Name}, "this run cannot ask for approval")}
		}
		if !led.approveAll() {
			var a *mcp.ToolAnnotations
			if t.Tool != nil {
				a = t.Tool.Annotations
			}
			led.suspend(&pendingCall{pos: n, key: key, serverID: s.ID, tool: t, args: args, annotation: a})
			return nil, sandbox.Suspend
		}
		approval = ApprovalGranted
	}
	if approval == ApprovalDenied {
		de := &diag.Error{Class: diag.ApprovalDeniedError,
			Message: fmt.Sprintf("the user declined the call to %s (%s/%s); it was not sent", t.ExportName, s.ID, t.Name),
			Hint:    "do not retry it: go on without this call, or finish and tell the user what it was for",
			Fields:  map[string]any{"serverId": s.ID, "toolName": t.Name}}
		if led != nil {
			led.done(n, key, approval, nil, de, 0)
		}
		return v.outcome(s.ID, t, approval, nil, de, 0)
	}
	if led != nil {
		// Everything that must happen in the script's order is done (the
		// call is numbered): the next call of the round may start while
		// this one waits for its server. Only here: a Caller that numbers
		// calls itself (replay's) relies on being called in order.
		sandbox.Release(ctx)
	}
	start := time.Now()
	callCtx, ended := callProgress(ctx, s.ID, t.Name) // progress.go
	res, err := v.r.caller.CallTool(callCtx, s.ID, t.Name, args)
	d := time.Since(start)
	ended(err == nil && (res == nil || !res.IsError))
	if err != nil {
		var abort *sandbox.Abort
		if errors.Is(err, sandbox.Suspend) || errors.As(err, &abort) {
			// A replaying caller's control of the run: not a failed call.
			return nil, err
		}
		de, ok := err.(*diag.Error)
		if !ok {
			de = callError(ctx, s.ID, t.Name, err)
		}
		if dde := dropped(ctx); dde != nil {
			// The server answered; the gateway had no room for it.
			de = dde
		}
		v.noteDeath(s.ID, err)
		if led != nil {
			led.done(n, key, approval, nil, de, d)
		}
		return v.outcome(s.ID, t, approval, nil, de, d)
	}
	if res == nil {
		res = &mcp.CallToolResult{}
	}
	if led != nil {
		led.done(n, key, approval, res, nil, d)
	}
	return v.outcome(s.ID, t, approval, res, nil, d)
}

// outcome traces a call that was made (now or by an earlier leg) and
// returns it as CallRaw does.
func (v *View) outcome(serverID string, t *catalog.Tool, approval string, res *mcp.CallToolResult, de *diag.Error, d time.Duration) (*mcp.CallToolResult, error) {
	switch {
	case de != nil:
		v.record(serverID, t.Name, d, de, approval)
		return nil, de
	case res == nil:
		// A recorded outcome of neither kind: treat as an empty result.
		res = &mcp.CallToolResult{}
	}
	if res.IsError {
		v.record(serverID, t.Name, d, v.toolFailed(serverID, t, res), approval)
	} else {
		v.record(serverID, t.Name, d, nil, approval)
	}
	return res, nil
}

// diverged ends a leg whose script made another call than the one recorded
// at that position: the user's decisions were about the recorded calls.
func (v *View) diverged(n int, serverID, tool string) error {
	return &sandbox.Abort{Diagnostic: diag.Diagnostic{Severity: diag.SeverityError, Code: diag.ReplayDiverged,
		Message: fmt.Sprintf("run again after an approval, the script made a different tool call at position %d (0-based): %s/%s with other arguments, or another tool, than the first time; nothing more was sent", n, serverID, tool),
		Hint:    "a script that asks for approval is run again from the start with the results it already had: it must make the same calls in the same order, so do not base calls on listServers() status or other state that changes between runs"}}
}

// approvalRequired is the diagnostic of a run that stopped before calls
// that need approval because nobody can be asked.
func approvalRequired(calls []string, why string) diag.Diagnostic {
	what, them := "a call needs", "it"
	if len(calls) > 1 {
		what, them = fmt.Sprintf("%d calls need", len(calls)), "them"
	}
	hint := `connect through a client that supports MCP elicitation (or the 2026-07-28 protocol's input-required results), or have the operator list these tools in the server's "autoApprove"; {"dryRun": true} shows what the script would do without sending it`
	if why == whyNoClient {
		// codemode run: the user is at the terminal, not behind a client.
		hint = `run it with --dry-run to see what it would send, run it through a client that supports MCP elicitation (codemode serve), or list these tools in the server's "autoApprove" in the configuration`
	}
	return diag.Diagnostic{Severity: diag.SeverityError, Code: diag.ApprovalRequired,
		Message: fmt.Sprintf("%s the user's approval, and %s; the run stopped before %s and nothing was sent: %s", what, why, them, strings.Join(calls, "; ")),
		Hint:    hint}
}

// Why an approval could not be asked: the run has no MCP client at all
// (codemode run), or its client declared no way to be asked.
const (
	whyNoClient = "this run has no MCP client to ask (codemode run)"
	whyNoElicit = "this client declared no way to be asked (MCP elicitation)"
)

// whyCannotAsk says why ch cannot ask for approval.
func whyCannotAsk(ch *outer.Channel) string {
	if ch == nil {
		return whyNoClient
	}
	return whyNoElicit
}

// maxListedCalls bounds the calls one approval request or diagnostic lists
// in its text; the request's _meta lists them all.
const maxListedCalls = 50

// describeCall is one call as a person reviews it: server/tool, what its
// annotations say, the arguments.
func (r *Runner) describeCall(p *pendingCall, maxArgs int) string {
	return fmt.Sprintf("%s/%s%s %s", p.serverID, p.tool.Name, annotationText(p.annotation), r.argumentsText(p.args, maxArgs))
}

func annotationText(a *mcp.ToolAnnotations) string {
	if a == nil {
		return " [no annotations]"
	}
	var parts []string
	if a.ReadOnlyHint {
		parts = append(parts, "read-only")
	} else {
		parts = append(parts, "writes")
		if a.DestructiveHint == nil || *a.DestructiveHint {
			parts = append(parts, "destructive")
		}
		if a.IdempotentHint {
			parts = append(parts, "idempotent")
		}
	}
	if a.OpenWorldHint == nil || *a.OpenWorldHint {
		parts = append(parts, "open world")
	}
	return " [" + strings.Join(parts, ", ") + "]"
}

// ApprovalMetaKey is the _meta key under which an approval request lists its
// calls as data: {calls: [{serverId, toolName, annotations?, arguments}]}.
const ApprovalMetaKey = "codemode/approval"

// approvalSchema is the form of an approval request: accept or decline,
// and whether to approve every later call of the run too.
var approvalSchema = json.RawMessage(`{"type":"object","properties":{"approveAll":{"type":"boolean","title":"Also approve every later call of this run","description":"The script's remaining calls that need approval run without asking again.","default":false}}}`)

// elicitation is the request that puts a batch to the user.
func (r *Runner) elicitation(batch []*pendingCall) *mcp.ElicitParams {
	var b strings.Builder
	if len(batch) == 1 {
		b.WriteString("A script wants to make a tool call that needs your approval:\n")
	} else {
		fmt.Fprintf(&b, "A script wants to make %d tool calls that need your approval:\n", len(batch))
	}
	type metaCall struct {
		ServerID    string               `json:"serverId"`
		ToolName    string               `json:"toolName"`
		Annotations *mcp.ToolAnnotations `json:"annotations,omitempty"`
		Arguments   any                  `json:"arguments"`
	}
	calls := make([]metaCall, len(batch))
	for i, p := range batch {
		calls[i] = metaCall{ServerID: p.serverID, ToolName: p.tool.Name, Annotations: p.annotation, Arguments: r.argumentsView(p.args, 4096)}
		if i < maxListedCalls {
			fmt.Fprintf(&b, "%d. %s\n", i+1, r.describeCall(p, 1000))
		}
	}
	if len(batch) > maxListedCalls {
		fmt.Fprintf(&b, "… and %d more\n", len(batch)-maxListedCalls)
	}
	if len(batch) == 1 {
		b.WriteString("Accept to let it run; decline to refuse it (the script gets an ApprovalDeniedError and the server sees nothing). approveAll also approves every later call of this script.")
	} else {
		b.WriteString("Accept to let them all run; decline to refuse them all (the script gets an ApprovalDeniedError for each and the servers see nothing). approveAll also approves every later call of this script.")
	}
	return &mcp.ElicitParams{Mode: "form", Message: b.String(), RequestedSchema: approvalSchema,
		Meta: mcp.Meta{ApprovalMetaKey: map[string]any{"calls": calls}}}
}

// runApproving runs a request that may need approvals: legs of the same
// deterministic run until it finishes or cannot go on (see the top of this
// file).
func (r *Runner) runApproving(ctx context.Context, req Request, x Extra, obs *observed) *Response {
	ch := outer.From(ctx)
	state, err := ch.State()
	if err != nil {
		return invalidRequest(err.Error(), "call the tool again without requestState (and without inputResponses): the script starts over")
	}
	led := newLedger()
	if state != nil {
		if led, err = decodeLedger(state); err != nil {
			return invalidRequest("the requestState cannot be read: "+err.Error(), "call the tool again without requestState: the script starts over")
		}
	}
	for {
		led.startLeg()
		obs.nextLeg()
		resp := r.runWith(ctx, req, x, led, obs)
		batch := led.takePending()
		if !resp.suspended || len(batch) == 0 {
			return resp
		}
		if resp.recorded != nil {
			resp.recorded = nil // only the leg that finishes is a replay bundle
		}
		listed := make([]string, 0, min(len(batch), maxListedCalls))
		for i, p := range batch {
			if i < maxListedCalls {
				listed = append(listed, r.describeCall(p, 300))
			}
		}
		if !ch.CanElicit() {
			resp.Diagnostics = append(resp.Diagnostics, approvalRequired(listed, whyCannotAsk(ch)))
			return resp
		}
		key := fmt.Sprintf("approval-%d", led.Batches)
		calls := batchCalls(batch)
		if led.Asked != nil && (led.Asked.Key != key || !slices.Equal(led.Asked.Calls, calls)) {
			resp.Diagnostics = append(resp.Diagnostics, approvalRequired(listed,
				"run again with the client's answer, the script asked about other calls than it had: the answer does not apply to them"))
			return resp
		}
		res, err := ch.Elicit(ctx, key, r.elicitation(batch))
		if errors.Is(err, outer.ErrInputRequired) {
			led.Asked = &askedBatch{Key: key, Calls: calls}
			ch.SetState(led.encode())
			resp.awaiting = len(batch)
			return resp
		}
		if err != nil {
			resp.Diagnostics = append(resp.Diagnostics, approvalRequired(listed, "asking the client failed: "+r.redact.Clip(err.Error(), 300)))
			return resp
		}
		granted := res.Action == "accept"
		all, _ := res.Content["approveAll"].(bool)
		led.decide(batch, granted, all)
		if err := ctx.Err(); err != nil {
			return resp
		}
	}
}

func invalidRequest(msg, hint string) *Response {
	return &Response{Logs: []sandbox.LogEntry{}, Result: json.RawMessage("null"), ToolTrace: []TraceEntry{},
		Diagnostics: []diag.Diagnostic{{Severity: diag.SeverityError, Code: diag.InvalidRequest, Message: msg, Hint: hint}}}
}
