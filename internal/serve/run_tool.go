package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/sandbox"
)

// The run surface: codemode-spec §3's single tool (codemode_run unless
// codemode.runToolName says otherwise), which runs an ES module with every
// server as a module. Its description carries every server's declarations
// or, when they do not fit the budget, an index; then a server's
// declarations come with the first response of a session that uses it
// (§4.4).

// runArgs are the run tool's arguments, the §3.2 request. The tool's input
// schema is generated from them (runInputSchema), and decodeRequest decodes
// into them.
type runArgs struct {
	Code                  string     `json:"code"` // the description says what it is
	Limits                *runLimits `json:"limits,omitempty"`
	RequestedCapabilities []string   `json:"requestedCapabilities,omitempty"`
	DryRun                bool       `json:"dryRun,omitempty"`
	// {"script", "args"} are accepted too (see useScript) but not
	// declared: this schema is in every tools/list of the default
	// surface, whose token budget has no room for them.
}

// runArgNames are the arguments the run tool takes: runArgs' and the
// undeclared script and args.
var runArgNames = []string{"code", "limits", "requestedCapabilities", "dryRun", "script", "args"}

// runLimits are §3.2.4's limit keys. Unknown keys are ignored, not refused:
// the generated schema leaves the object open.
type runLimits struct {
	TimeoutMs      *limitValue `json:"timeoutMs,omitempty"`
	MaxMemoryBytes *limitValue `json:"maxMemoryBytes,omitempty"`
	MaxLogBytes    *limitValue `json:"maxLogBytes,omitempty"`
	MaxToolCalls   *limitValue `json:"maxToolCalls,omitempty"`
	MaxResultBytes *limitValue `json:"maxResultBytes,omitempty"`
}

// config is the request's limits; an absent (or null) key is 0, the
// default.
func (l *runLimits) config() config.Limits {
	if l == nil {
		return config.Limits{}
	}
	return config.Limits{TimeoutMs: l.TimeoutMs.int(), MaxMemoryBytes: l.MaxMemoryBytes.int(), MaxLogBytes: l.MaxLogBytes.int(),
		MaxToolCalls: l.MaxToolCalls.int(), MaxResultBytes: l.MaxResultBytes.int()}
}

// limitValue is one limit: an integer in the schema, and, leniently, any
// non-negative JSON number (truncated) when decoded.
type limitValue int64

func (v *limitValue) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	if f < 0 {
		return fmt.Errorf("negative limit %v", f)
	}
	*v = limitValue(f)
	return nil
}

func (v *limitValue) int() int64 {
	if v == nil {
		return 0
	}
	return int64(*v)
}

var runInputSchema = inputSchema[runArgs](nil)

// runSurface serves the run tool.
type runSurface struct {
	s *Server

	mu        sync.Mutex
	full      bool                                   // the description carries every declaration
	delivered map[*mcp.ServerSession]map[string]bool // servers whose declarations a session was sent
}

func newRunSurface(s *Server) Surface {
	return &runSurface{s: s, delivered: map[*mcp.ServerSession]map[string]bool{}}
}

func (r *runSurface) Tools(servers []*catalog.Server) []Tool {
	ctx, full := r.s.context(servers, moduleForm)
	r.mu.Lock()
	r.full = full
	r.mu.Unlock()
	return []Tool{{Tool: &mcp.Tool{
		Name:        r.s.cfg.Serve.RunToolName,
		Title:       "Run code against MCP tools",
		Description: runDescription(r.s.cfg, ctx),
		InputSchema: runInputSchema,
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: ptr(true)},
	}, Handler: r.handle}}
}

func ptr[T any](v T) *T { return &v }

// decodeRequest decodes a run request into runArgs, leniently where the
// spec allows (unknown limit keys, null for an absent value) and strictly
// where it does not (code must be a string). It does not go through the
// schema validator as the other surfaces' tools do: a bad request comes
// back as a §3.3 response with an INVALID_REQUEST diagnostic, so the model
// reads what to fix where it reads every other outcome.
func decodeRequest(raw json.RawMessage) (run.Request, *diag.Diagnostic) {
	var args runArgs
	var fields map[string]json.RawMessage
	bad := func(msg, hint string) (run.Request, *diag.Diagnostic) {
		return run.Request{}, &diag.Diagnostic{Severity: diag.SeverityError, Code: diag.InvalidRequest, Message: msg, Hint: hint}
	}
	if len(raw) == 0 || json.Unmarshal(raw, &fields) != nil {
		return bad("the arguments must be a JSON object", `call with {"code": "..."}`)
	}
	if c, ok := fields["code"]; !ok || bytes.Equal(c, []byte("null")) {
		// Say which argument was sent instead ({"cod": ...}, {"script_": ...}):
		// the model fixes a misspelt key faster when it sees it named.
		var unknown []string
		for k := range fields {
			if !slices.Contains(runArgNames, k) {
				unknown = append(unknown, strconv.Quote(k))
			}
		}
		hint := `call with {"code": "..."}: the script's source text`
		if len(unknown) > 0 {
			slices.Sort(unknown)
			hint = fmt.Sprintf("%s is not an argument of this tool (it takes %s); %s", strings.Join(unknown, ", "), strings.Join(runArgNames, ", "), hint)
		}
		return bad(`"code" must be a string, and the arguments have none`, hint)
	}
	if json.Unmarshal(fields["code"], &args.Code) != nil {
		return bad(`"code" must be a string`, "pass the script's source text as a string")
	}
	if l := fields["limits"]; len(l) > 0 && !bytes.Equal(l, []byte("null")) {
		var limits map[string]json.RawMessage
		if json.Unmarshal(l, &limits) != nil {
			return bad(`"limits" must be an object`, `e.g. {"timeoutMs": 10000}`)
		}
		args.Limits = &runLimits{}
		lv := reflect.ValueOf(args.Limits).Elem()
		for i := range lv.NumField() {
			key, _, _ := strings.Cut(lv.Type().Field(i).Tag.Get("json"), ",")
			v, ok := limits[key]
			if !ok {
				continue
			}
			if json.Unmarshal(v, lv.Field(i).Addr().Interface()) != nil {
				return bad(fmt.Sprintf("limits.%s must be a positive number", key), "use an integer, or leave it out for the default")
			}
		}
	}
	if c := fields["requestedCapabilities"]; len(c) > 0 && !bytes.Equal(c, []byte("null")) {
		if json.Unmarshal(c, &args.RequestedCapabilities) != nil {
			return bad(`"requestedCapabilities" must be an array of server ids`, `e.g. ["github"]`)
		}
	}
	if d := fields["dryRun"]; len(d) > 0 && !bytes.Equal(d, []byte("null")) {
		if json.Unmarshal(d, &args.DryRun) != nil {
			return bad(`"dryRun" must be true or false`, `pass {"dryRun": true} to run only the read-only calls and list the others in plan`)
		}
	}
	return run.Request{Code: args.Code, Limits: args.Limits.config(), RequestedCapabilities: args.RequestedCapabilities, DryRun: args.DryRun}, nil
}

func (r *runSurface) handle(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	rq, bad := decodeRequest(req.Params.Arguments)
	if bad != nil {
		resp := &run.Response{Logs: []sandbox.LogEntry{}, Result: json.RawMessage("null"), Diagnostics: []diag.Diagnostic{*bad}, ToolTrace: []run.TraceEntry{}}
		res := responseResult(resp, "")
		res.IsError = true
		return res, nil
	}
	resp := r.s.runner.Run(ctx, rq)
	ids := r.s.globalIDs()
	hintUndefined(resp, func(name string) string {
		switch id, server := ids[name]; {
		case server:
			return fmt.Sprintf("import the server's tools: import * as %s from %q", name, run.ServerModulePrefix+id)
		case searchNames[name]:
			return `find tools with import { searchTools, listTools, getTool } from "@codemode/discovery"`
		case toolObjects[name]:
			return name + ` is not bound here: import a server's tools from "@codemode/servers/<serverId>"`
		}
		return ""
	})
	if resp.AwaitingApproval() > 0 {
		// The client gets the approval question instead of this response
		// (see Server.track): the declarations go with the answer.
		return responseResult(resp, ""), nil
	}
	return responseResult(resp, r.deferredDeclarations(ctx, req, resp.ServersUsed())), nil
}

// deferredDeclarations returns the declarations of the servers a response
// used for the first time in the session, when the description carries only
// the index (§4.4). Sessions are told apart by their *mcp.ServerSession,
// which stdio (one session, no id) and stateful HTTP both keep for the
// session's life. Under stateless HTTP every request is a session of its
// own, so every response carries the declarations of the servers it used:
// §4.4 allows deferring them to the first import, not skipping them.
//
// The run is over: the answer must not wait on a server. A server the run
// used has its tools listed already, unless the run could not import it
// (it is still starting, or its tools/list never answers), and then there
// is nothing to declare: at most declarationsWait is spent looking, and a
// server not declared now is declared with a later response.
func (r *runSurface) deferredDeclarations(ctx context.Context, req *mcp.CallToolRequest, used []string) string {
	s := r.s
	r.mu.Lock()
	full := r.full
	r.mu.Unlock()
	if full || len(used) == 0 {
		return ""
	}
	var seen map[string]bool // nil: every response declares what it used
	if !s.stateless.Load() && req != nil && req.Session != nil {
		r.mu.Lock()
		session := req.Session
		seen = r.delivered[session]
		if seen == nil {
			seen = map[string]bool{}
			r.delivered[session] = seen
			// Forget the session when it ends.
			go func() {
				session.Wait()
				r.mu.Lock()
				delete(r.delivered, session)
				r.mu.Unlock()
			}()
		}
		r.mu.Unlock()
	}
	ctx, cancel := context.WithTimeout(ctx, declarationsWait)
	defer cancel()
	var b strings.Builder
	view := s.cat.View()
	for _, id := range used {
		if seen != nil {
			r.mu.Lock()
			done := seen[id]
			r.mu.Unlock()
			if done {
				continue
			}
		}
		srv, err := view.Server(ctx, id)
		if err != nil {
			continue
		}
		if seen != nil {
			r.mu.Lock()
			done := seen[id] // a concurrent response of the session declared it
			seen[id] = true
			r.mu.Unlock()
			if done {
				continue
			}
		}
		b.WriteString(s.decls.get(srv, moduleForm).text)
	}
	if b.Len() == 0 {
		return ""
	}
	once := " (sent once per session)"
	if s.stateless.Load() {
		once = ""
	}
	return "TypeScript declarations of the servers this script used" + once + ". " + declTypes + b.String()
}

// declarationsWait bounds how long a response waits for the tools of a
// server its run used (see deferredDeclarations).
const declarationsWait = 200 * time.Millisecond

// runDescription is the description of the run surface's tool.
func runDescription(cfg *config.Config, context string) string {
	var b strings.Builder
	b.WriteString(`Run an ES module (JS or TS) that calls MCP tools as async functions; get {logs, result, diagnostics, toolTrace}.
Import tools: import { get_sum } from "@codemode/servers/<serverId>" (get-sum → get_sum, export → export_). Top-level await works. Result: globalThis.__codemode_result__ = <JSON data> (else null),
or return it at top level, or export default it (awaited; called if a function without parameters).
Discover: import { listServers, describeServer, listTools, getTool, searchTools } from "@codemode/discovery" (detail: "name"|"description"|"full").
`)
	b.WriteString(unwrapDoc + "\n" + errorsDoc + "\n" + policyDoc(cfg) + sandboxDoc + "\n")
	b.WriteString(limitsDoc(cfg) + "\n")
	b.WriteString("requestedCapabilities: server ids to connect first. dryRun: only read-only calls run; others return null, listed in plan.\n")
	b.WriteString("Use Promise.all for independent calls; aggregate in code, log summaries.\n")
	b.WriteString(context)
	return b.String()
}
