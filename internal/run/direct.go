package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/outer"
	"github.com/codemode-mcp/codemode/internal/sandbox"
)

// ErrAwaitingApproval is returned by CallDirect when the call's approval
// went to the client in an input-required result (2026-07-28): the serving
// layer answers the call with that result (outer.Channel.InputRequired),
// and the client's retry carries the answer.
var ErrAwaitingApproval = errors.New("run: the call waits for the client's approval")

// CallDirect makes one tool call for a client that calls an upstream's tool
// directly (a server served as ordinary MCP tools, "codeMode": false or
// "both"), along the path a script's call takes: the tool is looked up in
// cat (the catalog of such servers, catalog.Catalog.Direct), its input
// validated, the policy applied (a call that needs approval is put to the
// client through the context's outer.Channel, as a run's calls are), the
// call traced, reported to a client that asked for progress, made within
// the default timeoutMs, redacted, observed (Options.Observer: metrics,
// traces and the run history see it as a run of one call, without code,
// from the context's Origin) and logged on the audit line (marked direct).
// It returns the upstream's result as it is (an isError result
// included), the *diag.Error that stopped the call, or
// ErrAwaitingApproval.
func (r *Runner) CallDirect(ctx context.Context, cat *catalog.Catalog, serverID, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	start := time.Now()
	limits := r.cfg.Resolve(config.Limits{})
	ctx, cancel := context.WithTimeout(ctx, time.Duration(limits.TimeoutMs)*time.Millisecond)
	defer cancel()
	ctx, obs := r.startObserving(ctx, start, Request{})
	res, err, trace := r.callDirect(ctx, cat, limits, obs, serverID, tool, args)
	resp := &Response{Logs: []sandbox.LogEntry{}, Result: json.RawMessage("null"), Diagnostics: []diag.Diagnostic{}, ToolTrace: trace, used: []string{serverID}}
	if errors.Is(err, ErrAwaitingApproval) {
		resp.awaiting = 1
	}
	var de *diag.Error
	if errors.As(err, &de) {
		resp.Diagnostics = append(resp.Diagnostics, diag.Diagnostic{Severity: diag.SeverityError, Code: diag.UncaughtException, ErrorClass: de.Class, Message: de.Message, Hint: de.Hint})
	}
	r.redactResponse(resp)
	took := time.Since(start)
	if obs != nil {
		resp.runID = obs.id
		obs.EndRun(ctx, &RunEnd{Duration: took, Limits: limits, Response: resp, Outcome: Outcome(resp)})
	}
	r.audit(WithLogAttrs(ctx, slog.String("direct", serverID+"/"+tool)), Request{}, resp, took)
	return res, err
}

// callDirect is CallDirect's call, with approvals asked as runApproving
// asks them: the call is tried; if the policy needs the user's approval,
// the question goes to the client, and the call is tried again with the
// answer.
func (r *Runner) callDirect(ctx context.Context, cat *catalog.Catalog, limits config.Limits, obs *observed, serverID, tool string, args json.RawMessage) (*mcp.CallToolResult, error, []TraceEntry) {
	var led *ledger
	ch := outer.From(ctx)
	if r.cfg.ApprovalPossible() {
		led = newLedger()
		state, err := ch.State()
		if err != nil {
			return nil, &diag.Error{Class: diag.CodemodeError, Message: err.Error(), Hint: "call the tool again without requestState"}, nil
		}
		if state != nil {
			if led, err = decodeLedger(state); err != nil {
				return nil, &diag.Error{Class: diag.CodemodeError, Message: "the requestState cannot be read: " + err.Error(), Hint: "call the tool again without requestState"}, nil
			}
		}
	}
	for {
		v := newView(r, limits, Extra{})
		v.cat, v.led, v.obs = cat.View(), led, obs
		if led != nil {
			led.startLeg()
			obs.nextLeg()
		}
		_, res, err := v.CallRaw(ctx, serverID, tool, args)
		var abort *sandbox.Abort
		if errors.As(err, &abort) {
			err = diagError(abort.Diagnostic)
		}
		if !errors.Is(err, sandbox.Suspend) || led == nil {
			return res, err, v.trace()
		}
		batch := led.takePending()
		listed := make([]string, len(batch))
		for i, p := range batch {
			listed[i] = r.describeCall(p, 300)
		}
		refuse := func(why string) (*mcp.CallToolResult, error, []TraceEntry) {
			return nil, diagError(approvalRequired(listed, why)), v.trace()
		}
		if !ch.CanElicit() {
			return refuse(whyCannotAsk(ch))
		}
		key := fmt.Sprintf("approval-%d", led.Batches)
		answer, err := ch.Elicit(ctx, key, r.elicitation(batch))
		if errors.Is(err, outer.ErrInputRequired) {
			led.Asked = &askedBatch{Key: key, Calls: batchCalls(batch)}
			ch.SetState(led.encode())
			return nil, ErrAwaitingApproval, v.trace()
		}
		if err != nil {
			return refuse("asking the client failed: " + r.redact.Clip(err.Error(), 300))
		}
		all, _ := answer.Content["approveAll"].(bool)
		led.decide(batch, answer.Action == "accept", all)
	}
}

// diagError is a diagnostic as the error of a direct call, its code
// first.
func diagError(d diag.Diagnostic) *diag.Error {
	cls := d.ErrorClass
	if cls == "" {
		cls = diag.CodemodeError
	}
	return &diag.Error{Class: cls, Message: string(d.Code) + ": " + d.Message, Hint: d.Hint}
}
